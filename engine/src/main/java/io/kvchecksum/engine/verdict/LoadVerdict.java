package io.kvchecksum.engine.verdict;

import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The comparison of one load: its groups' verdicts combined.
 *
 * <p>{@link Status#MISMATCH} if any group mismatches (even when others are unverified: a detected corruption is
 * reported as such); else {@link Status#UNVERIFIED} if any group is unverified or the load could not be compared at
 * all; else {@link Status#MATCH}, which requires at least one compared group, or, for a load with no group to compare
 * (a pure-state model), a matching section ({@link #withSections}). A group the load wrote no block of
 * ({@link UnverifiedReason#NOTHING_LOADED}) counts for neither: the other groups decide, and a load all of whose groups
 * are such is UNVERIFIED with that reason only, which {@link FailurePolicy} passes.
 *
 * @param status the combined status
 * @param groups one verdict per group that either side checksummed, by group id; groups skipped on both sides are
 *     absent. Empty when the load was not compared at all.
 * @param reason the load-level reason when the load as a whole could not be compared (missing or malformed payload,
 *     not every worker reported, ...); {@code null} when the groups were compared (their own reasons are in
 *     {@code groups})
 * @param detail a human-readable account, for logs
 * @param sections the verdicts of the payload sections both or either side carried ({@link
 *     io.kvchecksum.engine.wire.PayloadSections}); a section's MISMATCH makes the load's status MISMATCH, its
 *     UNVERIFIED leaves the status to the groups
 */
public record LoadVerdict(Status status, List<GroupVerdict> groups, UnverifiedReason reason, String detail,
        List<SectionVerdict> sections) {

    /**
     * Copies the lists and turns a null detail into {@code ""}; the status is taken as given (see {@link #of} for the
     * combination rule).
     *
     * @throws IllegalArgumentException when a load-level reason comes with a status other than {@code UNVERIFIED} or
     *     with group verdicts
     * @throws NullPointerException when {@code status}, {@code groups} or {@code sections} is null
     */
    public LoadVerdict {
        Objects.requireNonNull(status, "status");
        groups = List.copyOf(groups);
        sections = List.copyOf(sections);
        detail = detail == null ? "" : detail;
        if (reason != null && (status != Status.UNVERIFIED || !groups.isEmpty())) {
            throw new IllegalArgumentException("a load-level reason means the load was not compared: UNVERIFIED, no groups");
        }
    }

    /**
     * A verdict without sections.
     *
     * @param status the combined status; not null
     * @param groups the groups' verdicts; copied, not null
     * @param reason the load-level reason when the load was not compared at all, else {@code null}
     * @param detail a human-readable account, for logs; null reads as {@code ""}
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public LoadVerdict(Status status, List<GroupVerdict> groups, UnverifiedReason reason, String detail) {
        this(status, groups, reason, detail, List.of());
    }

    /**
     * {@return this verdict with the sections' verdicts added: a section's MISMATCH makes it a MISMATCH (named in the
     * detail); other section verdicts are listed without changing the status} One exception: a load with no group to
     * compare ({@link UnverifiedReason#NOTHING_TO_COMPARE}: a pure-state model, or every group skipped on both sides)
     * takes its status from the sections that compared, MATCH when one matched and none mismatched, so state digests
     * alone verify such a load; with no section compared it stays as it is.
     *
     * @param more the section verdicts to add; not null (empty returns this verdict)
     */
    public LoadVerdict withSections(List<SectionVerdict> more) {
        if (more.isEmpty()) {
            return this;
        }
        boolean mismatch = more.stream().anyMatch(v -> v.status() == Status.MISMATCH);
        boolean onlySections = groups.isEmpty() && reason == UnverifiedReason.NOTHING_TO_COMPARE
                && more.stream().anyMatch(v -> v.status() == Status.MATCH);
        Status s = mismatch ? Status.MISMATCH : onlySections ? Status.MATCH : status;
        // Without groups the "nothing to compare" detail is no longer true once a section compared.
        String own = onlySections || (mismatch && groups.isEmpty() && reason == UnverifiedReason.NOTHING_TO_COMPARE)
                ? "" : detail;
        String d = Stream.concat(Stream.of(own).filter(x -> !x.isEmpty()), more.stream()
                .filter(v -> v.status() != Status.MATCH).map(SectionVerdict::toString)).collect(Collectors.joining("; "));
        // A load-level reason means "not compared": it stays only while the status is still UNVERIFIED.
        UnverifiedReason r = s == Status.UNVERIFIED ? reason : null;
        return new LoadVerdict(s, groups, r, d, Stream.concat(sections.stream(), more.stream()).toList());
    }

    /**
     * {@return the verdict of section {@code name}, or {@code null} if the load has none for it}
     *
     * @param name the section's name
     */
    public SectionVerdict section(String name) {
        return sections.stream().filter(v -> v.section().equals(name)).findFirst().orElse(null);
    }

    /**
     * {@return a load that could not be compared at all}
     *
     * @param reason why; not null
     * @param detail the specifics, for logs; may be null
     * @throws NullPointerException when {@code reason} is null
     */
    public static LoadVerdict unverified(UnverifiedReason reason, String detail) {
        return new LoadVerdict(Status.UNVERIFIED, List.of(), Objects.requireNonNull(reason, "reason"), detail);
    }

    /**
     * Combines group verdicts; no groups at all is {@link UnverifiedReason#NOTHING_TO_COMPARE}.
     *
     * @param groups one verdict per group either side checksummed; not null
     * @return MISMATCH if any group mismatches, else UNVERIFIED if any group is, else MATCH, leaving out groups the
     *     load wrote nothing of ({@link UnverifiedReason#NOTHING_LOADED}) unless every group is one (then UNVERIFIED
     *     with only that reason); the non-matching groups are named in the detail
     */
    public static LoadVerdict of(List<GroupVerdict> groups) {
        if (groups.isEmpty()) {
            return unverified(UnverifiedReason.NOTHING_TO_COMPARE, "every group was skipped on both sides");
        }
        List<GroupVerdict> loaded = groups.stream().filter(g -> g.reason() != UnverifiedReason.NOTHING_LOADED).toList();
        Set<Status> all = (loaded.isEmpty() ? groups : loaded).stream().map(GroupVerdict::status).collect(Collectors.toSet());
        Status s = all.contains(Status.MISMATCH) ? Status.MISMATCH : all.contains(Status.UNVERIFIED) ? Status.UNVERIFIED
                : Status.MATCH;
        return new LoadVerdict(s, groups, null, groups.stream().filter(g -> g.status() != Status.MATCH)
                .map(GroupVerdict::toString).collect(Collectors.joining("; ")));
    }

    /** {@return every reason this load is (partly) unverified: the load-level one or its groups'} */
    public Set<UnverifiedReason> reasons() {
        return Stream.concat(Stream.ofNullable(reason), groups.stream().map(GroupVerdict::reason)).filter(Objects::nonNull)
                .collect(Collectors.toCollection(() -> EnumSet.noneOf(UnverifiedReason.class)));
    }

    /**
     * {@return the verdict of one group, or {@code null} if the load has none for it}
     *
     * @param groupId the group's id
     */
    public GroupVerdict group(int groupId) {
        return groups.stream().filter(g -> g.groupId() == groupId).findFirst().orElse(null);
    }

    @Override
    public String toString() {
        return status + (reason != null ? " (" + reason + ")" : "") + (detail.isEmpty() ? "" : ": " + detail);
    }
}
