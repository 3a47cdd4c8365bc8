package io.kvchecksum.engine.wire;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Objects;

/**
 * What a producer sends with a request: every group's block checksums, summed over its workers. The consumer builds
 * the same structure for the blocks its load wrote (in its own block numbering) and hands both to
 * {@link Verifier#compare}.
 *
 * <p>Version 2 carries the producer's TP size and each group's block size, and is what the standard mode writes;
 * version 3 adds the checksum mode, and is what any other mode writes; version 1, an earlier revision's form, carries
 * neither and is only read. Versions 1 and 2 are in the standard mode. A consumer-side payload may list a group several
 * times: one entry per replica check (see {@link io.kvchecksum.engine.worker.Aggregator}).
 *
 * <p><b>Sections</b> (the auxiliary checks, {@link PayloadSections}) do not change the version: a standard-mode payload
 * with sections is still version 2. On the wire they travel beside the checksums, never inside them
 * ({@link PayloadCodec#encodeSections}), so a reader of seed 003's version 2 reads the checksums of a payload that has
 * sections. A payload that an earlier release wrote as version 3 with its sections inline decodes to version 3 with
 * those sections.
 *
 * @param version 1, 2 or 3
 * @param tpSize the producer's TP size, informational; {@code null} exactly in version 1
 * @param numTokens the request's token count ({@code num_computed_tokens}), non-negative
 * @param groups the groups, in any order
 * @param mode the checksum mode's wire name ({@link ChecksumMode#wireName()}): {@code standard} in versions 1 and 2;
 *     in version 3 any name of 1..32 lower-case letters, digits and {@code -}, so that a mode this reader does not know
 *     still decodes and is reported as {@link UnverifiedReason#MODE_DIFFERS} rather than as a malformed payload
 * @param sections the sections this library knows ({@link PayloadSections}), by name; empty in version 1. Sections a
 *     reader does not know are skipped when decoding and are not kept.
 */
public record ChecksumPayload(int version, Integer tpSize, long numTokens, List<GroupChecksums> groups, String mode,
        Map<String, PayloadSection> sections) {
    /** The version {@link PayloadCodec} writes for the standard mode: byte-identical to what earlier releases wrote. */
    public static final int CURRENT_VERSION = 2;
    /** The version written for every other mode: the first with a mode field. */
    public static final int MODE_VERSION = 3;

    /**
     * Validates the payload as {@link PayloadCodec} would accept it; {@code groups} and {@code sections} are copied
     * (sections sorted by name).
     *
     * @throws IllegalArgumentException when the version is not 1, 2 or 3; a version-1 payload has a {@code tpSize} or a
     *     block size; a version-2 or 3 payload has no positive {@code tpSize} or a group's block range does not fit
     *     {@code numTokens}; {@code numTokens} is negative; the mode is not a valid name or, below version 3, not
     *     {@code standard}; or a section is filed under another name or present in version 1
     * @throws NullPointerException when {@code groups}, {@code mode} or {@code sections} is null
     */
    public ChecksumPayload {
        groups = List.copyOf(Objects.requireNonNull(groups, "groups"));
        Objects.requireNonNull(mode, "mode");
        sections = Collections.unmodifiableMap(new TreeMap<>(Objects.requireNonNull(sections, "sections")));
        sections.forEach((name, s) -> {
            if (!name.equals(s.name())) {
                throw new IllegalArgumentException("section '" + s.name() + "' filed under '" + name + "'");
            }
        });
        if (!sections.isEmpty() && version == 1) {
            throw new IllegalArgumentException("a version-1 payload cannot carry sections");
        }
        if (version != 1 && version != 2 && version != 3) {
            throw new IllegalArgumentException("unknown payload version " + version + " (known: 1, 2, 3)");
        }
        if (version < 3 && !mode.equals(ChecksumMode.STANDARD.wireName())) {
            throw new IllegalArgumentException("a version-" + version + " payload is in the standard mode, not '" + mode + "'");
        }
        if (!WireValues.MODE.matcher(mode).matches()) {
            throw new IllegalArgumentException("mode '" + mode + "' is not 1..32 lower-case letters, digits and '-'");
        }
        if (numTokens < 0) {
            throw new IllegalArgumentException("numTokens must be non-negative, got " + numTokens);
        }
        if (version == 1) {
            if (tpSize != null) {
                throw new IllegalArgumentException("a version-1 payload carries no tpSize");
            }
            groups.stream().filter(g -> g.blockSize() != null).findFirst().ifPresent(g -> {
                throw new IllegalArgumentException("a version-1 payload carries no block size (group " + g.groupId() + ")");
            });
        } else {
            if (tpSize == null || tpSize <= 0) {
                throw new IllegalArgumentException("a version-" + version + " payload needs a positive tpSize, got " + tpSize);
            }
            groups.stream().map(g -> rangeProblem(g, numTokens)).filter(Objects::nonNull).findFirst().ifPresent(problem -> {
                throw new IllegalArgumentException(problem);
            });
        }
    }

    /**
     * A payload without sections.
     *
     * @param version 1, 2 or 3
     * @param tpSize the producer's TP size; {@code null} exactly in version 1
     * @param numTokens the request's token count, non-negative
     * @param groups the groups, in any order; copied
     * @param mode the mode's wire name; {@code standard} below version 3
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public ChecksumPayload(int version, Integer tpSize, long numTokens, List<GroupChecksums> groups, String mode) {
        this(version, tpSize, numTokens, groups, mode, Map.of());
    }

    /**
     * A payload of version 1 or 2 (which are in the standard mode); a version-3 payload names its mode.
     *
     * @param version 1 or 2
     * @param tpSize the producer's TP size; {@code null} exactly in version 1
     * @param numTokens the request's token count, non-negative
     * @param groups the groups, in any order; copied
     * @throws IllegalArgumentException when {@code version} is not 1 or 2, and as the canonical constructor does
     */
    public ChecksumPayload(int version, Integer tpSize, long numTokens, List<GroupChecksums> groups) {
        if (version != 1 && version != 2) {
            throw new IllegalArgumentException("payload version " + version + " without a mode (versions 1 and 2 have none)");
        }
        this(version, tpSize, numTokens, groups, ChecksumMode.STANDARD.wireName());
    }

    /**
     * {@return a standard-mode payload, version 2}
     *
     * @param tpSize the producer's TP size, positive
     * @param numTokens the request's token count, non-negative
     * @param groups the groups, in any order; copied
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public static ChecksumPayload of(int tpSize, long numTokens, List<GroupChecksums> groups) {
        return of(ChecksumMode.STANDARD, tpSize, numTokens, groups);
    }

    /**
     * {@return a payload in {@code mode}: version 2 for the standard mode (byte-identical to earlier releases), else
     * version 3}
     *
     * @param mode the checksum mode the groups' values were computed in; not null
     * @param tpSize the producer's TP size, positive
     * @param numTokens the request's token count, non-negative
     * @param groups the groups, in any order; copied
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public static ChecksumPayload of(ChecksumMode mode, int tpSize, long numTokens, List<GroupChecksums> groups) {
        return new ChecksumPayload(mode == ChecksumMode.STANDARD ? CURRENT_VERSION : MODE_VERSION, tpSize, numTokens, groups,
                mode.wireName());
    }

    /**
     * {@return this payload with {@code section} added (replacing one of the same name), in the same version} The
     * section travels beside the checksums ({@link PayloadCodec#encodeSections}), so the checksums' bytes stay what
     * they are without it. A version-1 payload has no sections.
     *
     * @param section the section to carry; not null
     * @throws IllegalArgumentException when this payload is version 1
     * @throws NullPointerException when {@code section} is null
     */
    public ChecksumPayload withSection(PayloadSection section) {
        Objects.requireNonNull(section, "section");
        if (version == 1) {
            throw new IllegalArgumentException("a version-1 payload cannot carry sections");
        }
        Map<String, PayloadSection> m = new TreeMap<>(sections);
        m.put(section.name(), section);
        return new ChecksumPayload(version, tpSize, numTokens, groups, mode, m);
    }

    /**
     * {@return the section called {@code name}, or {@code null} when this payload does not carry it}
     *
     * @param name the section's name, as {@link PayloadSection#name()} gives it
     */
    public PayloadSection section(String name) {
        return sections.get(name);
    }

    /**
     * {@return the mode as this reader knows it, or {@code null} for a name it does not know (a newer writer's mode)}
     */
    public ChecksumMode checksumMode() {
        return Arrays.stream(ChecksumMode.values()).filter(m -> m.wireName().equals(mode)).findFirst().orElse(null);
    }

    /**
     * Why a version-2 or -3 group's blocks do not run from {@code start} to the request's last block, or {@code null} when
     * they do.
     */
    static String rangeProblem(GroupChecksums g, long numTokens) {
        if (g.blockSize() == null) {
            return "group " + g.groupId() + " has no block size";
        }
        long blocks = Math.ceilDiv(numTokens, (long) g.blockSize());
        if (g.start() > blocks || blocks - g.start() != g.numBlocks()) {
            return "group " + g.groupId() + ": " + g.numBlocks() + " values from block " + g.start() + " do not end at block "
                    + blocks + " (" + numTokens + " tokens of block size " + g.blockSize() + ")";
        }
        return null;
    }
}
