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
    /**
     * Variants of the CPU backend timed in forks of their own: at AVX2 width on an AVX-512 machine
     * ({@code -XX:UseAVX=2}: the JVM's preferred width, so the code path of AVX2-only CPUs) and the scalar fallback (a
     * JVM without {@code jdk.incubator.vector}). The suite starts their forks with these JVM flags; set-up checks that
     * the backend really runs that loop, so a row is never labelled with a loop it did not run. (A {@code cpu-512}
     * variant, every loop at 512 bits through a system property where AMD Zen 4 reads MLA's streams from memory at
     * 256, was measured and removed with the property: docs/bench-cpu.md, "What limits the ratios".)
     */
    public static final Map<String, List<String>> CPU_VARIANTS = Map.of(
            "cpu-avx2", List.of(Bench.VECTOR, Bench.NATIVE, Bench.HEAP, "-XX:UseAVX=2"),
            "cpu-scalar", List.of(Bench.NATIVE, Bench.HEAP));
    /** Every row name of tables, in order: backends with the CPU variants after {@code cpu}. */
    public static final List<String> ROWS = List.of("reference", "cpu", "cpu-avx2", "cpu-scalar", "opencl", "cuda");

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
                + "-p backend=cuda times one submit on uploaded device memory"
                : null;
    }

    /**
     * The backend of that name, never another: an unavailable backend fails the benchmark with the reason, so a
     * number labelled "cuda" was always measured on CUDA.
     */
    public static KvChecksum open(String name) {
        if (CPU_VARIANTS.containsKey(name)) {
            KvChecksum k = openByName("cpu");
            if (!k.description().contains(name.equals("cpu-avx2") ? "Vector API 256-bit, preferred width" : "scalar")) {
                k.close();
                throw new IllegalStateException("backend " + name + " skipped: this JVM runs " + k.description()
                        + "; start the fork with " + CPU_VARIANTS.get(name) + " (the suite does)");
            }
            return k;
        }
        KvChecksum k = openByName(name);
        // a row named cpu is the Vector API loop; the scalar loop has its own row, cpu-scalar
        return name.equals("cpu") ? vectorLoop(k, "Passing -jvmArgsAppend (or -jvmArgs) on the JMH command line "
                + "replaces the @Fork flags: append " + Bench.VECTOR + " " + Bench.NATIVE + " " + Bench.HEAP + " to it as "
                + "well, or ask for -p backend=cpu-scalar to time the scalar loop under its own name") : k;
    }

    /**
     * The CPU backend with at most {@code threads} threads per call, for the mains that time it at a chosen thread
     * count: refused, as {@link #open} refuses a {@code cpu} row, where this JVM would run the scalar fallback.
     *
     * @param threads the most threads per call (1: the calling thread only)
     * @return the backend, running its Vector API loop
     */
    public static KvChecksum cpu(int threads) {
        return vectorLoop(KvChecksums.cpu(threads), "Start the JVM with " + Bench.VECTOR + " " + Bench.NATIVE);
    }

    /** {@code k}, or closed and refused when it runs the scalar loop; {@code fix} says how to get the vector one. */
    private static KvChecksum vectorLoop(KvChecksum k, String fix) {
        if (loop(k.description()).equals("scalar")) {
            String d = k.description();
            k.close();
            throw new IllegalStateException("backend cpu refused: this JVM runs " + d + ", the scalar fallback, because "
                    + "it lacks the module jdk.incubator.vector. " + fix);
        }
        return k;
    }

    private static KvChecksum openByName(String name) {
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

    private static final java.util.regex.Pattern VECTOR_LOOP = java.util.regex.Pattern.compile("Vector API (\\d+)-bit");

    /**
     * The loop a CPU backend runs, from its {@link KvChecksum#description()}: {@code 512-bit} or {@code 256-bit} (the
     * Vector API loop at that width), {@code scalar}, or {@code n/a} for a backend that names neither (reference,
     * GPU). Benchmarks put it in their output, so a row says which loop it timed.
     *
     * @param description the backend's description
     * @return the loop's name
     */
    static String loop(String description) {
        java.util.regex.Matcher m = VECTOR_LOOP.matcher(description);
        if (m.find()) {
            return m.group(1) + "-bit";
        }
        return description.contains("scalar") ? "scalar" : "n/a";
    }

    /**
     * {@link #loop} as a number for JMH's secondary results (which hold numbers only): the vector width in bits, 0 for
     * the scalar loop, -1 for none.
     */
    static long loopBits(String description) {
        String l = loop(description);
        return l.endsWith("-bit") ? Long.parseLong(l.substring(0, l.length() - 4)) : l.equals("scalar") ? 0 : -1;
    }

    /** The inverse of {@link #loopBits}, for tables. */
    static String loopName(double bits) {
        return bits > 0 ? (long) bits + "-bit" : bits == 0 ? "scalar" : "n/a";
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
