package io.kvchecksum.engine.verdict;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** {@link ChecksumMetrics} as plain in-memory counts, for engines without a registry and for tests. Thread-safe. */
public final class ChecksumCounters implements ChecksumMetrics {
    private final LongAdder verified = new LongAdder();
    private final LongAdder mismatchedLoads = new LongAdder();
    private final LongAdder mismatchedBlocks = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private final LongAdder nothingLoaded = new LongAdder();
    private final LongAdder nanos = new LongAdder();
    private final Map<UnverifiedReason, LongAdder> unverified = new ConcurrentHashMap<>();
    private final Map<UnverifiedReason, LongAdder> withheld = new ConcurrentHashMap<>();

    /** All counts start at zero. */
    public ChecksumCounters() {
    }

    @Override
    public void verified() {
        verified.increment();
    }

    @Override
    public void mismatched(int blocks) {
        mismatchedLoads.increment();
        mismatchedBlocks.add(blocks);
    }

    @Override
    public void unverified(UnverifiedReason reason) {
        unverified.computeIfAbsent(reason, r -> new LongAdder()).increment();
    }

    @Override
    public void nothingLoaded() {
        nothingLoaded.increment();
    }

    @Override
    public void payloadMalformed() {
        malformed.increment();
    }

    @Override
    public void payloadWithheld(UnverifiedReason reason) {
        withheld.computeIfAbsent(reason, r -> new LongAdder()).increment();
    }

    @Override
    public void checksumNanos(long n) {
        nanos.add(n);
    }

    /**
     * Loads that matched.
     *
     * @return the number of loads reported through {@link #verified()}
     */
    public long verifiedLoads() {
        return verified.sum();
    }

    /**
     * Loads that mismatched.
     *
     * @return the number of loads reported through {@link #mismatched(int)}
     */
    public long mismatchedLoads() {
        return mismatchedLoads.sum();
    }

    /** {@return block positions that mismatched, over all loads} */
    public long mismatchedBlocks() {
        return mismatchedBlocks.sum();
    }

    /**
     * {@return unverified loads giving {@code reason}}
     *
     * @param reason the reason asked about; not null
     */
    public long unverifiedLoads(UnverifiedReason reason) {
        return unverified.getOrDefault(reason, new LongAdder()).sum();
    }

    /** {@return loads that wrote no block, reported through {@link #nothingLoaded()}: counted in no other count} */
    public long nothingLoadedLoads() {
        return nothingLoaded.sum();
    }

    /** {@return payload copies that could not be decoded} */
    public long malformedPayloads() {
        return malformed.sum();
    }

    /**
     * {@return producer requests sent without checksums for {@code reason}}
     *
     * @param reason the reason asked about; not null
     */
    public long withheldPayloads(UnverifiedReason reason) {
        return withheld.getOrDefault(reason, new LongAdder()).sum();
    }

    /** {@return total checksum time reported, in nanoseconds} */
    public long checksumNanos() {
        return nanos.sum();
    }
}
