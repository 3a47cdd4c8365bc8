package io.kvchecksum.cuda;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CellPadding;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.golden.Combinations;
import io.kvchecksum.golden.GoldenVector;
import io.kvchecksum.golden.GoldenVectors;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Several requests of one step over one group, compiled into one plan, run as <b>one kernel launch</b> on the emulated
 * driver (the CTAs find their request in the batch's descriptors, {@code kvc_request_params}), and give per request
 * exactly what the reference backend gives for that request alone: block checksums and slice sums, both modes, random
 * layouts (16- and 8-byte aligned) and byte cells, requests with different token counts, first blocks and page tables,
 * some without blocks.
 */
class BatchedLaunchTest {
    private static final long STREAM = 0xBA7CL;
    private static final long SEED = 0x5eed_ba7cL;

    @Test
    void aStepOfRequestsIsOneLaunchWithEachRequestsValues() {
        System.out.println("BatchedLaunchTest seed " + SEED);
        Random rnd = new Random(SEED);
        KvChecksum reference = KvChecksums.reference();
        for (int c = 0; c < 40; c++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCase rc = RandomCase.make(rnd, arena, c % 2 == 0);
                List<RequestBlocks> requests = Combinations.step(rnd, rc.group(), rc.request().blockSize(), 2 + rnd.nextInt(8));
                check("case " + c + " (" + rc.label() + ")", rc.group(), requests, CellPadding.NONE, reference);
            }
        }
    }

    @Test
    void byteCellRequestsAreOneLaunchToo() {
        Random rnd = new Random(SEED + 1);
        KvChecksum reference = KvChecksums.reference();
        for (GoldenVector v : GoldenVectors.cells()) {
            try (Arena arena = Arena.ofConfined()) {
                KvCacheGroup g = v.group(v.buffers(arena));
                List<RequestBlocks> requests = Combinations.step(rnd, g, v.request().blockSize(), 3 + rnd.nextInt(4));
                check(v.name(), g, requests, v.padCells() ? CellPadding.ZEROS : CellPadding.NONE, reference);
            }
        }
    }


    private static void check(String label, KvCacheGroup host, List<RequestBlocks> requests, CellPadding padding,
            KvChecksum reference) {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        try (CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            KvCacheGroup dev = Relocation.relocate(host, fake::onDevice);
            for (ChecksumMode mode : ChecksumMode.values()) {
                ChecksumSpec spec = new ChecksumSpec(mode, padding);
                CompiledPlan plan = cuda.compile(dev, requests, spec);
                CompiledPlan expectedPlan = reference.compile(host, requests, spec);
                String what = label + ", " + requests.size() + " requests, " + mode.wireName();
                // block checksums on the engine's stream
                fake.launchedNames.clear();
                try (PendingChecksums p = cuda.submit(plan, STREAM)) {
                    long[] got = p.get();
                    List<long[]> expected = reference.blockChecksums(expectedPlan);
                    for (int r = 0; r < requests.size(); r++) {
                        assertArrayEquals(expected.get(r), plan.blockChecksums(got, r), what + ", request " + r);
                    }
                }
                assertEquals(plan.batches().size(), fake.launchedNames.size(),
                        what + ": one launch per batch, got " + fake.launchedNames);
                // slice sums on the backend's own stream
                fake.launchedNames.clear();
                assertEquals(reference.sliceSums(expectedPlan), cuda.sliceSums(plan), what + ", slice sums");
                assertEquals(plan.batches().size(), fake.launchedNames.size(),
                        what + ", slice sums: one launch per batch, got " + fake.launchedNames);
                // a step's requests over one group of one cell kind: one batch
                long kinds = plan.launches().stream().map(CompiledPlan.Launch::cellKind).distinct().count();
                assertEquals(plan.isEmpty() ? 0 : kinds, plan.batches().size(), what + ": " + plan);
            }
        } finally {
            fake.freeUploads();
        }
    }
}
