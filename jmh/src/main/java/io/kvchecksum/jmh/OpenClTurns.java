package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.bench.MemoryBound;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

/**
 * The OpenCL backend and the read bound in turn on a noisy machine: per shape at 256 MiB, the read bound and the
 * backend as it ships (on the device {@code -Dkvchecksum.opencl.device} or {@code KVCHECKSUM_OPENCL_DEVICE} names,
 * else the default one) run in turn, {@code reps} times, in one JVM on the same KV, so a load spike hits both; prints
 * min and median times and the ratios to the read bound. Not a JMH benchmark. The build options it once compared
 * ({@code kvchecksum.opencl.unitPieces}, {@code .unitOrder}, {@code .zeroCopy}, {@code .cpuItems},
 * {@code .blockOrder}) were measured and removed: the device's type chooses the build now (kernels-opencl/README.md,
 * "Performance on PoCL (CPU)"). Usage:
 *
 * <pre>java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -cp jmh/target/benchmarks.jar \
 *     io.kvchecksum.jmh.OpenClTurns llama3-8b-tp1,deepseek-mla-fp8 11</pre>
 */
public final class OpenClTurns {
    private OpenClTurns() {
    }

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: OpenClTurns SHAPE[,SHAPE..] REPS");
            System.exit(2);
        }
        int reps = Integer.parseInt(args[1]);
        for (String shape : args[0].split(",")) {
            try (KvFixture fx = KvFixture.of(shape, "256MiB");
                 MemoryBound bound = new MemoryBound(fx.segments(), Runtime.getRuntime().availableProcessors());
                 KvChecksum backend = Backends.open("opencl")) {
                Oracle.expectEqual("opencl", KvChecksums.cpu().blockChecksums(fx.group(), fx.request()),
                        backend.blockChecksums(fx.group(), fx.request()));
                List<LongSupplier> ops = new ArrayList<>();
                for (MemoryBound.Reader reader : MemoryBound.readers()) {
                    ops.add(() -> bound.read(reader));
                }
                ops.add(() -> backend.blockChecksums(fx.group(), fx.request())[0]);
                long[][] each = MixedModeTurns.inTurns(ops, reps, 1);
                // the honest read bound: the fastest reader of each round (MemoryBound's definition)
                long[][] t = {new long[reps], each[ops.size() - 1]};
                Arrays.setAll(t[0], r -> IntStream.range(0, ops.size() - 1).mapToLong(i -> each[i][r]).min().orElseThrow());
                for (long[] x : t) {
                    Arrays.sort(x);
                }
                System.out.printf("%s, %d MiB, %d rounds (checksum bit %d)%n  %s%n", shape, fx.kvBytes() >> 20, reps,
                        MixedModeTurns.sink & 1, backend.description());
                System.out.printf("  %-10s min %7.2f ms  median %7.2f ms%n", "read bound", t[0][0] / 1e6, t[0][reps / 2] / 1e6);
                System.out.printf("  %-10s min %7.2f ms  median %7.2f ms  ratio of mins %.2f  of medians %.2f%n",
                        "opencl", t[1][0] / 1e6, t[1][reps / 2] / 1e6, (double) t[0][0] / t[1][0],
                        (double) t[0][reps / 2] / t[1][reps / 2]);
            }
        }
    }
}
