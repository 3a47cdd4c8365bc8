package io.kvchecksum.engine.faults;

import io.kvchecksum.engine.worker.PartialGroup;
import io.kvchecksum.engine.worker.ReplicaKey;
import io.kvchecksum.engine.worker.WorkerRecord;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * Fault injection for engines' end-to-end tests (what SGLang has as {@code SGLANG_TEST_DISAGG_KV_CHECKSUM_MISMATCH_PROB}
 * and {@code SGLANG_TEST_DISAGG_KV_CORRUPT_PROB}): with probability {@code p}, {@link #maybeFlip flip a consumer rank's
 * computed checksum} or {@link #maybeCorrupt XOR 0xFF into a landed row}, so that a test can prove its engine detects,
 * decides identically on every rank, and keeps serving.
 *
 * <p><b>Per-rank generators.</b> Each rank draws from its own {@link SplittableRandom} seeded with
 * {@link #rankSeed}{@code (baseSeed, rank)}: a generator seeded alike on every rank would inject into the same requests
 * on all ranks and never exercise a rank-local mismatch. Each call of an enabled kind draws exactly once (whether or
 * not it injects; a disabled kind draws nothing), so a rank's injections depend only on the seed and its sequence of
 * calls. A draw that hits but finds nothing to alter (a failed record, a record without values, an empty row) alters
 * nothing and is not counted: {@link #injected()} and {@link #maybeCorrupt}'s result report only what really changed.
 *
 * <p><b>Configuration</b>: system property {@value #PROPERTY} (wins) or environment variable {@value #ENV}, e.g.
 * {@code p:0.3,kinds:flip|xor,seed:42}: {@code p} in {@code [0, 1]} (required), {@code kinds} any of {@code flip} and
 * {@code xor} joined by {@code |} (default both), {@code seed} a signed 64-bit integer (default: drawn from the clock
 * and logged, so a run can be repeated). Unset, empty or {@code off}: {@link #OFF}, which never injects. When on, one
 * WARNING is logged per process ({@code System.Logger} {@code io.kvchecksum.engine.faults}) with the settings. A bad
 * value throws {@link IllegalArgumentException} naming it. Never enable it in production.
 *
 * <p>An instance belongs to one rank and is thread-safe (its draws are serialized).
 */
public final class FaultInjector {
    /** The system property holding the configuration. */
    public static final String PROPERTY = "kvchecksum.faults";
    /** The environment variable holding the configuration (when the property is not set). */
    public static final String ENV = "KVCHECKSUM_FAULTS";

    /** What can be injected. */
    public enum Kind {
        /** Invert every bit of the first checksum value of a consumer rank's record ({@link #maybeFlip}). */
        FLIP,
        /** XOR 0xFF into every byte of a landed row ({@link #maybeCorrupt}). */
        XOR
    }

    /**
     * The parsed configuration: probability, kinds, base seed.
     *
     * @param p the probability of an injection per call of an enabled kind, in {@code [0, 1]}
     * @param kinds the enabled kinds, at least one; copied
     * @param seed the base seed, from which each rank's seed is derived ({@link #rankSeed})
     */
    public record Config(double p, Set<Kind> kinds, long seed) {
        /**
         * Validates the probability and copies the kinds.
         *
         * @throws IllegalArgumentException when {@code p} is not in {@code [0, 1]} (NaN included) or {@code kinds} is
         *     empty
         * @throws NullPointerException when {@code kinds} or one of its elements is null
         */
        public Config {
            if (!(p >= 0 && p <= 1)) {
                throw new IllegalArgumentException("fault probability p must be in [0, 1], got " + p);
            }
            kinds = Set.copyOf(kinds);
            if (kinds.isEmpty()) {
                throw new IllegalArgumentException("no fault kind (expected flip and/or xor)");
            }
        }
    }

    /** Never injects, draws nothing. */
    public static final FaultInjector OFF = new FaultInjector(null, 0);

    private static final System.Logger LOG = System.getLogger("io.kvchecksum.engine.faults");
    private static final AtomicBoolean LOGGED = new AtomicBoolean();

    private final Config config;
    private final int rank;
    private final SplittableRandom rnd;
    private long injected;

    private FaultInjector(Config config, int rank) {
        this.config = config;
        this.rank = rank;
        this.rnd = config == null ? null : new SplittableRandom(rankSeed(config.seed(), rank));
    }

    /**
     * An injector for {@code rank} with {@code config}.
     *
     * @param config the configuration, not null
     * @param rank the rank the injector draws for, non-negative
     * @return a new injector, its generator seeded with {@link #rankSeed}{@code (config.seed(), rank)}
     * @throws NullPointerException when {@code config} is null
     * @throws IllegalArgumentException when {@code rank} is negative
     */
    public static FaultInjector of(Config config, int rank) {
        Objects.requireNonNull(config, "config");
        if (rank < 0) {
            throw new IllegalArgumentException("rank " + rank);
        }
        return new FaultInjector(config, rank);
    }

    /**
     * The injector {@link #PROPERTY} or {@link #ENV} configures for {@code rank}, or {@link #OFF}; logs the settings
     * once per process when on.
     *
     * @param rank the rank the injector draws for, non-negative
     * @return a new injector for {@code rank}, or {@link #OFF} when the configuration is unset, blank or {@code off}
     * @throws IllegalArgumentException naming the bad part of the configuration, or when {@code rank} is negative
     */
    public static FaultInjector configured(int rank) {
        String spec = System.getProperty(PROPERTY);
        String from = "-D" + PROPERTY;
        if (spec == null) {
            spec = System.getenv(ENV);
            from = ENV;
        }
        Config c = parse(spec, from);
        if (c == null) {
            return OFF;
        }
        if (LOGGED.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "kvchecksum fault injection is ON ({0}): p={1}, kinds={2}, base seed={3};"
                    + " each rank draws from its own seed. Test use only.", from, c.p(), c.kinds(), Long.toString(c.seed()));
        }
        return of(c, rank);
    }

    /**
     * Parses {@code p:P[,kinds:K|K][,seed:N]}; {@code null}, blank or {@code off} give {@code null} (no injection).
     *
     * @param spec the configuration text; may be null
     * @param source where the text came from, for the error message
     * @return the configuration, its seed drawn from the clock when the text gives none; {@code null} for no
     *     injection
     * @throws IllegalArgumentException naming the bad part
     */
    public static Config parse(String spec, String source) {
        if (spec == null || spec.isBlank() || spec.strip().equalsIgnoreCase("off")) {
            return null;
        }
        Map<String, String> kv = new HashMap<>();
        for (String part : spec.split(",")) {
            String[] pair = part.split(":", 2);
            String key = pair[0].strip().toLowerCase(Locale.ROOT);
            if (pair.length < 2 || !List.of("p", "kinds", "seed").contains(key) || kv.put(key, pair[1].strip()) != null) {
                throw new IllegalArgumentException(source + ": '" + part.strip() + "' is not one of p:<0..1>, kinds:flip|xor,"
                        + " seed:<integer> (each at most once), in '" + spec + "'");
            }
        }
        if (!kv.containsKey("p")) {
            throw new IllegalArgumentException(source + ": no p:<probability> in '" + spec + "'");
        }
        double p = parsed(source, "p", kv.get("p"), "a number", Double::parseDouble);
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException(source + ": p " + kv.get("p") + " is not in [0, 1]");
        }
        Set<Kind> kinds = EnumSet.noneOf(Kind.class);
        for (String k : kv.getOrDefault("kinds", "flip|xor").split("\\|")) {
            kinds.add(parsed(source, "fault kind", k.strip(), "flip or xor", x -> Kind.valueOf(x.toUpperCase(Locale.ROOT))));
        }
        long seed = kv.containsKey("seed") ? parsed(source, "seed", kv.get("seed"), "a 64-bit integer", Long::parseLong)
                : System.nanoTime();
        return new Config(p, kinds, seed);
    }

    /** {@code parse} of {@code text}, or an exception saying that the {@code what} text is not {@code expected}. */
    private static <T> T parsed(String source, String what, String text, String expected, Function<String, T> parse) {
        try {
            return parse.apply(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + what + " '" + text + "' is not " + expected, e);
        }
    }

    /**
     * The seed of {@code rank}'s generator: SplitMix64's finalizer of {@code baseSeed + (rank+1)*0x9E3779B97F4A7C15},
     * so ranks' generators differ and each is fixed by the base seed.
     *
     * @param baseSeed the configuration's base seed
     * @param rank the rank
     * @return the seed of the rank's {@link SplittableRandom}
     */
    public static long rankSeed(long baseSeed, int rank) {
        long z = baseSeed + (rank + 1L) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** {@return whether this injector can inject at all: {@code false} only for {@link #OFF}} */
    public boolean isOn() {
        return config != null;
    }

    /** {@return the configuration, or {@code null} for {@link #OFF}} */
    public Config config() {
        return config;
    }

    /** {@return the rank this injector draws for (0 for {@link #OFF})} */
    public int rank() {
        return rank;
    }

    /**
     * {@return how many injections this injector made so far: calls that changed a value or a byte (a draw that hit
     * but found nothing to alter is not one)}
     */
    public synchronized long injected() {
        return injected;
    }

    /** One draw of an enabled kind; counts nothing, since the hit may find nothing to alter. */
    private synchronized boolean draw(Kind kind) {
        if (config == null || !config.kinds().contains(kind)) {
            return false;
        }
        return rnd.nextDouble() < config.p();
    }

    /** Counts one injection that changed something. */
    private synchronized void count() {
        injected++;
    }

    /**
     * With probability {@code p} (kind {@code flip} enabled), {@code record} with the first value of its first
     * non-empty column inverted (every bit), as if this rank had computed a wrong checksum; otherwise {@code record}
     * itself. One draw per call (none when the kind is not enabled); a record without values (failed, or nothing
     * scheduled, only empty columns) is returned unchanged and not counted.
     *
     * @param record a consumer rank's record, not null; it is not modified
     * @return a new record with one value inverted, or {@code record} itself
     * @throws NullPointerException when {@code record} is null
     */
    public WorkerRecord maybeFlip(WorkerRecord record) {
        Objects.requireNonNull(record, "record");
        if (!draw(Kind.FLIP) || record.isFailed()) {
            return record;
        }
        List<PartialGroup> groups = new ArrayList<>(record.groups());
        for (int g = 0; g < groups.size(); g++) {
            PartialGroup pg = groups.get(g);
            Map<ReplicaKey, long[]> cols = pg.columns();
            for (Map.Entry<ReplicaKey, long[]> e : cols.entrySet()) {
                if (e.getValue().length > 0) {
                    e.getValue()[0] = ~e.getValue()[0];
                    groups.set(g, new PartialGroup(pg.groupId(), pg.fingerprint(), pg.range(), cols));
                    count();
                    return new WorkerRecord(record.tpRank(), record.ppStage(), record.numTokens(), groups,
                            record.skippedGroups(), null, record.mode(), record.stateDigests(), record.probes());
                }
            }
        }
        return record;
    }

    /**
     * With probability {@code p} (kind {@code xor} enabled), XORs 0xFF into every byte of {@code row} (a landed row of
     * the consumer's cache that the engine names, e.g. one token's K bytes of one layer) and returns {@code true}; else
     * leaves it and returns {@code false}. One draw per call (none when the kind is not enabled). The XOR changes every
     * byte whatever the dtype; a row of 0 bytes has nothing to change, so it is left, not counted, and gives
     * {@code false} even when the draw hits.
     *
     * @param row the landed row, writable (host memory), not null
     * @return whether the row was corrupted: {@code true} exactly when its bytes changed
     * @throws NullPointerException when {@code row} is null
     */
    public boolean maybeCorrupt(MemorySegment row) {
        Objects.requireNonNull(row, "row");
        if (!draw(Kind.XOR) || row.byteSize() == 0) {
            return false;
        }
        count();
        for (long i = 0; i < row.byteSize(); i++) {
            row.set(ValueLayout.JAVA_BYTE, i, (byte) (row.get(ValueLayout.JAVA_BYTE, i) ^ 0xFF));
        }
        return true;
    }

    @Override
    public String toString() {
        return config == null ? "FaultInjector[off]" : "FaultInjector[rank " + rank + ", p=" + config.p() + ", kinds="
                + config.kinds() + ", base seed " + config.seed() + "]";
    }
}
