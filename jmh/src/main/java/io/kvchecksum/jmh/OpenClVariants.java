package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.bench.MemoryBound;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Builds of the OpenCL {@code block_checksums} side by side on a noisy machine: per shape at 256 MiB, the read bound
 * and each variant run in turn, {@code reps} times, in one JVM on the same KV, so a load spike hits all of them; prints
 * min and median times and the ratios to the read bound. Not a JMH benchmark: a diagnostic for choosing the OpenCL
 * build options ({@code kvchecksum.opencl.unitPieces}, {@code .unitOrder}, {@code .zeroCopy}), whose results are
 * first checked equal. Usage (a variant is {@code pieces:order[:zeroCopy[:items[:blockOrder]]]}: {@code items} sets
 * {@code kvchecksum.opencl.cpuItems}, work items per compute unit of the CPU build, {@code blockOrder} is
 * {@code address} or {@code table}, {@code kvchecksum.opencl.blockOrder}; empty fields keep the defaults):
 *
 * <pre>java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -cp jmh/target/benchmarks.jar \
 *     io.kvchecksum.jmh.OpenClVariants llama3-8b-tp1,deepseek-mla-fp8 8:strided:false,32:contiguous 11</pre>
 */
public final class OpenClVariants {
    private OpenClVariants() {
    }

    private static void setOrClear(String property, String value) {
        if (value.isEmpty()) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: OpenClVariants SHAPE[,SHAPE..] PIECES:ORDER[:ZEROCOPY[:ITEMS[:BLOCKORDER]]][,..] REPS");
            System.exit(2);
        }
        String[] variants = args[1].split(",");
        int reps = Integer.parseInt(args[2]);
        for (String shape : args[0].split(",")) {
            ModelShape s = ModelShape.of(shape);
            try (KvFixture fx = KvFixture.create(s, s.tokens("256MiB"));
                 MemoryBound bound = new MemoryBound(fx.segments(), Runtime.getRuntime().availableProcessors())) {
                List<KvChecksum> backends = new ArrayList<>();
                for (String v : variants) {
                    String[] p = v.split(":");
                    System.setProperty("kvchecksum.opencl.unitPieces", p[0]);
                    System.setProperty("kvchecksum.opencl.unitOrder", p[1]);
                    System.setProperty("kvchecksum.opencl.zeroCopy", p.length > 2 ? p[2] : "true");
                    setOrClear("kvchecksum.opencl.cpuItems", p.length > 3 ? p[3] : "");
                    setOrClear("kvchecksum.opencl.blockOrder", p.length > 4 ? p[4] : "");
                    backends.add(KvChecksums.byName("opencl"));
                }
                long[] expected = backends.getFirst().blockChecksums(fx.group(), fx.request());
                for (int i = 1; i < backends.size(); i++) {
                    Oracle.expectEqual(variants[i], expected, backends.get(i).blockChecksums(fx.group(), fx.request()));
                }
                long[][] t = new long[backends.size() + 1][reps];
                long sink = 0;
                for (int r = 0; r < reps; r++) {
                    // the honest read bound: the fastest reader of this round (MemoryBound's definition)
                    long best = Long.MAX_VALUE;
                    for (MemoryBound.Reader reader : MemoryBound.readers()) {
                        long t0 = System.nanoTime();
                        sink += bound.read(reader);
                        best = Math.min(best, System.nanoTime() - t0);
                    }
                    t[0][r] = best;
                    for (int i = 0; i < backends.size(); i++) {
                        long t0 = System.nanoTime();
                        sink += backends.get(i).blockChecksums(fx.group(), fx.request())[0];
                        t[i + 1][r] = System.nanoTime() - t0;
                    }
                }
                for (long[] x : t) {
                    Arrays.sort(x);
                }
                System.out.printf("%s, %d MiB, %d rounds (checksum bit %d)%n", shape, fx.kvBytes() >> 20, reps, sink & 1);
                System.out.printf("  %-18s min %7.2f ms  median %7.2f ms%n", "read bound", t[0][0] / 1e6, t[0][reps / 2] / 1e6);
                for (int i = 0; i < backends.size(); i++) {
                    System.out.printf("  %-18s min %7.2f ms  median %7.2f ms  ratio of mins %.2f  of medians %.2f%n",
                            variants[i], t[i + 1][0] / 1e6, t[i + 1][reps / 2] / 1e6, (double) t[0][0] / t[i + 1][0],
                            (double) t[0][reps / 2] / t[i + 1][reps / 2]);
                    backends.get(i).close();
                }
            }
        }
    }
}
