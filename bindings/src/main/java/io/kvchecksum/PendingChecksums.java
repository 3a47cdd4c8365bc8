package io.kvchecksum;

/**
 * Block checksums that may still be computing. Returned by {@link KvChecksum#submit}; asynchronous backends return
 * before the device has finished, and only {@link #get()} waits.
 *
 * <p>Not thread-safe: one thread waits and reads. {@link #close()} releases what the computation holds (pinned
 * buffers, events) and must be called once the values are no longer needed, or after {@code get()}.
 */
public interface PendingChecksums extends AutoCloseable {

    /**
     * Waits for the computation and returns one checksum per block position; later calls return the same values.
     *
     * @return a fresh copy of the block checksums, one per block position from the plan's {@code firstBlock}
     */
    long[] get();

    /** {@return true when {@link #get()} would not block} */
    boolean isDone();

    @Override
    default void close() {
    }

    /**
     * {@return values that are already known}
     *
     * @param values the checksums; copied, so later changes to the array do not show
     */
    static PendingChecksums completed(long[] values) {
        long[] copy = values.clone();
        return new PendingChecksums() {
            @Override
            public long[] get() {
                return copy.clone();
            }

            @Override
            public boolean isDone() {
                return true;
            }
        };
    }
}
