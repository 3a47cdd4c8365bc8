package io.kvchecksum.cuda;

import io.kvchecksum.KvMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Host memory page-locked and mapped into the device's address space by a {@link CudaBackend}: allocated by
 * {@link CudaBackend#allocatePinned} ({@code cuMemHostAlloc} with {@code PORTABLE | DEVICEMAP}) or a caller's segment
 * registered by {@link CudaBackend#pin} ({@code cuMemHostRegister} with the same flags). The verifying copy's kernels
 * read and write it in place through its mapped device address (zero-copy: one pass over PCIe, no staging copy), so a
 * copy from a host staging buffer into the cache, or out of the cache to host memory (offload), is verified at the cost
 * of the transfer alone. Describe regions on {@link #memory()} ({@link KvMemory#pinnedHost}); the CPU backends read the
 * same memory as ordinary host memory.
 *
 * <p><b>Lifetime.</b> The backend that pinned it checks, when a copy runs and before anything is enqueued, that every
 * pinned region lies in memory it still holds pinned; after {@link #close()} such a copy is refused. Close only after
 * every copy reading or writing the memory has completed (its checksums read: a copy on a stream runs after its call
 * returns), as for {@code cudaFreeHost}. Closing unpins ({@code cuMemHostUnregister}: the caller's segment stays
 * theirs, alive and readable) or frees ({@code cuMemFreeHost}: the segment of an allocation is closed with it, so a
 * later read through it fails instead of touching freed memory). Closing the backend closes the memory it pinned that
 * is still open. Keep a registered segment alive until it is closed. Thread-safe; closing twice does nothing.
 */
public final class PinnedHostMemory implements AutoCloseable {
    private final CudaBackend owner;
    private final MemorySegment segment;
    private final long deviceAddress;
    private final Arena allocation;
    private boolean closed;

    PinnedHostMemory(CudaBackend owner, MemorySegment segment, long deviceAddress, Arena allocation) {
        this.owner = owner;
        this.segment = segment;
        this.deviceAddress = deviceAddress;
        this.allocation = allocation;
    }

    /**
     * {@return the memory, to describe regions with ({@code new KvRegion(pinned.memory(), offset, ...)}); valid until
     * {@link #close()}}
     *
     * @throws IllegalStateException when it is closed
     */
    public KvMemory.Host memory() {
        return KvMemory.pinnedHost(segment());
    }

    /**
     * {@return the host bytes, to fill or read on the CPU (not while a copy writes them)}
     *
     * @throws IllegalStateException when it is closed
     */
    public MemorySegment segment() {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(this + " is closed (unpinned or freed)");
            }
        }
        return segment;
    }

    /** {@return the number of bytes} */
    public long byteSize() {
        return segment.byteSize();
    }

    /**
     * {@return the {@code CUdeviceptr} through which kernels read and write the first byte
     * ({@code cuMemHostGetDevicePointer}); under unified addressing often the host address itself}
     */
    public long deviceAddress() {
        return deviceAddress;
    }

    /** {@return whether the backend allocated it ({@link CudaBackend#allocatePinned}), rather than pinned a caller's segment} */
    public boolean allocated() {
        return allocation != null;
    }

    /** {@return the host address of the first byte} */
    long hostAddress() {
        return segment.address();
    }

    /** {@return whether {@code [address, address + bytes)} lies in this memory, while it is open} */
    synchronized boolean holds(long address, long bytes) {
        return !closed && address >= segment.address() && address - segment.address() + bytes <= segment.byteSize();
    }

    /** The arena of an allocation (closed when it is freed), or null for a registered segment. */
    Arena allocation() {
        return allocation;
    }

    @Override
    public void close() {
        if (detach()) {
            owner.unpin(this);
        }
    }

    /** Marks it closed without unpinning (the caller unpins it); true when it was open. */
    synchronized boolean detach() {
        boolean was = !closed;
        closed = true;
        return was;
    }

    @Override
    public String toString() {
        return "PinnedHostMemory[" + (allocation != null ? "allocated" : "registered") + ", host 0x"
                + Long.toHexString(segment.address()) + ", device 0x" + Long.toHexString(deviceAddress) + ", "
                + segment.byteSize() + " bytes]";
    }
}
