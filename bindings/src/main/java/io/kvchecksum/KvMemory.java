package io.kvchecksum;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Where a KV region's bytes live: host memory the JVM can read, or device memory only a GPU backend can.
 *
 * <p>Keeping the two apart is what lets a CPU backend refuse a device pointer with a clear error instead of
 * dereferencing it.
 *
 * <p><b>Pinned host memory</b> ({@link #pinnedHost}) is host memory that is also page-locked and mapped into a GPU's
 * address space, so that a GPU kernel can read and write it in place (zero-copy). It is still {@link Host}: every
 * backend that reads host memory reads it as such. The flag is a claim the caller makes about memory a GPU backend
 * pinned (e.g. the CUDA backend's {@code allocatePinned} or {@code pin}): the verifying copy's routes between host and
 * device memory ({@link io.kvchecksum.spi.BackendLimits.CopyRoute#PINNED_HOST_TO_DEVICE},
 * {@link io.kvchecksum.spi.BackendLimits.CopyRoute#DEVICE_TO_PINNED_HOST}) accept only it, and refuse pageable
 * memory ({@link #host}) when the copy is compiled. The backend checks the claim when the copy runs (the range must
 * lie in memory it pinned and has not yet unpinned or freed) and refuses it otherwise, before anything is enqueued.
 * Who pinned the memory unpins or frees it, and only after every copy reading or writing it has completed (its
 * checksums read): a copy on a stream runs after its call returns.
 */
public sealed interface KvMemory permits KvMemory.Host, KvMemory.Device {

    /** {@return the number of bytes that may be read, starting at the beginning of this memory} */
    long byteSize();

    /**
     * {@return host memory, read through the given segment and never past its end}
     *
     * @param segment the bytes; it must stay alive while a computation reads it
     * @throws NullPointerException when {@code segment} is null
     */
    static Host host(MemorySegment segment) {
        return new Host(segment);
    }

    /**
     * {@return host memory that a GPU backend pinned and mapped into its device's address space: a GPU copy kernel
     * reads or writes it in place, every other computation reads it as {@link #host} memory}
     *
     * <p>The caller keeps the memory pinned and the segment alive until every computation reading or writing it has
     * completed (for work on a stream: until its result has been read); the backend that runs a copy checks, before
     * enqueuing anything, that the whole segment lies in memory it pinned and still holds pinned.
     *
     * @param segment the bytes, a native segment (heap arrays cannot be pinned) in memory a GPU backend pinned
     * @throws NullPointerException when {@code segment} is null
     * @throws InvalidLayoutException when {@code segment} is a heap segment
     */
    static Host pinnedHost(MemorySegment segment) {
        return new Host(segment, true);
    }

    /**
     * {@return device memory owned by the caller}
     *
     * @param address the device address (e.g. a CUDA {@code CUdeviceptr}) of the first byte
     * @param byteSize how many bytes from {@code address} belong to the caller's allocation
     */
    static Device device(long address, long byteSize) {
        return new Device(address, byteSize);
    }

    /**
     * Host memory. The segment must stay alive while a computation that reads it runs. Thread-safe as the segment is:
     * concurrent computations may read it, and a copy must be the only writer of its destination cells.
     *
     * @param segment the bytes, read through this segment (so never past its end); not null
     * @param pinned whether the caller states the memory is pinned and mapped for a GPU ({@link #pinnedHost}): a GPU
     *     backend may then copy into or out of it in place; memory that is not (pageable memory) it refuses for that
     */
    record Host(MemorySegment segment, boolean pinned) implements KvMemory {
        /**
         * Checks the segment is not null, and native when pinned.
         *
         * @throws NullPointerException when {@code segment} is null
         * @throws InvalidLayoutException when {@code pinned} and {@code segment} is a heap segment
         */
        public Host {
            Objects.requireNonNull(segment, "segment");
            if (pinned && !segment.isNative()) {
                throw new InvalidLayoutException("a heap segment cannot be pinned host memory: pin native memory (e.g. "
                        + "the CUDA backend's allocatePinned, or its pin of a segment from an Arena) and pass that");
            }
        }

        /**
         * Pageable (not pinned) host memory, as {@link KvMemory#host}.
         *
         * @param segment the bytes
         * @throws NullPointerException when {@code segment} is null
         */
        public Host(MemorySegment segment) {
            this(segment, false);
        }

        @Override
        public long byteSize() {
            return segment.byteSize();
        }

        @Override
        public String toString() {
            return "Host[segment=" + segment + (pinned ? ", pinned]" : "]");
        }
    }

    /**
     * Device memory of {@code byteSize} bytes starting at {@code address}.
     *
     * @param address the device address of the first byte, not 0
     * @param byteSize bytes from {@code address} that may be read, non-negative
     */
    record Device(long address, long byteSize) implements KvMemory {
        /**
         * Checks the numbers; the address itself cannot be checked from the host.
         *
         * @throws InvalidLayoutException when {@code address} is 0 or {@code byteSize} is negative
         */
        public Device {
            if (address == 0) {
                throw new InvalidLayoutException("device address is null (0)");
            }
            if (byteSize < 0) {
                throw new InvalidLayoutException("device memory byteSize is negative: " + byteSize);
            }
        }

        @Override
        public String toString() {
            return "Device[address=0x" + Long.toHexString(address) + ", byteSize=" + byteSize + "]";
        }
    }
}
