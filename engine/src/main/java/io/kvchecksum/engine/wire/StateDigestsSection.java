package io.kvchecksum.engine.wire;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import org.msgpack.core.MessagePacker;
import org.msgpack.value.Value;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The {@code "state-digests"} section: one digest per state buffer shard of the request (Mamba/SSM state rows), as
 * {@link KvChecksum#stateDigests} defines it, in the payload's checksum mode. State is per request, not per token, so
 * block checksums do not cover it; this section does.
 *
 * <p>Each {@link Entry} binds what its digest covers: the buffer's name, which shard of it ({@code shard} of
 * {@code shards}: under TP each rank holds one shard of a sharded buffer), the PP stage that holds it, which copy of a
 * replicated shard it is ({@code copy} of {@code copies}: TP ranks that hold the same bytes), its length in bytes and
 * the digest. A producer sends copy 0 of every shard; a consumer lists every copy it holds.
 *
 * <p>Wire value ({@code docs/wire-format.md}): {@code [mode, [entry, ...]]}, {@code mode} the wire name the digests
 * were computed in, each entry {@code [name, digest, shard, shards, stage, copy, copies, length]}, or, as written
 * before shards were bound (still read, for rolling upgrades), {@code [name, digest]}: shard 0 of 1, stage 0, copy 0
 * of 1, length unknown ({@link Entry#UNKNOWN_LENGTH}, not compared).
 *
 * <p>Comparison ({@link #compare}), like with like on the key (name, shard, shards): each consumer copy of a shard is
 * checked against the producer's; a differing digest is a MISMATCH naming the buffer, shard and copy. Otherwise a
 * buffer whose two sides are sharded differently (a TP2 producer's shards 0/2 and 1/2 against a TP1 consumer's 0/1)
 * or whose lengths differ is UNVERIFIED {@link UnverifiedReason#LAYOUT_DIFFERS}, never a mismatch (the bytes are cut
 * differently, not corrupted); a buffer on one side only is {@link UnverifiedReason#ONE_SIDE_ONLY}; other modes are
 * {@link UnverifiedReason#MODE_DIFFERS}. An UNVERIFIED section leaves the load's status to its groups.
 *
 * @param mode the checksum mode's wire name
 * @param entries the digests, in the producer's order; each (name, shard, shards, copy) at most once
 */
public record StateDigestsSection(String mode, List<Entry> entries) implements PayloadSection {
    /** The section's key in the payload. */
    public static final String NAME = "state-digests";
    /** The most entries one section carries (a reader refuses more). */
    public static final int MAX_BUFFERS = 1 << 16;
    /** The most shards, or copies, of one buffer. */
    public static final int MAX_SHARDS = 1 << 16;

    /**
     * One digest and what it covers.
     *
     * @param name the buffer's name, 1..64 printable ASCII characters (e.g. {@code "l3.ssm"}; the same on every rank)
     * @param shard which shard of the buffer this is, {@code 0 .. shards-1}
     * @param shards how many shards the buffer is cut into on this side, 1..{@link #MAX_SHARDS}
     * @param stage the PP stage that holds it, non-negative (reported, not compared: the sides' stages differ freely)
     * @param copy which copy of the shard this is, {@code 0 .. copies-1}
     * @param copies how many ranks hold this shard's bytes, 1..{@link #MAX_SHARDS}
     * @param length the shard's length in bytes, or {@link #UNKNOWN_LENGTH} for an entry decoded from the old
     *     two-element form
     * @param digest the state-row digest of the shard's bytes
     */
    public record Entry(String name, int shard, int shards, int stage, int copy, int copies, long length, long digest) {
        /** The length of an entry written before lengths were bound: not compared. */
        public static final long UNKNOWN_LENGTH = -1;

        /**
         * Validates the entry.
         *
         * @throws NullPointerException when {@code name} is null
         * @throws IllegalArgumentException when the name is not 1..64 printable ASCII characters, a shard or copy is
         *     outside its count, a count outside 1..{@link #MAX_SHARDS}, the stage negative, or the length negative
         *     other than {@link #UNKNOWN_LENGTH} (which only the old form's defaults may carry)
         */
        public Entry {
            Objects.requireNonNull(name, "name");
            if (name.isEmpty() || name.length() > 64 || !name.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
                throw new IllegalArgumentException("buffer name '" + WireValues.printable(name)
                        + "' is not 1..64 printable ASCII characters");
            }
            if (shards < 1 || shards > MAX_SHARDS || shard < 0 || shard >= shards || copies < 1 || copies > MAX_SHARDS
                    || copy < 0 || copy >= copies || stage < 0) {
                throw new IllegalArgumentException("state buffer " + name + ": shard " + shard + " of " + shards + ", copy "
                        + copy + " of " + copies + ", stage " + stage);
            }
            if (length < 0 && (length != UNKNOWN_LENGTH || !isLegacyShape(shard, shards, stage, copy, copies))) {
                throw new IllegalArgumentException("state buffer " + name + ": length " + length + " (unknown only in the"
                        + " old form: shard 0 of 1, stage 0, copy 0 of 1)");
            }
        }

        /**
         * {@return an entry of the old form: shard 0 of 1, stage 0, copy 0 of 1, length unknown}
         *
         * @param name the buffer's name
         * @param digest its digest
         * @throws IllegalArgumentException when the name is not 1..64 printable ASCII characters
         */
        public static Entry unsharded(String name, long digest) {
            return new Entry(name, 0, 1, 0, 0, 1, UNKNOWN_LENGTH, digest);
        }

        /**
         * Writes the entry's eight-element form (name, digest, shard, shards, stage, copy, copies, length), the form
         * this section writes for every entry but an old-form one and the form a worker's record always carries.
         *
         * @param p where to write
         * @throws IOException when the packer fails
         */
        public void pack(MessagePacker p) throws IOException {
            p.packArrayHeader(8);
            p.packString(name);
            PayloadSection.packUnsigned(p, digest);
            p.packInt(shard);
            p.packInt(shards);
            p.packInt(stage);
            p.packInt(copy);
            p.packInt(copies);
            p.packLong(length);
        }

        private static boolean isLegacyShape(int shard, int shards, int stage, int copy, int copies) {
            return shard == 0 && shards == 1 && stage == 0 && copy == 0 && copies == 1;
        }

        /** {@return true when this entry is written in the old two-element form (length unknown)} */
        public boolean isLegacy() {
            return length == UNKNOWN_LENGTH;
        }

        /** {@return the comparison key: the same buffer cut the same way} */
        Key key() {
            return new Key(name, shard, shards);
        }

        /** {@return "name shard s/n", plus "copy c/k" when replicated, for reports} */
        String label() {
            return name + " shard " + shard + "/" + shards + (copies > 1 ? " copy " + copy + "/" + copies : "");
        }
    }

    /** What two entries must share to be compared. */
    record Key(String name, int shard, int shards) {
    }

    /**
     * Validates the mode, copies the entries and checks each (name, shard, shards, copy) appears once.
     *
     * @throws NullPointerException when {@code mode}, {@code entries} or an entry is null
     * @throws IllegalArgumentException when the mode is not 1..32 of a-z, 0-9 and '-', an entry appears twice, or
     *     there are more than {@link #MAX_BUFFERS} entries
     */
    public StateDigestsSection {
        Objects.requireNonNull(mode, "mode");
        if (!WireValues.MODE.matcher(mode).matches()) {
            throw new IllegalArgumentException("mode '" + WireValues.printable(mode) + "' is not 1..32 of a-z, 0-9 and '-'");
        }
        entries = List.copyOf(entries);
        if (entries.size() > MAX_BUFFERS) {
            throw new IllegalArgumentException(entries.size() + " state digests, at most " + MAX_BUFFERS);
        }
        Set<List<Object>> seen = new HashSet<>();
        for (Entry e : entries) {
            if (!seen.add(List.of(e.name(), e.shard(), e.shards(), e.copy()))) {
                throw new IllegalArgumentException("state buffer " + e.label() + " appears twice");
            }
        }
    }

    /**
     * The old form: one unsharded entry per buffer name ({@link Entry#unsharded}), length unknown.
     *
     * @param mode the checksum mode's wire name
     * @param digests digest per buffer name, in order
     * @throws IllegalArgumentException as the canonical constructor and {@link Entry} do
     */
    public StateDigestsSection(String mode, Map<String, Long> digests) {
        this(mode, digests.entrySet().stream().map(e -> Entry.unsharded(e.getKey(), e.getValue())).toList());
    }

    /**
     * The digests of {@code rows} of a TP1 x PP1 engine, computed by {@code backend} in {@code mode}: each row its own
     * buffer, shard 0 of 1, copy 0 of 1, stage 0, with its length (what a producer attaches when it sends and a
     * consumer when it consumes: {@code payload.withSection(StateDigestsSection.compute(...))}). Under TP or PP the
     * workers' records carry their shards ({@code WorkerChecksummer}).
     *
     * @param backend the backend that computes the digests ({@link KvChecksum#stateDigests})
     * @param rows the request's state rows, named 1..64 printable ASCII characters each, distinct
     * @param mode the checksum mode, not null
     * @return the section, one digest per row in the rows' order, in {@code mode}
     * @throws IllegalArgumentException when two rows share a name, or a name is not 1..64 printable ASCII characters
     * @throws io.kvchecksum.InvalidLayoutException when the backend cannot read a row's memory or lacks the mode
     */
    public static StateDigestsSection compute(KvChecksum backend, List<StateRow> rows, ChecksumMode mode) {
        long[] d = backend.stateDigests(rows, mode);
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < d.length; i++) {
            out.add(new Entry(rows.get(i).name(), 0, 1, 0, 0, 1, rows.get(i).length(), d[i]));
        }
        return new StateDigestsSection(mode.wireName(), out);
    }

    /**
     * The sections of several workers (TP ranks, PP stages) as one: all their entries.
     *
     * @param parts the workers' sections, at least one, all in the same mode
     * @return one section with every part's entries, in the parts' order
     * @throws IllegalArgumentException when {@code parts} is empty, two parts have different modes or two entries the
     *     same (name, shard, shards, copy)
     */
    public static StateDigestsSection merge(List<StateDigestsSection> parts) {
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("nothing to merge");
        }
        List<Entry> all = new ArrayList<>();
        for (StateDigestsSection s : parts) {
            if (!s.mode().equals(parts.get(0).mode())) {
                throw new IllegalArgumentException("workers computed state digests in modes " + parts.get(0).mode()
                        + " and " + s.mode());
            }
            all.addAll(s.entries());
        }
        return new StateDigestsSection(parts.get(0).mode(), all);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void pack(MessagePacker p) throws IOException {
        p.packArrayHeader(2);
        p.packString(mode);
        p.packArrayHeader(entries.size());
        for (Entry e : entries) {
            if (e.isLegacy()) {
                p.packArrayHeader(2);
                p.packString(e.name());
                PayloadSection.packUnsigned(p, e.digest());
            } else {
                e.pack(p);
            }
        }
    }

    /**
     * Reads the section's value (registered in {@link PayloadSections}; public so that records carrying state digests,
     * such as a worker's, can be read with the same checks).
     *
     * @param v the section's value, already checked to be well-formed msgpack of bounded size; untrusted otherwise
     * @return the section
     * @throws MalformedPayloadException naming the field ({@code sections.state-digests.digests[i].shard}, ...) when a
     *     value has the wrong type, is out of range, or an entry appears twice
     */
    public static StateDigestsSection decode(Value v) {
        String f = "sections." + NAME;
        List<Value> top = WireValues.array(v, f, 2, 2);
        String mode = WireValues.mode(top.get(0), f + ".mode");
        List<Value> list = WireValues.array(top.get(1), f + ".digests", 0, MAX_BUFFERS);
        List<Entry> out = new ArrayList<>();
        Set<List<Object>> seen = new HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            String at = f + ".digests[" + i + "]";
            List<Value> e = WireValues.array(list.get(i), at, 2, 8);
            if (e.size() != 2 && e.size() != 8) {
                throw new MalformedPayloadException(at + ": " + e.size() + " elements, expected 2 or 8");
            }
            String name = WireValues.name(e.get(0), at + ".name", 64);
            long digest = WireValues.unsigned64(e.get(1), at + ".digest");
            Entry entry;
            if (e.size() == 2) {
                entry = Entry.unsharded(name, digest);
            } else {
                int shards = (int) WireValues.integer(e.get(3), at + ".shards", 1, MAX_SHARDS);
                int shard = (int) WireValues.integer(e.get(2), at + ".shard", 0, shards - 1);
                int stage = (int) WireValues.integer(e.get(4), at + ".stage", 0, Integer.MAX_VALUE);
                int copies = (int) WireValues.integer(e.get(6), at + ".copies", 1, MAX_SHARDS);
                int copy = (int) WireValues.integer(e.get(5), at + ".copy", 0, copies - 1);
                long length = WireValues.integer(e.get(7), at + ".length", 0, Long.MAX_VALUE);
                entry = new Entry(name, shard, shards, stage, copy, copies, length, digest);
            }
            if (!seen.add(List.of(name, entry.shard(), entry.shards(), entry.copy()))) {
                throw new MalformedPayloadException(at + ".name: '" + entry.label() + "' appears twice");
            }
            out.add(entry);
        }
        return new StateDigestsSection(mode, out);
    }

    /**
     * The entries both sides digested with the same key and different values, in the producer's order, as "name shard
     * s/n copy c/k" labels of the consumer's copies: what a MISMATCH names. Entries of different known lengths are not
     * compared. Empty when either side lacks the section or the modes differ (nothing was compared).
     *
     * @param producer the producer's section of this name, or {@code null} when it has none
     * @param consumer the consumer's section of this name, or {@code null} when it has none
     * @return a new list of the labels of the consumer entries whose digests differ from the producer's
     */
    public static List<String> differingBuffers(PayloadSection producer, PayloadSection consumer) {
        List<String> out = new ArrayList<>();
        if (!(producer instanceof StateDigestsSection p && consumer instanceof StateDigestsSection c
                && p.mode().equals(c.mode()))) {
            return out;
        }
        Map<Key, List<Entry>> theirs = c.byKey();
        for (Entry e : p.copiesZero().values()) {
            for (Entry x : theirs.getOrDefault(e.key(), List.of())) {
                if (sameLength(e, x) && x.digest() != e.digest()) {
                    out.add(x.label() + (x.stage() != 0 ? " (stage " + x.stage() + ")" : ""));
                }
            }
        }
        return out;
    }

    private static boolean sameLength(Entry a, Entry b) {
        return a.isLegacy() || b.isLegacy() || a.length() == b.length();
    }

    /** The entries by key, every copy. */
    private Map<Key, List<Entry>> byKey() {
        Map<Key, List<Entry>> m = new LinkedHashMap<>();
        entries.forEach(e -> m.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e));
        return m;
    }

    /** The entry a producer compares per key: copy 0 (a producer sends only copy 0; a stray other copy is ignored). */
    private Map<Key, Entry> copiesZero() {
        Map<Key, Entry> m = new LinkedHashMap<>();
        entries.stream().filter(e -> e.copy() == 0).forEach(e -> m.put(e.key(), e));
        return m;
    }

    /** The shard counts of each buffer name. */
    private Map<String, Set<Integer>> shardCounts() {
        Map<String, Set<Integer>> m = new TreeMap<>();
        entries.forEach(e -> m.computeIfAbsent(e.name(), k -> new java.util.TreeSet<>()).add(e.shards()));
        return m;
    }

    /** The comparison registered in {@link PayloadSections} (see the class comment). */
    static SectionVerdict compare(PayloadSection producer, PayloadSection consumer) {
        if (producer == null || consumer == null) {
            return WireValues.oneSideOnly(NAME, "state digests", producer);
        }
        StateDigestsSection p = (StateDigestsSection) producer;
        StateDigestsSection c = (StateDigestsSection) consumer;
        if (!p.mode().equals(c.mode())) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.MODE_DIFFERS, "state digests in mode " + p.mode()
                    + " (producer) and " + c.mode() + " (consumer)");
        }
        List<String> differ = differingBuffers(p, c);
        Map<String, Set<Integer>> ps = p.shardCounts();
        Map<String, Set<Integer>> cs = c.shardCounts();
        List<String> layout = new ArrayList<>();
        List<String> oneSide = new ArrayList<>();
        ps.keySet().stream().filter(k -> !cs.containsKey(k)).forEach(k -> oneSide.add(k + " (producer)"));
        cs.keySet().stream().filter(k -> !ps.containsKey(k)).forEach(k -> oneSide.add(k + " (consumer)"));
        ps.forEach((name, counts) -> {
            if (cs.containsKey(name) && !counts.equals(cs.get(name))) {
                layout.add(name + " in " + shardsText(counts) + " (producer) and " + shardsText(cs.get(name)) + " (consumer)");
            }
        });
        Map<Key, Entry> mine = p.copiesZero();
        int compared = 0;
        for (Map.Entry<Key, List<Entry>> e : c.byKey().entrySet()) {
            Entry x = mine.get(e.getKey());
            if (x == null) {
                // A shard the producer's copy 0 lacks while the name and counts agree: a layout the two sides cut alike
                // but filled differently; reported with the layouts.
                if (ps.containsKey(e.getKey().name()) && ps.get(e.getKey().name()).equals(cs.get(e.getKey().name()))) {
                    layout.add(e.getValue().get(0).label() + " on the consumer only");
                }
                continue;
            }
            for (Entry y : e.getValue()) {
                if (!sameLength(x, y)) {
                    layout.add(y.label() + " length differs: " + x.length() + " bytes (producer), " + y.length()
                            + " (consumer)");
                } else {
                    compared++;
                }
            }
        }
        for (Entry x : mine.values()) {
            if (!c.byKey().containsKey(x.key()) && cs.containsKey(x.name()) && ps.get(x.name()).equals(cs.get(x.name()))) {
                layout.add(x.label() + " on the producer only");
            }
        }
        String also = (layout.isEmpty() ? "" : "; layout differs: " + String.join(", ", layout))
                + (oneSide.isEmpty() ? "" : "; on one side only: " + String.join(", ", oneSide));
        if (!differ.isEmpty()) {
            return SectionVerdict.mismatch(NAME, "state buffers differ: " + String.join(", ", differ) + also);
        }
        if (!layout.isEmpty()) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.LAYOUT_DIFFERS, "state buffers not comparable: "
                    + String.join(", ", layout) + (oneSide.isEmpty() ? "" : "; on one side only: " + String.join(", ", oneSide)));
        }
        if (!oneSide.isEmpty()) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.ONE_SIDE_ONLY, "state buffers on one side only: "
                    + String.join(", ", oneSide));
        }
        if (compared == 0) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.NO_COMMON_POSITION, "no state buffer on either side");
        }
        return SectionVerdict.match(NAME, compared + " state digests");
    }

    private static String shardsText(Set<Integer> counts) {
        return counts.stream().map(String::valueOf).collect(Collectors.joining(" and ")) + " shards";
    }
}
