package io.kvchecksum.engine.worker;

import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;

import java.util.Arrays;
import java.util.Objects;
import java.util.stream.IntStream;

/**
 * KV a consumer received for one group and has not yet moved into its cache: a transfer's staging buffer, or one
 * producer rank's pages as they landed, in whatever layout the transport wrote (page size, NHD or HND, page ids, head
 * range). A consumer worker that verifies during the copy ({@link WorkerChecksummer#tryCopyAndSubmit}) moves it into
 * its own pages with {@link KvChecksum#copyAndChecksum} and takes the copy's values as its record.
 *
 * <p><b>Where the positions lie.</b> The consumer's load covers positions {@code [S, N)} of the request ({@code S} the
 * selection's first block times its block size, {@code N} its token count). Position {@code t} lies in {@code cache}
 * at page {@code pageTable[(t - S) / Ps]}, slot {@code (t - S) % Ps} ({@code Ps} the cache's page size): the table
 * starts at the load's first position, like {@link BlockSelection#request}'s. The received KV holds the (layer,
 * global head) slices of {@code cache}'s layers (a producer rank's head range); every slice the consumer's pages hold
 * too is copied into them, the others are not read.
 *
 * @param groupId the group this KV belongs to, as the selections name it
 * @param cache where the received KV is: its layers, heads, memory and layout
 * @param pageTable the received KV's page ids of the loaded positions, from the load's first position; copied
 */
public record ReceivedKv(int groupId, KvCacheGroup cache, int[] pageTable) {

    /**
     * Checks the components are given and copies the table.
     *
     * @throws NullPointerException when {@code cache} or {@code pageTable} is null
     */
    public ReceivedKv {
        Objects.requireNonNull(cache, "cache");
        pageTable = Objects.requireNonNull(pageTable, "pageTable").clone();
    }

    /**
     * {@return received KV that holds the loaded positions in page order from its page 0: a staging buffer the
     * transport fills from the load's first position on}
     *
     * @param groupId the group this KV belongs to
     * @param cache the staging buffer's layout; its pages {@code 0 .. numPages-1} in order
     * @throws NullPointerException when {@code cache} is null
     */
    public static ReceivedKv inPageOrder(int groupId, KvCacheGroup cache) {
        Objects.requireNonNull(cache, "cache");
        return new ReceivedKv(groupId, cache, IntStream.range(0, Math.toIntExact(cache.numPages())).toArray());
    }

    /** {@return the page table (a copy)} */
    @Override
    public int[] pageTable() {
        return pageTable.clone();
    }

    /** Entries {@code [from, from + count)} of the table, without copying the whole table first. */
    int[] tableRange(int from, int count) {
        return Arrays.copyOfRange(pageTable, from, from + count);
    }

    /** {@return the number of table entries} */
    int tableLength() {
        return pageTable.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ReceivedKv r && groupId == r.groupId && cache.equals(r.cache)
                && Arrays.equals(pageTable, r.pageTable);
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupId, cache, Arrays.hashCode(pageTable));
    }

    @Override
    public String toString() {
        return "ReceivedKv[group " + groupId + ", " + cache.layers().size() + " layers in pages of " + cache.pageSize()
                + ", " + pageTable.length + " table entries]";
    }
}
