package io.kvchecksum.engine.verdict;

import java.util.Arrays;
import java.util.Objects;

/**
 * The comparison of one KV cache group of one load.
 *
 * @param groupId the group
 * @param status {@link Status#MATCH}: every position both sides checksummed whole is equal;
 *     {@link Status#MISMATCH}: some position differs, listed in {@code mismatchedBlocks};
 *     {@link Status#UNVERIFIED}: the group could not be compared, for {@code reason}
 * @param mismatchedBlocks sorted block positions in the consumer's numbering whose KV differs (with different block
 *     sizes, every consumer block of a differing chunk); empty unless {@code MISMATCH}
 * @param notComparedBlocks sorted consumer block positions of the load that were not compared because only one side
 *     checksummed them or the two sides hold other token counts in them (see
 *     {@link io.kvchecksum.engine.wire.Verifier}); may be non-empty for any status
 * @param reason why the group is unverified; {@code null} unless {@code UNVERIFIED}
 * @param detail a human-readable account (positions compared, what was left out); for logs, not for parsing
 */
public record GroupVerdict(int groupId, Status status, long[] mismatchedBlocks, long[] notComparedBlocks,
        UnverifiedReason reason, String detail) {

    /**
     * Checks that the status, reason and mismatched blocks agree; copies the arrays (null reads as empty) and turns a
     * null detail into {@code ""}.
     *
     * @throws IllegalArgumentException when a reason is given for a status other than {@code UNVERIFIED} (or missing
     *     for it), or mismatched blocks are listed for a status other than {@code MISMATCH} (or missing for it)
     * @throws NullPointerException when {@code status} is null
     */
    public GroupVerdict {
        Objects.requireNonNull(status, "status");
        mismatchedBlocks = mismatchedBlocks == null ? new long[0] : mismatchedBlocks.clone();
        notComparedBlocks = notComparedBlocks == null ? new long[0] : notComparedBlocks.clone();
        if ((status == Status.UNVERIFIED) != (reason != null)) {
            throw new IllegalArgumentException("a reason is given exactly for UNVERIFIED, got " + status + " with " + reason);
        }
        if ((status == Status.MISMATCH) != (mismatchedBlocks.length > 0)) {
            throw new IllegalArgumentException("mismatched blocks are listed exactly for MISMATCH");
        }
        detail = detail == null ? "" : detail;
    }

    /**
     * A verdict in which every loaded block was compared or the group was not compared at all.
     *
     * @param groupId the group
     * @param status the group's status; not null
     * @param mismatchedBlocks sorted consumer block positions that differ; non-empty exactly for {@code MISMATCH} (null
     *     reads as empty)
     * @param reason why the group is unverified; given exactly for {@code UNVERIFIED}
     * @param detail a human-readable account, for logs; null reads as {@code ""}
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public GroupVerdict(int groupId, Status status, long[] mismatchedBlocks, UnverifiedReason reason, String detail) {
        this(groupId, status, mismatchedBlocks, null, reason, detail);
    }

    /**
     * {@return a group that could not be compared at all}
     *
     * @param groupId the group
     * @param reason why; not null
     * @param detail the specifics, for logs; may be null
     * @throws IllegalArgumentException when {@code reason} is null
     */
    public static GroupVerdict unverified(int groupId, UnverifiedReason reason, String detail) {
        return new GroupVerdict(groupId, Status.UNVERIFIED, null, null, reason, detail);
    }

    /** {@return the mismatched block positions, copied} */
    @Override
    public long[] mismatchedBlocks() {
        return mismatchedBlocks.clone();
    }

    /** {@return the loaded block positions that were not compared, copied} */
    @Override
    public long[] notComparedBlocks() {
        return notComparedBlocks.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GroupVerdict g && groupId == g.groupId && status == g.status
                && Arrays.equals(mismatchedBlocks, g.mismatchedBlocks) && Arrays.equals(notComparedBlocks, g.notComparedBlocks)
                && reason == g.reason && detail.equals(g.detail);
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupId, status, reason, detail, Arrays.hashCode(mismatchedBlocks), Arrays.hashCode(notComparedBlocks));
    }

    @Override
    public String toString() {
        return "group " + groupId + ": " + status + (reason != null ? " (" + reason + ")" : "")
                + (mismatchedBlocks.length > 0 ? " blocks " + Arrays.toString(mismatchedBlocks) : "")
                + (detail.isEmpty() ? "" : ": " + detail);
    }
}
