package io.kvchecksum;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The ordered byte stream of SGLang's page digest for one request, resolved and validated once: every layer's K
 * pages, then every layer's V pages (layers in the group's order), then the state rows, each layer's pages in the
 * request's page order (SPEC section 6). The digest is Adler-32 of that stream ({@code java.util.zip.Adler32}, zlib's
 * {@code adler32}), computed by {@link KvChecksum#pageDigest}.
 *
 * <p><b>Pages, not tokens.</b> The digest covers whole pages: the pages of the plan's checksummed range
 * ({@link SlicePlan#pageTable()}: tokens {@code [firstBlock*blockSize, numTokens)}, rounded up to whole pages), so
 * slots past the request's last token in its last page are part of it, as in SGLang. A page of a region is the
 * {@linkplain #pageBytes(KvRegion, int, int) span} from its first cell to the end of its last cell: for SGLang's
 * {@code [slots, heads, head_dim]} buffers exactly {@code pageSize*heads*head_dim*elem} bytes. The digest therefore
 * depends on the page layout (unlike the weighted sum); peers compare it only when their layout signatures agree.
 *
 * <p>Immutable and thread-safe.
 */
public final class PageDigestPlan {

    /**
     * One contiguous run of the stream.
     *
     * @param memory where it lives
     * @param offset its first byte within {@code memory}
     * @param length its size in bytes
     */
    public record Run(KvMemory memory, long offset, long length) {
    }

    private final SlicePlan slicePlan;
    private final List<Run> runs;
    private final long totalBytes;
    /** Whether every run is host memory: asked on every digest, and a stream has a run per page (131072 at 256 MiB). */
    private final boolean hostResident;

    private PageDigestPlan(SlicePlan slicePlan, List<Run> runs, long totalBytes) {
        this.slicePlan = slicePlan;
        this.runs = runs;
        this.totalBytes = totalBytes;
        this.hostResident = runs.stream().allMatch(r -> r.memory() instanceof KvMemory.Host);
    }

    /**
     * {@return the digest's stream for the request of {@code plan} (whose validation covers the group and the page
     * table), followed by {@code stateRows} in the order given}
     *
     * @param plan the validated group and request whose pages the digest covers
     * @param stateRows the request's state rows, digested after the pages in list order; may be empty, not null
     * @throws NullPointerException when {@code plan} or {@code stateRows} is null
     */
    public static PageDigestPlan of(SlicePlan plan, List<StateRow> stateRows) {
        Objects.requireNonNull(plan, "plan");
        Objects.requireNonNull(stateRows, "stateRows");
        KvCacheGroup group = plan.group();
        List<Run> runs = new ArrayList<>();
        long total = 0;
        for (int kind = 0; kind < 2; kind++) {
            for (CacheLayer layer : group.layers()) {
                KvRegion r = kind == 0 ? layer.k() : layer.v();
                if (r == null) {
                    continue;
                }
                long span = pageBytes(r, group.pageSize(), layer.numHeads());
                for (int i = 0; i < plan.numPages(); i++) {
                    int page = plan.page(i);
                    // Within the memory: the group's validation checked this region's extent over every page id,
                    // slot and head, and a page's span is exactly that extent from the page's first byte.
                    long at = r.offset() + (long) page * r.pageStride();
                    runs.add(new Run(r.memory(), at, span));
                    total = Math.addExact(total, span);
                }
            }
        }
        for (StateRow s : stateRows) {
            runs.add(new Run(s.memory(), s.offset(), s.length()));
            total = Math.addExact(total, s.length());
        }
        return new PageDigestPlan(plan, List.copyOf(runs), total);
    }

    /**
     * {@return {@link #of(SlicePlan, List)} without state rows}
     *
     * @param plan the validated group and request whose pages the digest covers
     */
    public static PageDigestPlan of(SlicePlan plan) {
        return of(plan, List.of());
    }

    /**
     * {@return the bytes of one page of {@code region}: from the page's first byte to the end of its furthest cell,
     * i.e. {@code (pageSize-1)*tokenStride + (numHeads-1)*headStride + cellBytes}} This is the per-page item length of
     * the layout signature.
     *
     * @param region the K or V region of a layer
     * @param pageSize tokens per page of the group, positive
     * @param numHeads the layer's heads, positive
     * @throws InvalidLayoutException when the span overflows a 64-bit byte count
     */
    public static long pageBytes(KvRegion region, int pageSize, int numHeads) {
        try {
            long far = Math.multiplyExact(pageSize - 1L, region.tokenStride());
            far = Math.addExact(far, Math.multiplyExact(numHeads - 1L, region.headStride()));
            return Math.addExact(far, region.cellBytes());
        } catch (ArithmeticException e) {
            throw new InvalidLayoutException("a page's span overflows a 64-bit byte count");
        }
    }

    /** {@return the plan of the checksummed range this stream was resolved from} */
    public SlicePlan slicePlan() {
        return slicePlan;
    }

    /** {@return the stream's runs, in order} */
    public List<Run> runs() {
        return runs;
    }

    /** {@return the stream's length in bytes} */
    public long totalBytes() {
        return totalBytes;
    }

    /** {@return whether every run is host memory (readable by every backend)} */
    public boolean isHostResident() {
        return hostResident;
    }

    @Override
    public String toString() {
        return "PageDigestPlan[runs=" + runs.size() + ", bytes=" + totalBytes + "]";
    }
}
