package io.kvchecksum.spi;

import io.kvchecksum.PendingChecksums;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.SliceSums;

import java.util.function.Function;

/**
 * How a backend splits a plan with {@link SlicePlan#hasByteCells() byte cells} between its two paths: the whole-piece
 * path (the backend's fast loops, unchanged) on {@link SlicePlan#wholePieceSlices()}, and its byte-assembling path
 * on {@link SlicePlan#byteCellSlices()}. Block checksums are sums over slices, so the two paths' values add (modulo
 * 2^64); slice sums go back in the plan's row order. Call these only for a plan with byte cells.
 */
public final class ByteCellRoute {
    private ByteCellRoute() {
    }

    /**
     * Block checksums: the whole-piece path's plus the byte path's.
     *
     * @param plan a plan with byte cells
     * @param whole the backend's whole-piece path, run on {@link SlicePlan#wholePieceSlices()} when that is not null
     * @param bytes the backend's byte-assembling path, run on {@link SlicePlan#byteCellSlices()}; the array it returns
     *     receives the sum and is returned
     * @return the plan's block checksums, one per block, the two paths' values added modulo 2^64
     */
    public static long[] blockChecksums(SlicePlan plan, Function<SlicePlan, long[]> whole, Function<SlicePlan, long[]> bytes) {
        long[] out = bytes.apply(plan.byteCellSlices());
        if (plan.wholePieceSlices() != null) {
            add(out, whole.apply(plan.wholePieceSlices()));
        }
        return out;
    }

    /**
     * Slice sums of both paths, rows in the plan's order.
     *
     * @param plan a plan with byte cells
     * @param whole the backend's whole-piece path, run on {@link SlicePlan#wholePieceSlices()} when that is not null
     * @param bytes the backend's byte-assembling path, run on {@link SlicePlan#byteCellSlices()}
     * @return the plan's slice sums, as {@link SlicePlan#mergeRows} puts them together
     */
    public static SliceSums sliceSums(SlicePlan plan, Function<SlicePlan, SliceSums> whole,
                                      Function<SlicePlan, SliceSums> bytes) {
        SlicePlan w = plan.wholePieceSlices();
        SliceSums b = bytes.apply(plan.byteCellSlices());
        return plan.mergeRows(w == null ? null : whole.apply(w), b);
    }

    /**
     * Both paths started (the whole-piece one first) and a handle whose {@code get()} adds their values; closing it
     * closes both. If starting the byte path fails, the whole-piece path's handle is closed before the error goes on.
     *
     * @param plan a plan with byte cells
     * @param whole starts the backend's whole-piece path on {@link SlicePlan#wholePieceSlices()} when that is not null
     * @param bytes starts the backend's byte-assembling path on {@link SlicePlan#byteCellSlices()}
     * @return the byte path's handle alone when the plan has no whole-piece slices, else a handle over both
     */
    public static PendingChecksums submit(SlicePlan plan, Function<SlicePlan, PendingChecksums> whole,
                                          Function<SlicePlan, PendingChecksums> bytes) {
        PendingChecksums w = plan.wholePieceSlices() == null ? null : whole.apply(plan.wholePieceSlices());
        PendingChecksums b;
        try {
            b = bytes.apply(plan.byteCellSlices());
        } catch (RuntimeException | Error e) {
            if (w != null) {
                w.close();
            }
            throw e;
        }
        return w == null ? b : new Sum(w, b);
    }

    private static void add(long[] into, long[] more) {
        for (int i = 0; i < into.length; i++) {
            into[i] += more[i];
        }
    }

    private static final class Sum implements PendingChecksums {
        private final PendingChecksums a;
        private final PendingChecksums b;

        Sum(PendingChecksums a, PendingChecksums b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public long[] get() {
            long[] out = a.get();
            add(out, b.get());
            return out;
        }

        @Override
        public boolean isDone() {
            return a.isDone() && b.isDone();
        }

        @Override
        public void close() {
            try {
                a.close();
            } finally {
                b.close();
            }
        }
    }
}
