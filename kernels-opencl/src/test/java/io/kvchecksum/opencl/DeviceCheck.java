package io.kvchecksum.opencl;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.GoldenSuite;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * Runs the golden suite through the OpenCL backend on whatever OpenCL device this machine has, without Maven or a
 * test runner, for GPU machines:
 * <pre>{@code
 * java --enable-native-access=ALL-UNNAMED -cp 'kernels-opencl/target/*:kernels-opencl/target/lib/*' \
 *     io.kvchecksum.opencl.DeviceCheck [device]
 * }</pre>
 * ({@code kernels-opencl/device-check.sh} does this and works around a missing {@code libOpenCL.so} link.)
 * {@code device} is an index {@code "platform:device"} or a name substring, as {@value OpenClDevices#DEVICE_PROPERTY}.
 *
 * <p>Prints every OpenCL device, the one used, each failing vector, one timing line, and a summary. Exit status:
 * 0 all passed; 1 some vector failed; 2 no OpenCL here (no library, no platform, no device: said plainly, not an
 * error of the backend); 3 the backend could not be set up (kernel build failed, ...).
 */
public final class DeviceCheck {
    private DeviceCheck() {
    }

    public static void main(String[] args) {
        System.exit(run(args.length > 0 ? args[0] : OpenClDevices.configuredSpec()));
    }

    static int run(String spec) {
        System.out.println("kvchecksum OpenCL device check");
        List<OpenClDevice> devices;
        try {
            devices = OpenClDevices.list();
        } catch (OpenClException e) {
            System.out.println("NO OPENCL PLATFORM: " + e.getMessage() + icdHint());
            return 2;
        } catch (LinkageError e) {
            System.out.println("NO OPENCL LIBRARY: " + OpenClDevices.loadFailure(e));
            return 2;
        }
        System.out.println("devices: " + (devices.isEmpty() ? "none" : ""));
        devices.forEach(d -> System.out.println("  " + d));
        OpenClBackend backend;
        try {
            backend = OpenClBackend.open(spec);
        } catch (OpenClBuildException e) {
            System.out.println("SETUP FAILED: " + e.getMessage());
            return 3;
        } catch (OpenClException e) {
            System.out.println((devices.isEmpty() ? "NO OPENCL DEVICE: " : "SETUP FAILED: ") + e.getMessage());
            return devices.isEmpty() ? 2 : 3;
        }
        try (KvChecksum checksum = KvChecksum.of(backend)) {
            System.out.println("backend: " + checksum.description());
            int[] counts = new int[2];
            List<String> failures = new ArrayList<>();
            runAll(GoldenSuite.tests(checksum), counts, failures);
            runAll(OpenClCopyTest.intoClMems(checksum, backend), counts, failures);
            failures.forEach(f -> System.out.println("FAIL " + f));
            timing(checksum);
            gpuPaths(backend);
            if ("GPU".equals(backend.device().type())) {
                copyPaths(checksum, backend, new KvLayouts.PagedShape(2048, 16, 8, 128, 2), 2, 20);
            } else {
                System.out.println("copy paths: skipped (" + backend.device().type() + " device: the verifying copy is"
                        + " timed against clEnqueueCopyBuffer on a GPU only)");
            }
            System.out.println("opencl golden suite on '" + backend.device().deviceName() + "': " + counts[0] + " passed, "
                    + counts[1] + " failed");
            return counts[1] == 0 && counts[0] > 0 ? 0 : 1;
        }
    }

    private static void runAll(Stream<? extends DynamicNode> nodes, int[] counts, List<String> failures) {
        nodes.forEach(n -> {
            if (n instanceof DynamicContainer c) {
                runAll(c.getChildren(), counts, failures);
            } else if (n instanceof DynamicTest t) {
                try {
                    t.getExecutable().execute();
                    counts[0]++;
                } catch (Throwable e) {
                    counts[1]++;
                    failures.add(t.getDisplayName() + ": " + e);
                }
            }
        });
    }

    /**
     * One informative line, not a benchmark: the best of five fused passes over 64 MiB of a FlashAttention-layout
     * cache, host-to-device copy included (this backend copies host memory every call), checked against the CPU.
     */
    private static void timing(KvChecksum backend) {
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(256, 16, 8, 128, 2); // 16 MiB per layer
        int layers = 4;
        try (Arena arena = Arena.ofShared()) {
            KvCacheGroup g = cache(arena, s, layers);
            int[] table = new int[(int) s.numPages()];
            Arrays.setAll(table, i -> (int) ((i * 97L) % s.numPages()));
            RequestBlocks r = RequestBlocks.of(table, s.numPages() * s.pageSize(), 16);
            long[] expected = KvChecksums.cpu().blockChecksums(g, r);
            long best = Long.MAX_VALUE;
            boolean same = true;
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                long[] got = backend.blockChecksums(g, r);
                best = Math.min(best, System.nanoTime() - t0);
                same &= Arrays.equals(expected, got);
            }
            double mib = g.bytesPerToken() * (double) r.numTokens() / (1 << 20);
            System.out.printf("timing: fused pass over %.0f MiB (copy included): best %.2f ms, %.2f GB/s; %s the CPU backend%n",
                    mib, best / 1e6, g.bytesPerToken() * (double) r.numTokens() / best, same ? "equal to" : "DIFFERENT FROM");
        } catch (RuntimeException e) {
            System.out.println("timing: skipped (" + e + ")");
        }
    }

    /**
     * The GPU build with 1 (the build before {@code KVC_ROWS_IN_FLIGHT}), 2 (the GPU tuning) and 4 rows in flight,
     * timed against each other on a GPU, not gating: a 512 MiB FlashAttention-layout cache (over 8x the L2 of an
     * H100/H200) in a {@code cl_mem} of each build's context (nothing crosses PCIe in the timed region), the builds in
     * turn in each of 5 samples after a checked warm-up, each sample 20 calls submitted back to back and then awaited.
     * Skipped with the reason on other devices (PoCL runs these builds in the tests, not for time).
     */
    private static void gpuPaths(OpenClBackend shipped) {
        OpenClDevice dev = shipped.device();
        if (!"GPU".equals(dev.type())) {
            System.out.println("gpu paths: skipped (" + dev.type() + " device '" + dev.deviceName()
                    + "': the GPU build's rows in flight are timed on a GPU only, e.g. through NVIDIA's OpenCL)");
            return;
        }
        int[] rows = {1, Tuning.GPU.rowsInFlight(), 4};
        List<OpenClBackend> opened = new ArrayList<>();
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(4096, 16, 8, 128, 2); // 256 MiB per layer (K and V)
        try (Arena arena = Arena.ofShared()) {
            KvCacheGroup host = cache(arena, s, 2);
            int[] table = new int[(int) s.numPages()];
            Arrays.setAll(table, i -> (int) ((i * 97L) % s.numPages()));
            RequestBlocks r = RequestBlocks.of(table, s.numPages() * s.pageSize(), 16);
            long[] expected = KvChecksums.cpu().blockChecksums(host, r);
            double bytes = host.bytesPerToken() * (double) r.numTokens();
            List<KvChecksum> builds = new ArrayList<>();
            List<io.kvchecksum.CompiledPlan> plans = new ArrayList<>();
            for (int n : rows) {
                OpenClBackend b = OpenClBackend.open(dev.index(), Tuning.GPU.withRowsInFlight(n), ClApi.jocl());
                opened.add(b);
                KvChecksum k = KvChecksum.of(b);
                io.kvchecksum.CompiledPlan plan = k.compile(DeviceBufferTest.onDevice(b, host), List.of(r),
                        io.kvchecksum.ChecksumSpec.STANDARD);
                if (!Arrays.equals(expected, k.blockChecksums(plan).getFirst())) {
                    System.out.println("gpu paths: " + n + " rows in flight DIFFERENT FROM the CPU backend");
                    return;
                }
                builds.add(k);
                plans.add(plan);
            }
            int calls = 20;
            long[][] ns = new long[rows.length][5];
            for (int sample = 0; sample < 5; sample++) {
                for (int k = 0; k < rows.length; k++) {
                    List<io.kvchecksum.PendingChecksums> pending = new ArrayList<>();
                    long t0 = System.nanoTime();
                    for (int c = 0; c < calls; c++) {
                        pending.add(builds.get(k).submit(plans.get(k)));
                    }
                    for (io.kvchecksum.PendingChecksums p : pending) {
                        p.get();
                        p.close();
                    }
                    ns[k][sample] = (System.nanoTime() - t0) / calls;
                }
            }
            StringBuilder line = new StringBuilder(String.format("gpu paths: fused pass over %.0f MiB in a cl_mem, %d calls"
                    + " per sample, 5 samples, builds in turn; GB/s median (best):", bytes / (1 << 20), calls));
            for (int k = 0; k < rows.length; k++) {
                long[] t = ns[k].clone();
                Arrays.sort(t);
                line.append(String.format(" %d row%s %.0f (%.0f)%s", rows[k], rows[k] == 1 ? "" : "s", bytes / t[2], bytes / t[0],
                        k + 1 < rows.length ? "," : ""));
            }
            System.out.println(line.append("; results equal to the CPU backend"));
        } catch (RuntimeException | OutOfMemoryError e) {
            System.out.println("gpu paths: skipped (" + e + ")");
        } finally {
            opened.forEach(OpenClBackend::close);
            DeviceBufferTest.release();
        }
    }

    /**
     * The verifying copy timed against {@code clEnqueueCopyBuffer} of the same bytes, not gating: {@code layers}
     * FlashAttention-layout layers of shape {@code s} (2 x 128 MiB on a GPU: 256 MiB, over 4x the L2 of an H100/H200)
     * in one cl_mem copied into another with the destination's pages permuted (a page permutation of the same layout,
     * every byte of both buffers moved), the values checked against the CPU backend's producer record first; then 5
     * samples, the two in turn, each {@code calls} operations submitted back to back and then awaited. A ratio (copy
     * over plain copy) above 1.0 would mean the baseline is wrong.
     */
    static void copyPaths(KvChecksum k, OpenClBackend b, KvLayouts.PagedShape s, int layers, int calls) {
        try (Arena arena = Arena.ofShared()) {
            KvCacheGroup host = cache(arena, s, layers);
            List<MemorySegment> segments = new ArrayList<>();
            for (io.kvchecksum.CacheLayer l : host.layers()) {
                MemorySegment seg = ((KvMemory.Host) l.k().memory()).segment();
                if (!segments.contains(seg)) {
                    segments.add(seg);
                }
            }
            int n = segments.size();
            for (int i = 0; i < n; i++) {
                segments.add(arena.allocate(segments.get(i).byteSize(), 64));
            }
            int pages = (int) s.numPages();
            int[] srcTable = new int[pages];
            int[] dstTable = new int[pages];
            Arrays.setAll(srcTable, i -> i);
            Arrays.setAll(dstTable, i -> (int) ((i * 97L) % pages));
            long tokens = (long) pages * s.pageSize();
            RequestBlocks sr = RequestBlocks.of(srcTable, tokens, 16);
            RequestBlocks dr = RequestBlocks.of(dstTable, tokens, 16);
            long[] expected = KvChecksums.cpu().blockChecksums(host, sr);
            List<KvMemory> hostDst = new ArrayList<>();
            segments.subList(n, 2 * n).forEach(seg -> hostDst.add(KvMemory.host(seg)));
            KvCacheGroup dstHost = KvLayouts.vllmFlash(s, 0, java.util.stream.IntStream.range(0, layers).toArray(), hostDst);
            try (OpenClCopyTest.Pool src = new OpenClCopyTest.Pool(b, segments, i -> i < n);
                 OpenClCopyTest.Pool dst = new OpenClCopyTest.Pool(b, segments, i -> i >= n)) {
                io.kvchecksum.CopyPlan plan = k.compileCopy(src.moved(host), sr, dst.moved(dstHost), dr,
                        io.kvchecksum.ChecksumSpec.STANDARD);
                if (!Arrays.equals(expected, k.copyAndChecksum(plan))) {
                    System.out.println("copy paths: the verifying copy DIFFERENT FROM the CPU backend's record");
                    return;
                }
                long bytes = src.size();
                org.jocl.cl_command_queue q = OpenClCopyTest.Pool.queue(b);
                try {
                    long[][] ns = new long[2][5];
                    for (int sample = 0; sample < 5; sample++) {
                        List<io.kvchecksum.PendingChecksums> pending = new ArrayList<>();
                        long t0 = System.nanoTime();
                        for (int c = 0; c < calls; c++) {
                            pending.add(k.submitCopy(plan, b.commandQueue()));
                        }
                        for (io.kvchecksum.PendingChecksums p : pending) {
                            p.get();
                            p.close();
                        }
                        ns[0][sample] = (System.nanoTime() - t0) / calls;
                        t0 = System.nanoTime();
                        for (int c = 0; c < calls; c++) {
                            JoclApi.check(org.jocl.CL.clEnqueueCopyBuffer(q, src.mem(), dst.mem(), 0, 0, bytes, 0, null,
                                    null), "clEnqueueCopyBuffer");
                        }
                        JoclApi.check(org.jocl.CL.clFinish(q), "clFinish");
                        ns[1][sample] = (System.nanoTime() - t0) / calls;
                    }
                    long[] copy = ns[0].clone();
                    long[] plain = ns[1].clone();
                    Arrays.sort(copy);
                    Arrays.sort(plain);
                    System.out.printf("copy paths: %.0f MiB cl_mem to cl_mem (pages permuted), %d calls per sample, 5"
                            + " samples in turn; GB/s median (best): verifying copy %.1f (%.1f), clEnqueueCopyBuffer"
                            + " %.1f (%.1f); ratio of medians %.2f; values equal to the CPU backend%n",
                            bytes / (double) (1 << 20), calls, bytes / (double) copy[2], bytes / (double) copy[0],
                            bytes / (double) plain[2], bytes / (double) plain[0], plain[2] / (double) copy[2]);
                } finally {
                    org.jocl.CL.clReleaseCommandQueue(q);
                }
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            System.out.println("copy paths: skipped (" + e + ")");
        }
    }

    /** {@code layers} FlashAttention-layout layers of shape {@code s} in native memory, filled with a fixed pattern. */
    private static KvCacheGroup cache(Arena arena, KvLayouts.PagedShape s, int layers) {
        List<KvMemory> caches = new ArrayList<>();
        int[] numbers = new int[layers];
        for (int l = 0; l < layers; l++) {
            long bytes = 2L * s.numPages() * s.pageSize() * s.heads() * s.headDim() * s.elemBytes();
            MemorySegment seg = arena.allocate(bytes, 64);
            for (long i = 0; i < bytes / 8; i++) {
                seg.setAtIndex(ValueLayout.JAVA_LONG, i, 0x9E3779B97F4A7C15L * (i + 31L * l + 1));
            }
            caches.add(KvMemory.host(seg));
            numbers[l] = l;
        }
        return KvLayouts.vllmFlash(s, 0, numbers, caches);
    }

    private static String icdHint() {
        String vendors = System.getenv().getOrDefault("OCL_ICD_VENDORS", "/etc/OpenCL/vendors");
        String[] icds = new File(vendors).list();
        return "\n  (the OpenCL loader found no driver; ICD files in " + vendors + ": "
                + (icds == null ? "directory missing" : icds.length == 0 ? "none" : String.join(", ", icds)) + ")";
    }
}
