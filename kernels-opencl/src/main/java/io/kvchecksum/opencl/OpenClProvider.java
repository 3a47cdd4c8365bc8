package io.kvchecksum.opencl;

import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendProvider;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Registers the {@code opencl} backend with {@link io.kvchecksum.KvChecksums}.
 *
 * <p>Available when the JOCL native library loads, the OpenCL library finds a platform, and the configured device
 * (or, by default, a GPU or else a CPU device) exists and is usable. Priority 200 on a GPU or accelerator, so
 * {@code fastest()} prefers it to the Java CPU backend (100); 90 on a CPU device such as PoCL, where the Java backend
 * is far faster on small requests (an OpenCL launch alone costs about 0.2-0.3 ms there), so {@code fastest()} leaves
 * it alone and only
 * {@code byName("opencl")} picks it.
 */
public final class OpenClProvider implements BackendProvider {
    private static final String DEFAULT = "";
    private static final Map<String, Probe> PROBES = new ConcurrentHashMap<>();

    private record Probe(Availability availability, OpenClDevice device) {
    }

    /** Called by {@link java.util.ServiceLoader}; cheap: nothing is loaded until {@link #availability()}. */
    public OpenClProvider() {
    }

    @Override
    public String name() {
        return "opencl";
    }

    @Override
    public int priority() {
        OpenClDevice d = probe().device();
        return d == null || d.type().equals("CPU") ? OPENCL_CPU_PRIORITY : OPENCL_GPU_PRIORITY;
    }

    @Override
    public Availability availability() {
        return probe().availability();
    }

    @Override
    public Backend create() {
        Availability a = availability();
        if (!a.available()) {
            throw new BackendUnavailableException("backend 'opencl' is unavailable: " + a.reason());
        }
        return OpenClBackend.open();
    }

    /** Whether OpenCL can run here with the configured device, probed once per device selection. */
    static Probe probe() {
        String spec = OpenClDevices.configuredSpec();
        return PROBES.computeIfAbsent(Objects.requireNonNullElse(spec, DEFAULT), s -> probe(spec));
    }

    private static Probe probe(String spec) {
        try {
            OpenClDevice d = OpenClDevices.select(spec).info();
            return new Probe(Availability.yes("OpenCL " + d.type() + " '" + d.deviceName() + "' on '" + d.platformName()
                    + "' (" + d.version() + ", device " + d.index() + ")"), d);
        } catch (OpenClException e) {
            return new Probe(Availability.no(e.getMessage()), null);
        } catch (LinkageError | RuntimeException e) {
            return new Probe(Availability.no(OpenClDevices.loadFailure(e)), null);
        }
    }
}
