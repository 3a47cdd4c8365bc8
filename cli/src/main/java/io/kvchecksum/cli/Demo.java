package io.kvchecksum.cli;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.Verifier;
import io.kvchecksum.engine.worker.Fingerprints;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The demo: a synthetic KV cache of a real model's shape, checksummed by a producer in one layout, copied into a
 * consumer's cache of another layout, page size and block table, verified; then each fault a transport causes,
 * injected one at a time, must be detected at the block it was injected into.
 *
 * <p>The producer sends what an engine would: a version-2 payload, base64 text; the consumer decodes it and compares
 * with {@link Verifier}, as an engine does.
 */
final class Demo {
    /**
     * The demo's shape and seed.
     *
     * @param seed everything random (data, block tables, where faults go) comes from this
     * @param layers layers of the model
     * @param heads KV heads per layer
     * @param headDim elements per head
     * @param elemBytes bytes per element (2: bf16)
     * @param tokens the request's tokens
     * @param blockSize checksum block size
     * @param producerPage the producer's page size (vLLM flash layout)
     * @param consumerPage the consumer's page size (FlashInfer HND layout); must divide {@code blockSize}
     */
    record Config(long seed, int layers, int heads, int headDim, int elemBytes, int tokens, int blockSize, int producerPage,
            int consumerPage) {
        /** Llama-3-8B's KV heads (8 of 128 bf16 elements) and paging, with {@code layers} layers (the model's: 32). */
        static Config llama3_8b(long seed, int layers, int tokens) {
            return new Config(seed, layers, 8, 128, 2, tokens, 16, 16, 8);
        }

        /**
         * The bytes the demo allocates, estimated before anything is: both caches (off-heap, with their 8 spare pages)
         * and, on the heap, the page tables and one block's cells copied twice (a snapshot and the stale block).
         * Saturates at {@link Long#MAX_VALUE} rather than overflowing.
         */
        long memoryEstimate() {
            try {
                long cell = Math.multiplyExact((long) headDim, elemBytes);
                long perSlot = Math.multiplyExact(Math.multiplyExact(2L * heads, cell), layers);
                long pSlots = Math.multiplyExact(Math.ceilDiv((long) tokens, producerPage) + 8, producerPage);
                long cSlots = Math.multiplyExact(Math.ceilDiv((long) tokens, consumerPage) + 8, consumerPage);
                long caches = Math.multiplyExact(perSlot, Math.addExact(pSlots, cSlots));
                long heap = 4 * (pSlots + cSlots) + 2 * Math.multiplyExact(perSlot, blockSize);
                return Math.addExact(caches, heap);
            } catch (ArithmeticException e) {
                return Long.MAX_VALUE;
            }
        }
    }

    /**
     * One fault and what verification said.
     *
     * @param name the fault
     * @param where where it was injected, in words
     * @param injectedBlocks the block positions it changed
     * @param status the verdict
     * @param reportedBlocks the block positions the verdict reported as mismatching
     */
    record Outcome(String name, String where, long[] injectedBlocks, Status status, long[] reportedBlocks) {
        /** Detected, and reported at exactly the injected blocks. */
        boolean localized() {
            long[] a = injectedBlocks.clone();
            long[] b = reportedBlocks.clone();
            Arrays.sort(a);
            Arrays.sort(b);
            return status == Status.MISMATCH && Arrays.equals(a, b);
        }
    }

    /**
     * The demo's result.
     *
     * @param config the shape and seed
     * @param backend the backend's description
     * @param clean the verdict of the clean transfer
     * @param faults one outcome per injected fault
     * @param kvBytes bytes of KV checksummed per side
     * @param producerNanos the best producer checksum time
     * @param consumerNanos the best consumer checksum time
     * @param payloadChars length of the base64 payload
     */
    record Result(Config config, String backend, Status clean, List<Outcome> faults, long kvBytes, long producerNanos,
            long consumerNanos, int payloadChars) {
        /** The clean transfer matched and every fault was detected at its block. */
        boolean allAsExpected() {
            return clean == Status.MATCH && !faults.isEmpty() && faults.stream().allMatch(Outcome::localized);
        }
    }

    private final Config c;
    private final KvChecksum backend;
    private final SplittableRandom rng;
    private final int[] pTable;
    private final int[] cTable;
    private final KvCacheGroup producer;
    private final KvCacheGroup consumer;
    private final int cell;
    private final long numBlocks;

    private Demo(Config c, KvChecksum backend, Arena arena) {
        this.c = c;
        this.backend = backend;
        this.rng = new SplittableRandom(c.seed());
        if (c.blockSize() % c.consumerPage() != 0 || c.blockSize() % c.producerPage() != 0) {
            throw new IllegalArgumentException("block size must be a multiple of both page sizes");
        }
        this.cell = c.headDim() * c.elemBytes();
        this.numBlocks = Math.ceilDiv(c.tokens(), c.blockSize());
        int pNeeded = Math.ceilDiv(c.tokens(), c.producerPage());
        int cNeeded = Math.ceilDiv(c.tokens(), c.consumerPage());
        int pPages = pNeeded + 8;
        int cPages = cNeeded + 8;
        this.pTable = Arrays.copyOf(permutation(pPages, rng), pNeeded);
        this.cTable = Arrays.copyOf(permutation(cPages, rng), cNeeded);
        KvLayouts.PagedShape ps = new KvLayouts.PagedShape(pPages, c.producerPage(), c.heads(), c.headDim(), c.elemBytes());
        KvLayouts.PagedShape cs = new KvLayouts.PagedShape(cPages, c.consumerPage(), c.heads(), c.headDim(), c.elemBytes());
        List<KvMemory> pm = new ArrayList<>();
        List<KvMemory> cm = new ArrayList<>();
        long pBytes = 2L * pPages * c.producerPage() * c.heads() * cell;
        long cBytes = 2L * cPages * c.consumerPage() * c.heads() * cell;
        for (int l = 0; l < c.layers(); l++) {
            MemorySegment p = arena.allocate(pBytes, 64);
            MemorySegment q = arena.allocate(cBytes, 64);
            fill(p, rng.nextLong()); // the producer's KV, and other requests' KV in the pages around it
            fill(q, rng.nextLong()); // whatever the decode engine's pages held before this request
            pm.add(KvMemory.host(p));
            cm.add(KvMemory.host(q));
        }
        this.producer = KvLayouts.vllmFlash(ps, 0, null, pm);
        this.consumer = KvLayouts.flashInferHnd(cs, 0, null, cm);
    }

    /** Runs the demo; the text goes to {@code log} as it happens. */
    static Result run(Config c, KvChecksum backend, java.io.PrintWriter log) {
        try (Arena arena = Arena.ofShared()) {
            return new Demo(c, backend, arena).run(log);
        }
    }

    private Result run(java.io.PrintWriter log) {
        RequestBlocks pReq = RequestBlocks.of(pTable, c.tokens(), c.blockSize());
        RequestBlocks cReq = RequestBlocks.of(cTable, c.tokens(), c.blockSize());
        long kvBytes = producer.bytesPerToken() * c.tokens();
        log.printf("kvchecksum demo · seed %d%n", c.seed());
        log.printf("model     %d layers x %d KV heads x head dim %d, %d-byte elements%s; %d tokens = %d blocks of %d%s;"
                        + " %s of KV%n", c.layers(), c.heads(), c.headDim(), c.elemBytes(), c.layers() == 32 && c.heads() == 8
                        && c.headDim() == 128 && c.elemBytes() == 2 ? " (Llama-3-8B, bf16)" : "", c.tokens(), numBlocks,
                c.blockSize(), c.tokens() % c.blockSize() == 0 ? "" : " (the last one partial)", Units.bytes(kvBytes));
        log.printf("producer  vllm-flash, page %d, %d of %d pages, random block table%n", c.producerPage(), pTable.length,
                producer.numPages());
        log.printf("consumer  vllm-flashinfer-hnd, page %d, %d of %d pages, another random block table%n", c.consumerPage(),
                cTable.length, consumer.numPages());
        log.printf("backend   %s%n", backend.description());
        log.flush();

        // producer: checksum (best of three after a warm-up run), payload as the engine sends it
        long[] produced = backend.blockChecksums(producer, pReq);
        long pNanos = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            long t = System.nanoTime();
            produced = backend.blockChecksums(producer, pReq);
            pNanos = Math.min(pNanos, System.nanoTime() - t);
        }
        long fingerprint = fingerprint();
        String payload = PayloadCodec.encodeBase64(ChecksumPayload.of(1, c.tokens(),
                List.of(new GroupChecksums(0, fingerprint, c.blockSize(), 0, produced))));
        log.printf("payload   %d base64 characters (version 2, %d block checksums)%n%n", payload.length(), produced.length);

        // the transfer: every cell copied into the consumer's layout, pages and table
        int neverWritten = pickBlock((int) numBlocks, -1, -1, -1);
        byte[][] untouched = snapshotBlock(neverWritten);
        for (long t = 0; t < c.tokens(); t++) {
            copyToken(t, t);
        }
        long[] cNanos = {Long.MAX_VALUE};
        LoadVerdict clean = verify(payload, cReq, cNanos, true);
        List<Outcome> faults = new ArrayList<>();
        log.printf("%-22s %-50s %-10s %-10s %s%n", "transfer", "injected at", "verdict", "blocks", "localized");
        log.printf("%-22s %-50s %-10s %-10s %s%n", "clean copy", "-", clean.status(), blocks(mismatched(clean)),
                clean.status() == Status.MATCH ? "yes" : "NO");
        log.flush();

        // 1. one flipped bit
        long t = rng.nextLong(c.tokens());
        int layer = rng.nextInt(c.layers());
        int head = rng.nextInt(c.heads());
        boolean v = rng.nextBoolean();
        int b = rng.nextInt(cell);
        int bit = rng.nextInt(8);
        MemorySegment seg = segment(consumer, layer, v);
        long off = region(consumer, layer, v).cellOffset(cTable[(int) (t / c.consumerPage())], t % c.consumerPage(), head) + b;
        flip(seg, off, bit);
        faults.add(outcome("one flipped bit", "block " + t / c.blockSize() + ": layer " + layer + " head " + head + " token " + t
                + " " + (v ? "V" : "K") + " byte " + b + " bit " + bit, new long[] {t / c.blockSize()}, payload, cReq, cNanos, log));
        flip(seg, off, bit);

        // 2. a stale block: the producer reused the block's pages for another request before the read
        int stale = pickBlock((int) numBlocks, neverWritten, -1, -1);
        int spare = spareProducerPage();
        for (long o = 0; o < tokensIn(stale); o++) {
            copyFrom(spare, o % c.producerPage(), stale * (long) c.blockSize() + o);
        }
        faults.add(outcome("stale block", "block " + stale + ": another request's KV", new long[] {stale}, payload, cReq,
                cNanos, log));
        copyBlock(stale);

        // 3. two blocks swapped: each landed at the other's position
        int x = pickBlock(c.tokens() / c.blockSize(), neverWritten, stale, -1);
        int y = pickBlock(c.tokens() / c.blockSize(), neverWritten, stale, x);
        for (long o = 0; o < c.blockSize(); o++) {
            copyToken(x * (long) c.blockSize() + o, y * (long) c.blockSize() + o);
            copyToken(y * (long) c.blockSize() + o, x * (long) c.blockSize() + o);
        }
        faults.add(outcome("two blocks swapped", "blocks " + Math.min(x, y) + " and " + Math.max(x, y),
                new long[] {x, y}, payload, cReq, cNanos, log));
        copyBlock(x);
        copyBlock(y);

        // 4. a block never written: its pages still hold what they held before the transfer
        blockCells(neverWritten, untouched, true);
        faults.add(outcome("block never written", "block " + neverWritten + ": pages keep their old contents",
                new long[] {neverWritten}, payload, cReq, cNanos, log));
        copyBlock(neverWritten);

        Result r = new Result(c, backend.description(), clean.status(), faults, kvBytes, pNanos, cNanos[0],
                payload.length());
        log.printf("%nthroughput  producer %s in %.1f ms = %s; consumer (HND, page %d) %s; backend %s%n", Units.bytes(kvBytes),
                pNanos / 1e6, Units.gbps(kvBytes, pNanos), c.consumerPage(), Units.gbps(kvBytes, cNanos[0]),
                backend.name());
        long ok = faults.stream().filter(Outcome::localized).count();
        log.printf("result      %s; %d of %d faults detected at the injected blocks%n",
                clean.status() == Status.MATCH ? "clean transfer verified" : "CLEAN TRANSFER NOT VERIFIED", ok, faults.size());
        log.flush();
        return r;
    }

    private Outcome outcome(String name, String where, long[] injected, String payload, RequestBlocks cReq, long[] cNanos,
            java.io.PrintWriter log) {
        LoadVerdict v = verify(payload, cReq, cNanos, false);
        Outcome o = new Outcome(name, where, injected, v.status(), mismatched(v));
        log.printf("%-22s %-50s %-10s %-10s %s%n", name, where, v.status(), blocks(o.reportedBlocks()),
                o.localized() ? "yes" : "NO");
        log.flush();
        return o;
    }

    private LoadVerdict verify(String payload, RequestBlocks cReq, long[] cNanos, boolean time) {
        long[] values = null;
        for (int i = 0; i < (time ? 3 : 1); i++) {
            long t = System.nanoTime();
            values = backend.blockChecksums(consumer, cReq);
            cNanos[0] = Math.min(cNanos[0], System.nanoTime() - t);
        }
        ChecksumPayload actual = ChecksumPayload.of(1, c.tokens(),
                List.of(new GroupChecksums(0, fingerprint(), c.blockSize(), 0, values)));
        return Verifier.verify(payload, actual);
    }

    private static long[] mismatched(LoadVerdict v) {
        return v.groups().stream().map(GroupVerdict::mismatchedBlocks).flatMapToLong(Arrays::stream).sorted().toArray();
    }

    private static String blocks(long[] b) {
        return b.length == 0 ? "-" : Arrays.stream(b).mapToObj(String::valueOf).collect(Collectors.joining(", "));
    }

    private long fingerprint() {
        return Fingerprints.ofGroup(IntStream.range(0, c.layers()).mapToObj(l -> Fingerprints.ofLayer("model.layers." + l
                + ".self_attn.attn", "FullAttentionSpec", c.elemBytes() == 2 ? "torch.bfloat16" : "torch.uint8")).toList());
    }

    // ---- the transfer, cell by cell ----

    /** Copies request token {@code from} of the producer into the consumer's slot of request token {@code to}. */
    private void copyToken(long from, long to) {
        copyFrom(pTable[(int) (from / c.producerPage())], from % c.producerPage(), to);
    }

    /** Copies the producer's cells of {@code slot} in {@code page} into the consumer's slot of request token {@code to}. */
    private void copyFrom(int page, long slot, long to) {
        int cp = cTable[(int) (to / c.consumerPage())];
        long cs = to % c.consumerPage();
        for (int l = 0; l < c.layers(); l++) {
            for (int kv = 0; kv < 2; kv++) {
                boolean v = kv == 1;
                MemorySegment src = segment(producer, l, v);
                MemorySegment dst = segment(consumer, l, v);
                KvRegion sr = region(producer, l, v);
                KvRegion dr = region(consumer, l, v);
                for (int h = 0; h < c.heads(); h++) {
                    MemorySegment.copy(src, sr.cellOffset(page, slot, h), dst, dr.cellOffset(cp, cs, h), cell);
                }
            }
        }
    }

    private void copyBlock(int block) {
        for (long o = 0; o < tokensIn(block); o++) {
            long t = block * (long) c.blockSize() + o;
            copyToken(t, t);
        }
    }

    private byte[][] snapshotBlock(int block) {
        byte[][] s = new byte[(int) tokensIn(block)][c.layers() * 2 * c.heads() * cell];
        blockCells(block, s, false);
        return s;
    }

    /** Copies the consumer's cells of {@code block} into {@code s}, one array per token, or back from it. */
    private void blockCells(int block, byte[][] s, boolean restore) {
        for (int o = 0; o < s.length; o++) {
            long t = block * (long) c.blockSize() + o;
            int cp = cTable[(int) (t / c.consumerPage())];
            long cs = t % c.consumerPage();
            int i = 0;
            for (int l = 0; l < c.layers(); l++) {
                for (int kv = 0; kv < 2; kv++) {
                    for (int h = 0; h < c.heads(); h++) {
                        MemorySegment seg = segment(consumer, l, kv == 1);
                        long off = region(consumer, l, kv == 1).cellOffset(cp, cs, h);
                        if (restore) {
                            MemorySegment.copy(s[o], i, seg, ValueLayout.JAVA_BYTE, off, cell);
                        } else {
                            MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, off, s[o], i, cell);
                        }
                        i += cell;
                    }
                }
            }
        }
    }

    private long tokensIn(int block) {
        return Math.min((block + 1L) * c.blockSize(), c.tokens()) - (long) block * c.blockSize();
    }

    /** A random block below {@code bound}, other than {@code a}, {@code b} and {@code d}. */
    private int pickBlock(int bound, int a, int b, int d) {
        while (true) {
            int x = rng.nextInt(bound);
            if (x != a && x != b && x != d) {
                return x;
            }
        }
    }

    private int spareProducerPage() {
        boolean[] used = new boolean[(int) producer.numPages()];
        for (int p : pTable) {
            used[p] = true;
        }
        return IntStream.range(0, used.length).filter(p -> !used[p]).findFirst()
                .orElseThrow(() -> new IllegalStateException("no spare producer page"));
    }

    private static MemorySegment segment(KvCacheGroup g, int layer, boolean v) {
        return ((KvMemory.Host) region(g, layer, v).memory()).segment();
    }

    private static KvRegion region(KvCacheGroup g, int layer, boolean v) {
        CacheLayer l = g.layers().get(layer);
        return v ? l.v() : l.k();
    }

    private static void flip(MemorySegment s, long off, int bit) {
        s.set(ValueLayout.JAVA_BYTE, off, (byte) (s.get(ValueLayout.JAVA_BYTE, off) ^ (1 << bit)));
    }

    /** {@code 0 .. n-1} in a Fisher-Yates shuffle drawn from {@code rng}: a page table whose free list was churned. */
    static int[] permutation(int n, SplittableRandom rng) {
        int[] p = IntStream.range(0, n).toArray();
        for (int i = n - 1; i > 0; i--) {
            int j = rng.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }

    /** Fills {@code s} with 64-bit words drawn from {@code seed}. */
    static void fill(MemorySegment s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = s.byteSize() / 8;
        for (long i = 0; i < n; i++) {
            s.setAtIndex(ValueLayout.JAVA_LONG, i, r.nextLong());
        }
    }
}
