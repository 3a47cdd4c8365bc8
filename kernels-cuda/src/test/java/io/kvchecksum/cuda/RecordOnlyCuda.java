package io.kvchecksum.cuda;

import io.kvchecksum.KvChecksum;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The CUDA backend over a driver that <b>executes no kernel</b>: each {@code cuLaunchKernel} is decoded by the test
 * (its kernel's name, grid, stream and argument block) and recorded in {@link #launches}, every other call goes to a
 * {@link FakeCudaDriver}. For KV at fake device addresses that exist nowhere (the wide-offset tests): what reaches the
 * kernel is checked, not what it computes. Registered as an extension field, it opens the backend before each test
 * and, after it, closes it and checks that it freed every device allocation; without the host test library the test is
 * aborted as {@link HostLibrary#load()} says.
 *
 * @param <L> a decoded launch
 */
final class RecordOnlyCuda<L> implements BeforeEachCallback, AfterEachCallback {
    /** Reads one launch from what the backend uploaded. */
    interface Decoder<L> {
        /**
         * @param kernel the kernel's name ({@link CudaBackend#KERNELS})
         * @param argv {@code cuLaunchKernel}'s {@code kernelParams}: a pointer to the pointer to the parameter block
         */
        L decode(String kernel, int gx, int gy, long stream, long argv);
    }

    /** Every launch since the test began (tests may clear it). */
    final List<L> launches = new ArrayList<>();
    private final Decoder<L> decoder;
    private final UnaryOperator<CudaDriver> wrap;
    private FakeCudaDriver fake;
    private KvChecksum front;

    /**
     * @param decoder reads each launch
     * @param wrap wraps the record-only driver before the backend gets it (a {@link RecordingDriver}, or none)
     */
    RecordOnlyCuda(Decoder<L> decoder, UnaryOperator<CudaDriver> wrap) {
        this.decoder = decoder;
        this.wrap = wrap;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        fake = new FakeCudaDriver(HostLibrary.load());
        Map<Long, String> names = new HashMap<>();
        CudaBackend[] self = new CudaBackend[1];
        CudaDriver recordOnly = (CudaDriver) Proxy.newProxyInstance(CudaDriver.class.getClassLoader(), new Class<?>[] {CudaDriver.class},
                (proxy, m, args) -> {
                    if (m.getName().equals("cuLaunchKernel")) {
                        if (names.isEmpty()) {
                            CudaBackend.KERNELS.forEach(k -> names.put(self[0].kernel(k), k));
                        }
                        launches.add(decoder.decode(names.get((long) args[0]), (int) args[1], (int) args[2], (long) args[8],
                                (long) args[9]));
                        return 0;  // recorded, not executed: the addresses exist nowhere
                    }
                    try {
                        return m.invoke(fake, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        self[0] = new CudaBackend(wrap.apply(recordOnly), 0, Cuda.fatbin(), 1 << 20);
        front = KvChecksum.of(self[0]);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (front != null) {
            front.close();
            assertEquals(0, fake.liveDeviceAllocations(), "device memory leaked");
        }
    }

    /** {@return the front over the record-only backend} */
    KvChecksum front() {
        return front;
    }

    /** {@code bytes} of native memory at {@code address}: the fake driver's parameter block and uploads. */
    @SuppressWarnings("restricted")
    static MemorySegment at(long address, long bytes) {
        return MemorySegment.ofAddress(address).reinterpret(bytes);
    }
}
