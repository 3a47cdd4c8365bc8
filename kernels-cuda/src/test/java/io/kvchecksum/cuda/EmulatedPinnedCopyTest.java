package io.kvchecksum.cuda;

import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.CopySuite;
import io.kvchecksum.golden.CopyVector;
import io.kvchecksum.spi.BackendLimits.CopyRoute;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verifying copy between pinned host memory and device memory on the CUDA backend, over the CPU-simulated driver:
 * NumPy's vectors and the three faults with the sources in pinned host memory and the destinations in device memory
 * (a staging buffer into the cache), and the other way round (offload), the kernels reading and writing the host
 * pages in place through the mapped device address; pageable host memory refused at compile time naming the fix; memory
 * the backend does not hold pinned (never pinned, unpinned, freed) refused before anything is enqueued.
 *
 * <p>The simulated driver maps pinned memory at its host address (unified addressing, as {@code cuMemHostAlloc} memory
 * on a 64-bit host); the device check runs the same routes on a GPU.
 */
class EmulatedPinnedCopyTest {
    @RegisterExtension
    static final EmulatedCuda CUDA = new EmulatedCuda();

    static CudaBackend cuda(KvChecksum front) {
        return (CudaBackend) ((NamedBackend) front.backend()).delegate();
    }

    /**
     * The sources ({@code pinnedSide} false: the destinations) in pinned host memory the backend allocated, filled with
     * the buffer's bytes; the other side in device memory. Alternately allocated and registered, so both kinds of
     * pinning are covered.
     */
    static Supplier<CopySuite.Placement> pinned(KvChecksum front, boolean pinnedSource) {
        CudaBackend cuda = cuda(front);
        boolean[] register = {false};
        return () -> new CopySuite.Placement() {
            private final CopySuite.Placement device = CUDA.onDevice().get();
            private final List<PinnedHostMemory> pins = new ArrayList<>();
            private final Arena arena = Arena.ofShared();

            @Override
            public KvMemory place(MemorySegment host, boolean destination) {
                if (destination == pinnedSource) {
                    return device.place(host, destination);
                }
                register[0] = !register[0];
                PinnedHostMemory m = register[0] ? cuda.pin(arena.allocate(host.byteSize(), 64))
                        : cuda.allocatePinned(host.byteSize());
                m.segment().copyFrom(host);
                pins.add(m);
                return m.memory();
            }

            @Override
            public void readBack(KvMemory placed, MemorySegment into) {
                if (placed instanceof KvMemory.Host h) {
                    MemorySegment.copy(h.segment(), 0, into, 0, into.byteSize());
                } else {
                    device.readBack(placed, into);
                }
            }

            @Override
            public void close() {
                pins.forEach(PinnedHostMemory::close);
                pins.clear();
                arena.close();
                device.close();
            }
        };
    }

    @TestFactory
    Stream<DynamicNode> pinnedHostToDevice() {
        KvChecksum wide = CUDA.wide();
        return Stream.concat(CopySuite.tests(wide, pinned(wide, true)), CopySuite.faults(wide, pinned(wide, true)));
    }

    @TestFactory
    Stream<DynamicNode> deviceToPinnedHost() {
        KvChecksum wide = CUDA.wide();
        return Stream.concat(CopySuite.tests(wide, pinned(wide, false)), CopySuite.faults(wide, pinned(wide, false)));
    }

    @TestFactory
    Stream<DynamicNode> bothRoutesInChunks() {
        KvChecksum chunked = CUDA.chunked();
        return Stream.concat(CopySuite.tests(chunked, pinned(chunked, true)), CopySuite.tests(chunked, pinned(chunked, false)));
    }

    /** The routes are declared, on the own stream and on an engine's; the plan's route follows the memory. */
    @Test
    void routesAreDeclared() {
        for (boolean onStream : new boolean[] {false, true}) {
            assertEquals(java.util.Set.of(CopyRoute.DEVICE_TO_DEVICE, CopyRoute.PINNED_HOST_TO_DEVICE,
                    CopyRoute.DEVICE_TO_PINNED_HOST), CUDA.wide().backend().limits().copyRoutes(onStream));
        }
        CopyVector v = CopyVector.all().get(0);
        try (Arena arena = Arena.ofConfined(); CopySuite.Placement p = pinned(CUDA.wide(), true).get()) {
            List<KvMemory> memory = place(v, v.buffers(arena), p);
            CopyPlan plan = CUDA.wide().compileCopy(v.source(memory), v.sourceRequest(), v.destination(memory),
                    v.destinationRequest(), v.spec());
            assertEquals(CopyRoute.PINNED_HOST_TO_DEVICE, plan.launches().get(0).route());
        }
    }

    /**
     * Pageable host memory on either side is refused when the copy is compiled, naming the route and how to pin it;
     * nothing reaches the driver.
     */
    @Test
    void pageableHostMemoryIsRefusedNamingTheFix() {
        CopyVector v = CopyVector.all().get(0);
        try (Arena arena = Arena.ofConfined(); CopySuite.Placement device = CUDA.onDevice().get()) {
            List<MemorySegment> host = v.buffers(arena);
            int launches = CUDA.fake().launches;
            for (boolean hostSource : new boolean[] {true, false}) {
                List<KvMemory> memory = new ArrayList<>();
                for (int k = 0; k < host.size(); k++) {
                    memory.add(v.isDestination(k) == hostSource ? device.place(host.get(k), v.isDestination(k))
                            : KvMemory.host(host.get(k)));
                }
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> CUDA.wide().compileCopy(v.source(memory),
                        v.sourceRequest(), v.destination(memory), v.destinationRequest(), v.spec()));
                assertTrue(e.getMessage().contains("cannot copy " + (hostSource ? "host memory to device memory"
                        : "device memory to host memory") + ": host memory must be pinned")
                        && e.getMessage().contains("CudaBackend.allocatePinned(bytes)")
                        && e.getMessage().contains("CudaBackend.pin(segment)"), e.getMessage());
            }
            assertEquals(launches, CUDA.fake().launches, "nothing was launched");
        }
    }

    /**
     * Memory the backend does not hold pinned is refused when the copy runs, before anything is enqueued: a segment
     * claimed pinned that no one pinned, a registered segment after it was unpinned, an allocation after it was freed
     * (its segment is closed with it), and memory pinned by another backend. The same plan runs again once re-pinned.
     */
    @Test
    void memoryNotHeldPinnedIsRefused() {
        CopyVector v = CopyVector.all().get(0);
        CudaBackend cuda = cuda(CUDA.wide());
        try (Arena arena = Arena.ofShared(); CopySuite.Placement device = CUDA.onDevice().get()) {
            List<MemorySegment> host = v.buffers(arena);
            List<MemorySegment> staging = new ArrayList<>();
            List<KvMemory> memory = new ArrayList<>();
            for (int k = 0; k < host.size(); k++) {
                if (v.isDestination(k)) {
                    staging.add(null);
                    memory.add(device.place(host.get(k), true));
                } else {
                    staging.add(host.get(k));
                    memory.add(KvMemory.pinnedHost(host.get(k)));   // claimed, not pinned
                }
            }
            CopyPlan plan = CUDA.wide().compileCopy(v.source(memory), v.sourceRequest(), v.destination(memory),
                    v.destinationRequest(), v.spec());
            int launches = CUDA.fake().launches;
            assertRefused(plan, "does not hold");

            List<PinnedHostMemory> pins = new ArrayList<>();
            staging.stream().filter(s -> s != null).forEach(s -> pins.add(cuda.pin(s)));
            assertArrayEquals(v.expected(), CUDA.wide().copyAndChecksum(plan), "registered: the plan runs");
            launches = CUDA.fake().launches;
            assertThrows(IllegalArgumentException.class, () -> cuda.pin(pins.get(0).segment()), "pinned twice");
            assertRefused(CUDA.chunked(), plan, "does not hold");   // pinned by the other backend, not by this one
            pins.forEach(PinnedHostMemory::close);
            assertRefused(plan, "does not hold");
            assertEquals(launches, CUDA.fake().launches, "nothing launched after unpinning");

            staging.stream().filter(s -> s != null).forEach(s -> pins.add(cuda.pin(s)));
            assertArrayEquals(v.expected(), CUDA.wide().copyAndChecksum(plan), "pinned again: the same plan runs");
            pins.forEach(PinnedHostMemory::close);
        }

        // An allocation, freed: its segment dies with it (CPU reads fail too), and a copy naming it is refused.
        try (Arena arena = Arena.ofConfined(); CopySuite.Placement device = CUDA.onDevice().get()) {
            List<MemorySegment> host = v.buffers(arena);
            List<KvMemory> memory = new ArrayList<>();
            List<PinnedHostMemory> pins = new ArrayList<>();
            for (int k = 0; k < host.size(); k++) {
                if (v.isDestination(k)) {
                    memory.add(device.place(host.get(k), true));
                } else {
                    PinnedHostMemory m = cuda.allocatePinned(host.get(k).byteSize());
                    m.segment().copyFrom(host.get(k));
                    pins.add(m);
                    memory.add(m.memory());
                }
            }
            CopyPlan plan = CUDA.wide().compileCopy(v.source(memory), v.sourceRequest(), v.destination(memory),
                    v.destinationRequest(), v.spec());
            assertArrayEquals(v.expected(), CUDA.wide().copyAndChecksum(plan));
            MemorySegment freed = pins.get(0).segment();
            pins.forEach(PinnedHostMemory::close);
            pins.forEach(PinnedHostMemory::close);   // twice: nothing
            assertThrows(IllegalStateException.class, () -> pins.get(0).memory(), "closed memory has no regions");
            assertThrows(IllegalStateException.class, () -> freed.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0),
                    "the freed allocation's segment is closed");
            assertRefused(plan, "no longer alive");
        }
    }

    private static void assertRefused(CopyPlan plan, String why) {
        assertRefused(CUDA.wide(), plan, why);
    }

    private static void assertRefused(KvChecksum front, CopyPlan plan, String why) {
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> front.copyAndChecksum(plan));
        assertTrue(e.getMessage().contains(why), e.getMessage());
        InvalidLayoutException onStream = assertThrows(InvalidLayoutException.class, () -> front.submitCopy(plan, 0));
        assertTrue(onStream.getMessage().contains(why), onStream.getMessage());
    }

    /**
     * On an engine's stream a steady-state copy from pinned host memory makes no synchronizing or serializing driver
     * call (the first one in a context allocates its slot), and a capturing stream is refused before anything is
     * enqueued, as for device memory.
     */
    @Test
    void onAStreamNothingSynchronizesAndCaptureIsRefused() {
        java.util.concurrent.atomic.LongAdder syncs = new java.util.concurrent.atomic.LongAdder();
        CudaBackend counted = SyncCounting.open(CUDA.fake(), 0, syncs);
        KvChecksum front = KvChecksum.of(counted);
        CopyVector v = CopyVector.all().get(0);
        try (front; Arena arena = Arena.ofShared(); CopySuite.Placement device = CUDA.onDevice().get()) {
            List<MemorySegment> host = v.buffers(arena);
            List<KvMemory> memory = new ArrayList<>();
            for (int k = 0; k < host.size(); k++) {
                if (v.isDestination(k)) {
                    memory.add(device.place(host.get(k), true));
                } else {
                    PinnedHostMemory m = counted.allocatePinned(host.get(k).byteSize());
                    m.segment().copyFrom(host.get(k));
                    memory.add(m.memory());
                }
            }
            CopyPlan plan = front.compileCopy(v.source(memory), v.sourceRequest(), v.destination(memory),
                    v.destinationRequest(), v.spec());
            try (io.kvchecksum.PendingChecksums first = front.submitCopy(plan, 0)) {
                assertArrayEquals(v.expected(), first.get());
            }
            long before = syncs.sum();
            io.kvchecksum.PendingChecksums pending = front.submitCopy(plan, 0);
            assertEquals(before, syncs.sum(), "a steady-state submitCopy from pinned host memory synchronizes nothing");
            assertArrayEquals(v.expected(), pending.get());
            pending.close();

            int launches = CUDA.fake().launches;
            CUDA.fake().capturing.add(0L);
            try {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> front.submitCopy(plan, 0));
                assertTrue(e.getMessage().contains("capturing a CUDA graph"), e.getMessage());
            } finally {
                CUDA.fake().capturing.remove(0L);
            }
            assertEquals(launches, CUDA.fake().launches, "nothing launched on a capturing stream");
        }
        assertEquals(0, CUDA.fake().livePinnedMappings(), "closing the backend freed the pinned memory it allocated");
    }

    private static List<KvMemory> place(CopyVector v, List<MemorySegment> host, CopySuite.Placement p) {
        List<KvMemory> out = new ArrayList<>();
        for (int k = 0; k < host.size(); k++) {
            out.add(p.place(host.get(k), v.isDestination(k)));
        }
        return out;
    }
}
