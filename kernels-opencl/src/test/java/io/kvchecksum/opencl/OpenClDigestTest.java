package io.kvchecksum.opencl;

import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvLayouts;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.golden.DigestSuite;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.cl_mem;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * SGLang's page digest on OpenCL: NumPy's vectors (zlib's Adler-32) in place (zero copy on PoCL), through the packed
 * copy, and from registered {@code cl_mem}s; a stream of many 4 KiB pieces against {@code java.util.zip.Adler32}.
 */
class OpenClDigestTest {
    @TestFactory
    Stream<? extends DynamicNode> digest() {
        return OpenClTests.dynamic("opencl page digest", () -> DigestSuite.tests(OpenClTests.checksum()));
    }

    @TestFactory
    Stream<? extends DynamicNode> digestFromClMem() {
        return OpenClTests.dynamic("opencl page digest from cl_mem", () -> {
            OpenClBackend b = OpenClTests.backend();
            List<cl_mem> made = new ArrayList<>();
            return DigestSuite.tests(KvChecksum.of(new NamedDigest("opencl-clmem", b)), m -> {
                MemorySegment s = ((KvMemory.Host) m).segment();
                cl_mem mem = ClApi.jocl().createHostBuffer(b.context(), CL.CL_MEM_READ_ONLY | CL.CL_MEM_COPY_HOST_PTR,
                        s.byteSize(), Pointer.to(s.asByteBuffer()));
                made.add(mem);
                return b.buffer(mem);
            });
        });
    }

    /** Both kernels on every vector, whichever the device uses by default. */
    @TestFactory
    Stream<? extends DynamicNode> bothKernels() {
        return OpenClTests.dynamic("opencl page digest, both kernels", () -> {
            OpenClBackend b = OpenClTests.backend();
            return io.kvchecksum.golden.DigestVector.all().stream().flatMap(v -> Stream.of(true, false).map(serial ->
                    org.junit.jupiter.api.DynamicTest.dynamicTest("opencl · " + (serial ? "serial" : "group") + " · " + v.name(), () -> {
                        try (Arena arena = Arena.ofShared()) {
                            assertEquals(v.expectedDigest(), b.pageDigest(v.plan(arena, m -> m), serial), v.name());
                        }
                    })));
        });
    }

    @Test
    void aLongStreamOfManyPiecesAgainstJavaUtilZip() {
        OpenClTests.requireOpenCl();
        long seed = 0xC1_AD1EL;
        System.out.println("OpenClDigestTest seed 0x" + Long.toHexString(seed));
        Random rnd = new Random(seed);
        try (Arena arena = Arena.ofShared()) {
            KvLayouts.PagedShape s = new KvLayouts.PagedShape(40, 16, 4, 128, 2);   // 16 KiB pages
            List<KvMemory> ks = new ArrayList<>();
            List<KvMemory> vs = new ArrayList<>();
            for (int l = 0; l < 4; l++) {
                MemorySegment m = arena.allocate(40L * 16 * 4 * 256, 64);
                for (long i = 0; i < m.byteSize(); i += 8) {
                    m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextInt(8) == 0 ? -1L : rnd.nextLong());
                }
                (l % 2 == 0 ? ks : vs).add(KvMemory.host(m));
            }
            KvCacheGroup g = KvLayouts.sglang(s, 0, new int[] {0, 1}, ks, vs);
            int[] table = new int[35];
            for (int i = 0; i < table.length; i++) {
                table[i] = (i * 17 + 3) % 40;
            }
            RequestBlocks r = RequestBlocks.of(table, 35 * 16 - 7, 16);
            PageDigestPlan plan = PageDigestPlan.of(SlicePlan.of(g, r));
            long expected = KvChecksums.reference().pageDigest(plan);
            assertEquals(expected, OpenClTests.backend().pageDigest(plan), "native segments (in place on a CPU device)");
            assertEquals(expected, OpenClTests.backend().pageDigest(plan, false), "native segments, work-group kernel");
            // heap segments have no stable address: the stream is packed into a device buffer
            List<KvMemory> hk = new ArrayList<>();
            List<KvMemory> hv = new ArrayList<>();
            for (int l = 0; l < 2; l++) {
                hk.add(KvMemory.host(MemorySegment.ofArray(((KvMemory.Host) ks.get(l)).segment().toArray(ValueLayout.JAVA_BYTE))));
                hv.add(KvMemory.host(MemorySegment.ofArray(((KvMemory.Host) vs.get(l)).segment().toArray(ValueLayout.JAVA_BYTE))));
            }
            PageDigestPlan heap = PageDigestPlan.of(SlicePlan.of(KvLayouts.sglang(s, 0, new int[] {0, 1}, hk, hv), r));
            assertEquals(expected, OpenClTests.backend().pageDigest(heap), "heap segments (packed copy)");
        }
    }

    /** The shared backend under another test name; closing it leaves the shared backend open. */
    private record NamedDigest(String name, OpenClBackend b) implements Backend {
        @Override
        public String description() {
            return name;
        }

        @Override
        public BackendLimits limits() {
            return b.limits();
        }

        @Override
        public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
            return b.run(plan, output, stream);
        }

        @Override
        public long pageDigest(PageDigestPlan plan) {
            return b.pageDigest(plan);
        }

        @Override
        public void close() {
        }
    }
}
