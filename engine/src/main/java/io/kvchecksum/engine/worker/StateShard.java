package io.kvchecksum.engine.worker;

import io.kvchecksum.StateRow;
import io.kvchecksum.engine.wire.StateDigestsSection;

import java.util.Objects;

/**
 * One worker's row of a request's state buffer (Mamba/SSM state), with what it is of the whole: which shard of the
 * buffer (under TP each rank holds one shard of a buffer split across ranks) and which copy of that shard (ranks that
 * hold the same bytes, as replicated KV heads do). The row's name is the buffer's, the same on every rank (e.g.
 * {@code "l3.ssm"}); its digest travels as a {@link StateDigestsSection.Entry} with the worker's PP stage.
 *
 * @param row the bytes, named after the buffer
 * @param shard which shard of the buffer, {@code 0 .. shards-1}
 * @param shards how many shards the buffer is cut into on this side (the TP ranks it is split over; 1 when whole)
 * @param copy which copy of the shard, {@code 0 .. copies-1}
 * @param copies how many ranks hold this shard's bytes (1 when not replicated)
 */
public record StateShard(StateRow row, int shard, int shards, int copy, int copies) {
    /**
     * Validates the numbers.
     *
     * @throws NullPointerException when {@code row} is null
     * @throws IllegalArgumentException when a shard or copy lies outside its count, or a count is outside
     *     1..{@link StateDigestsSection#MAX_SHARDS}
     */
    public StateShard {
        Objects.requireNonNull(row, "row");
        if (shards < 1 || shards > StateDigestsSection.MAX_SHARDS || shard < 0 || shard >= shards || copies < 1
                || copies > StateDigestsSection.MAX_SHARDS || copy < 0 || copy >= copies) {
            throw new IllegalArgumentException("state row " + row.name() + ": shard " + shard + " of " + shards + ", copy "
                    + copy + " of " + copies);
        }
    }

    /**
     * {@return a whole, unreplicated row: shard 0 of 1, copy 0 of 1}
     *
     * @param row the bytes, named after the buffer; not null
     * @throws NullPointerException when {@code row} is null
     */
    public static StateShard whole(StateRow row) {
        return new StateShard(row, 0, 1, 0, 1);
    }
}
