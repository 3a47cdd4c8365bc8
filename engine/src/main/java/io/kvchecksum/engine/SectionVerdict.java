package io.kvchecksum.engine;

import java.util.Objects;

/**
 * The comparison of one payload section of a load (an extra check carried beside the block checksums, e.g. a page
 * digest): {@link Status#MISMATCH} makes the whole load a mismatch; {@link Status#UNVERIFIED} is reported with its
 * reason but leaves the load's status to its groups, because a section is optional by definition.
 *
 * @param section the section's name ({@link PayloadSection#name()})
 * @param status MATCH, MISMATCH or UNVERIFIED
 * @param reason why it is unverified; {@code null} otherwise
 * @param detail a human-readable account, for logs (which pages, which buffers)
 */
public record SectionVerdict(String section, Status status, UnverifiedReason reason, String detail) {

    public SectionVerdict {
        Objects.requireNonNull(section, "section");
        Objects.requireNonNull(status, "status");
        detail = detail == null ? "" : detail;
        if ((reason != null) != (status == Status.UNVERIFIED)) {
            throw new IllegalArgumentException("a reason exactly when unverified: " + status + ", " + reason);
        }
    }

    public static SectionVerdict match(String section, String detail) {
        return new SectionVerdict(section, Status.MATCH, null, detail);
    }

    public static SectionVerdict mismatch(String section, String detail) {
        return new SectionVerdict(section, Status.MISMATCH, null, detail);
    }

    public static SectionVerdict unverified(String section, UnverifiedReason reason, String detail) {
        return new SectionVerdict(section, Status.UNVERIFIED, Objects.requireNonNull(reason, "reason"), detail);
    }

    @Override
    public String toString() {
        return section + " " + status + (reason != null ? " (" + reason + ")" : "") + (detail.isEmpty() ? "" : ": " + detail);
    }
}
