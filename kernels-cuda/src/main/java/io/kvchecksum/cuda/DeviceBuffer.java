package io.kvchecksum.cuda;

import io.kvchecksum.KvMemory;

/**
 * Device memory holding a copy of host bytes, made by {@link CudaBackend#upload}: for benchmarks, tests and tools
 * that start from host memory but want the backend to read device memory (so that a timed {@code submit} or
 * {@code enqueue} measures the kernel, not a copy over PCIe). Engines already own their device memory and pass its
 * pointers to {@link KvMemory#device} instead.
 *
 * <p>{@link #close()} frees the memory ({@code cuMemFree}, which may synchronize the device: never close one while
 * work that reads it is in flight). Closing the backend frees the buffers it made that are still open. Thread-safe;
 * closing twice does nothing.
 */
public final class DeviceBuffer implements AutoCloseable {
    private final CudaBackend owner;
    private final KvMemory.Device memory;
    private boolean closed;

    DeviceBuffer(CudaBackend owner, long address, long byteSize) {
        this.owner = owner;
        this.memory = KvMemory.device(address, byteSize);
    }

    /**
     * {@return the memory, to describe regions with ({@code new KvRegion(buffer.memory(), offset, ...)}); valid until
     * {@link #close()}} Its address is a {@code CUdeviceptr} in the primary context of the backend's device.
     */
    public KvMemory.Device memory() {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the device buffer is closed");
            }
        }
        return memory;
    }

    /** {@return the number of bytes (as uploaded)} */
    public long byteSize() {
        return memory.byteSize();
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        owner.free(this);
    }

    /** Marks it closed without freeing (the backend frees it); true when it was open. */
    synchronized boolean detach() {
        boolean was = !closed;
        closed = true;
        return was;
    }

    long address() {
        return memory.address();
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(memory.address()) + ", " + memory.byteSize() + " bytes]";
    }
}
