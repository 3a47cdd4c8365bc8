package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.bench.MemoryBound;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The harness's own correctness: shapes, bounds and the result checks. No timing here. */
class HarnessTest {

    @Test
    void shapesHaveTheModelsBytesPerToken() {
        assertEquals(32L * 8 * 2 * 128 * 2, ModelShape.LLAMA3_8B_TP1.bytesPerToken());
        assertEquals(80L * 1 * 2 * 128 * 2, ModelShape.LLAMA3_70B_TP8.bytesPerToken());
        assertEquals(61L * 576 * 2, ModelShape.DEEPSEEK_MLA_BF16.bytesPerToken());
        assertEquals(61L * 576, ModelShape.DEEPSEEK_MLA_FP8.bytesPerToken());
    }

    @Test
    void sizesRoundToWholeBlocks() {
        assertEquals(16, ModelShape.LLAMA3_8B_TP1.tokens("1MiB"), "at least one block");
        assertEquals(2048, ModelShape.LLAMA3_8B_TP1.tokens("256MiB"));
        assertEquals(131072, ModelShape.LLAMA3_70B_TP8.tokens("131072"));
        assertEquals(512, ModelShape.LLAMA3_70B_TP8.tokens("20MiB"), "32 blocks of 640 KiB");
        assertThrows(IllegalArgumentException.class, () -> ModelShape.LLAMA3_8B_TP1.tokens("17"));
        assertThrows(IllegalArgumentException.class, () -> ModelShape.of("llama2"));
    }

    @Test
    void cacheRelativeSizesComeFromTheMachinesCaches() {
        long llc = io.kvchecksum.bench.Caches.machine().llc();
        long bytes = ModelShape.DEEPSEEK_MLA_FP8.kvBytes("4xLLC");
        // rounded to whole 16-token blocks of 546 KiB
        assertTrue(Math.abs(bytes - 4 * llc) <= 8L * ModelShape.DEEPSEEK_MLA_FP8.bytesPerToken(), bytes + " vs 4x" + llc);
        assertTrue(ModelShape.LLAMA3_70B_TP8.kvBytes("L2") <= io.kvchecksum.bench.Caches.machine().l2());
    }

    @Test
    void theInCacheCaseFitsL2OnEveryShapeWithTheSamePerLayerLayout() {
        long l2 = io.kvchecksum.bench.Caches.machine().l2();
        for (ModelShape s : ModelShape.ALL) {
            for (String size : new String[] {"L2", "1MiB", "64KiB"}) {
                ModelShape.Case c = s.at(size);
                long asked = size.equals("L2") ? l2 / 2 : ModelShape.bytes(size);
                if (asked > l2) {
                    continue; // 1 MiB is beyond an L2 under 1 MiB: rounded to the nearest block, as from memory
                }
                assertTrue(c.kvBytes() <= asked && c.kvBytes() <= l2, s.id() + " " + c.label(size) + " vs L2 " + l2);
                assertEquals(s.bytesPerToken() / s.layers(), c.shape().bytesPerToken() / c.shape().layers(), s.id());
                assertEquals(s.heads(), c.shape().heads());
                assertTrue(c.shape().layers() >= 1 && c.shape().layers() <= s.layers(), c.label(size));
                try (KvFixture f = KvFixture.of(s.id(), size)) {
                    assertEquals(c.kvBytes(), f.kvBytes(), c.label(size));
                    assertEquals(c.shape().layers(), f.segments().size());
                }
            }
        }
    }

    @Test
    void llama3OneMibIsHalfItsLayersNotOneWholeBlock() {
        // one 16-token block of all 32 layers is 2 MiB: twice a 1 MiB L2
        org.junit.jupiter.api.Assumptions.assumeTrue(io.kvchecksum.bench.Caches.machine().l2() >= 1L << 20);
        ModelShape.Case c = ModelShape.LLAMA3_8B_TP1.at("1MiB");
        assertEquals(16, c.shape().layers());
        assertEquals(16, c.tokens());
        assertEquals(1L << 20, c.kvBytes());
        assertEquals("1MiB = 1 MiB, 16 of 32 layers", c.label("1MiB"));
        // above the L2 nothing changes: every layer, the nearest whole block
        assertEquals(32, ModelShape.LLAMA3_8B_TP1.at("256MiB").shape().layers());
        assertEquals("256MiB = 256 MiB", ModelShape.LLAMA3_8B_TP1.at("256MiB").label("256MiB"));
    }

    @Test
    void theLoopIsNamedFromTheBackendsDescription() {
        assertEquals("512-bit", Backends.loop("cpu (Vector API 512-bit, preferred width, 2 threads)"));
        assertEquals("256-bit", Backends.loop("cpu (Vector API 256-bit, preferred width, 1 thread)"));
        assertEquals("scalar", Backends.loop("cpu (scalar, 2 threads)"));
        assertEquals("n/a", Backends.loop("reference (Java, one word at a time)"));
        assertEquals(0, Backends.loopBits("cpu (scalar, 2 threads)"));
        assertEquals("scalar", Backends.loopName(0));
        assertEquals("512-bit", Backends.loopName(512));
        // the tests' JVM has the vector module: the cpu row runs a vector loop, and names it
        try (KvChecksum k = Backends.open("cpu")) {
            assertTrue(Backends.loop(k.description()).endsWith("-bit"), k.description());
        }
        try (KvChecksum k = Backends.cpu(1)) {   // the mains' backend at a chosen thread count: the same check
            assertTrue(Backends.loop(k.description()).endsWith("-bit") && k.description().contains("1 thread"),
                    k.description());
        }
    }

    @Test
    void aRatioAboveOneIsPrintedAsABrokenBoundNeverAsAResult() {
        assertEquals("0.950", Suite.Report.shown(0.95, true));
        String broken = Suite.Report.shown(1.02, true);
        assertTrue(broken.startsWith("BROKEN BOUND") && broken.contains("1.020"), broken);
        assertEquals("1.020", Suite.Report.shown(1.02, false), "a bound row against another bound is no pass");
    }

    @Test
    void readBoundJsonGivesTheFastestVariantsBest() throws java.io.IOException {
        String json = "{\"bytes\": 1048576, \"threads\": 1, \"kernel\": \"avx2\", \"best_gbps\": 101.500, "
                + "\"median_gbps\": 90.0, \"variants\": [{\"kernel\": \"avx512\", \"best_gbps\": 99.000}]}";
        assertEquals(101.5, ReadBoundCompare.parseBest(json, 1048576));
        assertThrows(java.io.IOException.class, () -> ReadBoundCompare.parseBest(json, 2097152), "other bytes");
    }

    @Test
    void readBoundJsonGivesThe256BitKernelsBestOverItsStreams() {
        String json = "{\"bytes\": 65536, \"kernel\": \"avx512\", \"best_gbps\": 140.466, \"variants\": ["
                + "{\"kernel\": \"avx512\", \"streams\": 1, \"best_gbps\": 140.466, \"median_gbps\": 46.1}, "
                + "{\"kernel\": \"avx2\", \"streams\": 1, \"best_gbps\": 103.988, \"median_gbps\": 103.0}, "
                + "{\"kernel\": \"avx2\", \"streams\": 2, \"best_gbps\": 104.700, \"median_gbps\": 99.0}]}";
        assertEquals(104.7, ReadBoundCompare.parseBest256(json));
        assertTrue(Double.isNaN(ReadBoundCompare.parseBest256("{\"variants\": [{\"kernel\": \"scalar\", "
                + "\"best_gbps\": 30.0}]}")), "no avx2 variant");
    }

    @Test
    void aCpuVariantIsRefusedWhereTheJvmRunsAnotherLoop() {
        // the tests run with the vector module at native width (or a 256-bit machine): never the scalar loop
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Backends.open("cpu-scalar"));
        assertTrue(e.getMessage().contains("cpu-scalar skipped"), e.getMessage());
    }

    @Test
    void cpuVariantsAreJvmFlagsNeverSystemProperties() {
        // the backend chooses its loops from data (the JVM's preferred width, the CPU family): a variant can only be
        // another JVM, never a kvchecksum.* switch (cpu-512 was one, and is gone with it)
        assertEquals(java.util.Set.of("cpu-avx2", "cpu-scalar"), Backends.CPU_VARIANTS.keySet());
        Backends.CPU_VARIANTS.values().forEach(flags -> flags.forEach(f ->
                assertTrue(!f.startsWith("-Dkvchecksum."), f)));
        assertTrue(!Backends.ROWS.contains("cpu-512"), Backends.ROWS.toString());
    }

    @Test
    void aRerunReplacesOnlyTheTableBetweenTheMarkers(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        java.nio.file.Path md = dir.resolve("bench.md");
        String first = Suite.markdownFile(md, "short", "table one\n");
        assertTrue(first.contains(Suite.BEGIN) && first.contains("table one") && first.contains(Suite.END), first);
        java.nio.file.Files.writeString(md, "# findings above\n" + first + "findings below\n");
        String second = Suite.markdownFile(md, "short", "table two\n");
        assertTrue(second.startsWith("# findings above\n"), second);
        assertTrue(second.endsWith(Suite.END + "\nfindings below\n"), second);
        assertTrue(second.contains("table two") && !second.contains("table one"), second);
    }

    @Test
    void fixtureDescribesExactlyTheRequestsBytes() {
        try (KvFixture f = KvFixture.create(ModelShape.LLAMA3_70B_TP8, 48)) {
            long total = f.segments().stream().mapToLong(s -> s.byteSize()).sum();
            assertEquals(f.kvBytes(), total);
            assertEquals(f.kvBytes(), f.group().bytesPerToken() * f.request().numTokens());
            assertEquals(3, f.request().numBlocks());
        }
    }

    @Test
    void readBoundSumsEveryWordWithAndWithoutThreads() {
        for (ModelShape s : ModelShape.ALL) {
            try (KvFixture f = KvFixture.create(s, s.tokens("6MiB"))) {
                for (int threads : new int[] {1, 3}) {
                    try (MemoryBound b = new MemoryBound(f.segments(), threads)) {
                        assertEquals(threads > 1, b.parallel(), s.id());
                        assertEquals(b.readScalar(), b.read(), s.id() + ", " + threads + " threads");
                        b.verifyCopy();
                        b.copy();
                    }
                }
            }
        }
    }

    @Test
    void readPartHandlesTailsShorterThanAVectorStep() {
        try (KvFixture f = KvFixture.create(ModelShape.DEEPSEEK_MLA_FP8, 16)) {
            var seg = f.segments().get(0);
            for (long len = 0; len <= 1024; len += 8) {
                long expected = 0;
                for (long o = 0; o < len; o += 8) {
                    expected += seg.get(java.lang.foreign.ValueLayout.JAVA_LONG, 8 + o);
                }
                try (MemoryBound b = new MemoryBound(java.util.List.of(seg.asSlice(8, len)), 1)) {
                    assertEquals(expected, b.read(), "length " + len);
                }
            }
        }
    }

    @Test
    void oracleAcceptsTheCpuBackendOnBothPaths() {
        // 1 MiB: values from the reference; 20 MiB: from the one-thread CPU backend, itself checked on a prefix.
        for (String size : new String[] {"1MiB", "20MiB"}) {
            try (KvFixture f = KvFixture.create(ModelShape.LLAMA3_70B_TP8, ModelShape.LLAMA3_70B_TP8.tokens(size))) {
                Oracle o = Oracle.of(f);
                assertTrue(o.source().startsWith(size.equals("1MiB") ? "reference" : "cpu (1 thread)"), o.source());
                o.verify(KvChecksums.cpu(), f);
            }
        }
    }

    @Test
    void oracleRejectsAWrongBackend() {
        try (KvFixture f = KvFixture.create(ModelShape.DEEPSEEK_MLA_BF16, 32)) {
            Oracle o = Oracle.of(f);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> o.verify(KvChecksum.of(new OffByOne()), f));
            assertTrue(e.getMessage().contains("blockChecksums"), e.getMessage());
        }
    }

    /** The CPU backend with its last block checksum changed: what a subtly wrong kernel looks like. */
    private static final class OffByOne implements io.kvchecksum.spi.Backend {
        private final io.kvchecksum.spi.Backend cpu = new io.kvchecksum.internal.FastCpuBackend();

        @Override
        public String name() {
            return "off-by-one";
        }

        @Override
        public String description() {
            return "off-by-one";
        }

        @Override
        public io.kvchecksum.spi.BackendLimits limits() {
            return cpu.limits();
        }

        @Override
        public io.kvchecksum.PendingChecksums run(io.kvchecksum.CompiledPlan plan, io.kvchecksum.CompiledPlan.Output output,
                java.util.OptionalLong stream) {
            long[] v = cpu.run(plan, output, stream).get();
            if (output == io.kvchecksum.CompiledPlan.Output.BLOCK_CHECKSUMS && v.length > 0) {
                v[v.length - 1]++;
            }
            return io.kvchecksum.PendingChecksums.completed(v);
        }

        @Override
        public long pageDigest(io.kvchecksum.PageDigestPlan plan) {
            return cpu.pageDigest(plan);
        }

        @Override
        public void close() {
            cpu.close();
        }
    }
}
