package io.kvchecksum.engine.worker;

import io.kvchecksum.engine.verdict.ChecksumMetrics;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.MalformedPayloadException;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.Verifier;

import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The consumer scheduler's loads awaiting comparison: what the producer sent for each, the first well-formed copy
 * kept, and each load compared at most once.
 *
 * <p><b>Life of a load.</b> {@link #start} when the load begins (the request's connector carries checksums), then
 * {@link #offer} every copy of the producer's payload as it arrives, then {@link #verify} once the load's worker
 * records are in, before any step writes into its blocks; {@link #forget} when the request ends or its load fails.
 * {@link #expect} is {@code start} plus {@code offer}, for the carrier that hands the payload over with the request
 * ({@code kv_transfer_params}). A copy is the checksums ({@code kv_transfer_params["kv_checksums"]}, or the
 * connector's byte string) and, when the producer sent sections, the sections beside them
 * ({@code kv_transfer_params["kv_checksum_sections"]}, or a second byte string); the one-argument forms are copies
 * without sections.
 *
 * <ul>
 *   <li><b>First good copy wins.</b> Several producer ranks may carry identical payloads: the first copy that decodes
 *       and is well-formed is kept and later copies are ignored, so a late duplicate can neither replace it nor turn a
 *       good copy into a malformed one. A copy that lists a group twice (a producer lists each group once) is refused
 *       when offered, counted as malformed like an undecodable one, and not kept, so a later good copy still wins. A
 *       load that received only missing or refused copies is {@link UnverifiedReason#MALFORMED_PAYLOAD} (some copy
 *       arrived, none was good; the first refusal is the detail) or {@link UnverifiedReason#MISSING_PAYLOAD} (none
 *       arrived).</li>
 *   <li><b>Copies before {@code start} are buffered, bounded.</b> A connector may hand a copy over before the
 *       scheduler starts the load. Such a copy is decoded and checked at once and kept for the load (the first good
 *       one, or the first refusal) when {@link #start} comes within the time-to-live ({@link #DEFAULT_EARLY_TTL} unless
 *       given; measured on the injectable clock from the copy's arrival). At most {@link #DEFAULT_MAX_EARLY} requests
 *       (unless given) hold an early copy at once: past that the oldest is dropped, and expired ones are dropped
 *       whenever the buffer is touched, so the buffer never holds more than that many decoded payloads. A dropped or
 *       expired early copy leaves its load {@link UnverifiedReason#MISSING_PAYLOAD}, never a mismatch. A copy for a
 *       load that ended ({@link #forget}) within the time-to-live is ignored rather than buffered: a late duplicate of
 *       an ended load must not be taken for the copy of a later load of the same id. Buffering was chosen over
 *       rejecting because the consumer cannot ask the producer again: a rejected copy would be a lost one.</li>
 *   <li><b>Verify once.</b> After {@link #verify} the load is done: copies and {@code start}/{@code expect} for it are
 *       ignored until {@link #forget}. A request preempted and resumed is not compared again: by then decode tokens
 *       were written into the load's last block, and a second comparison would be a false mismatch.</li>
 *   <li><b>Not carried, not counted.</b> A request never started (its connector carries no checksums, e.g. a load of
 *       blocks whose source sent none) gets no verdict: {@link #verify} returns empty, and it is neither verified
 *       nor unverified.</li>
 * </ul>
 *
 * <p>Memory: a verified load is remembered (its id only) until {@link #forget}; call it when the request ends. Early
 * copies and ended ids are bounded as above. Thread-safe: of several threads verifying one load at once, exactly one
 * gets the verdict; a copy offered while the load is being verified is ignored. Copies are decoded outside the lock.
 */
public final class PendingLoads {
    /** How many requests may hold a copy that arrived before their {@link #start}, unless given. */
    public static final int DEFAULT_MAX_EARLY = 1024;
    /** How long a copy that arrived before its load's {@link #start} is kept, unless given. */
    public static final Duration DEFAULT_EARLY_TTL = Duration.ofSeconds(60);

    /** What arrived from the producer for one pending load: the first good copy, or why there is none. */
    private record Expected(ChecksumPayload payload, String malformed) {
        static final Expected NONE = new Expected(null, null);
    }

    /** A copy that arrived before its load started ({@code expected} not null), or the mark of a load that ended. */
    private record Early(Expected expected, long atNanos) {
    }

    private final ConcurrentHashMap<String, Expected> pending = new ConcurrentHashMap<>();
    private final Set<String> done = ConcurrentHashMap.newKeySet();
    /** In arrival order, so the expired and the oldest are at the head. Guarded by {@code this}. */
    private final LinkedHashMap<String, Early> early = new LinkedHashMap<>();
    private final ChecksumMetrics metrics;
    private final int maxEarly;
    private final long earlyTtlNanos;
    private final LongSupplier nanoClock;

    /** Loads counted nowhere, with the default bounds for early copies. */
    public PendingLoads() {
        this(ChecksumMetrics.NONE);
    }

    /**
     * Loads whose malformed payload copies are counted in {@code metrics}, with the default bounds for early copies
     * ({@link #DEFAULT_MAX_EARLY}, {@link #DEFAULT_EARLY_TTL}, {@link System#nanoTime}).
     *
     * @param metrics where malformed copies are counted; not null
     * @throws NullPointerException when {@code metrics} is null
     */
    public PendingLoads(ChecksumMetrics metrics) {
        this(metrics, DEFAULT_MAX_EARLY, DEFAULT_EARLY_TTL, System::nanoTime);
    }

    /**
     * Loads with the given bounds for copies that arrive before their load starts.
     *
     * @param metrics where malformed copies are counted; not null
     * @param maxEarly how many requests may hold an early copy (or the mark of an ended load) at once; 0 keeps none
     *     (a copy before {@code start} is then dropped)
     * @param earlyTtl how long an early copy, or the mark of an ended load, is kept; not negative
     * @param nanoClock the clock the time-to-live is measured on, in nanoseconds ({@link System#nanoTime} or a test's)
     * @throws NullPointerException when an argument is null
     * @throws IllegalArgumentException when {@code maxEarly} or {@code earlyTtl} is negative
     */
    public PendingLoads(ChecksumMetrics metrics, int maxEarly, Duration earlyTtl, LongSupplier nanoClock) {
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
        if (maxEarly < 0) {
            throw new IllegalArgumentException("maxEarly must be 0 or more, got " + maxEarly);
        }
        if (Objects.requireNonNull(earlyTtl, "earlyTtl").isNegative()) {
            throw new IllegalArgumentException("earlyTtl must not be negative, got " + earlyTtl);
        }
        this.maxEarly = maxEarly;
        this.earlyTtlNanos = earlyTtl.toNanos();
    }

    /**
     * A load of the request begins and its checksums are expected; a copy that arrived before, within the
     * time-to-live, is taken. Ignored when the load is already pending (its copies are kept) or was already verified.
     *
     * @param requestId the request whose load begins; not null
     * @return true when the load became pending
     */
    public synchronized boolean start(String requestId) {
        Objects.requireNonNull(requestId, "requestId");
        if (done.contains(requestId) || pending.containsKey(requestId)) {
            return false;
        }
        expire();
        Early e = early.remove(requestId);
        pending.put(requestId, e != null && e.expected() != null ? e.expected() : Expected.NONE);
        return true;
    }

    /**
     * A copy of the producer's checksums as base64 text, without sections.
     *
     * @param requestId the request; not null
     * @param producerBase64 the copy as it arrived, untrusted; {@code null} or blank when the producer sent none
     * @return true when this copy is now the one the load will be compared with (for a load not started yet: when
     *     {@code start} comes within the time-to-live)
     */
    public boolean offer(String requestId, String producerBase64) {
        return offer(requestId, producerBase64, null);
    }

    /**
     * A copy of the producer's payload as the base64 texts of {@code kv_transfer_params}: kept if it is the first good
     * one of a pending load, or of a load not started yet (see the class comment).
     *
     * @param requestId the request; not null
     * @param checksumsBase64 {@code kv_checksums} as it arrived, untrusted; {@code null} or blank when the producer sent
     *     none
     * @param sectionsBase64 {@code kv_checksum_sections} as it arrived, untrusted; {@code null} or blank when none came
     * @return true when this copy is now the one the load will be compared with (for a load not started yet: when
     *     {@code start} comes within the time-to-live)
     */
    public boolean offer(String requestId, String checksumsBase64, String sectionsBase64) {
        String sections = sectionsBase64 == null || sectionsBase64.isBlank() ? null : sectionsBase64;
        if (checksumsBase64 == null || checksumsBase64.isBlank()) {
            return offer(requestId, sections == null ? null : PendingLoads::sectionsAlone);
        }
        return offer(requestId, () -> PayloadCodec.decodeBase64(checksumsBase64, sections));
    }

    /**
     * As {@link #offer(String, String)} for raw checksum bytes from a connector carrier, without sections.
     *
     * @param requestId the request; not null
     * @param producerBytes the copy as it arrived, untrusted (copied); {@code null} when the producer sent none
     * @return true when this copy is now the one the load will be compared with
     */
    public boolean offer(String requestId, byte[] producerBytes) {
        return offer(requestId, producerBytes, null);
    }

    /**
     * As {@link #offer(String, String, String)} for the byte strings of a connector carrier.
     *
     * @param requestId the request; not null
     * @param checksums the checksums as they arrived, untrusted (copied); {@code null} when the producer sent none
     * @param sections the sections as they arrived, untrusted (copied); {@code null} when none came
     * @return true when this copy is now the one the load will be compared with
     */
    public boolean offer(String requestId, byte[] checksums, byte[] sections) {
        byte[] c = checksums == null ? null : checksums.clone();
        byte[] s = sections == null ? null : sections.clone();
        if (c == null) {
            return offer(requestId, s == null ? null : PendingLoads::sectionsAlone);
        }
        return offer(requestId, () -> PayloadCodec.decode(c, s));
    }

    private static ChecksumPayload sectionsAlone() {
        throw new MalformedPayloadException("payload: sections arrived without the checksums they go with");
    }

    private boolean offer(String requestId, Supplier<ChecksumPayload> copy) {
        Objects.requireNonNull(requestId, "requestId");
        if (copy == null) {
            return false;
        }
        if (!wants(requestId)) {
            return false; // not decoded: nothing would change
        }
        Expected got = check(copy);
        synchronized (this) {
            if (!wants(requestId)) {
                return false; // a good copy or the verdict came meanwhile
            }
            Expected now = pending.get(requestId);
            if (now != null) {
                // The first refusal stays the detail until a good copy comes.
                pending.put(requestId, got.payload() != null || now.malformed() == null ? got : now);
                return got.payload() != null;
            }
            Early e = early.get(requestId);
            if (e != null && got.payload() == null) {
                return false; // a second refusal: the first stays the detail
            }
            early.remove(requestId);
            early.put(requestId, new Early(got, nanoClock.getAsLong()));
            trim();
            return got.payload() != null;
        }
    }

    /**
     * Whether a copy for the request could change anything: its load is pending without a good copy, or not started,
     * not verified, not the id of a load that just ended, and holding no good early copy.
     */
    private synchronized boolean wants(String requestId) {
        Expected now = pending.get(requestId);
        if (now != null) {
            return now.payload() == null;
        }
        if (done.contains(requestId) || maxEarly == 0) {
            return false;
        }
        expire();
        Early e = early.get(requestId);
        return e == null || e.expected() != null && e.expected().payload() == null;
    }

    /** The copy decoded and checked: a good payload, or the refusal (counted). */
    private Expected check(Supplier<ChecksumPayload> copy) {
        try {
            ChecksumPayload p = copy.get();
            String repeated = repeatedGroups(p);
            if (repeated != null) {
                throw new MalformedPayloadException(repeated);
            }
            return new Expected(p, null);
        } catch (MalformedPayloadException e) {
            metrics.payloadMalformed();
            return new Expected(null, e.getMessage());
        }
    }

    /** Why a producer's payload that lists a group more than once is refused, or {@code null} when none is. */
    private static String repeatedGroups(ChecksumPayload p) {
        Map<Integer, Long> counts = p.groups().stream().collect(Collectors.groupingBy(GroupChecksums::groupId,
                java.util.TreeMap::new, Collectors.counting()));
        String listed = counts.entrySet().stream().filter(c -> c.getValue() > 1)
                .map(c -> "group " + c.getKey() + " " + c.getValue() + " times").collect(Collectors.joining(", "));
        return listed.isEmpty() ? null : "groups: the producer's payload lists " + listed + " (each group once)";
    }

    /** Drops the early entries past the time-to-live; they are in arrival order. Holding {@code this}. */
    private void expire() {
        long now = nanoClock.getAsLong();
        Iterator<Early> it = early.values().iterator();
        while (it.hasNext() && now - it.next().atNanos() > earlyTtlNanos) {
            it.remove();
        }
    }

    /** Drops the oldest early entries past the bound. Holding {@code this}. */
    private void trim() {
        Iterator<Early> it = early.values().iterator();
        while (early.size() > maxEarly && it.hasNext()) {
            it.next();
            it.remove();
        }
    }

    /**
     * {@link #start} then {@link #offer(String, String)}: the checksums arrived with the request, without sections.
     *
     * @param requestId the request whose load begins; not null
     * @param producerBase64 the payload that came with the request, untrusted; {@code null} or blank when none did
     */
    public void expect(String requestId, String producerBase64) {
        expect(requestId, producerBase64, null);
    }

    /**
     * {@link #start} then {@link #offer(String, String, String)}: the request's {@code kv_transfer_params} carried
     * {@code kv_checksums} and, perhaps, {@code kv_checksum_sections}.
     *
     * @param requestId the request whose load begins; not null
     * @param checksumsBase64 {@code kv_checksums}, untrusted; {@code null} or blank when none came
     * @param sectionsBase64 {@code kv_checksum_sections}, untrusted; {@code null} or blank when none came
     */
    public void expect(String requestId, String checksumsBase64, String sectionsBase64) {
        start(requestId);
        offer(requestId, checksumsBase64, sectionsBase64);
    }

    /**
     * {@link #start} then {@link #offer(String, byte[])}.
     *
     * @param requestId the request whose load begins; not null
     * @param producerBytes the payload that came with the request, untrusted (copied); {@code null} when none did
     */
    public void expect(String requestId, byte[] producerBytes) {
        expect(requestId, producerBytes, null);
    }

    /**
     * {@link #start} then {@link #offer(String, byte[], byte[])}.
     *
     * @param requestId the request whose load begins; not null
     * @param checksums the checksums that came with the request, untrusted (copied); {@code null} when none did
     * @param sections the sections that came with them, untrusted (copied); {@code null} when none did
     */
    public void expect(String requestId, byte[] checksums, byte[] sections) {
        start(requestId);
        offer(requestId, checksums, sections);
    }

    /**
     * {@return true when the request's load awaits comparison}
     *
     * @param requestId the request; not null
     */
    public boolean isPending(String requestId) {
        return pending.containsKey(requestId);
    }

    /**
     * Compares the request's load with the producer's payload, the first time only; empty when the load is not
     * pending (never started, already verified, or forgotten).
     *
     * @param requestId the request; not null
     * @param actual the consumer's checksums of the blocks the load wrote; not null
     * @return the verdict ({@link UnverifiedReason#MISSING_PAYLOAD} or {@link UnverifiedReason#MALFORMED_PAYLOAD} when
     *     no good copy arrived), or empty when the load is not pending
     * @throws NullPointerException when an argument is null
     */
    public Optional<LoadVerdict> verify(String requestId, ChecksumPayload actual) {
        Objects.requireNonNull(actual, "actual");
        Expected e = take(requestId);
        if (e == null) {
            return Optional.empty();
        }
        if (e.payload() == null) {
            return Optional.of(e.malformed() != null
                    ? LoadVerdict.unverified(UnverifiedReason.MALFORMED_PAYLOAD, e.malformed())
                    : LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "the producer sent no checksums"));
        }
        return Optional.of(Verifier.compare(e.payload(), actual));
    }

    /**
     * {@return the load's verdict from its aggregated records: compared when they are {@link Aggregator.Complete}, the
     * records' own verdict when {@link Aggregator.Incomplete}} Either way the load is done, so it is never compared
     * again after a resume. Empty when the load is not pending.
     *
     * @param requestId the request; not null
     * @param consumer the consumer side's aggregated records ({@link Aggregator#consumer}); not null
     * @throws NullPointerException when an argument is null
     */
    public Optional<LoadVerdict> verify(String requestId, Aggregator.Result consumer) {
        return switch (Objects.requireNonNull(consumer, "consumer")) {
            case Aggregator.Complete c -> verify(requestId, c.payload());
            case Aggregator.Incomplete i -> take(requestId) == null ? Optional.empty() : Optional.of(i.verdict());
        };
    }

    private synchronized Expected take(String requestId) {
        Expected e = pending.remove(Objects.requireNonNull(requestId, "requestId"));
        if (e != null) {
            done.add(requestId);
        }
        return e;
    }

    /**
     * Drops everything about the request without comparing: call it when the request ends, or when its load failed
     * (the connector already knows it is bad, so it is not compared). A later load of the same id starts afresh; copies
     * offered before that load's {@code start}, within the time-to-live, are ignored as late copies of this one.
     *
     * @param requestId the request that ended or whose load failed
     * @return true when the load was pending
     */
    public synchronized boolean forget(String requestId) {
        boolean wasDone = done.remove(requestId);
        boolean wasPending = pending.remove(requestId) != null;
        early.remove(requestId);
        if ((wasDone || wasPending) && maxEarly > 0) {
            // Late copies of this load are ignored for the time-to-live (see the class comment).
            expire();
            early.put(requestId, new Early(null, nanoClock.getAsLong()));
            trim();
        }
        return wasPending;
    }

    /** {@return how many loads await comparison} */
    public int size() {
        return pending.size();
    }
}
