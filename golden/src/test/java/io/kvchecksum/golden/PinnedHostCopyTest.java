package io.kvchecksum.golden;

import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.SlicePlan.Residency;
import io.kvchecksum.spi.BackendLimits;
import io.kvchecksum.spi.BackendLimits.CopyRoute;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pinned host memory ({@link KvMemory#pinnedHost}) in the verifying copy: the CPU backends read and write it as host
 * memory (the goldens and faults pass), a copy's side is {@link Residency#PINNED_HOST} only when all of its host memory
 * is pinned, and a backend whose host routes are pinned-only (CUDA's) refuses pageable memory at compile time naming the
 * fix.
 */
class PinnedHostCopyTest {
    /** CUDA's routes, with a host-memory-free hint, as data: what {@link CopyPlan#check} decides from. */
    private static final BackendLimits PINNED_ONLY = BackendLimits.HOST_ONLY.withCopies(
            Set.of(CopyRoute.DEVICE_TO_DEVICE, CopyRoute.PINNED_HOST_TO_DEVICE, CopyRoute.DEVICE_TO_PINNED_HOST),
            Set.of(CopyRoute.DEVICE_TO_DEVICE, CopyRoute.PINNED_HOST_TO_DEVICE, CopyRoute.DEVICE_TO_PINNED_HOST));

    @TestFactory
    Stream<DynamicNode> cpuReadsPinnedHostMemoryAsHostMemory() {
        return Stream.of(CopySuite.tests(KvChecksums.cpu(), CopySuite.PINNED_HOST),
                CopySuite.faults(KvChecksums.cpu(), CopySuite.PINNED_HOST),
                CopySuite.tests(KvChecksums.reference(), CopySuite.PINNED_HOST)).flatMap(s -> s);
    }

    @Test
    void routesFollowThePinnedFlag() {
        CopyVector v = CopyVector.all().get(0);
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> host = v.buffers(arena);
            CopyPlan pinned = plan(v, host, k -> KvMemory.pinnedHost(host.get(k)));
            assertEquals(new CopyRoute(Residency.PINNED_HOST, Residency.PINNED_HOST), pinned.launches().get(0).route());
            assertTrue(BackendLimits.CPU.copies(pinned.launches().get(0).route(), false), "pinned host memory is host memory");
            pinned.check("cpu", BackendLimits.CPU, false);
            pinned.check("cpu", BackendLimits.CPU, true);

            // Pinned source into a device destination: CUDA's route; a pageable destination makes the side plain host.
            CopyPlan toDevice = plan(v, host, k -> v.isDestination(k) ? KvMemory.device(0x1000_0000L * (k + 1),
                    host.get(k).byteSize()) : KvMemory.pinnedHost(host.get(k)));
            assertEquals(CopyRoute.PINNED_HOST_TO_DEVICE, toDevice.launches().get(0).route());
            toDevice.check("cuda-like", PINNED_ONLY, true);
            CopyPlan mixedSides = plan(v, host, k -> v.isDestination(k) ? KvMemory.host(host.get(k)) : KvMemory.pinnedHost(host.get(k)));
            assertEquals(new CopyRoute(Residency.PINNED_HOST, Residency.HOST), mixedSides.launches().get(0).route());
            assertTrue(BackendLimits.CPU.copies(mixedSides.launches().get(0).route(), false));
            assertFalse(PINNED_ONLY.copies(mixedSides.launches().get(0).route(), false));
        }
    }

    @Test
    void pageableHostMemoryIsRefusedNamingTheFix() {
        CopyVector v = CopyVector.all().get(0);
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> host = v.buffers(arena);
            for (boolean hostSource : new boolean[] {true, false}) {
                CopyPlan p = plan(v, host, k -> v.isDestination(k) == hostSource
                        ? KvMemory.device(0x1000_0000L * (k + 1), host.get(k).byteSize()) : KvMemory.host(host.get(k)));
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> p.check("cuda-like", PINNED_ONLY, false));
                assertTrue(e.getMessage().contains("cannot copy " + (hostSource ? "host memory to device memory"
                        : "device memory to host memory") + ": host memory must be pinned")
                        && e.getMessage().contains("KvMemory.pinnedHost"), e.getMessage());
            }
        }
    }

    @Test
    void heapSegmentsCannotBePinned() {
        InvalidLayoutException e = assertThrows(InvalidLayoutException.class,
                () -> KvMemory.pinnedHost(MemorySegment.ofArray(new byte[16])));
        assertTrue(e.getMessage().contains("heap segment"), e.getMessage());
        assertFalse(KvMemory.host(MemorySegment.ofArray(new byte[16])).pinned());
    }

    private interface Place {
        KvMemory at(int k);
    }

    private static CopyPlan plan(CopyVector v, List<MemorySegment> host, Place place) {
        List<KvMemory> memory = new ArrayList<>();
        for (int k = 0; k < host.size(); k++) {
            memory.add(place.at(k));
        }
        return CopyPlan.compile(v.source(memory), v.sourceRequest(), v.destination(memory), v.destinationRequest(), v.spec());
    }
}
