package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.golden.Combinations;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Slice sums of tiny slices (a few items per lane per slice: fp8 with head size 64 and 32, short and partial blocks, MLA
 * rows of 576 and 656 bytes, byte cells beside them) on the emulated driver, exactly against the reference backend:
 * the warps of {@code kvc_slice_sums_*} walk several consecutive slices (LaunchPlanner's slices per warp) and write
 * each slice's sum as the walk leaves it, so a sum written to another slice's row or another block's column fails here
 * (random data: every slice's sums differ). Both modes, the three load widths, batched requests. And the point of the
 * walk: with full blocks, every batch of a lane runs full ({@code kvc_batch_counts} of the host emulation: the loads
 * that are on per batch), where one slice per warp would leave half of it empty.
 */
class TinySliceSumsTest {
    private static final long SEED = Long.getLong("kvchecksum.seed", 0x71_5CE5L);

    private static KvCacheGroup group(Random rnd, Arena arena, int layers, int heads, int kBytes, int vBytes, int pageSize,
            int numPages) {
        return group(rnd, arena, layers, heads, kBytes, vBytes, pageSize, numPages, 0);
    }

    /** A group of {@code layers} x {@code heads} slices of K (and V) cells, vLLM's token-major layout, random bytes. */
    private static KvCacheGroup group(Random rnd, Arena arena, int layers, int heads, int kBytes, int vBytes, int pageSize,
            int numPages, long offset) {
        List<CacheLayer> out = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            KvRegion k = region(rnd, arena, kBytes, heads, pageSize, numPages, offset);
            KvRegion v = vBytes == 0 ? null : region(rnd, arena, vBytes, heads, pageSize, numPages, offset);
            out.add(new CacheLayer(3 * l + 1, 0, heads, k, v));
        }
        return new KvCacheGroup(out, pageSize, numPages);
    }

    private static KvRegion region(Random rnd, Arena arena, int cell, int heads, int pageSize, int numPages, long offset) {
        long tokenStride = (long) heads * cell;
        long pageStride = pageSize * tokenStride;
        long bytes = offset + numPages * pageStride;
        MemorySegment seg = arena.allocate(bytes + 8, 64);
        for (long i = 0; i + 8 <= seg.byteSize(); i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
        return new KvRegion(KvMemory.host(seg), offset, pageStride, tokenStride, cell, cell);
    }

    private static RequestBlocks request(Random rnd, KvCacheGroup g, long tokens, int blockSize) {
        int[] table = new int[(int) Math.ceilDiv(tokens, g.pageSize())];
        for (int i = 0; i < table.length; i++) {
            table[i] = rnd.nextInt((int) g.numPages());
        }
        return RequestBlocks.of(table, tokens, 0, blockSize);
    }

    /**
     * One shape: slice sums of a request with full blocks and a partial last one, both modes, one request and a batch of
     * several; exact against the reference. {@return the slices per warp of the whole-piece slice-sums launches}
     */
    private static int check(String label, KvCacheGroup g, RequestBlocks r, ChecksumSpec spec, Random rnd) {
        KvChecksum ref = KvChecksums.reference();
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        fake.smCount = 132;
        int spw = 0;
        java.util.Set<String> kernels = new java.util.TreeSet<>();
        try (CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            KvCacheGroup dev = Relocation.relocate(g, fake::onDevice);
            List<RequestBlocks> step = new ArrayList<>(Combinations.step(rnd, g, r.blockSize(), 4));
            step.add(r);
            for (ChecksumMode mode : ChecksumMode.values()) {
                ChecksumSpec s = new ChecksumSpec(mode, spec.padding());
                String who = "seed " + SEED + ", " + label + ", " + mode.wireName();
                fake.launchLog.clear();
                assertEquals(ref.sliceSums(SlicePlan.of(g, r, s)), cuda.sliceSums(SlicePlan.of(g, r, s)), who + " (host memory)");
                assertEquals(ref.sliceSums(SlicePlan.of(g, r, s)), cuda.sliceSums(SlicePlan.of(dev, r, s)), who + " (device memory)");
                assertEquals(ref.sliceSums(ref.compile(g, step, s)), cuda.sliceSums(cuda.compile(dev, step, s)),
                        who + " (" + step.size() + " requests in one launch)");
                assertArrayEquals(ref.blockChecksums(SlicePlan.of(g, r, s)), cuda.blockChecksums(SlicePlan.of(dev, r, s)),
                        who + " (block checksums)");
                assertEquals(ref.blockChecksums(ref.compile(g, step, s)).stream().map(a -> Arrays.stream(a).boxed().toList()).toList(),
                        cuda.blockChecksums(cuda.compile(dev, step, s)).stream().map(a -> Arrays.stream(a).boxed().toList()).toList(),
                        who + " (block checksums, " + step.size() + " requests in one launch)");
                for (FakeCudaDriver.Launch l : fake.launchLog) {
                    kernels.add(l.name());
                    if (l.name().startsWith("kvc_slice_sums") || l.name().startsWith("kvc_byte_cells")) {
                        spw = Math.max(spw, l.slicesPerPart());
                    }
                }
            }
            System.out.printf("%s: %d slices, slices per warp %d, kernels %s%n", label, SlicePlan.of(g, r, spec).numSlices(), spw,
                    kernels);
        } finally {
            fake.freeUploads();
        }
        return spw;
    }

    @Test
    void sliceSumsOfTinySlicesEqualTheReference() {
        System.out.println("TinySliceSumsTest seed = " + SEED + " (rerun with -Dkvchecksum.seed=" + SEED + ")");
        Random rnd = new Random(SEED);
        ChecksumSpec plain = new ChecksumSpec(ChecksumMode.STANDARD, CellPadding.NONE);
        try (Arena arena = Arena.ofConfined()) {
            // fp8, head size 64: 64 B K + 64 B V; 16-byte, 8-byte (offset 8) and byte-assembled (offset 4) loads
            for (long offset : new long[] {0, 8, 4}) {
                KvCacheGroup g = group(rnd, arena, 4, 8, 64, 64, 16, 12, offset);
                int spw = check("fp8 head 64, offset " + offset + ", block 16", g, request(rnd, g, 16 * 5 + 7, 16), plain, rnd);
                // byte-assembled pieces: 16 a cell, 8 a lane per slice, a batch already; 16- and 8-byte loads: 4 and 8 of 8 and 16
                assertTrue(offset == 4 ? spw == 1 : spw > 1, "fp8 head 64 (offset " + offset + "): slices per warp " + spw);
            }
            // fp8, head size 32; blocks of 16 and of 3 (partial last blocks)
            KvCacheGroup h32 = group(rnd, arena, 8, 4, 32, 32, 16, 12);
            assertTrue(check("fp8 head 32, block 16", h32, request(rnd, h32, 16 * 4 + 1, 16), plain, rnd) > 1, "fp8 head 32");
            assertTrue(check("fp8 head 32, block 3", h32, request(rnd, h32, 3 * 9 + 2, 3), plain, rnd) > 1, "fp8 head 32, block 3");
            // MLA rows, K only: 576 and 656 bytes (vLLM's fp8_ds_mla); a full block of 16 fills a lane, blocks of 1 and 2 do not
            for (int row : new int[] {576, 656}) {
                KvCacheGroup mla = group(rnd, arena, 40, 1, row, 0, 16, 10);
                check("MLA " + row + " B, block 16", mla, request(rnd, mla, 16 * 3 + 5, 16), plain, rnd);
                assertTrue(check("MLA " + row + " B, block 1", mla, request(rnd, mla, 9, 1), plain, rnd) > 1, "MLA " + row + ", block 1");
                assertTrue(check("MLA " + row + " B, block 2", mla, request(rnd, mla, 11, 2), plain, rnd) > 1, "MLA " + row + ", block 2");
            }
            // more slices than a CTA row of one warp per slice, and a count that leaves the last warp's walk short
            KvCacheGroup odd = group(rnd, arena, 7, 5, 64, 64, 8, 12);
            assertTrue(check("fp8 head 64, 35 slices, page 8, block 16", odd, request(rnd, odd, 16 * 3 + 9, 16), plain, rnd) > 1,
                    "35 slices");
            // byte cells (index-K's 132-byte cells, zero-padded) beside whole-piece fp8 layers: both kinds of launch
            List<CacheLayer> mixed = new ArrayList<>(group(rnd, arena, 3, 8, 64, 64, 16, 12).layers());
            mixed.add(new CacheLayer(99, 0, 1, region(rnd, arena, 132, 1, 16, 12, 0), null));
            KvCacheGroup withBytes = new KvCacheGroup(mixed, 16, 12);
            ChecksumSpec padded = new ChecksumSpec(ChecksumMode.STANDARD, CellPadding.ZEROS);
            check("fp8 head 64 and 132-byte cells, block 16", withBytes, request(rnd, withBytes, 16 * 4 + 3, 16), padded, rnd);
            // byte cells alone, many slices: index-K's 132-byte cells (K only), and 12 + 20 bytes (pieces straddling K
            // and V); the byte-cell kernels' warps walk several slices where one does not fill a batch
            KvCacheGroup indexK = group(rnd, arena, 6, 4, 132, 0, 16, 12);
            check("132-byte cells, 24 slices, block 16", indexK, request(rnd, indexK, 16 * 3 + 5, 16), padded, rnd);
            assertTrue(check("132-byte cells, 24 slices, block 2", indexK, request(rnd, indexK, 2 * 7 + 1, 2), padded, rnd) > 1,
                    "132-byte cells, block 2");
            KvCacheGroup straddle = group(rnd, arena, 5, 7, 12, 20, 8, 12);
            assertTrue(check("12 + 20-byte cells, 35 slices, block 16", straddle, request(rnd, straddle, 16 * 3 + 9, 16), padded,
                    rnd) > 1, "12 + 20-byte cells");
            KvCacheGroup mixedBytes = new KvCacheGroup(List.of(new CacheLayer(1, 0, 3, region(rnd, arena, 12, 3, 16, 12, 0),
                    region(rnd, arena, 20, 3, 16, 12, 0)), new CacheLayer(2, 0, 4, region(rnd, arena, 60, 4, 16, 12, 0), null),
                    new CacheLayer(5, 0, 12, region(rnd, arena, 20, 12, 16, 12, 0), null)), 16, 12);
            // 19 slices, 2 a warp: the walk of slices 2 (with V) and 3 (K only) takes the path with V
            assertEquals(2, check("byte cells with and without V in one walk, block 4", mixedBytes,
                    request(rnd, mixedBytes, 4 * 9 + 3, 4), padded, rnd), "byte cells with and without V");
        }
    }

    /**
     * Full blocks of tiny slices: every lane's batch of loads runs full at run time (the host emulation counts the loads
     * that are on per batch), the {@code KVC_BATCH_SLOTS} of the variant, in the slices kernels and in the fused
     * block-checksum kernels (whose parts the planner makes large enough for a warp's walk to fill the batch); one slice
     * per warp would fill half (fp8 head 64) or a quarter (head 32) of it. The same for byte cells, both kernels, in
     * pieces per batch ({@code KVC_BYTE_CELL_BATCH}): 60-byte K-only cells give a lane 4 of 8, 12 + 20-byte cells 2 of 4.
     */
    @Test
    void fullBlocksOfTinySlicesFillEveryBatch() {
        Random rnd = new Random(SEED + 1);
        HostLibrary lib = HostLibrary.load();
        FakeCudaDriver fake = new FakeCudaDriver(lib);
        fake.smCount = 4;  // 64 CTAs wanted, more than 6 blocks give: slices per warp as the batch needs
        record Shape(String label, int layers, int heads, int k, int v, long offset, int slots) {
        }
        List<Shape> shapes = List.of(
                new Shape("fp8 head 64, 16-byte loads", 4, 8, 64, 64, 0, LaunchPlanner.BATCH_SLOTS_16B),
                new Shape("fp8 head 64, 8-byte loads", 4, 8, 64, 64, 8, LaunchPlanner.BATCH_SLOTS_8B),
                new Shape("fp8 head 64, byte-assembled pieces", 4, 8, 64, 64, 4, LaunchPlanner.BATCH_SLOTS_1B),
                new Shape("fp8 head 32, 16-byte loads", 8, 4, 32, 32, 0, LaunchPlanner.BATCH_SLOTS_16B),
                new Shape("fp8 head 32, 8-byte loads", 8, 4, 32, 32, 8, LaunchPlanner.BATCH_SLOTS_8B),
                new Shape("byte cells, 60 bytes K only", 4, 8, 60, 0, 0, LaunchPlanner.BYTE_CELL_BATCH_K),
                new Shape("byte cells, 12 + 20 bytes", 4, 8, 12, 20, 0, LaunchPlanner.BYTE_CELL_BATCH_KV));
        ChecksumSpec padded = new ChecksumSpec(ChecksumMode.STANDARD, CellPadding.ZEROS);
        try (Arena arena = Arena.ofConfined(); CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            long[] counts = new long[2];
            for (Shape s : shapes) {
                KvCacheGroup g = group(rnd, arena, s.layers(), s.heads(), s.k(), s.v(), 16, 12, s.offset());
                RequestBlocks r = request(rnd, g, 16 * 6, 16);
                lib.kvc_batch_counts(counts);  // reset
                assertEquals(KvChecksums.reference().sliceSums(SlicePlan.of(g, r, padded)), cuda.sliceSums(SlicePlan.of(g, r, padded)),
                        s.label());
                lib.kvc_batch_counts(counts);
                double perBatch = (double) counts[0] / counts[1];
                System.out.printf("%s, slice sums: %d loads on in %d batches of a lane, %.2f of %d per batch%n", s.label(),
                        counts[0], counts[1], perBatch, s.slots());
                assertEquals(s.slots(), perBatch, 0.0, s.label() + ": loads on per batch of a lane, slice sums");
                assertArrayEquals(KvChecksums.reference().blockChecksums(SlicePlan.of(g, r, padded)),
                        cuda.blockChecksums(SlicePlan.of(g, r, padded)), s.label());
                lib.kvc_batch_counts(counts);
                perBatch = (double) counts[0] / counts[1];
                System.out.printf("%s, block checksums: %d loads on in %d batches of a lane, %.2f of %d per batch%n", s.label(),
                        counts[0], counts[1], perBatch, s.slots());
                assertEquals(s.slots(), perBatch, 0.0, s.label() + ": loads on per batch of a lane, block checksums");
            }
        }
    }
}
