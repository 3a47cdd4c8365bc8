package io.kvchecksum.engine.verdict;

import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.worker.Aggregator;
import io.kvchecksum.engine.worker.BlockRange;
import io.kvchecksum.engine.worker.PartialGroup;
import io.kvchecksum.engine.worker.ReplicaKey;
import io.kvchecksum.engine.worker.WorkerRecord;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * The contracts of the engine's value types: what their constructors reject, that arrays are copied in and out, and
 * that equality and the text they log depend on every field.
 */
class ValueTypesTest {

    @Test
    void groupVerdictStatesAreConsistent() {
        assertThrows(NullPointerException.class, () -> new GroupVerdict(0, null, null, null, ""));
        assertThrows(IllegalArgumentException.class, () -> new GroupVerdict(0, Status.MATCH, null, UnverifiedReason.ONE_SIDE_ONLY, ""));
        assertThrows(IllegalArgumentException.class, () -> new GroupVerdict(0, Status.UNVERIFIED, null, null, ""));
        assertThrows(IllegalArgumentException.class, () -> new GroupVerdict(0, Status.MISMATCH, new long[0], null, ""));
        assertThrows(IllegalArgumentException.class, () -> new GroupVerdict(0, Status.MATCH, new long[] {1}, null, ""));
        long[] blocks = {3, 4};
        long[] left = {7};
        GroupVerdict g = new GroupVerdict(2, Status.MISMATCH, blocks, left, null, null);
        blocks[0] = 99;
        left[0] = 99;
        assertArrayEquals(new long[] {3, 4}, g.mismatchedBlocks(), "copied in");
        assertArrayEquals(new long[] {7}, g.notComparedBlocks(), "copied in");
        g.mismatchedBlocks()[0] = 99;
        g.notComparedBlocks()[0] = 99;
        assertArrayEquals(new long[] {3, 4}, g.mismatchedBlocks(), "copied out");
        assertArrayEquals(new long[] {7}, g.notComparedBlocks(), "copied out");
        assertEquals("", g.detail());
        assertEquals("group 2: MISMATCH blocks [3, 4]", g.toString());
        assertEquals("group 1: UNVERIFIED (ONE_SIDE_ONLY): why", GroupVerdict.unverified(1, UnverifiedReason.ONE_SIDE_ONLY, "why").toString());
        assertEquals("group 0: MATCH", new GroupVerdict(0, Status.MATCH, null, null, "").toString());

        GroupVerdict same = new GroupVerdict(2, Status.MISMATCH, new long[] {3, 4}, new long[] {7}, null, "");
        assertEquals(g, same);
        assertEquals(g.hashCode(), same.hashCode());
        assertNotEquals(g, new GroupVerdict(3, Status.MISMATCH, new long[] {3, 4}, new long[] {7}, null, ""));
        assertNotEquals(g, new GroupVerdict(2, Status.MISMATCH, new long[] {3}, new long[] {7}, null, ""));
        assertNotEquals(g, new GroupVerdict(2, Status.MISMATCH, new long[] {3, 4}, new long[] {8}, null, ""));
        assertNotEquals(g, new GroupVerdict(2, Status.MISMATCH, new long[] {3, 4}, new long[] {7}, null, "x"));
        assertNotEquals(g.hashCode(), new GroupVerdict(2, Status.MISMATCH, new long[] {3, 4}, new long[] {8}, null, "").hashCode());
        assertNotEquals(g.hashCode(), new GroupVerdict(2, Status.MISMATCH, new long[] {3, 5}, new long[] {7}, null, "").hashCode());
        GroupVerdict u = GroupVerdict.unverified(1, UnverifiedReason.ONE_SIDE_ONLY, "a");
        assertNotEquals(u, GroupVerdict.unverified(1, UnverifiedReason.FINGERPRINT_DIFFERS, "a"));
        assertNotEquals(u, new GroupVerdict(1, Status.MATCH, null, null, "a"));
        assertFalse(g.equals("group 2"));
    }

    @Test
    void decisionNeedsEveryFieldAndUsesOnlyUseLoad() {
        LoadVerdict v = LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "x");
        assertThrows(NullPointerException.class, () -> new Decision(null, Action.USE_LOAD, v));
        assertThrows(NullPointerException.class, () -> new Decision("r", null, v));
        assertThrows(NullPointerException.class, () -> new Decision("r", Action.USE_LOAD, null));
        assertTrue(new Decision("r", Action.USE_LOAD, v).useLoad());
        assertFalse(new Decision("r", Action.RECOMPUTE, v).useLoad());
        assertFalse(new Decision("r", Action.FAIL_REQUEST, v).useLoad());
    }

    @Test
    void partialGroupCopiesItsColumnsAndComparesThem() {
        long[] col = {1, 2, 3};
        Map<ReplicaKey, long[]> cols = new LinkedHashMap<>();
        cols.put(ReplicaKey.NONE, col);
        BlockRange range = new BlockRange(16, 0, 3);
        PartialGroup p = new PartialGroup(4, 9, range, cols);
        col[0] = 99;
        cols.put(new ReplicaKey(2, 1), new long[] {0, 0, 0});
        assertEquals(Set.of(ReplicaKey.NONE), p.columns().keySet(), "the map is copied");
        assertArrayEquals(new long[] {1, 2, 3}, p.columns().get(ReplicaKey.NONE), "the arrays are copied in");
        p.columns().get(ReplicaKey.NONE)[1] = 99;
        assertArrayEquals(new long[] {1, 2, 3}, p.columns().get(ReplicaKey.NONE), "and out");
        p.columns().clear();
        assertEquals(1, p.columns().size(), "the map handed out is a copy");

        PartialGroup same = new PartialGroup(4, 9, range, Map.of(ReplicaKey.NONE, new long[] {1, 2, 3}));
        assertEquals(p, same);
        assertEquals(p.hashCode(), same.hashCode());
        assertNotEquals(p, new PartialGroup(5, 9, range, Map.of(ReplicaKey.NONE, new long[] {1, 2, 3})));
        assertNotEquals(p, new PartialGroup(4, 8, range, Map.of(ReplicaKey.NONE, new long[] {1, 2, 3})));
        assertNotEquals(p, new PartialGroup(4, 9, new BlockRange(16, 1, 4), Map.of(ReplicaKey.NONE, new long[] {1, 2, 3})));
        assertNotEquals(p, new PartialGroup(4, 9, range, Map.of(ReplicaKey.NONE, new long[] {1, 2, 4})));
        assertNotEquals(p, new PartialGroup(4, 9, range, Map.of(new ReplicaKey(2, 0), new long[] {1, 2, 3})));
        assertNotEquals(p, new PartialGroup(4, 9, range, Map.of()));
        assertFalse(p.equals(range));
        assertEquals("PartialGroup[group 4, blocks [0, 3) of 16 tokens, copies [ReplicaKey[replicas=1, index=0]]]", p.toString());
        assertThrows(NullPointerException.class, () -> new PartialGroup(4, 9, null, Map.of()));
        Map<ReplicaKey, long[]> nullKey = new HashMap<>();
        nullKey.put(null, new long[3]);
        assertThrows(NullPointerException.class, () -> new PartialGroup(4, 9, range, nullKey));
    }

    @Test
    void loadVerdictCombinesItsGroups() {
        assertThrows(IllegalArgumentException.class, () -> new LoadVerdict(Status.MATCH, List.of(), UnverifiedReason.MISSING_PAYLOAD, ""));
        assertThrows(IllegalArgumentException.class, () -> new LoadVerdict(Status.UNVERIFIED,
                List.of(new GroupVerdict(0, Status.MATCH, null, null, "")), UnverifiedReason.MISSING_PAYLOAD, ""));
        LoadVerdict none = LoadVerdict.of(List.of());
        assertEquals(UnverifiedReason.NOTHING_TO_COMPARE, none.reason());
        assertEquals(Status.UNVERIFIED, none.status());
        GroupVerdict ok = new GroupVerdict(0, Status.MATCH, null, null, "fine");
        GroupVerdict bad = new GroupVerdict(1, Status.MISMATCH, new long[] {2}, null, "b");
        GroupVerdict unv = GroupVerdict.unverified(2, UnverifiedReason.FINGERPRINT_DIFFERS, "f");
        assertEquals(Status.MATCH, LoadVerdict.of(List.of(ok)).status());
        assertEquals("MATCH", LoadVerdict.of(List.of(ok)).toString());
        assertEquals(Status.UNVERIFIED, LoadVerdict.of(List.of(ok, unv)).status());
        LoadVerdict all = LoadVerdict.of(List.of(unv, ok, bad));
        assertEquals(Status.MISMATCH, all.status(), "a mismatch wins, in any order");
        assertEquals(Status.MISMATCH, LoadVerdict.of(List.of(bad, unv)).status());
        assertEquals("MISMATCH: group 2: UNVERIFIED (FINGERPRINT_DIFFERS): f; group 1: MISMATCH blocks [2]: b", all.toString());
        assertEquals(EnumSet.of(UnverifiedReason.FINGERPRINT_DIFFERS), all.reasons());
        assertEquals(ok, all.group(0));
        assertNull(all.group(7));
        assertNull(all.reason());
        assertEquals("UNVERIFIED (MISSING_PAYLOAD): none sent", LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "none sent").toString());
        assertEquals(EnumSet.of(UnverifiedReason.MISSING_PAYLOAD), LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, null).reasons());
        assertEquals("", LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, null).detail());
    }

    @Test
    void smallRecordsRejectWhatCannotBe() {
        assertThrows(IllegalArgumentException.class, () -> new BlockRange(0, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new BlockRange(16, -1, 1));
        assertThrows(IllegalArgumentException.class, () -> new BlockRange(16, 2, 1));
        assertEquals(0, new BlockRange(16, 2, 2).length());
        assertEquals(3, new BlockRange(16, 2, 5).length());
        assertEquals("blocks [2, 5) of 16 tokens", new BlockRange(16, 2, 5).toString());

        assertThrows(IllegalArgumentException.class, () -> new ReplicaKey(0, 0));
        assertThrows(IllegalArgumentException.class, () -> new ReplicaKey(2, 2));
        assertThrows(IllegalArgumentException.class, () -> new ReplicaKey(2, -1));
        assertEquals(ReplicaKey.NONE, ReplicaKey.forRank(8, 8, 7));
        assertEquals(new ReplicaKey(4, 3), ReplicaKey.forRank(2, 8, 7));
        assertEquals(new ReplicaKey(8, 5), ReplicaKey.forRank(1, 8, 5));
        assertThrows(IllegalArgumentException.class, () -> ReplicaKey.forRank(3, 8, 0));
        assertThrows(IllegalArgumentException.class, () -> ReplicaKey.forRank(0, 8, 0));
        assertThrows(IllegalArgumentException.class, () -> ReplicaKey.forRank(2, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> ReplicaKey.forRank(2, 4, 4));
        assertThrows(IllegalArgumentException.class, () -> ReplicaKey.forRank(2, 4, -1));

        assertThrows(IllegalArgumentException.class, () -> new WorkerRecord(-1, 0, 1, List.of(), Map.of()));
        assertThrows(IllegalArgumentException.class, () -> new WorkerRecord(0, -1, 1, List.of(), Map.of()));
        Map<Integer, String> skipped = new HashMap<>(Map.of(3, "x"));
        WorkerRecord r = new WorkerRecord(0, 0, 1, List.of(), skipped);
        skipped.put(4, "y");
        assertEquals(Map.of(3, "x"), r.skippedGroups());

        assertThrows(IllegalArgumentException.class, () -> new GroupChecksums(-1, 0, 16, 0, new long[0]));
        assertThrows(IllegalArgumentException.class, () -> new GroupChecksums(0, 0, 0, 0, new long[0]));
        assertThrows(IllegalArgumentException.class, () -> new GroupChecksums(0, 0, 16, -1, new long[0]));
        assertThrows(NullPointerException.class, () -> new GroupChecksums(0, 0, 16, 0, null));
        GroupChecksums g = new GroupChecksums(1, -1L, 16, 2, new long[] {5, 6});
        assertEquals("GroupChecksums[groupId=1, fingerprint=18446744073709551615, blockSize=16, start=2, blocks=2]", g.toString());
        assertEquals(4, g.end());
        assertEquals(6, g.value(1));
        assertEquals(g, new GroupChecksums(1, -1L, 16, 2, new long[] {5, 6}));
        assertEquals(g.hashCode(), new GroupChecksums(1, -1L, 16, 2, new long[] {5, 6}).hashCode());
        assertNotEquals(g, new GroupChecksums(1, -1L, 16, 2, new long[] {5, 7}));
        assertNotEquals(g, new GroupChecksums(1, -1L, 32, 2, new long[] {5, 6}));
        assertNotEquals(g, new GroupChecksums(1, 0, 16, 2, new long[] {5, 6}));
        assertNotEquals(g, new GroupChecksums(1, -1L, 16, 3, new long[] {5, 6}));
        assertNotEquals(g, new GroupChecksums(2, -1L, 16, 2, new long[] {5, 6}));

        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(3, 1, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(4, 1, 0, List.of(), "mixed"));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(2, 1, 0, List.of(), "mixed"));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(3, 1, 0, List.of(), "Mixed"));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(3, 1, 0, List.of(), ""));
        assertEquals("mixed", new ChecksumPayload(3, 1, 0, List.of(), "mixed").mode());
        assertEquals(null, new ChecksumPayload(3, 1, 0, List.of(), "later-mode").checksumMode());
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(2, 1, -1, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(2, null, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(2, 0, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(1, 2, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(1, null, 16, List.of(new GroupChecksums(0, 0, 16, 0, new long[1]))));
        assertThrows(IllegalArgumentException.class, () -> new ChecksumPayload(2, 1, 16, List.of(new GroupChecksums(0, 0, null, 0, new long[1]))));
        assertThrows(IllegalArgumentException.class, () -> ChecksumPayload.of(1, 32, List.of(new GroupChecksums(0, 0, 16, 0, new long[1]))));
        assertThrows(IllegalArgumentException.class, () -> ChecksumPayload.of(1, 32, List.of(new GroupChecksums(0, 0, 16, 3, new long[0]))));
        assertEquals(2, ChecksumPayload.of(1, 32, List.of(new GroupChecksums(0, 0, 16, 2, new long[0]))).groups().get(0).start());
        assertEquals(0, ChecksumPayload.of(1, 0, List.of()).numTokens());

        assertThrows(NullPointerException.class, () -> new Aggregator.Incomplete(null, "x"));
        Map<Integer, String> sk = new HashMap<>(Map.of(1, "a"));
        Aggregator.Complete c = new Aggregator.Complete(ChecksumPayload.of(1, 0, List.of()), sk);
        sk.clear();
        assertEquals(Map.of(1, "a"), c.skippedGroups());
        LoadVerdict v = new Aggregator.Incomplete(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, "1 of 2").verdict();
        assertEquals(UnverifiedReason.NOT_EVERY_WORKER_REPORTED, v.reason());
        assertEquals("1 of 2", v.detail());
    }

    @Test
    void rankDecisionsRejectBatchesThatCannotBeReduced() {
        assertThrows(IllegalArgumentException.class, () -> RankDecisions.localVector(List.of("a", "a"), Map.of()));
        assertThrows(IllegalArgumentException.class, () -> RankDecisions.maxReduce(List.of()));
        assertThrows(IllegalArgumentException.class, () -> RankDecisions.maxReduce(List.of(new int[2], new int[3])));
        assertThrows(IllegalArgumentException.class, () -> RankDecisions.actions(List.of("a"), new int[2]));
        assertThrows(IllegalArgumentException.class, () -> RankDecisions.actions(List.of("a"), new int[] {3}));
        assertThrows(IllegalArgumentException.class, () -> RankDecisions.actions(List.of("a"), new int[] {-1}));
        assertArrayEquals(new int[] {0, 0}, RankDecisions.localVector(List.of("a", "b"), Map.of()));
        assertEquals(Map.of("a", Action.FAIL_REQUEST), RankDecisions.actions(List.of("a"), new int[] {2}));
        assertEquals(List.of(), RankDecisions.dropped(Map.of("a", Action.USE_LOAD)));
    }
}
