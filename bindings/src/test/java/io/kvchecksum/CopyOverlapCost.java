package io.kvchecksum;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * Not a test: what the destination-overlap check ({@link WrittenCells}) costs against the whole compilation of a copy,
 * in one JVM, in turns (20 compilations, then the check alone 20 times on the last plan), after 10 turns of warm-up;
 * medians and best of the turns. Shapes: {@code jlama} (SegmentedCopyTurns' default: 4 layers x 4 KV heads x 64
 * bytes, 256 positions into 256 one-position segments, cpu with 2 threads, {@code compileCopy}) and Llama-3-8B
 * ({@code flash}, {@code nhd}, {@code hnd}: 32 layers x 8 KV heads x 256 bytes, 4000 of 4096 pages of 16 in a shuffled
 * table, from vLLM's flash layout into that layout, on device memory: {@code CopyPlan.compile} only). Run from the
 * repository after {@code mvn -o -q -pl bindings test-compile -Dkvchecksum.skipCuda=true}:
 * {@code java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector
 * -cp bindings/target/classes:bindings/target/test-classes io.kvchecksum.CopyOverlapCost 20 jlama flash nhd hnd}.
 */
public final class CopyOverlapCost {
    private CopyOverlapCost() {
    }

    /**
     * Runs the shapes named.
     *
     * @param args seconds per shape, then shapes
     */
    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 20;
        List<String> shapes = args.length > 1 ? Arrays.asList(args).subList(1, args.length) : List.of("jlama", "flash");
        for (String shape : shapes) {
            if (shape.equals("jlama")) {
                jlama(seconds);
            } else {
                llama(seconds, shape);
            }
        }
    }

    private interface Compile {
        CopyPlan run();
    }

    private static void turns(String what, long seconds, Compile compile) {
        List<double[]> turns = new ArrayList<>();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        int turn = 0;
        while (System.nanoTime() < end) {
            double[] r = new double[2];
            CopyPlan plan = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < 20; i++) {
                plan = compile.run();
            }
            r[0] = (System.nanoTime() - t0) / 20e3;
            t0 = System.nanoTime();
            for (int i = 0; i < 20; i++) {
                if (check(plan) != 0) {
                    throw new AssertionError("a healthy layout compared cell by cell");
                }
            }
            r[1] = (System.nanoTime() - t0) / 20e3;
            if (turn++ >= 10) {
                turns.add(r);
            }
        }
        double[] c = turns.stream().mapToDouble(x -> x[0]).sorted().toArray();
        double[] d = turns.stream().mapToDouble(x -> x[1]).sorted().toArray();
        double[] q = turns.stream().mapToDouble(x -> x[1] / x[0]).sorted().toArray();
        System.out.printf("%s: %d turns: compile median %.1f us (best %.1f), the overlap check alone median %.1f us"
                + " (best %.1f), check/compile median %.3f%n", what, turns.size(), c[c.length / 2], c[0], d[d.length / 2],
                d[0], q[q.length / 2]);
    }

    private static void jlama(long seconds) {
        int layers = 4;
        int heads = 4;
        int headBytes = 64;
        int tokens = 256;
        int blockSize = 16;
        long row = (long) heads * headBytes;
        KvChecksum cpu = KvChecksums.cpu(2);
        Arena arena = Arena.ofShared();
        List<KvCacheGroup> groups = new ArrayList<>();
        for (int p = 0; p < tokens; p++) {
            List<CacheLayer> ls = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                MemorySegment k = arena.allocate(row, 64);
                MemorySegment v = arena.allocate(row, 64);
                ls.add(CacheLayer.of(l, 0, heads, new KvRegion(KvMemory.host(k), 0, row, row, headBytes, headBytes),
                        new KvRegion(KvMemory.host(v), 0, row, row, headBytes, headBytes)));
            }
            groups.add(KvCacheGroup.of(1, 1, ls));
        }
        KvSegments segments = KvSegments.of(groups);
        MemorySegment staging = arena.allocate(2L * layers * tokens * row, 64);
        List<CacheLayer> described = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            described.add(CacheLayer.of(l, 0, heads,
                    new KvRegion(KvMemory.host(staging.asSlice(2L * l * tokens * row, tokens * row)), 0, row, row,
                            headBytes, headBytes),
                    new KvRegion(KvMemory.host(staging.asSlice((2L * l + 1) * tokens * row, tokens * row)), 0, row, row,
                            headBytes, headBytes)));
        }
        KvCacheGroup staged = KvCacheGroup.of(1, tokens, described);
        int[] table = new int[tokens];
        Arrays.setAll(table, i -> i);
        turns("jlama (256 one-position segments, compileCopy on cpu)", seconds, () -> cpu.compileCopy(staged,
                RequestBlocks.of(table, tokens, 0, blockSize), segments, KvSegments.request(tokens, 0, blockSize),
                ChecksumSpec.STANDARD));
    }

    private static void llama(long seconds, String layout) {
        KvLayouts.PagedShape s = new KvLayouts.PagedShape(4096, 16, 8, 128, 2);
        long layerBytes = 2L * 4096 * 16 * 8 * 256;
        int[] numbers = new int[32];
        Arrays.setAll(numbers, i -> i);
        List<KvMemory> src = new ArrayList<>();
        List<KvMemory> dst = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            src.add(KvMemory.device(0x1000_0000_0000L + i * layerBytes, layerBytes));
            dst.add(KvMemory.device(0x2000_0000_0000L + i * layerBytes, layerBytes));
        }
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < 4096; i++) {
            ids.add(i);
        }
        Collections.shuffle(ids, new Random(1));
        int[] table = new int[4000];
        for (int i = 0; i < table.length; i++) {
            table[i] = ids.get(i);
        }
        int[] id = new int[4000];
        Arrays.setAll(id, i -> i);
        long n = 4000L * 16 - 5;
        KvCacheGroup from = KvLayouts.vllmFlash(s, 0, numbers, src);
        KvCacheGroup to = switch (layout) {
            case "hnd" -> KvLayouts.flashInferHnd(s, 0, numbers, dst);
            case "nhd" -> KvLayouts.flashInferNhd(s, 0, numbers, dst);
            default -> KvLayouts.vllmFlash(s, 0, numbers, dst);
        };
        turns("Llama-3-8B, flash into " + layout + " (CopyPlan.compile)", seconds, () -> CopyPlan.compile(from,
                RequestBlocks.of(id, n, 16), to, RequestBlocks.of(table, n, 16), ChecksumSpec.STANDARD));
    }

    /** The check alone, on a compiled plan's destination: the cells it compared one by one. */
    static long check(CopyPlan plan) {
        return CopyDestinationOverlapTest.exactCells(plan);
    }
}
