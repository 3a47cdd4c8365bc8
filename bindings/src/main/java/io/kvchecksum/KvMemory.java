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

    /** {@return host memory, read through the given segment and never past its end} */
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

    /** Host memory. The segment must stay alive while a computation that reads it runs. */
    record Host(MemorySegment segment) implements KvMemory {
        public Host {
            Objects.requireNonNull(segment, "segment");
        }

        @Override
        public long byteSize() {
            return segment.byteSize();
        }
    }

    /** Device memory of {@code byteSize} bytes starting at {@code address}. */
    record Device(long address, long byteSize) implements KvMemory {
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
