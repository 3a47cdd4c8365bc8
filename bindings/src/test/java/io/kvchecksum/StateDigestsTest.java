package io.kvchecksum;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The edges of the state-row digest the golden vectors cannot reach (memories under 8 bytes, device memory on a CPU
 * backend) and the pure-Java backends against the literal reading; NumPy's values are in the golden suite.
 */
class StateDigestsTest {
    private static final long SEED = 0x57A7E;

    @Test
    void handComputedValues() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(24);
            for (int i = 0; i < 16; i++) {
                s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
            }
            KvMemory m = KvMemory.host(s);
            List<StateRow> rows = List.of(new StateRow("empty", m, 5, 0), new StateRow("one", m, 0, 1),
                    new StateRow("piece", m, 0, 8), new StateRow("nine", m, 0, 9), new StateRow("zeros", m, 16, 8));
            long[] expected = {0, 1, 0x0807060504030201L, 0x0807060504030201L + 9 * 3, 0};
            for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu())) {
                assertArrayEquals(expected, k.stateDigests(rows, ChecksumMode.STANDARD), k.name());
            }
        }
    }

    @Test
    void everyLengthAndOffsetAgreesWithTheLiteralReadingInBothModes() {
        System.out.println("StateDigestsTest seed = " + SEED);
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(600);
            for (long i = 0; i < s.byteSize(); i++) {
                s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            List<StateRow> rows = new ArrayList<>();
            for (int len = 0; len <= 80; len++) {
                rows.add(new StateRow("r" + len, KvMemory.host(s), rnd.nextInt(600 - len + 1), len));
            }
            for (ChecksumMode mode : ChecksumMode.values()) {
                long[] expected = rows.stream().mapToLong(r -> StateDigests.reference(r, mode)).toArray();
                for (KvChecksum k : List.of(KvChecksums.reference(), KvChecksums.cpu(), KvChecksums.cpu(1))) {
                    assertArrayEquals(expected, k.stateDigests(rows, mode), k.name() + " " + mode + " seed " + SEED);
                }
            }
        }
    }

    @Test
    void theTailIsZeroPaddedAtItsEndAndBytesOutsideTheRowNeverCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(32);
            MemorySegment b = arena.allocate(32);
            a.fill((byte) 0x11);
            b.fill((byte) 0x77);
            MemorySegment.copy(new byte[] {1, 2, 3}, 0, a, java.lang.foreign.ValueLayout.JAVA_BYTE, 10, 3);
            MemorySegment.copy(new byte[] {1, 2, 3}, 0, b, java.lang.foreign.ValueLayout.JAVA_BYTE, 10, 3);
            for (ChecksumMode mode : ChecksumMode.values()) {
                long da = KvChecksums.cpu().stateDigests(List.of(new StateRow("a", KvMemory.host(a), 10, 3)), mode)[0];
                long db = KvChecksums.cpu().stateDigests(List.of(new StateRow("b", KvMemory.host(b), 10, 3)), mode)[0];
                assertEquals(Definition.pieceValue(0x030201L, mode), da, mode.wireName());
                assertEquals(da, db, mode.wireName());
            }
            b.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 12, (byte) 4);
            assertNotEquals(0x030201L, KvChecksums.cpu().stateDigests(List.of(new StateRow("b", KvMemory.host(b), 10, 3)),
                    ChecksumMode.STANDARD)[0]);
        }
    }

    @Test
    void aMemoryUnderEightBytesIsReadDirectlyOnHostAndRefusedOnDevice() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(5);
            s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 1, (byte) 0xAB);
            s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 3, (byte) 0xCD);
            StateRow row = new StateRow("tiny", KvMemory.host(s), 1, 3);
            assertEquals(0xCD00ABL, KvChecksums.cpu().stateDigests(List.of(row), ChecksumMode.STANDARD)[0]);
            assertEquals(Definition.feistel3(0xCD00ABL), KvChecksums.reference().stateDigests(List.of(row), ChecksumMode.MIXED)[0]);
        }
        StateRow dev = new StateRow("tiny", KvMemory.device(0x1000, 5), 1, 3);
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                () -> KvChecksums.cpu().stateDigests(List.of(dev), ChecksumMode.STANDARD));
        assertTrue(e.getMessage().contains("tiny"), e.getMessage());
        // Device memory a CPU backend cannot read is refused by the plan, before any read.
        StateRow big = new StateRow("ssm", KvMemory.device(0x1000, 64), 0, 64);
        assertThrows(InvalidLayoutException.class, () -> KvChecksums.cpu().stateDigests(List.of(big), ChecksumMode.STANDARD));
    }
}
