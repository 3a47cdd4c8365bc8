package io.kvchecksum.jlama;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The transport between two Jlama instances: copies a request's KV blocks from the producer's session into the
 * consumer's, layer by layer, K and V, the way a transfer engine writes pages, optionally with one fault of the
 * classes a transfer can suffer without reporting it.
 */
public final class KvTransfer {

    /** Fault classes (seeds/004 and the detection campaign). */
    public enum Fault {
        /** No fault. */
        NONE,
        /** One bit of one landed byte flipped. */
        BIT_FLIP,
        /** One block holds another request's KV from the same positions (a read after the producer reused a page). */
        STALE_PAGE,
        /** Two full blocks landed at each other's positions. */
        SWAPPED_PAGES,
        /** One block was never written: the consumer's page keeps what it held (zeros of a fresh page). */
        PAGE_NEVER_WRITTEN,
        /** The second half of one block lands only after the consumer has verified (a read before the write ended). */
        LATE_TAIL_WRITE,
        /** The producer's checksums never arrive. */
        DROPPED_PAYLOAD,
        /** The producer's checksums arrive cut short. */
        MALFORMED_PAYLOAD;

        /** True for faults of the payload rather than of the KV. */
        public boolean payloadFault() {
            return this == DROPPED_PAYLOAD || this == MALFORMED_PAYLOAD;
        }

        /** True for faults that change the KV the consumer holds when it verifies. */
        public boolean kvFault() {
            return this != NONE && !payloadFault();
        }
    }

    /**
     * What landed.
     *
     * @param fault the fault actually injected ({@link Fault#NONE} when the drawn one did not apply)
     * @param faultedBlocks request block positions whose KV differs from the producer's at verification time, sorted
     * @param late writes still in flight at verification time; run them afterwards
     */
    public record Landed(Fault fault, long[] faultedBlocks, Runnable late) {
    }

    private KvTransfer() {
    }

    /**
     * Copies blocks {@code firstBlock ..} of a request of {@code numTokens} tokens from {@code src} into {@code dst}
     * (same model geometry), injecting {@code fault} where it applies.
     *
     * @param stale another request's session on the producer, the source of {@link Fault#STALE_PAGE}
     */
    public static Landed move(JlamaKv src, JlamaKv dst, JlamaKv stale, int blockSize, long firstBlock, long numTokens,
            Fault fault, SplittableRandom rnd) {
        long blocks = Math.ceilDiv(numTokens, (long) blockSize);
        long loaded = blocks - firstBlock;
        long fullLoaded = numTokens / blockSize - firstBlock;
        if (loaded <= 0) {
            throw new IllegalArgumentException("nothing to load: block " + firstBlock + " of " + blocks);
        }
        if (fault == Fault.SWAPPED_PAGES && fullLoaded < 2) {
            fault = Fault.NONE;
        }
        long target = fault.kvFault() ? firstBlock + rnd.nextLong(fault == Fault.SWAPPED_PAGES ? fullLoaded : loaded) : -1;
        long other = -1;
        if (fault == Fault.SWAPPED_PAGES) {
            other = firstBlock + rnd.nextLong(fullLoaded - 1);
            if (other >= target) {
                other++;
            }
        }
        List<Runnable> late = new ArrayList<>();
        for (long b = firstBlock; b < blocks; b++) {
            long t0 = b * blockSize;
            long tokens = Math.min(blockSize, numTokens - t0);
            if (b == target && fault == Fault.PAGE_NEVER_WRITTEN) {
                continue;
            }
            JlamaKv from = b == target && fault == Fault.STALE_PAGE ? stale : src;
            long fromToken = t0;
            if (fault == Fault.SWAPPED_PAGES && (b == target || b == other)) {
                fromToken = (b == target ? other : target) * blockSize;
            }
            if (b == target && fault == Fault.LATE_TAIL_WRITE) {
                long now = tokens / 2;
                JlamaKv.copy(from, fromToken, dst, t0, now);
                late.add(() -> JlamaKv.copy(src, t0 + now, dst, t0 + now, tokens - now));
                continue;
            }
            JlamaKv.copy(from, fromToken, dst, t0, tokens);
        }
        if (fault == Fault.BIT_FLIP) {
            long t = target * blockSize + rnd.nextLong(Math.min(blockSize, numTokens - target * blockSize));
            int layer = rnd.nextInt(dst.numLayers());
            MemorySegment seg = dst.row(layer, !rnd.nextBoolean(), t);
            long at = rnd.nextLong(dst.rowBytes());
            seg.set(ValueLayout.JAVA_BYTE, at, (byte) (seg.get(ValueLayout.JAVA_BYTE, at) ^ (1 << rnd.nextInt(8))));
        }
        long[] faulted = target < 0 ? new long[0]
                : other < 0 ? new long[] {target} : new long[] {Math.min(target, other), Math.max(target, other)};
        return new Landed(fault, faulted, () -> late.forEach(Runnable::run));
    }
}
