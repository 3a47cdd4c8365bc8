package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * {@link Aggregator} on hand-made worker records: every way a set of records is refused, with its reason and detail,
 * and the sums of values and fingerprints it builds from trustworthy ones.
 */
class AggregatorTest {
    static final List<BlockSelection> SEL = List.of(BlockSelection.producer(0, new int[] {5, 6, 7}, 0, 40, 16, null));
    static final BlockRange RANGE = new BlockRange(16, 0, 3);

    static WorkerRecord rec(int tp, int pp, long fp, long... values) {
        return new WorkerRecord(tp, pp, 40, List.of(new PartialGroup(0, fp, RANGE, Map.of(ReplicaKey.NONE, values))), Map.of());
    }

    static Aggregator.Incomplete refused(int tp, int pp, List<WorkerRecord> records) {
        return assertInstanceOf(Aggregator.Incomplete.class, Aggregator.producer(tp, pp, 40, SEL, records));
    }

    @Test
    void sumsValuesOverAllWorkersAndFingerprintsOverStages() {
        List<WorkerRecord> r = List.of(rec(0, 0, 10, 1, 2, 3), rec(1, 0, 10, 10, 20, 30), rec(0, 1, 7, 100, 200, 300),
                rec(1, 1, 7, -1, -1, -1));
        ChecksumPayload p = assertInstanceOf(Aggregator.Complete.class, Aggregator.producer(2, 2, 40, SEL, r)).payload();
        GroupChecksums g = p.groups().get(0);
        assertArrayEquals(new long[] {110, 221, 332}, g.values());
        assertEquals(17, g.fingerprint(), "one TP rank's fingerprint per stage, summed over stages");
        assertEquals(2, p.tpSize());
        assertEquals(40, p.numTokens());
        assertEquals(16, g.blockSize());
        assertEquals(0, g.start());
    }

    @Test
    void refusesRecordsThatCannotBeSummed() {
        Aggregator.Incomplete i = refused(2, 1, List.of(rec(0, 0, 1, 1, 2, 3), rec(2, 0, 1, 1, 2, 3)));
        assertEquals(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, i.reason());
        assertEquals("a record from TP rank 2 PP stage 0 outside TP 2 x PP 1", i.detail());
        i = refused(1, 1, List.of(rec(0, 1, 1, 1, 2, 3)));
        assertEquals("a record from TP rank 0 PP stage 1 outside TP 1 x PP 1", i.detail());
        i = refused(2, 1, List.of(rec(1, 0, 1, 1, 2, 3), rec(1, 0, 1, 1, 2, 3)));
        assertEquals("TP rank 1 PP stage 0 reported twice", i.detail());
        i = refused(2, 2, List.of(rec(0, 0, 1, 1, 2, 3), rec(1, 0, 1, 1, 2, 3), rec(1, 1, 1, 1, 2, 3)));
        assertEquals("no record from TP rank 0 PP stage 1 (3 of 4 workers reported)", i.detail());
        assertThrows(IllegalArgumentException.class, () -> Aggregator.producer(0, 1, 40, SEL, List.of()));
        assertThrows(IllegalArgumentException.class, () -> Aggregator.producer(1, 0, 40, SEL, List.of()));

        WorkerRecord other = new WorkerRecord(0, 0, 39, rec(0, 0, 1, 1, 2, 3).groups(), Map.of());
        i = refused(1, 1, List.of(other));
        assertEquals(UnverifiedReason.OTHER_BLOCKS_THAN_SCHEDULED, i.reason());
        assertEquals("TP rank 0 PP stage 0 checksummed 39 tokens, 40 were scheduled", i.detail());

        WorkerRecord unscheduled = new WorkerRecord(0, 0, 40, List.of(new PartialGroup(3, 1, RANGE, Map.of())), Map.of());
        assertEquals("TP rank 0 PP stage 0 checksummed group 3, which was not scheduled", refused(1, 1, List.of(unscheduled)).detail());
        PartialGroup g0 = rec(0, 0, 1, 1, 2, 3).groups().get(0);
        WorkerRecord twice = new WorkerRecord(0, 0, 40, List.of(g0, g0), Map.of());
        assertEquals("TP rank 0 PP stage 0 reported group 0 twice", refused(1, 1, List.of(twice)).detail());
        WorkerRecord shifted = new WorkerRecord(0, 0, 40, List.of(new PartialGroup(0, 1, new BlockRange(16, 1, 3),
                Map.of(ReplicaKey.NONE, new long[2]))), Map.of());
        assertEquals("TP rank 0 PP stage 0 checksummed blocks [1, 3) of 16 tokens of group 0, blocks [0, 3) of 16 tokens were scheduled",
                refused(1, 1, List.of(shifted)).detail());
        assertEquals("TP rank 0 PP stage 0 sent 2 values for blocks [0, 3) of 16 tokens of group 0",
                refused(1, 1, List.of(rec(0, 0, 1, 1, 2))).detail());
        WorkerRecord both = new WorkerRecord(0, 0, 40, List.of(g0), Map.of(0, "Mamba"));
        assertEquals("TP rank 0 PP stage 0 both checksummed and skipped group 0", refused(1, 1, List.of(both)).detail());
        WorkerRecord silent = new WorkerRecord(0, 0, 40, List.of(), Map.of());
        assertEquals("TP rank 0 PP stage 0 reported nothing for group 0, which was scheduled", refused(1, 1, List.of(silent)).detail());
        assertEquals("group 0: TP rank 1 of PP stage 0 holds other layers than rank 0 (fingerprints differ)",
                refused(2, 1, List.of(rec(0, 0, 1, 1, 2, 3), rec(1, 0, 2, 1, 2, 3))).detail());
        WorkerRecord longer = new WorkerRecord(0, 0, 41, rec(0, 0, 1, 1, 2, 3).groups(), Map.of());
        assertThrows(IllegalArgumentException.class, () -> Aggregator.producer(1, 1, 41, SEL, List.of(longer)),
                "a selection for another token count is the engine's bug, not the workers'");
    }

    @Test
    void aGroupAnyWorkerSkippedIsLeftOutWithTheFirstReason() {
        List<BlockSelection> sel = new ArrayList<>(SEL);
        sel.add(BlockSelection.producer(1, new int[] {1, 2, 3}, 0, 40, 16, null));
        sel.add(BlockSelection.producer(2, new int[] {1, 0, 3}, 0, 40, 16, null));   // excluded: null after data
        WorkerRecord r0 = new WorkerRecord(0, 0, 40, rec(0, 0, 1, 1, 2, 3).groups(), Map.of(1, "Mamba state"));
        WorkerRecord r1 = new WorkerRecord(1, 0, 40, List.of(rec(1, 0, 1, 4, 5, 6).groups().get(0),
                new PartialGroup(1, 3, RANGE, Map.of(ReplicaKey.NONE, new long[3]))), Map.of());
        Aggregator.Complete c = assertInstanceOf(Aggregator.Complete.class, Aggregator.producer(2, 1, 40, sel, List.of(r0, r1)));
        assertEquals(Map.of(1, "TP rank 0 PP stage 0: Mamba state"), c.skippedGroups());
        assertEquals(1, c.payload().groups().size());
        assertArrayEquals(new long[] {5, 7, 9}, c.payload().groups().get(0).values());
    }

    @Test
    void theConsumerBuildsOneCheckPerCopyAndTheProducerUsesCopyZero() {
        BlockRange range = new BlockRange(16, 0, 1);
        // Rank r holds copy r of a layer replicated on 2 ranks, and its own shard of an unreplicated layer.
        List<WorkerRecord> r = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            Map<ReplicaKey, long[]> cols = new java.util.LinkedHashMap<>();
            cols.put(ReplicaKey.NONE, new long[] {10 * (t + 1)});
            cols.put(new ReplicaKey(2, t), new long[] {100 + t});
            r.add(new WorkerRecord(t, 0, 10, List.of(new PartialGroup(0, 5, range, cols)), Map.of()));
        }
        List<BlockSelection> sel = List.of(BlockSelection.producer(0, new int[] {1}, 0, 10, 16, null));
        ChecksumPayload c = assertInstanceOf(Aggregator.Complete.class, Aggregator.consumer(2, 1, 10, sel, r)).payload();
        assertEquals(2, c.groups().size());
        assertArrayEquals(new long[] {130}, c.groups().get(0).values(), "check 0: both shards and copy 0");
        assertArrayEquals(new long[] {131}, c.groups().get(1).values(), "check 1: both shards and copy 1");
        ChecksumPayload p = assertInstanceOf(Aggregator.Complete.class, Aggregator.producer(2, 1, 10, sel, r)).payload();
        assertEquals(1, p.groups().size());
        assertArrayEquals(new long[] {130}, p.groups().get(0).values());
    }
}
