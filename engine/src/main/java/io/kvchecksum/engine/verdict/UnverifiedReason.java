package io.kvchecksum.engine.verdict;

/**
 * Why a group or a whole load could not be verified. A fixed set, so that a fail-open engine can warn once per
 * reason and count them.
 */
public enum UnverifiedReason {
    /** The group is checksummed by one side only (the other skipped it, or does not have it). */
    ONE_SIDE_ONLY,
    /** The group's fingerprints differ: other layers, spec types or dtypes on the two sides. */
    FINGERPRINT_DIFFERS,
    /** The two block sizes are not multiples of each other, so no chunk of one holds whole blocks of the other. */
    BLOCK_SIZES_NOT_MULTIPLES,
    /**
     * The consumer's first loaded block starts inside a larger producer block (a local prefix hit or window clip not
     * aligned to the producer's blocks): that chunk also holds tokens the consumer did not load.
     */
    UNALIGNED_CHUNK,
    /**
     * No position is checksummed whole by both sides with the same number of tokens (positions only one side
     * checksummed are never compared: {@link GroupVerdict#notComparedBlocks()}).
     */
    NO_COMMON_POSITION,
    /** The producer sent no checksums for the request. */
    MISSING_PAYLOAD,
    /** The producer's checksums could not be decoded, or are inconsistent (e.g. a group twice). */
    MALFORMED_PAYLOAD,
    /**
     * A version-1 payload: it carries no block size, and the revision that wrote it numbered pieces from each block's
     * first token, so its values are not comparable with this definition's.
     */
    UNSUPPORTED_PAYLOAD_VERSION,
    /**
     * The two sides computed in different checksum modes ({@code standard}, {@code mixed}, see
     * {@link io.kvchecksum.ChecksumMode}): their values are not comparable, whatever they are. Also a side whose
     * workers disagree on the mode.
     */
    MODE_DIFFERS,
    /** Not every worker (TP rank x PP stage) reported the request. */
    NOT_EVERY_WORKER_REPORTED,
    /**
     * A worker's checksum backend failed (device lost, driver error, out of device memory) and the worker reported the
     * failure instead of checksums ({@link io.kvchecksum.engine.worker.WorkerRecord#failed}, {@link
     * io.kvchecksum.engine.worker.WorkerChecksummer#tryCompute}); the detail carries the failure.
     */
    BACKEND_FAILED,
    /** A worker checksummed other blocks than the scheduler scheduled, or disagreed with its peers. */
    OTHER_BLOCKS_THAN_SCHEDULED,
    /** Every group was skipped on both sides: nothing of the load was compared. */
    NOTHING_TO_COMPARE,
    /**
     * The two sides cut or lay out what a section covers differently, so its values are not comparable (a layout
     * difference, not a corruption). SGLang's page digest ({@link io.kvchecksum.engine.wire.SglangDigestSection}): the
     * peers' layout signatures differ (page size, buffer count or per-page item lengths, {@link
     * io.kvchecksum.engine.auxiliary.LayoutSignature}), so their Adler-32 digests over pages are not comparable; the
     * weighted sum does not depend on the layout and is compared as usual; engines warn once per peer ({@link
     * SectionWarnings}). State digests ({@link io.kvchecksum.engine.wire.StateDigestsSection}): a buffer sharded
     * differently on the two sides (another TP size: shards 0/2 and 1/2 against 0/1), or a shard of another length.
     */
    LAYOUT_DIFFERS,
    /**
     * The two sides' page probes ({@link io.kvchecksum.engine.wire.PageProbeSection}) cover other pages or other bytes:
     * another page size, probe size, or first pages not aligned to each other. The probe depends on the pages, so it is
     * not compared.
     */
    PROBE_PAGES_DIFFER,
    /**
     * The load wrote no block of the group (a load of 0 tokens, a local prefix hit covering the whole request, a
     * group whose loaded positions are all null blocks): no KV crossed, so there is nothing that could be wrong and
     * nothing to verify. Unlike the other reasons, a load whose only reason this is passes both {@link FailurePolicy}
     * modes without a recompute or a warning (debug only), and is counted by {@link ChecksumMetrics#nothingLoaded()},
     * never as verified. A group giving it next to compared groups leaves the load's status to them ({@link
     * LoadVerdict#of}). See {@code docs/conformance.md} (V9) for how this departs from seed 003.
     */
    NOTHING_LOADED,
    /**
     * A worker refused the request's layout before reading anything ({@link io.kvchecksum.InvalidLayoutException}: the
     * request's tokens past the end of a segmented cache, a selection in blocks of another size than the worker was
     * configured for, a page id past the cache): the request cannot be read as given, which is a configuration or
     * scheduling problem, not a failing backend ({@link #BACKEND_FAILED}). Layouts that some request could never read
     * are refused when the worker is built ({@link io.kvchecksum.engine.worker.WorkerChecksummer.Builder#blockSize});
     * the detail names the worker and the refusal ({@link io.kvchecksum.engine.worker.WorkerRecord#refused}).
     */
    LAYOUT_REFUSED
}
