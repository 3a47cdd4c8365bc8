package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.golden.DigestSuite;
import io.kvchecksum.golden.DigestVector;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * SGLang's page digest through the CUDA backend's host path (piece table, job slot, launch, result copy, the
 * combination) with {@code kvc_page_digest}'s arithmetic run on the CPU by the host test library: NumPy's vectors
 * (zlib's Adler-32) with the buffers in host memory and in simulated device memory, and pieces at odd addresses
 * and across the 8 KiB piece size against {@code java.util.zip.Adler32}.
 */
class EmulatedDigestTest {
    @RegisterExtension
    static final EmulatedCuda CUDA = new EmulatedCuda();

    @TestFactory
    Stream<DynamicNode> hostMemory() {
        assumeTrue(DigestVector.present(), "the kvchecksum-golden jar carries no vectors-digest/index.json");
        return DigestSuite.tests(CUDA.wide());
    }

    @TestFactory
    Stream<DynamicNode> deviceMemory() {
        assumeTrue(DigestVector.present(), "the kvchecksum-golden jar carries no vectors-digest/index.json");
        return DigestSuite.tests(CUDA.wide(), CUDA.fake()::onDevice);
    }

    @Test
    void oddAddressesAndLongRunsAgainstJavaUtilZip() {
        long seed = 0xCDA_D1E5L;
        System.out.println("EmulatedDigestTest seed 0x" + Long.toHexString(seed));
        Random rnd = new Random(seed);
        try (Arena arena = Arena.ofShared()) {
            KvLayouts.PagedShape s = new KvLayouts.PagedShape(6, 16, 2, 136, 2);   // 8704-byte pages: a piece and a tail
            MemorySegment k = arena.allocate(6 * 8704, 64);
            MemorySegment v = arena.allocate(6 * 8704, 64);
            MemorySegment state = arena.allocate(30_000, 64);
            for (MemorySegment m : List.of(k, v, state)) {
                byte[] b = new byte[(int) m.byteSize()];
                rnd.nextBytes(b);
                for (int i = 0; i < b.length; i += 7) {
                    b[i] = (byte) 0xFF;
                }
                MemorySegment.copy(MemorySegment.ofArray(b), 0, m, 0, b.length);
            }
            var g = KvLayouts.sglang(s, 0, new int[] {0}, List.of(KvMemory.host(k)), List.of(KvMemory.host(v)));
            List<StateRow> rows = List.of(new StateRow("conv", KvMemory.host(state), 3, 20_001),   // odd address: bytes
                    new StateRow("ssm", KvMemory.host(state), 20_009, 1), new StateRow("ssm", KvMemory.host(state), 20_016, 9_000));
            PageDigestPlan plan = PageDigestPlan.of(SlicePlan.of(g, RequestBlocks.of(new int[] {4, 0, 5}, 40, 16)), rows);
            assertEquals(KvChecksums.reference().pageDigest(plan), CUDA.wide().pageDigest(plan));
        }
    }
}
