package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import org.msgpack.core.MessagePacker;
import org.msgpack.value.Value;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The {@value #NAME} section of a payload: SGLang's page digest (Adler-32 over the request's pages, see
 * {@link io.kvchecksum.PageDigestPlan}) with the {@link io.kvchecksum.engine.auxiliary.LayoutSignature layout
 * signature} that says whether two peers' digests are comparable at all. One entry per (group, worker): a digest is not
 * additive, so TP ranks and PP stages each carry their own.
 *
 * <p>Wire value (docs/wire-format.md, "Known sections"): a msgpack array of entries, each an array of exactly 7
 * non-negative integers {@code [group_id, worker, signature, page_size, first_token, num_pages, digest]}: {@code
 * worker} is {@code pp_stage * tp_size + tp_rank}; {@code signature} an unsigned 64-bit integer (msgpack uint64 when
 * its top bit is set); the digest covers {@code num_pages} pages of {@code page_size} tokens from request position
 * {@code first_token}; {@code digest} is an Adler-32 value (each 16-bit half below 65521). At most
 * {@value #MAX_ENTRIES} entries, each (group, worker) once.
 *
 * <p>Comparison ({@link #compare}), entry by entry: signatures differ: UNVERIFIED {@link
 * UnverifiedReason#LAYOUT_DIFFERS} (the weighted sum is still compared as usual); other pages covered: UNVERIFIED
 * {@link UnverifiedReason#NO_COMMON_POSITION}; an entry on one side only, or the section on one side only: UNVERIFIED
 * {@link UnverifiedReason#ONE_SIDE_ONLY}; digests differ: MISMATCH; otherwise MATCH. The section's verdict is MISMATCH
 * if any entry mismatches, else UNVERIFIED (the first such entry's reason) if any entry is, else MATCH.
 *
 * @param entries the entries, sorted by (group, worker)
 */
public record SglangDigestSection(List<Entry> entries) implements PayloadSection {
    /** The section's key. */
    public static final String NAME = "sglang-digest";
    /** The most entries a payload may carry (a group per cache kind times every worker, with room to spare). */
    public static final int MAX_ENTRIES = 1 << 16;

    private static final int ADLER_MOD = 65521;

    /**
     * One worker's digest of one group.
     *
     * @param groupId the KV cache group
     * @param worker {@code pp_stage * tp_size + tp_rank} (0 for a single worker)
     * @param signature the layout signature ({@link io.kvchecksum.engine.auxiliary.LayoutSignature})
     * @param pageSize tokens per page
     * @param firstToken the request position of the first page's first token (a multiple of {@code pageSize})
     * @param numPages the pages covered
     * @param digest Adler-32 of the pages' stream, in {@code [0, 2^32)}
     */
    public record Entry(int groupId, int worker, long signature, int pageSize, long firstToken, int numPages, long digest) {
        /**
         * Validates the ranges.
         *
         * @throws IllegalArgumentException when {@code groupId}, {@code worker}, {@code firstToken} or
         *     {@code numPages} is negative, {@code pageSize} is not positive, or {@code digest} is not an Adler-32
         *     value (in {@code [0, 2^32)}, each 16-bit half below 65521)
         */
        public Entry {
            if (groupId < 0 || worker < 0 || pageSize <= 0 || firstToken < 0 || numPages < 0) {
                throw new IllegalArgumentException("group, worker, first token and page count must be non-negative and "
                        + "the page size positive: " + groupId + ", " + worker + ", " + firstToken + ", " + numPages + ", "
                        + pageSize);
            }
            if (!isAdler32(digest)) {
                throw new IllegalArgumentException("digest " + digest + " is not an Adler-32 value");
            }
        }

        String key() {
            return "group " + groupId + (worker == 0 ? "" : " worker " + worker);
        }
    }

    /**
     * Sorts the entries by (group, worker) and keeps an unmodifiable copy.
     *
     * @throws NullPointerException when {@code entries} or an entry is null
     * @throws IllegalArgumentException when a (group, worker) appears twice or there are more than
     *     {@link #MAX_ENTRIES} entries
     */
    public SglangDigestSection {
        List<Entry> sorted = new ArrayList<>(Objects.requireNonNull(entries, "entries"));
        sorted.sort(Comparator.comparingInt(Entry::groupId).thenComparingInt(Entry::worker));
        Set<Long> seen = new HashSet<>();
        for (Entry e : sorted) {
            if (!seen.add(((long) e.groupId() << 32) | e.worker())) {
                throw new IllegalArgumentException(e.key() + " appears twice");
            }
        }
        if (sorted.size() > MAX_ENTRIES) {
            throw new IllegalArgumentException(sorted.size() + " entries, more than " + MAX_ENTRIES);
        }
        entries = List.copyOf(sorted);
    }

    /**
     * A section of one entry.
     *
     * @param entry the entry, not null
     * @return the section holding only {@code entry}
     */
    public static SglangDigestSection of(Entry entry) {
        return new SglangDigestSection(List.of(entry));
    }

    static boolean isAdler32(long v) {
        return v >= 0 && v <= 0xffffffffL && (v & 0xffff) < ADLER_MOD && (v >>> 16) < ADLER_MOD;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void pack(MessagePacker p) throws IOException {
        p.packArrayHeader(entries.size());
        for (Entry e : entries) {
            p.packArrayHeader(7);
            p.packInt(e.groupId());
            p.packInt(e.worker());
            PayloadSection.packUnsigned(p, e.signature());
            p.packInt(e.pageSize());
            p.packLong(e.firstToken());
            p.packInt(e.numPages());
            p.packLong(e.digest());
        }
    }

    /**
     * Reads the section's value; types and ranges are checked, each failure naming its field.
     *
     * @param v the section's msgpack value, from the network: untrusted
     * @return the section, its entries sorted by (group, worker)
     * @throws MalformedPayloadException when the value is not an array of at most {@link #MAX_ENTRIES} entries of 7
     *     integers in their ranges, a digest is not an Adler-32 value, a first token is not a multiple of the page
     *     size, or a (group, worker) appears twice
     */
    public static SglangDigestSection decode(Value v) {
        String at = "sections." + NAME;
        List<Value> a = WireValues.array(v, at, 0, MAX_ENTRIES);
        List<Entry> out = new ArrayList<>();
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < a.size(); i++) {
            String ei = at + "[" + i + "]";
            Value e = a.get(i);
            if (!e.isArrayValue() || e.asArrayValue().size() != 7) {
                throw new MalformedPayloadException(ei + ": expected [group_id, worker, signature, page_size, first_token,"
                        + " num_pages, digest], got " + (e.isArrayValue() ? e.asArrayValue().size() + " elements" : e.getValueType()));
            }
            List<Value> f = e.asArrayValue().list();
            int group = (int) WireValues.integer(f.get(0), ei + ".group_id", 0, Integer.MAX_VALUE);
            int worker = (int) WireValues.integer(f.get(1), ei + ".worker", 0, Integer.MAX_VALUE);
            long signature = WireValues.unsigned64(f.get(2), ei + ".signature");
            int pageSize = (int) WireValues.integer(f.get(3), ei + ".page_size", 1, Integer.MAX_VALUE);
            long first = WireValues.integer(f.get(4), ei + ".first_token", 0, Long.MAX_VALUE);
            int pages = (int) WireValues.integer(f.get(5), ei + ".num_pages", 0, Integer.MAX_VALUE);
            long digest = WireValues.integer(f.get(6), ei + ".digest", 0, 0xffffffffL);
            if (!isAdler32(digest)) {
                throw new MalformedPayloadException(ei + ".digest: " + digest + " is not an Adler-32 value (each 16-bit"
                        + " half must be below 65521)");
            }
            if (first % pageSize != 0) {
                throw new MalformedPayloadException(ei + ".first_token: " + first + " is not a multiple of page_size "
                        + pageSize);
            }
            if (!seen.add(((long) group << 32) | worker)) {
                throw new MalformedPayloadException(ei + ": group " + group + " worker " + worker + " appears twice");
            }
            out.add(new Entry(group, worker, signature, pageSize, first, pages, digest));
        }
        return new SglangDigestSection(out);
    }

    /**
     * The comparison rule of this section ({@link PayloadSections.Known#comparison()}); either side may be absent.
     *
     * @param producer the producer's {@code SglangDigestSection}, or {@code null} when it has none
     * @param consumer the consumer's {@code SglangDigestSection}, or {@code null} when it has none
     * @return the section's verdict, as the class comment's comparison rule says
     */
    public static SectionVerdict compare(PayloadSection producer, PayloadSection consumer) {
        if (producer == null || consumer == null) {
            return WireValues.oneSideOnly(NAME, "the page digest was", producer);
        }
        Map<String, Entry> p = byKey(((SglangDigestSection) producer).entries());
        Map<String, Entry> c = byKey(((SglangDigestSection) consumer).entries());
        Map<Status, List<String>> lines = new EnumMap<>(Status.class);
        UnverifiedReason firstReason = null;
        Set<String> keys = new TreeSet<>(p.keySet());
        keys.addAll(c.keySet());
        for (String k : keys) {
            Entry a = p.get(k);
            Entry b = c.get(k);
            UnverifiedReason r = null;
            String why;
            if (a == null || b == null) {
                r = UnverifiedReason.ONE_SIDE_ONLY;
                why = k + ": " + (a == null ? "consumer" : "producer") + " only";
            } else if (a.signature() != b.signature()) {
                r = UnverifiedReason.LAYOUT_DIFFERS;
                why = k + ": layout signatures differ (" + Long.toHexString(a.signature()) + " page " + a.pageSize()
                        + " vs " + Long.toHexString(b.signature()) + " page " + b.pageSize() + ")";
            } else if (a.firstToken() != b.firstToken() || a.numPages() != b.numPages()) {
                r = UnverifiedReason.NO_COMMON_POSITION;
                why = k + ": other pages covered (" + a.numPages() + " pages from token " + a.firstToken() + " vs "
                        + b.numPages() + " from " + b.firstToken() + ")";
            } else {
                why = k + ": digest " + hex(a.digest()) + (a.digest() != b.digest() ? " != " + hex(b.digest()) : "");
            }
            firstReason = firstReason != null ? firstReason : r;
            Status s = r != null ? Status.UNVERIFIED : a.digest() != b.digest() ? Status.MISMATCH : Status.MATCH;
            lines.computeIfAbsent(s, x -> new ArrayList<>()).add(why);
        }
        if (lines.containsKey(Status.MISMATCH)) {
            return SectionVerdict.mismatch(NAME, String.join("; ", lines.get(Status.MISMATCH)));
        }
        if (firstReason != null) {
            return SectionVerdict.unverified(NAME, firstReason, String.join("; ", lines.get(Status.UNVERIFIED)));
        }
        return SectionVerdict.match(NAME, String.join("; ", lines.getOrDefault(Status.MATCH, List.of())));
    }

    private static Map<String, Entry> byKey(List<Entry> entries) {
        return entries.stream().collect(Collectors.toMap(Entry::key, e -> e, (a, b) -> b, LinkedHashMap::new));
    }

    private static String hex(long digest) {
        return String.format("%08x", digest);
    }
}
