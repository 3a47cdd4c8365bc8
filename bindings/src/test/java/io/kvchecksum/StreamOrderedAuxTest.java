package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The stream-ordered auxiliary operations on the CPU backends, which have no stream: the stream argument is ignored,
 * the result is computed on the calling thread (done before {@code get()}), and it equals the synchronous operation's
 * and the literal reading's exactly. Also the mixer's inverse that lets state digests run as one plan in the mixed
 * mode. The GPU backends' enqueue (on the caller's stream, no synchronization) is tested in their modules.
 */
class StreamOrderedAuxTest {
    private static final long SEED = 0x5_7AE0L;
    /** Any handle: CPU backends ignore it. */
    private static final long STREAM = 0xBADC0FFEEL;

    private static List<KvChecksum> cpuBackends() {
        return List.of(KvChecksums.reference(), KvChecksums.cpu(), KvChecksums.cpu(1));
    }

    @Test
    void unmixUndoesTheMixer() {
        System.out.println("StreamOrderedAuxTest seed = " + SEED);
        Random rnd = new Random(SEED);
        List<Long> xs = new ArrayList<>(List.of(0L, -1L, 1L, Long.MIN_VALUE, Long.MAX_VALUE, 0xFFFFFFFFL, 0xFFFFFFFF00000000L));
        for (int i = 0; i < 100_000; i++) {
            xs.add(rnd.nextLong());
        }
        for (long x : xs) {
            assertEquals(x, StateDigests.unmix(Definition.feistel3(x)), () -> "unmix(feistel3(0x" + Long.toHexString(x) + "))");
            assertEquals(x, Definition.feistel3(StateDigests.unmix(x)), () -> "feistel3(unmix(0x" + Long.toHexString(x) + "))");
        }
    }

    @Test
    void submitStateDigestsEqualsTheLiteralReadingAndIsDoneAtOnce() {
        Random rnd = new Random(SEED + 1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(700);
            for (long i = 0; i < s.byteSize(); i++) {
                s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            MemorySegment tiny = arena.allocate(5);   // under 8 bytes: its tail is read directly
            tiny.fill((byte) 0x5A);
            List<StateRow> rows = new ArrayList<>();
            for (int len = 0; len <= 90; len++) {
                rows.add(new StateRow("r" + len, KvMemory.host(s), rnd.nextInt(700 - len + 1), len));
            }
            rows.add(new StateRow("tiny", KvMemory.host(tiny), 1, 3));
            for (ChecksumMode mode : ChecksumMode.values()) {
                long[] expected = rows.stream().mapToLong(r -> StateDigests.reference(r, mode)).toArray();
                for (KvChecksum k : cpuBackends()) {
                    try (PendingChecksums p = k.submitStateDigests(rows, mode, STREAM)) {
                        assertTrue(p.isDone(), k.name() + ": a CPU backend computes before returning");
                        assertArrayEquals(expected, p.get(), k.name() + " " + mode + " seed " + (SEED + 1));
                        assertArrayEquals(expected, p.get(), k.name() + " " + mode + ": get() again");
                    }
                    assertArrayEquals(expected, k.stateDigests(rows, mode), k.name() + " " + mode + " (synchronous)");
                }
            }
            try (PendingChecksums p = KvChecksums.cpu().submitStateDigests(List.of(), ChecksumMode.MIXED, STREAM)) {
                assertArrayEquals(new long[0], p.get());
            }
            assertThrows(InvalidLayoutException.class, () -> KvChecksums.cpu().submitStateDigests(rows, null, STREAM));
            assertThrows(InvalidLayoutException.class, () -> KvChecksums.cpu().submitStateDigests(
                    List.of(new StateRow("dev", KvMemory.device(0x1000, 64), 0, 64)), ChecksumMode.STANDARD, STREAM),
                    "a CPU backend cannot read device memory");
        }
    }

    @Test
    void submitSliceSumsPageDigestAndProbesEqualTheSynchronousOperations() {
        Random rnd = new Random(SEED + 2);
        for (int trial = 0; trial < 30; trial++) {
            try (Arena arena = Arena.ofConfined()) {
                RandomCaches.Case c = RandomCaches.random(arena, rnd, 1, 90);
                SlicePlan plan = SlicePlan.of(c.group(), c.request());
                int probe = 8 * (1 + rnd.nextInt(10));
                String who = "seed " + (SEED + 2) + " trial " + trial;
                MemorySegment state = arena.allocate(100);
                state.fill((byte) trial);
                PageDigestPlan digestPlan = PageDigestPlan.of(plan, List.of(new StateRow("s", KvMemory.host(state), 3, 61)));
                long digest = KvChecksums.reference().pageDigest(digestPlan);
                SliceSums sums = KvChecksums.reference().sliceSums(plan);
                PageProbe.Probes probes = PageProbe.compute(KvChecksums.reference(), plan, probe);
                for (KvChecksum k : cpuBackends()) {
                    try (Pending<SliceSums> p = k.submitSliceSums(plan, STREAM)) {
                        assertTrue(p.isDone(), k.name());
                        assertEquals(sums, p.get(), k.name() + " slice sums " + who);
                    }
                    try (Pending<Long> p = k.submitPageDigest(digestPlan, STREAM)) {
                        assertTrue(p.isDone(), k.name());
                        assertEquals(digest, p.get(), k.name() + " page digest " + who);
                    }
                    try (PageProbe.PendingProbes p = PageProbe.submit(k, plan, probe, STREAM)) {
                        assertTrue(p.isDone(), k.name() + ": host memory is probed at once");
                        assertEquals(probes, p.get(), k.name() + " probes " + who);
                    }
                }
                assertThrows(InvalidLayoutException.class, () -> PageProbe.submit(KvChecksums.cpu(), plan, 12, STREAM),
                        "probeBytes not a multiple of 8");
            }
        }
    }
}
