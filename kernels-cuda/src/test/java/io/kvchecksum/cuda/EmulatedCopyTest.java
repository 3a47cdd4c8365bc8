package io.kvchecksum.cuda;

import io.kvchecksum.CopyPlan;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.golden.CopySuite;
import io.kvchecksum.golden.CopyVector;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NumPy's verifying-copy vectors and the copy's fault tests through the CUDA backend's whole host path (limits,
 * descriptor packing, upload, launch planning, the output's zeroing, the result copy) with the copy kernels' arithmetic
 * and stores run on the CPU by the host test library: every buffer placed in simulated device memory, every value
 * compared exactly and the SHA-256 of every buffer read back after the copy (the destination changed in the copied
 * cells only, the source unchanged). Once with whole grids and once with grids of at most 2 blocks (several launches
 * per copy launch, each adding into its own blocks).
 */
class EmulatedCopyTest {
    @RegisterExtension
    static final EmulatedCuda CUDA = new EmulatedCuda();

    /**
     * Pageable host memory on either side is refused when the copy is compiled, naming the route and that it must be
     * pinned ({@code EmulatedPinnedCopyTest} copies pinned host memory); nothing reaches the driver.
     */
    @Test
    void hostMemoryIsRefusedAtCompileTime() {
        CopyVector v = CopyVector.all().get(0);
        try (Arena arena = Arena.ofConfined(); CopySuite.Placement device = CUDA.onDevice().get()) {
            List<MemorySegment> host = v.buffers(arena);
            List<KvMemory> onHost = host.stream().map(m -> (KvMemory) KvMemory.host(m)).toList();
            List<KvMemory> onDevice = new ArrayList<>();
            for (int k = 0; k < host.size(); k++) {
                onDevice.add(device.place(host.get(k), v.isDestination(k)));
            }
            int launches = CUDA.fake().launches;
            for (boolean hostSource : new boolean[] {true, false}) {
                List<KvMemory> from = hostSource ? onHost : onDevice;
                List<KvMemory> to = hostSource ? onDevice : onHost;
                InvalidLayoutException e = assertThrows(InvalidLayoutException.class, () -> CUDA.wide().compileCopy(v.source(from),
                        v.sourceRequest(), v.destination(to), v.destinationRequest(), v.spec()));
                assertTrue(e.getMessage().contains("cannot copy " + (hostSource ? "host memory to device memory"
                        : "device memory to host memory")) && e.getMessage().contains("host memory must be pinned"),
                        e.getMessage());
            }
            CopyPlan plan = CUDA.wide().compileCopy(v.source(onDevice), v.sourceRequest(), v.destination(onDevice), v.destinationRequest(), v.spec());
            assertArrayEquals(v.expected(), CUDA.wide().copyAndChecksum(plan));
            assertEquals(launches + plan.launches().size(), CUDA.fake().launches, "one kernel launch per CopyPlan.Launch");
        }
    }

    @TestFactory
    Stream<DynamicNode> copy() {
        return CopySuite.tests(CUDA.wide(), CUDA.onDevice());
    }

    @TestFactory
    Stream<DynamicNode> copyFaults() {
        return CopySuite.faults(CUDA.wide(), CUDA.onDevice());
    }

    /** The in-place vectors' faults, staged by {@code kvc_copy_staged}: a corrupted byte, a permutation, the limit. */
    @TestFactory
    Stream<DynamicNode> copyInPlaceFaults() {
        return CopySuite.inPlaceFaults(CUDA.wide(), CUDA.onDevice());
    }

    @TestFactory
    Stream<DynamicNode> copyInChunks() {
        return CopySuite.tests(CUDA.chunked(), CUDA.onDevice());
    }
}
