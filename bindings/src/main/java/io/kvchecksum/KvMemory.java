package io.kvchecksum;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Where a KV region's bytes live: host memory the JVM can read, or device memory only a GPU backend can.
 *
 * <p>Keeping the two apart is what lets a CPU backend refuse a device pointer with a clear error instead of
 * dereferencing it.
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
     * {@return device memory owned by the caller}
     *
     * @param address the device address (e.g. a CUDA {@code CUdeviceptr}) of the first byte
     * @param byteSize how many bytes from {@code address} belong to the caller's allocation
     */
    static Device device(long address, long byteSize) {
        return new Device(address, byteSize);
    }

    /**
     * Host memory. The segment must stay alive while a computation that reads it runs.
     *
     * @param segment the bytes, read through this segment (so never past its end); not null
     */
    record Host(MemorySegment segment) implements KvMemory {
        /**
         * Checks the segment is not null.
         *
         * @throws NullPointerException when {@code segment} is null
         */
        public Host {
            Objects.requireNonNull(segment, "segment");
        }

        @Override
        public long byteSize() {
            return segment.byteSize();
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
