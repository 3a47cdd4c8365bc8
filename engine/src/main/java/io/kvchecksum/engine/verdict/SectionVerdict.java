package io.kvchecksum.engine.verdict;

import java.util.Objects;

/**
 * The comparison of one payload section of a load (an extra check carried beside the block checksums, e.g. a page
 * digest): {@link Status#MISMATCH} makes the whole load a mismatch; {@link Status#UNVERIFIED} is reported with its
 * reason but leaves the load's status to its groups, because a section is optional by definition.
 *
 * @param section the section's name ({@link io.kvchecksum.engine.wire.PayloadSection#name()})
 * @param status MATCH, MISMATCH or UNVERIFIED
 * @param reason why it is unverified; {@code null} otherwise
 * @param detail a human-readable account, for logs (which pages, which buffers)
 */
public record SectionVerdict(String section, Status status, UnverifiedReason reason, String detail) {

    /**
     * Checks that a reason is given exactly for {@code UNVERIFIED}; a null detail reads as {@code ""}.
     *
     * @throws IllegalArgumentException when the reason and the status disagree
     * @throws NullPointerException when {@code section} or {@code status} is null
     */
    public SectionVerdict {
        Objects.requireNonNull(section, "section");
        Objects.requireNonNull(status, "status");
        detail = detail == null ? "" : detail;
        if ((reason != null) != (status == Status.UNVERIFIED)) {
            throw new IllegalArgumentException("a reason exactly when unverified: " + status + ", " + reason);
        }
    }

    /**
     * The two sides' sections agree.
     *
     * @param section the section's name; not null
     * @param detail what was compared, for logs; may be null
     * @return the verdict
     */
    public static SectionVerdict match(String section, String detail) {
        return new SectionVerdict(section, Status.MATCH, null, detail);
    }

    /**
     * The two sides' sections differ: the load becomes a mismatch.
     *
     * @param section the section's name; not null
     * @param detail what differs, for logs; may be null
     * @return the verdict
     */
    public static SectionVerdict mismatch(String section, String detail) {
        return new SectionVerdict(section, Status.MISMATCH, null, detail);
    }

    /**
     * The sections could not be compared; the load's status is left to its groups.
     *
     * @param section the section's name; not null
     * @param reason why; not null
     * @param detail the specifics, for logs; may be null
     * @return the verdict
     * @throws NullPointerException when {@code section} or {@code reason} is null
     */
    public static SectionVerdict unverified(String section, UnverifiedReason reason, String detail) {
        return new SectionVerdict(section, Status.UNVERIFIED, Objects.requireNonNull(reason, "reason"), detail);
    }

    @Override
    public String toString() {
        return section + " " + status + (reason != null ? " (" + reason + ")" : "") + (detail.isEmpty() ? "" : ": " + detail);
    }
}
