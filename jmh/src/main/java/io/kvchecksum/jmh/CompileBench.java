package io.kvchecksum.jmh;

import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvLayouts.PagedShape;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * What compiling one engine step costs when the page tables change every step (the engine's real case): a step's
 * requests, each with a page table drawn from a churned free list, compiled into one {@link CompiledPlan} over a
 * Llama-3-8B TP1 cache (32 layers, 8 KV heads of 128 bf16, vLLM's flash layout, pages of 16). Nothing is read: the
 * cache is described as device memory, so the benchmark measures the compiler alone; {@code -prof gc} gives its
 * allocation per step ({@code gc.alloc.rate.norm}), which is the plan's memory. Each invocation builds its requests
 * (as an engine does) from one of 64 pre-drawn table sets.
 */
@State(Scope.Thread)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = Bench.NATIVE)
public class CompileBench extends Bench {
    /** Requests in one step. */
    @Param({"1", "32", "256"})
    public int requests;

    /** Tokens per request (pages of 16). */
    @Param({"2048"})
    public int tokens;

    private static final int PAGES = 65536;
    private KvCacheGroup group;
    private int[][][] tables;
    private int next;

    /** The cache (device memory: nothing is read) and 64 sets of tables drawn from a shuffled free list. */
    @Setup
    public void setUp() {
        PagedShape shape = new PagedShape(PAGES, 16, 8, 128, 2);
        long layerBytes = 2L * PAGES * 16 * 8 * 128 * 2;
        List<KvMemory> layers = IntStream.range(0, 32)
                .<KvMemory>mapToObj(l -> KvMemory.device(0x7000_0000_0000L + l * layerBytes, layerBytes)).toList();
        group = KvLayouts.vllmFlash(shape, 0, null, layers);
        Random rnd = new Random(KvFixture.SEED);
        List<Integer> free = new ArrayList<>(IntStream.range(0, PAGES).boxed().toList());
        int pagesPerRequest = tokens / 16;
        tables = new int[64][requests][pagesPerRequest];
        for (int[][] set : tables) {
            Collections.shuffle(free, rnd);
            for (int r = 0; r < requests; r++) {
                for (int i = 0; i < pagesPerRequest; i++) {
                    set[r][i] = free.get((r * pagesPerRequest + i) % PAGES);
                }
            }
        }
    }

    /** {@return one step's plan, compiled from requests built this step} */
    @Benchmark
    public CompiledPlan compileStep() {
        int[][] set = tables[next++ & 63];
        List<RequestBlocks> step = new ArrayList<>(set.length);
        for (int[] table : set) {
            step.add(RequestBlocks.of(table, tokens, 16));
        }
        return CompiledPlan.compile(group, step, ChecksumSpec.STANDARD);
    }
}
