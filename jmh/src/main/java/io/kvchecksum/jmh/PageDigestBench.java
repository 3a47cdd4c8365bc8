package io.kvchecksum.jmh;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.bench.MemoryBound;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * SGLang's page digest (Adler-32 of the request's stream, {@link KvChecksum#pageDigest}) against the read bound, in
 * one run on one fixture: a Llama-3-8B-shaped SGLang pool (32 layers, {@code k_buffer}/{@code v_buffer} of
 * {@code [slots, 8, 128]} bf16) holding exactly the request's pages, the page table a seeded shuffle. {@code digest}
 * is the backend's page digest; {@code readPages} is a plain read of the same pages in the same order (the digest's
 * stream: every page a part of its own, split over the CPU backend's threads as the digest splits it,
 * {@link MemoryBound}), what the digest is judged against; {@code read} reads the same buffers whole, front to back
 * (the bound of the same bytes without the scatter). The results are the ratios {@code readPages / digest} and
 * {@code read / digest} of their times ({@code docs/bench-cpu.md}, "SGLang's page digest").
 *
 * <p>Set-up checks the backend's digest against {@code java.util.zip.Adler32} over the same stream (the reference
 * backend) before anything is timed.
 */
@State(Scope.Benchmark)
public class PageDigestBench extends Bench {
    /** {@code cpu} or {@code opencl}; one that is not available fails set-up with the reason. */
    @Param({"cpu"})
    public String backend;

    /** The stream's size: {@code 1MiB} or {@code 256MiB} (whole pages, at least one). */
    @Param({"1MiB", "256MiB"})
    public String size;

    /** SGLang's page size in slots (1 is SGLang's default: a page per token). */
    @Param({"1", "16"})
    public int pageSize;

    private static final int LAYERS = 32;
    private static final int HEADS = 8;
    private static final int HEAD_DIM = 128;
    private static final long SEED = 0x5617_AD1EL;

    private KvChecksum digest;
    private PageDigestPlan plan;
    private MemoryBound bound;
    private MemoryBound pageBound;

    @Setup(Level.Trial)
    public void setUp() {
        long bytes = switch (size) {
            case "1MiB" -> 1L << 20;
            case "256MiB" -> 256L << 20;
            default -> throw new IllegalArgumentException("size " + size + ": use 1MiB or 256MiB");
        };
        long pageBytes = (long) pageSize * HEADS * HEAD_DIM * 2;
        int pages = (int) Math.max(1, bytes / (2L * LAYERS * pageBytes));
        Arena arena = closing(Arena.ofShared());
        Random rnd = new Random(SEED);
        List<KvMemory> ks = new ArrayList<>();
        List<KvMemory> vs = new ArrayList<>();
        List<MemorySegment> all = new ArrayList<>();
        for (int i = 0; i < 2 * LAYERS; i++) {
            MemorySegment m = arena.allocate(pages * pageBytes, 64);
            for (long o = 0; o < m.byteSize(); o += 8) {
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, o, rnd.nextLong());
            }
            all.add(m);
            (i % 2 == 0 ? ks : vs).add(KvMemory.host(m));
        }
        int[] table = KvFixture.shuffledPages(pages, rnd);
        int[] layers = IntStream.range(0, LAYERS).toArray();
        KvCacheGroup g = KvLayouts.sglang(new KvLayouts.PagedShape(pages, pageSize, HEADS, HEAD_DIM, 2), 0, layers, ks, vs);
        plan = PageDigestPlan.of(SlicePlan.of(g, RequestBlocks.of(table, (long) pages * pageSize, 16)));
        digest = closing(Backends.open(backend));
        long expected = KvChecksums.reference().pageDigest(plan);
        long got = digest.pageDigest(plan);
        check(got == expected, backend + " page digest 0x" + Long.toHexString(got) + " differs from "
                + "java.util.zip.Adler32's 0x" + Long.toHexString(expected));
        bound = closing(new MemoryBound(all, Runtime.getRuntime().availableProcessors()));
        List<MemoryBound.Range> pagesInOrder = new ArrayList<>(plan.runs().size());
        for (PageDigestPlan.Run r : plan.runs()) {
            pagesInOrder.add(new MemoryBound.Range(((KvMemory.Host) r.memory()).segment(), r.offset(), r.length()));
        }
        pageBound = closing(MemoryBound.ofRanges(pagesInOrder, Runtime.getRuntime().availableProcessors()));
        check(pageBound.read() == bound.read(), "the pages in stream order do not hold the buffers' bytes");
        System.out.println("page digest fixture: " + plan + ", " + digest.description());
    }

    /** The backend's page digest of the stream. */
    @Benchmark
    public long digest() {
        return digest.pageDigest(plan);
    }

    /** Reads every byte of the same buffers once, front to back, with the CPU backend's threads. */
    @Benchmark
    public long read() {
        return bound.read();
    }

    /**
     * Reads the digest's stream: the same pages in the same order, with the same threads and the same split (chunks
     * of at least 1 MiB, at most four per thread): the plain read the digest is judged against.
     */
    @Benchmark
    public long readPages() {
        return pageBound.read();
    }
}
