package io.kvchecksum;

import io.kvchecksum.internal.FastCpuBackend;
import io.kvchecksum.internal.ReferenceBackend;
import io.kvchecksum.internal.SelfTest;
import io.kvchecksum.spi.BackendProvider;
import io.kvchecksum.spi.BackendProvider.Availability;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * The backends, by name or the fastest one here.
 *
 * <p>Asking by name never substitutes another backend: {@code byName("cuda")} returns CUDA or throws
 * {@link BackendUnavailableException} with the reason. Only {@link #fastest()} chooses, and it says what it chose in
 * {@link KvChecksum#name()}. GPU backends live in their own modules ({@code kvchecksum-kernels-cuda},
 * {@code kvchecksum-kernels-opencl}) and are found through {@link ServiceLoader}; the core does not depend on them.
 */
public final class KvChecksums {
    /** System property naming the backend {@link #configured()} returns; wins over the environment variable. */
    public static final String BACKEND_PROPERTY = "kvchecksum.backend";
    /** Environment variable naming the backend {@link #configured()} returns. */
    public static final String BACKEND_ENV = "KVCHECKSUM_BACKEND";

    private static final Map<String, String> MODULES = Map.of(
            "cuda", "io.kvchecksum:kvchecksum-kernels-cuda",
            "opencl", "io.kvchecksum:kvchecksum-kernels-opencl");

    private KvChecksums() {
    }

    /**
     * {@return the reference backend: the plainest correct code, single-threaded; the oracle for every other backend}
     */
    public static KvChecksum reference() {
        return KvChecksum.of(new ReferenceBackend());
    }

    /** {@return the fast CPU backend: multi-threaded, Vector API where the JVM has {@code jdk.incubator.vector}} */
    public static KvChecksum cpu() {
        return KvChecksum.of(new FastCpuBackend());
    }

    /**
     * {@return the fast CPU backend using at most {@code threads} threads per call (1: the calling thread only)}
     *
     * @param threads the most threads one call uses, at least 1
     * @throws IllegalArgumentException when {@code threads < 1}
     */
    public static KvChecksum cpu(int threads) {
        return KvChecksum.of(new FastCpuBackend(threads));
    }

    /**
     * {@return the backend of that name: {@code reference}, {@code cpu}, {@code cuda}, {@code opencl}, or {@code auto}
     * for {@link #fastest()}}
     *
     * @param name the backend's name, in any case, surrounding blanks ignored
     * @throws BackendUnavailableException if it cannot run here, with the reason
     * @throws IllegalArgumentException for a name no module provides
     */
    public static KvChecksum byName(String name) {
        String n = name.toLowerCase(Locale.ROOT).trim();
        switch (n) {
            case "reference":
                return reference();
            case "cpu":
                return cpu();
            case "auto":
                return fastest();
            default:
                break;
        }
        for (BackendProvider p : providers()) {
            if (p.name().equals(n)) {
                Availability a = p.availability();
                if (!a.available()) {
                    throw new BackendUnavailableException("backend '" + n + "' is unavailable: " + a.reason());
                }
                return KvChecksum.of(p.create());
            }
        }
        String module = MODULES.get(n);
        if (module != null) {
            throw new BackendUnavailableException("backend '" + n + "' is not on the class path: add the dependency " + module);
        }
        throw new IllegalArgumentException("unknown backend '" + name + "': expected one of reference, cpu, cuda, opencl, auto");
    }

    /** {@return the backend named by {@value #BACKEND_PROPERTY} or {@value #BACKEND_ENV}, else {@link #fastest()}} */
    public static KvChecksum configured() {
        String name = System.getProperty(BACKEND_PROPERTY);
        if (name == null || name.isBlank()) {
            name = System.getenv(BACKEND_ENV);
        }
        return name == null || name.isBlank() ? fastest() : byName(name);
    }

    /**
     * {@return the highest-priority backend that is available and passes a self-test on a small known input, else the
     * fast CPU backend} Backends that fail the self-test are skipped (and listed with the reason by {@link #status()}).
     */
    public static KvChecksum fastest() {
        for (BackendProvider p : providers()) {
            if (p.priority() <= BackendProvider.CPU_PRIORITY || !p.availability().available()) {
                continue;
            }
            KvChecksum k;
            try {
                k = KvChecksum.of(p.create());
            } catch (RuntimeException e) {
                continue;
            }
            if (SelfTest.passes(k)) {
                return k;
            }
            k.close();
        }
        return cpu();
    }

    /**
     * {@return every known backend with whether it is usable here and, if not, why; in priority order} A provider that
     * says it is available is opened and self-tested, as {@link #fastest()} does: one that fails to open or fails the
     * self-test is listed as unavailable with that reason.
     */
    public static Map<String, Availability> status() {
        Map<String, Availability> out = new LinkedHashMap<>();
        for (BackendProvider p : providers()) {
            out.put(p.name(), selfTested(p));
        }
        for (Map.Entry<String, String> e : MODULES.entrySet()) {
            out.putIfAbsent(e.getKey(), Availability.no("not on the class path: add the dependency " + e.getValue()));
        }
        out.put("cpu", Availability.yes(cpu().description()));
        out.put("reference", Availability.yes("pure Java, single-threaded"));
        return out;
    }

    private static Availability selfTested(BackendProvider p) {
        Availability a = p.availability();
        if (!a.available()) {
            return a;
        }
        try (KvChecksum k = KvChecksum.of(p.create())) {
            String failure = SelfTest.failure(k);
            return failure == null ? a : Availability.no(failure);
        } catch (RuntimeException e) {
            return Availability.no("available, but opening it failed: " + e.getMessage());
        }
    }

    /** The providers on the class path, highest priority first. */
    private static List<BackendProvider> providers() {
        return ServiceLoader.load(BackendProvider.class, KvChecksums.class.getClassLoader()).stream()
                .map(ServiceLoader.Provider::get)
                .sorted(Comparator.comparingInt(BackendProvider::priority).reversed())
                .toList();
    }
}
