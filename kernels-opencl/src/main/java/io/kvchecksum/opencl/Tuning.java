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
 *   <li>{@link #GPU}: units of 8 pieces with neighbouring work items on neighbouring units (coalesced loads),
 *       work-groups of up to 256, {@code page_digest_parts} (a work-group per piece), host memory copied to the
 *       device: for every device that is not a CPU.</li>
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
 */
record Tuning(String name, int unitPieces, boolean contiguousUnits, int maxLocal, boolean serialDigest,
        boolean hostInPlace) {
    /** The choice for CPU devices (PoCL). */
    static final Tuning CPU = new Tuning("CPU tuning", 32, true, 16, true, true);
    /** The choice for every other device type (GPUs, accelerators). */
    static final Tuning GPU = new Tuning("GPU tuning", 8, false, 256, false, false);

    /** {@return {@link #CPU} for a CPU device, else {@link #GPU}} */
    static Tuning of(OpenClDevice info) {
        return info.type().equals("CPU") ? CPU : GPU;
    }

    /** The build options selecting this choice in {@code kvchecksum.cl}. */
    String defines() {
        return (contiguousUnits ? " -D KVC_CONTIGUOUS_UNITS" : "") + (unitPieces == 8 ? "" : " -D KVC_UNIT" + unitPieces);
    }
}
