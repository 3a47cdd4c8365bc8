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
 * <p>Comparison: pages covering the same tokens on both sides are compared; a differing head or tail is a MISMATCH
 * naming the pages ({@link #differences} gives them structured). A side without the section is
 * {@link UnverifiedReason#ONE_SIDE_ONLY}; another page size or probe size {@link UnverifiedReason#PROBE_PAGES_DIFFER}
 * (the probe depends on the pages); no page in common {@link UnverifiedReason#NO_COMMON_POSITION}.
 *
 * @param pageSize tokens per page
 * @param probeBytes bytes probed at each end of each cell
 * @param firstToken the request position of page 0's first token
 * @param numTokens the request's token count
 * @param head folded head probe per page
 * @param tail folded tail probe per page
 */
public record PageProbeSection(int pageSize, int probeBytes, long firstToken, long numTokens, int[] head, int[] tail)
        implements PayloadSection {
    /** The section's key in the payload. */
    public static final String NAME = "page-probe";
    /** The most pages one section carries (a reader refuses more): 2^24 pages, 128 MiB of probes. */
    public static final int MAX_PAGES = 1 << 24;

    /**
     * Validates the pages and copies the two arrays, so the record is immutable.
     *
     * @throws IllegalArgumentException when {@code pageSize} is not positive, {@code probeBytes} not a positive
     *     multiple of 8, {@code firstToken} negative or greater than {@code numTokens}, or {@code head} or {@code tail}
     *     does not hold exactly {@code ceil((numTokens - firstToken) / pageSize)} values
     * @throws NullPointerException when {@code head} or {@code tail} is null
     */
    public PageProbeSection {
        if (pageSize <= 0 || probeBytes <= 0 || probeBytes % 8 != 0 || firstToken < 0 || numTokens < firstToken) {
            throw new IllegalArgumentException("page size " + pageSize + ", probe bytes " + probeBytes + ", tokens "
                    + firstToken + ".." + numTokens);
        }
        long pages = Math.ceilDiv(numTokens - firstToken, (long) pageSize);
        if (head.length != pages || tail.length != pages) {
            throw new IllegalArgumentException(pages + " pages of " + pageSize + " tokens from " + firstToken + " to "
                    + numTokens + ", but " + head.length + " heads and " + tail.length + " tails");
        }
        head = head.clone();
        tail = tail.clone();
    }

    /**
     * The folded form of one request's probes (the workers' partial sums already added: {@link PageProbe.Probes#sum}).
     *
     * @param p the request's probes, all workers' partial sums added
     * @return the section: the probes' pages and tokens, each head and tail folded to {@code (int) (s ^ (s >>> 32))}
     * @throws IllegalArgumentException when the probes' pages are not valid for a section (see the constructor)
     */
    public static PageProbeSection of(PageProbe.Probes p) {
        return new PageProbeSection(p.pageSize(), p.probeBytes(), p.firstToken(), p.numTokens(),
                Arrays.stream(p.head()).mapToInt(PageProbeSection::fold).toArray(),
                Arrays.stream(p.tail()).mapToInt(PageProbeSection::fold).toArray());
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

    /** {@return a copy of the folded head probes, one per page in the request's page order} */
    @Override
    public int[] head() {
        return head.clone();
    }

    /** {@return a copy of the folded tail probes, one per page in the request's page order} */
    @Override
    public int[] tail() {
        return tail.clone();
    }

    /** {@return the number of pages probed} */
    public int numPages() {
        return head.length;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void pack(MessagePacker p) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 * head.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < head.length; i++) {
            b.putInt(head[i]).putInt(tail[i]);
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
        if (pages > MAX_PAGES || bin.length != 8 * pages) {
            throw new MalformedPayloadException(f + ".probes: " + bin.length + " bytes, but " + pages + " pages of "
                    + ps + " tokens from " + first + " to " + n + " need " + (8 * pages) + " (at most " + MAX_PAGES + " pages)");
        }
        ByteBuffer b = ByteBuffer.wrap(bin).order(ByteOrder.LITTLE_ENDIAN);
        int[] h = new int[(int) pages];
        int[] t = new int[(int) pages];
        for (int i = 0; i < pages; i++) {
            h[i] = b.getInt();
            t[i] = b.getInt();
        }
        return new PageProbeSection(ps, pb, first, n, h, t);
    }

    /**
     * One page whose probe differs.
     *
     * @param page the page's index in the producer's request page order
     * @param firstToken the request position of its first token
     * @param head whether its head differs
     * @param tail whether its tail differs
     */
    public record PageDifference(int page, long firstToken, boolean head, boolean tail) {
        @Override
        public String toString() {
            return "page " + page + " (token " + firstToken + ") " + (head && tail ? "head+tail" : head ? "head" : "tail");
        }
    }

    /**
     * The pages both sides probed over the same tokens whose head or tail differs, in page order; empty when the
     * sections are not comparable (either absent, other page or probe sizes).
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
        for (int i = 0; i < p.head.length; i++) {
            int j = c.indexOf(p, i);
            if (j >= 0 && (p.head[i] != c.head[j] || p.tail[i] != c.tail[j])) {
                out.add(new PageDifference(i, p.pageStart(i), p.head[i] != c.head[j], p.tail[i] != c.tail[j]));
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
        if (o.pageStart(i) < firstToken || j >= head.length || pageEnd((int) j) != o.pageEnd(i)) {
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
        int compared = (int) IntStream.range(0, p.head.length).filter(i -> c.indexOf(p, i) >= 0).count();
        if (compared == 0) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.NO_COMMON_POSITION, "no page probed over the same tokens");
        }
        List<PageDifference> d = differences(p, c);
        if (!d.isEmpty()) {
            List<String> shown = d.stream().limit(16).map(PageDifference::toString).toList();
            return SectionVerdict.mismatch(NAME, d.size() + " of " + compared + " pages differ: " + String.join(", ", shown)
                    + (d.size() > 16 ? ", ..." : ""));
        }
        return SectionVerdict.match(NAME, compared + " pages");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PageProbeSection s && s.pageSize == pageSize && s.probeBytes == probeBytes
                && s.firstToken == firstToken && s.numTokens == numTokens && Arrays.equals(s.head, head)
                && Arrays.equals(s.tail, tail);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(head) * 31 + Arrays.hashCode(tail) + pageSize;
    }

    @Override
    public String toString() {
        return "PageProbeSection[pageSize=" + pageSize + ", probeBytes=" + probeBytes + ", tokens=" + firstToken + ".."
                + numTokens + ", pages=" + head.length + "]";
    }
}
