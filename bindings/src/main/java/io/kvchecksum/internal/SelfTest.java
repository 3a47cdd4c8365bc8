package io.kvchecksum.internal;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;

/** A tiny known input checked against the reference before {@code fastest()} trusts a backend. */
public final class SelfTest {
    private SelfTest() {
    }

    /** True when the backend's block checksums of a small two-layer paged cache equal the reference's. */
    public static boolean passes(KvChecksum backend) {
        return failure(backend) == null;
    }

    /** Why the backend fails the self-test, or {@code null} when it passes. */
    public static String failure(KvChecksum backend) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4096, 16);
            for (int i = 0; i < 512; i++) {
                seg.setAtIndex(ValueLayout.JAVA_LONG, i, 0x9E3779B97F4A7C15L * (i + 1));
            }
            KvMemory m = KvMemory.host(seg);
            // 4 pages of 4 slots, 2 heads, 16-byte K and 8-byte V cells
            KvRegion k = new KvRegion(m, 0, 256, 64, 32, 16);
            KvRegion v = new KvRegion(m, 16, 256, 64, 32, 8);
            KvRegion k2 = new KvRegion(m, 1024, 256, 64, 32, 24);
            KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(3, 2, 2, k, v), CacheLayer.kOnly(7, 0, 2, k2)));
            RequestBlocks r = RequestBlocks.of(new int[] {2, 0, 3}, 10, 1, 3);
            long[] expected = KvChecksum.of(new ReferenceBackend()).blockChecksums(g, r);
            try (var pending = backend.submit(g, r)) {
                long[] got = pending.get();
                return Arrays.equals(expected, got) ? null
                        : "wrong checksums on a small known input: " + Arrays.toString(got) + ", expected " + Arrays.toString(expected);
            }
        } catch (RuntimeException e) {
            return "the self-test on a small known input threw " + e;
        }
    }
}
