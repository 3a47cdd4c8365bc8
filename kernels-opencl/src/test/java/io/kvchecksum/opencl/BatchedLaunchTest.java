package io.kvchecksum.opencl;

import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.Combinations;
import io.kvchecksum.golden.GoldenVector;
import io.kvchecksum.golden.GoldenVectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Several requests of one step over one group, compiled into one plan, run as <b>one kernel launch per batch</b> (plus
 * the {@code sum_parts} that adds its partial sums, if any: one per batch too), the work items finding their block's
 * request in the batch's request words, and give per request exactly what the reference backend gives for that
 * request alone: block checksums and slice sums, both modes, both builds (the GPU and the CPU tuning, on whatever
 * device runs the tests), host memory (zero-copy windows and packed copies) and a registered {@code cl_mem}, random
 * layouts (unaligned and heap memory too) and byte cells, requests with different token counts, first blocks and
 * page tables, one without blocks.
 */
class BatchedLaunchTest {
    private static final long SEED = 0x5eed_c1ba7cL;
    private static final List<String> CHECKSUM_KERNELS = List.of("block_checksums", "slice_sums", "byte_cell_sums");
    private static final List<OpenClBackend> OPENED = new ArrayList<>();

    @Test
    void aStepOfRequestsIsOneLaunchPerBatchWithEachRequestsValues() {
        OpenClTests.requireOpenCl();
        System.out.println("BatchedLaunchTest seed " + SEED);
        Random rnd = new Random(SEED);
        KvChecksum reference = KvChecksums.reference();
        for (Tuning tuning : List.of(Tuning.CPU, Tuning.GPU)) {
            RecordingClApi rec = new RecordingClApi(ClApi.jocl());
            OpenClBackend cl = open(tuning, rec);
            for (int c = 0; c < 16; c++) {
                try (Arena arena = Arena.ofShared()) {
                    RandomLayouts.Case rc = RandomLayouts.random(rnd.nextLong(), arena);
                    List<RequestBlocks> requests = Combinations.step(rnd, rc.group(), rc.request().blockSize(), 3 + rnd.nextInt(7));
                    check(tuning.name() + ", " + rc.label(), cl, rec, rc.group(), requests, CellPadding.NONE, reference);
                }
            }
            for (GoldenVector v : GoldenVectors.cells()) {
                try (Arena arena = Arena.ofShared()) {
                    KvCacheGroup g = v.group(v.buffers(arena));
                    List<RequestBlocks> requests = Combinations.step(rnd, g, v.request().blockSize(), 3 + rnd.nextInt(4));
                    check(tuning.name() + ", " + v.name(), cl, rec, g, requests, v.padCells() ? CellPadding.ZEROS : CellPadding.NONE,
                            reference);
                }
            }
        }
    }

    private static synchronized OpenClBackend open(Tuning tuning, ClApi calls) {
        OpenClBackend b = OpenClBackend.open(OpenClTests.backend().device().index(), tuning, calls);
        OPENED.add(b);
        return b;
    }


    /** The requests over the host group and over a copy of it in a registered cl_mem, both modes, both outputs. */
    private static void check(String label, OpenClBackend backend, RecordingClApi rec, KvCacheGroup host,
            List<RequestBlocks> requests, CellPadding padding, KvChecksum reference) {
        KvChecksum cl = KvChecksum.of(backend);  // never closed: it would close the backend (OPENED closes it)
        for (KvCacheGroup source : List.of(host, DeviceBufferTest.onDevice(backend, host))) {
            for (ChecksumMode mode : ChecksumMode.values()) {
                ChecksumSpec spec = new ChecksumSpec(mode, padding);
                CompiledPlan plan = cl.compile(source, requests, spec);
                CompiledPlan expectedPlan = reference.compile(host, requests, spec);
                String what = label + ", " + requests.size() + " requests, " + mode.wireName() + ", "
                        + plan.launches().getFirst().memory() + ", seed " + SEED;
                rec.start();
                try (PendingChecksums p = cl.submit(plan)) {
                    long[] got = p.get();
                    List<long[]> expected = reference.blockChecksums(expectedPlan);
                    for (int r = 0; r < requests.size(); r++) {
                        assertArrayEquals(expected.get(r), plan.blockChecksums(got, r), what + ", request " + r);
                    }
                }
                assertOneLaunchPerBatch(plan, rec.launched(), what);
                rec.stop();
                rec.start();
                assertEquals(reference.sliceSums(expectedPlan), cl.sliceSums(plan), what + ", slice sums");
                assertOneLaunchPerBatch(plan, rec.launched(), what + ", slice sums");
                rec.stop();
                // a step's requests over one group of one cell kind: one batch
                long kinds = plan.launches().stream().map(CompiledPlan.Launch::cellKind).distinct().count();
                assertEquals(kinds, plan.batches().size(), what + ": " + plan);
                assertTrue(plan.launches().size() > plan.batches().size(), what + ": " + plan);
            }
        }
    }

    private static void assertOneLaunchPerBatch(CompiledPlan plan, List<String> launched, String what) {
        long checksums = launched.stream().filter(k -> CHECKSUM_KERNELS.contains(k.replace("_mixed", ""))).count();
        long sums = launched.stream().filter("sum_parts"::equals).count();
        assertEquals(plan.batches().size(), checksums, what + ": one checksum kernel per batch, got " + launched);
        assertTrue(sums <= checksums && checksums + sums == launched.size(), what + ": " + launched);
    }

    @AfterAll
    static synchronized void close() {
        OPENED.forEach(OpenClBackend::close);
        OPENED.clear();
        DeviceBufferTest.release();
    }
}
