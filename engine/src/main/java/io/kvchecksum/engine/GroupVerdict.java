package io.kvchecksum.engine;

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
 * @param reason why the group is unverified; {@code null} unless {@code UNVERIFIED}
 * @param detail a human-readable account (positions compared, what was left out); for logs, not for parsing
 */
public record GroupVerdict(int groupId, Status status, long[] mismatchedBlocks, UnverifiedReason reason, String detail) {

    public GroupVerdict {
        Objects.requireNonNull(status, "status");
        mismatchedBlocks = mismatchedBlocks == null ? new long[0] : mismatchedBlocks.clone();
        if ((status == Status.UNVERIFIED) != (reason != null)) {
            throw new IllegalArgumentException("a reason is given exactly for UNVERIFIED, got " + status + " with " + reason);
        }
        if ((status == Status.MISMATCH) != (mismatchedBlocks.length > 0)) {
            throw new IllegalArgumentException("mismatched blocks are listed exactly for MISMATCH");
        }
        detail = detail == null ? "" : detail;
    }

    static GroupVerdict unverified(int groupId, UnverifiedReason reason, String detail) {
        return new GroupVerdict(groupId, Status.UNVERIFIED, null, reason, detail);
    }

    /** The mismatched block positions, copied. */
    @Override
    public long[] mismatchedBlocks() {
        return mismatchedBlocks.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GroupVerdict g && groupId == g.groupId && status == g.status
                && Arrays.equals(mismatchedBlocks, g.mismatchedBlocks) && reason == g.reason && detail.equals(g.detail);
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupId, status, reason, detail) * 31 + Arrays.hashCode(mismatchedBlocks);
    }

    @Override
    public String toString() {
        return "group " + groupId + ": " + status + (reason != null ? " (" + reason + ")" : "")
                + (mismatchedBlocks.length > 0 ? " blocks " + Arrays.toString(mismatchedBlocks) : "")
                + (detail.isEmpty() ? "" : ": " + detail);
    }
}
