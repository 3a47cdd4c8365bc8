package io.kvchecksum.opencl;

/**
 * How the backend runs on one kind of device, chosen from the device's type when the backend is opened
 * ({@link #of}): the build of {@code block_checksums}, the largest work-group, the page-digest kernel and whether host
 * memory may be read in place. There are two, and each wins where it is chosen (the module's README, "How it works"
 * and "Performance on PoCL (CPU)"):
 *
 * <ul>
 *   <li>{@link #CPU}: units of 32 pieces, a contiguous run of units per work item ({@code KVC_CONTIGUOUS_UNITS}, blocks
 *       in address order, rows front to back), work-groups of at most 16 items, {@code page_digest_serial}, host
 *       memory in place where the device shares it. On PoCL 0.83-0.90 of the read bound at 256 MiB against 0.23-0.48
 *       for the GPU split; the work-group digest ran at 0.06 of the bound there.</li>
 *   <li>{@link #GPU}: units of 8 pieces with neighbouring work items on neighbouring units (coalesced loads), the
 *       rows of {@link #rowsInFlight} = 2 tokens loaded before the first is added ({@code KVC_ROWS_IN_FLIGHT}: eight
 *       16-byte loads, 128 bytes in flight per work item, where the unit's rows are 16-byte aligned), work-groups of
 *       up to 256, {@code page_digest_parts} (a work-group per piece), host memory copied to the device: for every
 *       device that is not a CPU.</li>
 * </ul>
 *
 * <p>Tests open the backend with each of them on PoCL ({@link OpenClBackend#open(String, Tuning, ClApi)}), so the golden suite
 * runs through every choice the selector can make on whatever device CI has.
 *
 * @param name what the description calls it
 * @param unitPieces pieces per unit of {@code block_checksums}: 8, or 32 ({@code KVC_UNIT32})
 * @param contiguousUnits the CPU build of {@code block_checksums} ({@code KVC_CONTIGUOUS_UNITS}), else the GPU build
 * @param maxLocal the largest work-group of the checksum kernels
 * @param serialDigest {@code page_digest_serial} (a work item per piece), else {@code page_digest_parts}
 * @param hostInPlace host memory is read in place ({@code CL_MEM_USE_HOST_PTR}) where the device shares it
 * @param rowsInFlight GPU build: tokens whose rows of a unit are loaded before the first is added
 *     ({@code KVC_ROWS_IN_FLIGHT}); 1 is the build before it (one row in flight, {@code vload8}); unused by the CPU build
 */
record Tuning(String name, int unitPieces, boolean contiguousUnits, int maxLocal, boolean serialDigest,
        boolean hostInPlace, int rowsInFlight) {
    /** The choice for CPU devices (PoCL). */
    static final Tuning CPU = new Tuning("CPU tuning", 32, true, 16, true, true, 1);
    /** The choice for every other device type (GPUs, accelerators). */
    static final Tuning GPU = new Tuning("GPU tuning", 8, false, 256, false, false, 2);

    Tuning {
        if (rowsInFlight < 1 || rowsInFlight > 8) {
            throw new IllegalArgumentException("rowsInFlight must be 1 to 8, not " + rowsInFlight);
        }
    }

    /** {@return {@link #CPU} for a CPU device, else {@link #GPU}} */
    static Tuning of(OpenClDevice info) {
        return info.type().equals("CPU") ? CPU : GPU;
    }

    /** The build options selecting this choice in {@code kvchecksum.cl}. */
    String defines() {
        return (contiguousUnits ? " -D KVC_CONTIGUOUS_UNITS" : "") + (unitPieces == 8 ? "" : " -D KVC_UNIT" + unitPieces)
                + (contiguousUnits || rowsInFlight == 1 ? "" : " -D KVC_ROWS_IN_FLIGHT=" + rowsInFlight);
    }

    /**
     * {@return this choice with {@code rows} tokens' rows in flight, named for it}: for measuring the GPU build's
     * variants against each other (the device check; 1 is the build before {@code KVC_ROWS_IN_FLIGHT})
     */
    Tuning withRowsInFlight(int rows) {
        return new Tuning(name + ", " + rows + (rows == 1 ? " row" : " rows") + " in flight", unitPieces, contiguousUnits,
                maxLocal, serialDigest, hostInPlace, rows);
    }
}
