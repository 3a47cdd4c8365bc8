package io.kvchecksum.opencl;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.SlicePlan;
import org.jocl.Pointer;
import org.jocl.cl_mem;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * How a launch's KV reaches the kernels, which read one OpenCL buffer per operation (a batch's launches read the same
 * regions: one buffer serves them all): a registered {@code cl_mem} (device memory, read in place), a zero-copy window
 * ({@code CL_MEM_USE_HOST_PTR} over the native host segments, on a CPU device that shares host memory), or a packed
 * copy of the host spans the requests' pages can reach. Chosen per operation ({@link #layout}, which also says why);
 * {@link #kvBuffer} makes the buffer in the operation.
 */
final class MemoryPlacement {
    /** Largest single host-to-device write: {@code ByteBuffer} views of a segment stop at 2 GiB. */
    private static final long MAX_WRITE = 1L << 30;

    private final OpenClDevice info;
    private final RegisteredBuffers registered;
    /** Host memory used in place (the CPU tuning, on a device sharing the host's memory). */
    private final boolean zeroCopy;
    /** Why host memory is copied when {@link #zeroCopy} is false. */
    private final String noZeroCopy;
    /** Alignment of a zero-copy window's start: the device's {@code CL_DEVICE_MEM_BASE_ADDR_ALIGN}, at least 64 bytes. */
    private final long windowAlign;
    private final long maxAlloc;

    MemoryPlacement(OpenClDevice info, RegisteredBuffers registered, boolean zeroCopy, String noZeroCopy, long windowAlign,
            long maxAlloc) {
        this.info = info;
        this.registered = registered;
        this.zeroCopy = zeroCopy;
        this.noZeroCopy = noZeroCopy;
        this.windowAlign = windowAlign;
        this.maxAlloc = maxAlloc;
    }

    /** The descriptors of a launch (or batch) and how its memory reaches the kernels ({@code "zero-copy"}, {@code "copy: "} and why, or {@code "device: "}). */
    record Layout(Descriptors d, String path) {
    }

    /**
     * Zero copy where the device shares host memory and the segments allow it; else the packed copy, with the reason.
     * The plans share their slices ({@link io.kvchecksum.CompiledPlan.Batch}); the first's are the regions.
     */
    Layout layout(List<SlicePlan> plans) {
        SlicePlan plan = plans.getFirst();
        if (plan.residency() == SlicePlan.Residency.DEVICE) {
            cl_mem mem = registered.of(plan);
            return new Layout(Descriptors.device(plans, RegisteredBuffers.size(mem)), "device: cl_mem 0x"
                    + Long.toHexString(mem.getNativePointer()));
        }
        if (!zeroCopy) {
            return new Layout(Descriptors.of(plans), "copy: " + noZeroCopy);
        }
        Descriptors w = Descriptors.window(plans, windowAlign);
        if (w == null) {
            return new Layout(Descriptors.of(plans), "copy: a segment is on the Java heap (no stable address)");
        }
        if (w.packedBytes > maxAlloc) {
            return new Layout(Descriptors.of(plans), "copy: the segments lie " + w.packedBytes + " bytes apart, more "
                    + "than one buffer of the device may span (" + maxAlloc + ")");
        }
        return new Layout(w, "zero-copy");
    }

    /**
     * The KV buffer of {@code op}, as {@code d} (the {@link #layout} of {@code plan}'s batch) describes it: the
     * registered cl_mem, or the {@link #hostBuffer} of its spans.
     */
    cl_mem kvBuffer(Enqueuer.Op op, SlicePlan plan, Descriptors d) {
        if (plan.residency() == SlicePlan.Residency.DEVICE) {
            return registered.of(plan);
        }
        return hostBuffer(op, d.spans, d.packedBytes, d.windowStart != 0, "the request's KV");
    }

    /**
     * A buffer of {@code op} over host {@code spans} ({@code bytes} long): with {@code window}, a {@code USE_HOST_PTR}
     * buffer over the window their packed offsets are relative to; else a new buffer the spans are written into at
     * their packed offsets (non-blocking; heap memory is staged in the operation's arena first), refused when larger
     * than one buffer may be ({@code what} names the bytes in the message).
     */
    cl_mem hostBuffer(Enqueuer.Op op, List<Descriptors.Span> spans, long bytes, boolean window, String what) {
        if (window) {
            // The window starts up to windowAlign-1 bytes before the lowest span: an address, never read.
            Descriptors.Span low = spans.getFirst();
            for (Descriptors.Span s : spans) {
                low = s.packedOffset() < low.packedOffset() ? s : low;
            }
            Pointer host = Pointer.to(low.segment().asSlice(low.from(), Math.min(low.length(), MAX_WRITE)).asByteBuffer())
                    .withByteOffset(-low.packedOffset());
            return op.hostBuffer(bytes, host);
        }
        if (bytes > maxAlloc) {
            throw new InvalidLayoutException(what + " spans " + bytes + " bytes of host memory, more than one buffer of "
                    + info + " may hold (" + maxAlloc + " bytes): split the request");
        }
        cl_mem kv = op.buffer(bytes);
        for (Descriptors.Span s : spans) {
            MemorySegment src = s.segment().asSlice(s.from(), s.length());
            if (!src.isNative()) {
                // JOCL writes non-blocking only from direct buffers; heap memory is staged.
                MemorySegment staged = op.arena.allocate(src.byteSize(), 64);
                MemorySegment.copy(src, 0, staged, 0, src.byteSize());
                src = staged;
            }
            for (long off = 0; off < src.byteSize(); off += MAX_WRITE) {
                long len = Math.min(MAX_WRITE, src.byteSize() - off);
                op.write(kv, s.packedOffset() + off, src.asSlice(off, len).asByteBuffer());
            }
        }
        return kv;
    }

    /** {@return whether host memory is used in place (a CPU device sharing the host's memory, the CPU tuning)} */
    boolean zeroCopy() {
        return zeroCopy;
    }

    /** {@return the alignment of a zero-copy window's start} */
    long windowAlign() {
        return windowAlign;
    }

    /** {@return the largest buffer the device allocates ({@code CL_DEVICE_MAX_MEM_ALLOC_SIZE})} */
    long maxAlloc() {
        return maxAlloc;
    }

    /** {@return the engine buffers registered with the backend} */
    RegisteredBuffers registered() {
        return registered;
    }

    /** {@return why host memory is copied when it is not used in place} */
    String noZeroCopy() {
        return noZeroCopy;
    }

    /** How the plan's memory reaches the kernels: {@link Layout#path()} of its {@link #layout}. */
    String memoryPath(SlicePlan plan) {
        return layout(List.of(plan)).path();
    }

    /**
     * The start of a window over host bytes {@code [lo, hi)} of the address space (for the page digest, which follows
     * the checksums' rules), or -1 where host memory is not used in place or the window would be larger than a buffer.
     */
    long windowStart(long lo, long hi) {
        long start = lo & -windowAlign;
        return zeroCopy && hi - start <= maxAlloc ? start : -1;
    }
}
