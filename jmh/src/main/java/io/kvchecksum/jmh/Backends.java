package io.kvchecksum.jmh;

import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The backends the benchmarks know, and which of them run here. */
public final class Backends {
    /** Every backend, in the order tables list them. */
    public static final List<String> ALL = List.of("reference", "cpu", "opencl", "cuda");
    /** Backends whose {@code submit} returns before the work is done: the host-sync-free benchmark applies to them. */
    public static final Set<String> ASYNC = Set.of("opencl", "cuda");

    private Backends() {
    }

    /**
     * Why a backend cannot be benchmarked on the host-memory fixtures, or {@code null} when it can. CUDA given host
     * memory uploads it on every call, which would time PCIe instead of the kernel; the GPU sweep lives in the CUDA
     * device script, and {@code SubmitBench} run directly uploads its fixture with {@code CudaBackend.upload}.
     */
    public static String unbenchmarkable(String name) {
        return name.equals("cuda") ? "the suite's fixtures are host memory, which cuda uploads on every call (timing the "
                + "copy, not the kernel); GPU throughput comes from kernels-cuda/device-check.sh, and SubmitBench "
                + "-p backend=cuda times one enqueue on uploaded device memory"
                : null;
    }

    /**
     * The backend of that name, never another: an unavailable backend fails the benchmark with the reason, so a
     * number labelled "cuda" was always measured on CUDA.
     */
    public static KvChecksum open(String name) {
        String why = unbenchmarkable(name);
        if (why != null) {
            throw new IllegalStateException("backend " + name + " skipped: " + why);
        }
        try {
            return KvChecksums.byName(name);
        } catch (BackendUnavailableException | IllegalArgumentException e) {
            throw new IllegalStateException("backend " + name + " skipped: " + e.getMessage(), e);
        }
    }

    /** For each of {@link #ALL}: {@code null} when it runs here and can be benchmarked, else why not. */
    public static Map<String, String> probe() {
        Map<String, String> out = new LinkedHashMap<>();
        for (String name : ALL) {
            try (KvChecksum k = KvChecksums.byName(name)) {
                out.put(name, unbenchmarkable(name));
            } catch (BackendUnavailableException | IllegalArgumentException e) {
                out.put(name, e.getMessage());
            } catch (RuntimeException | LinkageError e) {
                out.put(name, "failed to start: " + e);
            }
        }
        return out;
    }
}
