package io.kvchecksum.engine.wire;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.PageProbe;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import org.msgpack.core.MessagePacker;
import org.msgpack.value.Value;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The {@code "page-probe"} section: the head/tail probe of every page the request touched ({@link PageProbe}), computed
 * by the producer when it sends and by the consumer when it consumes, so a page whose write had not landed when the
 * completion signal fired shows as a probe mismatch at that page (seeds/004), reading a small fraction of the bytes
 * of the full pass (its measured time: {@code docs/bench-cpu.md}, "Page probe cost").
 *
 * <p>Each page's 64-bit head and tail sums (all workers' partial sums added) are folded to 32 bits,
 * {@code (int) (s ^ (s >>> 32))}: 8 bytes per page. Wire value ({@code docs/wire-format.md}):
 * {@code [page_size, probe_bytes, first_token, num_tokens, bin]}, {@code bin} holding per page, in the request's page
 * order, the little-endian uint32 head then the uint32 tail.
 *
 * <p><b>Replicated heads</b> (GQA with fewer KV heads than TP ranks, MLA) are probed as the block checksums are
 * checked ({@code Aggregator}): the producer's section holds one probe, of copy 0 of every head; a consumer's holds one
 * probe per replica check {@code k}, summing copy {@code k % r} of heads replicated {@code r} times, so each check
 * covers every head once and every copy is in some check. On the wire a producer's section is one probe; a section of
 * several checks (a consumer's, kept in memory) writes them one after the other in {@code bin}.
 *
 * <p>Comparison: pages covering the same tokens on both sides are compared, each consumer check against the
 * producer's (first) probe; a differing head or tail is a MISMATCH naming the pages and the check ({@link #differences}
 * gives them structured). A side without the section is {@link UnverifiedReason#ONE_SIDE_ONLY}; another page size or
 * probe size {@link UnverifiedReason#PROBE_PAGES_DIFFER} (the probe depends on the pages); no page in common
 * {@link UnverifiedReason#NO_COMMON_POSITION}.
 *
 * @param pageSize tokens per page
 * @param probeBytes bytes probed at each end of each cell
 * @param firstToken the request position of page 0's first token
 * @param numTokens the request's token count
 * @param heads per check, the folded head probe per page (a producer: one check)
 * @param tails per check, the folded tail probe per page
 */
public record PageProbeSection(int pageSize, int probeBytes, long firstToken, long numTokens, int[][] heads, int[][] tails)
        implements PayloadSection {
    /** The section's key in the payload. */
    public static final String NAME = "page-probe";
    /** The most pages one section carries (a reader refuses more): 2^24 pages, 128 MiB of probes. */
    public static final int MAX_PAGES = 1 << 24;
    /** The most checks (replica copies) one section carries. */
    public static final int MAX_CHECKS = 1 << 16;

    /**
     * Validates the pages and copies the two arrays, so the record is immutable.
     *
     * @throws IllegalArgumentException when {@code pageSize} is not positive, {@code probeBytes} not a positive
     *     multiple of 8, {@code firstToken} negative or greater than {@code numTokens}, there are not 1..{@link
     *     #MAX_CHECKS} checks, as many heads as tails, or a check does not hold exactly
     *     {@code ceil((numTokens - firstToken) / pageSize)} values
     * @throws NullPointerException when {@code heads}, {@code tails} or one of their arrays is null
     */
    public PageProbeSection {
        if (pageSize <= 0 || probeBytes <= 0 || probeBytes % 8 != 0 || firstToken < 0 || numTokens < firstToken) {
            throw new IllegalArgumentException("page size " + pageSize + ", probe bytes " + probeBytes + ", tokens "
                    + firstToken + ".." + numTokens);
        }
        if (heads.length < 1 || heads.length > MAX_CHECKS || heads.length != tails.length) {
            throw new IllegalArgumentException(heads.length + " head checks and " + tails.length + " tail checks, expected"
                    + " as many, 1.." + MAX_CHECKS);
        }
        long pages = Math.ceilDiv(numTokens - firstToken, (long) pageSize);
        int[][] h = new int[heads.length][];
        int[][] t = new int[heads.length][];
        for (int k = 0; k < heads.length; k++) {
            if (heads[k].length != pages || tails[k].length != pages) {
                throw new IllegalArgumentException(pages + " pages of " + pageSize + " tokens from " + firstToken + " to "
                        + numTokens + ", but check " + k + " has " + heads[k].length + " heads and " + tails[k].length
                        + " tails");
            }
            h[k] = heads[k].clone();
            t[k] = tails[k].clone();
        }
        heads = h;
        tails = t;
    }

    /**
     * A section of one probe (a producer's, or a consumer's without replicated heads).
     *
     * @param pageSize tokens per page
     * @param probeBytes bytes probed at each end of each cell
     * @param firstToken the request position of page 0's first token
     * @param numTokens the request's token count
     * @param head folded head probe per page
     * @param tail folded tail probe per page
     * @throws IllegalArgumentException as the canonical constructor does
     * @throws NullPointerException when {@code head} or {@code tail} is null
     */
    public PageProbeSection(int pageSize, int probeBytes, long firstToken, long numTokens, int[] head, int[] tail) {
        this(pageSize, probeBytes, firstToken, numTokens, new int[][] {head}, new int[][] {tail});
    }

    /**
     * The folded form of one request's probes (the workers' partial sums already added: {@link PageProbe.Probes#sum}).
     *
     * @param p the request's probes, all workers' partial sums added
     * @return the section: the probes' pages and tokens, each head and tail folded to {@code (int) (s ^ (s >>> 32))}
     * @throws IllegalArgumentException when the probes' pages are not valid for a section (see the constructor)
     */
    public static PageProbeSection of(PageProbe.Probes p) {
        return ofChecks(List.of(p));
    }

    /**
     * The folded form of one request's replica checks: a consumer's probes of every copy (each already the sum of the
     * workers' partials for that check), in check order.
     *
     * @param checks the checks' probes, 1..{@link #MAX_CHECKS}, all over the same pages
     * @return the section with one folded probe per check
     * @throws IllegalArgumentException when {@code checks} is empty or too long, or two checks cover other pages
     */
    public static PageProbeSection ofChecks(List<PageProbe.Probes> checks) {
        if (checks.isEmpty()) {
            throw new IllegalArgumentException("no probe checks");
        }
        PageProbe.Probes a = checks.get(0);
        int[][] h = new int[checks.size()][];
        int[][] t = new int[checks.size()][];
        for (int k = 0; k < checks.size(); k++) {
            PageProbe.Probes p = checks.get(k);
            if (p.pageSize() != a.pageSize() || p.probeBytes() != a.probeBytes() || p.firstToken() != a.firstToken()
                    || p.numTokens() != a.numTokens()) {
                throw new IllegalArgumentException("probe checks over other pages: " + a + " and " + p);
            }
            h[k] = Arrays.stream(p.head()).mapToInt(PageProbeSection::fold).toArray();
            t[k] = Arrays.stream(p.tail()).mapToInt(PageProbeSection::fold).toArray();
        }
        return new PageProbeSection(a.pageSize(), a.probeBytes(), a.firstToken(), a.numTokens(), h, t);
    }

    /**
     * One worker's section: {@link PageProbe#compute} folded (what a TP1 x PP1 engine attaches).
     *
     * @param backend the backend that digests the windows on device memory, not null
     * @param plan the request's validated plan, not null
     * @param probeBytes the bytes probed at each end of each cell, a positive multiple of 8
     * @return the section of every page of the plan's request
     * @throws io.kvchecksum.InvalidLayoutException as {@link PageProbe#compute} says
     */
    public static PageProbeSection compute(KvChecksum backend, SlicePlan plan, int probeBytes) {
        return of(PageProbe.compute(backend, plan, probeBytes));
    }

    static int fold(long s) {
        return (int) (s ^ (s >>> 32));
    }

    /** {@return a copy of the folded head probes of the first check, one per page in the request's page order} */
    public int[] head() {
        return heads[0].clone();
    }

    /** {@return a copy of the folded tail probes of the first check, one per page in the request's page order} */
    public int[] tail() {
        return tails[0].clone();
    }

    /** {@return a deep copy of the folded head probes, per check, per page} */
    @Override
    public int[][] heads() {
        return Arrays.stream(heads).map(int[]::clone).toArray(int[][]::new);
    }

    /** {@return a deep copy of the folded tail probes, per check, per page} */
    @Override
    public int[][] tails() {
        return Arrays.stream(tails).map(int[]::clone).toArray(int[][]::new);
    }

    /** {@return the number of pages probed} */
    public int numPages() {
        return heads[0].length;
    }

    /** {@return the number of checks: 1 for a producer, the replica checks for a consumer} */
    public int numChecks() {
        return heads.length;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void pack(MessagePacker p) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 * numPages() * heads.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int k = 0; k < heads.length; k++) {
            for (int i = 0; i < heads[k].length; i++) {
                b.putInt(heads[k][i]).putInt(tails[k][i]);
            }
        }
        p.packArrayHeader(5);
        p.packInt(pageSize);
        p.packInt(probeBytes);
        p.packLong(firstToken);
        p.packLong(numTokens);
        p.packBinaryHeader(b.capacity());
        p.writePayload(b.array());
    }

    /** Reads the section's value (registered in {@link PayloadSections}). */
    static PayloadSection decode(Value v) {
        String f = "sections." + NAME;
        List<Value> a = WireValues.array(v, f, 5, 5);
        int ps = (int) WireValues.integer(a.get(0), f + ".page_size", 1, Integer.MAX_VALUE);
        int pb = (int) WireValues.integer(a.get(1), f + ".probe_bytes", 8, Integer.MAX_VALUE);
        if (pb % 8 != 0) {
            throw new MalformedPayloadException(f + ".probe_bytes: " + pb + " is not a multiple of 8");
        }
        long first = WireValues.integer(a.get(2), f + ".first_token", 0, Long.MAX_VALUE);
        long n = WireValues.integer(a.get(3), f + ".num_tokens", first, Long.MAX_VALUE);
        long pages = Math.ceilDiv(n - first, (long) ps);
        byte[] bin = WireValues.bin(a.get(4), f + ".probes");
        long checks = pages == 0 ? (bin.length == 0 ? 1 : -1) : bin.length % (8 * pages) == 0 ? bin.length / (8 * pages) : -1;
        if (pages > MAX_PAGES || checks < 1 || checks > MAX_CHECKS || pages * checks > MAX_PAGES) {
            throw new MalformedPayloadException(f + ".probes: " + bin.length + " bytes, but " + pages + " pages of "
                    + ps + " tokens from " + first + " to " + n + " need " + (8 * pages) + " per check (1.." + MAX_CHECKS
                    + " checks, at most " + MAX_PAGES + " pages in all)");
        }
        ByteBuffer b = ByteBuffer.wrap(bin).order(ByteOrder.LITTLE_ENDIAN);
        int[][] h = new int[(int) checks][(int) pages];
        int[][] t = new int[(int) checks][(int) pages];
        for (int k = 0; k < checks; k++) {
            for (int i = 0; i < pages; i++) {
                h[k][i] = b.getInt();
                t[k][i] = b.getInt();
            }
        }
        return new PageProbeSection(ps, pb, first, n, h, t);
    }

    /**
     * One page whose probe differs in one consumer check.
     *
     * @param page the page's index in the producer's request page order
     * @param firstToken the request position of its first token
     * @param head whether its head differs
     * @param tail whether its tail differs
     * @param check the consumer's check (replica copy) in which it differs; 0 without replicated heads
     */
    public record PageDifference(int page, long firstToken, boolean head, boolean tail, int check) {
        /**
         * A difference in check 0.
         *
         * @param page the page's index in the producer's request page order
         * @param firstToken the request position of its first token
         * @param head whether its head differs
         * @param tail whether its tail differs
         */
        public PageDifference(int page, long firstToken, boolean head, boolean tail) {
            this(page, firstToken, head, tail, 0);
        }

        @Override
        public String toString() {
            return "page " + page + " (token " + firstToken + ") " + (head && tail ? "head+tail" : head ? "head" : "tail")
                    + (check > 0 ? " in copy check " + check : "");
        }
    }

    /**
     * The pages both sides probed over the same tokens whose head or tail differs, per consumer check in check order,
     * in page order within a check, against the producer's first probe; empty when the sections are not comparable
     * (either absent, other page or probe sizes).
     *
     * @param producer the producer's section of this name, or {@code null} when it has none
     * @param consumer the consumer's section of this name, or {@code null} when it has none
     * @return a new list of the differing pages, indexed in the producer's page order
     */
    public static List<PageDifference> differences(PayloadSection producer, PayloadSection consumer) {
        List<PageDifference> out = new ArrayList<>();
        if (!(producer instanceof PageProbeSection p) || !(consumer instanceof PageProbeSection c) || !p.sameGeometry(c)) {
            return out;
        }
        int[] ph = p.heads[0];
        int[] pt = p.tails[0];
        for (int k = 0; k < c.heads.length; k++) {
            int[] ch = c.heads[k];
            int[] ct = c.tails[k];
            for (int i = 0; i < ph.length; i++) {
                int j = c.indexOf(p, i);
                if (j >= 0 && (ph[i] != ch[j] || pt[i] != ct[j])) {
                    out.add(new PageDifference(i, p.pageStart(i), ph[i] != ch[j], pt[i] != ct[j], k));
                }
            }
        }
        return out;
    }

    private boolean sameGeometry(PageProbeSection o) {
        return pageSize == o.pageSize && probeBytes == o.probeBytes && Math.floorMod(firstToken - o.firstToken, pageSize) == 0;
    }

    private long pageStart(int i) {
        return firstToken + (long) i * pageSize;
    }

    private long pageEnd(int i) {
        return Math.min(pageStart(i) + pageSize, numTokens);
    }

    /** This side's index of the page of {@code o} covering exactly the same tokens, or -1. */
    private int indexOf(PageProbeSection o, int i) {
        long j = (o.pageStart(i) - firstToken) / pageSize;
        if (o.pageStart(i) < firstToken || j >= numPages() || pageEnd((int) j) != o.pageEnd(i)) {
            return -1;
        }
        return (int) j;
    }

    /** The comparison registered in {@link PayloadSections} (see the class comment). */
    static SectionVerdict compare(PayloadSection producer, PayloadSection consumer) {
        if (producer == null || consumer == null) {
            return WireValues.oneSideOnly(NAME, "page probes", producer);
        }
        PageProbeSection p = (PageProbeSection) producer;
        PageProbeSection c = (PageProbeSection) consumer;
        if (!p.sameGeometry(c)) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.PROBE_PAGES_DIFFER, "page probes of " + p.pageSize
                    + "-token pages x " + p.probeBytes + " bytes from token " + p.firstToken + " (producer) and "
                    + c.pageSize + " x " + c.probeBytes + " from " + c.firstToken + " (consumer)");
        }
        int compared = (int) IntStream.range(0, p.numPages()).filter(i -> c.indexOf(p, i) >= 0).count();
        if (compared == 0) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.NO_COMMON_POSITION, "no page probed over the same tokens");
        }
        List<PageDifference> d = differences(p, c);
        if (!d.isEmpty()) {
            List<String> shown = d.stream().limit(16).map(PageDifference::toString).toList();
            String checks = c.numChecks() > 1 ? " x " + c.numChecks() + " copy checks" : "";
            return SectionVerdict.mismatch(NAME, d.size() + " of " + compared + " pages" + checks + " differ: "
                    + String.join(", ", shown) + (d.size() > 16 ? ", ..." : ""));
        }
        return SectionVerdict.match(NAME, compared + " pages" + (c.numChecks() > 1 ? ", each of " + c.numChecks()
                + " copy checks" : ""));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PageProbeSection s && s.pageSize == pageSize && s.probeBytes == probeBytes
                && s.firstToken == firstToken && s.numTokens == numTokens && Arrays.deepEquals(s.heads, heads)
                && Arrays.deepEquals(s.tails, tails);
    }

    @Override
    public int hashCode() {
        return Arrays.deepHashCode(heads) * 31 + Arrays.deepHashCode(tails) + pageSize;
    }

    @Override
    public String toString() {
        return "PageProbeSection[pageSize=" + pageSize + ", probeBytes=" + probeBytes + ", tokens=" + firstToken + ".."
                + numTokens + ", pages=" + numPages() + (heads.length > 1 ? ", checks=" + heads.length : "") + "]";
    }
}
