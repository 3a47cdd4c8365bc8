package io.kvchecksum.readme;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.engine.verdict.Action;
import io.kvchecksum.engine.verdict.ChecksumCounters;
import io.kvchecksum.engine.verdict.Decision;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.readme.ReadmeBlocks.Block;
import io.kvchecksum.readme.ReadmeBlocks.Compiled;
import io.kvchecksum.readme.ReadmeBlocks.Preamble;

import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every Java block of the repository's {@code README.md} (the file itself) compiles as written, against the published
 * modules only ({@code kvchecksum-bindings}, {@code -engine}, {@code -kernels-cuda}, {@code -kernels-opencl}) and the
 * third-party libraries an engine has (Jlama for its worked example): no test helper, no unpublished module. Each
 * block's free variables are declared by its preamble below, keyed by the heading the block is under and its ordinal
 * there; a block without one fails with its README line. The engine example also runs, on host caches with the CPU
 * backend: a clean load is used, a corrupted one recomputed at the corrupted block, and a connector without a carrier
 * is refused under fail-closed.
 */
class ReadmeJavaTest {
    private static final long SEED = 0x2EAD_3E26L;

    private static final String QUICK = "Quick start";
    private static final String COPY = "Verify while copying";
    private static final String ENGINE = "End to end in an engine (`kvchecksum-engine`)";
    private static final String JLAMA = "Worked example: Jlama (`integrations/jlama`)";

    /** The free variables of each block, by {@link Block#key()}. */
    static final Map<String, Preamble> PREAMBLES = Map.of(
            QUICK + " #1", Preamble.declaring("""
                    long numPages = $arg("numPages"); int kvHeads = $arg("kvHeads"); int tpRank = $arg("tpRank");
                    List<MemorySegment> caches = $arg("caches"); int[] layerNumbers = $arg("layerNumbers");
                    int[] pageTable = $arg("pageTable"); long numTokens = $arg("numTokens");
                    """),
            QUICK + " #2", Preamble.declaring("""
                    KvChecksum k = $arg("k"); KvCacheGroup group = $arg("group");
                    int[] pageTable = $arg("pageTable"); long numTokens = $arg("numTokens");
                    """),
            QUICK + " #3", Preamble.declaring("""
                    KvChecksum k = $arg("k"); KvCacheGroup group = $arg("group"); long stream = $arg("stream");
                    RequestBlocks requestA = $arg("a"), requestB = $arg("b"), requestC = $arg("c");
                    """),
            QUICK + " #4", Preamble.declaring("""
                    KvLayouts.PagedShape shape = $arg("shape"); long[] dataPtrs = $arg("dataPtrs");
                    long layerBytes = $arg("layerBytes"); int tpRank = $arg("tpRank"); int kvHeads = $arg("kvHeads");
                    int[] layerNumbers = $arg("layerNumbers"); int[] pageTable = $arg("pageTable");
                    long numTokens = $arg("numTokens"); long cudaStream = $arg("cudaStream");
                    """),
            COPY + " #1", Preamble.declaring("""
                    KvChecksum k = $arg("k"); KvCacheGroup staging = $arg("staging"); KvCacheGroup group = $arg("group");
                    int[] stagingTable = $arg("stagingTable"); int[] pageTable = $arg("pageTable");
                    long numTokens = $arg("numTokens"); long[] producerChecksums = $arg("producerChecksums");
                    """),
            ENGINE + " #1", Preamble.declaring("""
                    String connectorName = $arg("connectorName");
                    boolean connectorCarriesChecksums = $arg("connectorCarriesChecksums");
                    KvChecksum backend = $arg("backend"); long numBlocks = $arg("numBlocks");
                    int tpRank = $arg("tpRank"); int tp = $arg("tp"); int ppStage = $arg("ppStage"); int pp = $arg("pp");
                    List<String> layerNames = $arg("layerNames"); List<KvMemory> caches = $arg("caches");
                    String reqId = $arg("reqId"); long stream = $arg("stream");
                    int[] blockTable = $arg("blockTable"); long numComputedTokens = $arg("numComputedTokens");
                    Map<String, Object> kvTransferParams = $arg("kvTransferParams");
                    int[] loadTable = $arg("loadTable"); long numLocalComputed = $arg("numLocalComputed");
                    """).returning("""
                    Map.of("decisions", decisions, "metrics", metrics, "params", kvTransferParams,
                            "verifiedAgain", pending.verify(reqId, Aggregator.consumer(tp, pp, numComputedTokens, csel, crecords)))
                    """),
            ENGINE + " #2", Preamble.declaring("""
                    long numBlocks = $arg("numBlocks"); int tpRank = $arg("tpRank"); int tp = $arg("tp");
                    List<String> layerNames = $arg("layerNames"); List<KvMemory> caches = $arg("caches");
                    """).importing("io.kvchecksum.engine.worker.CacheGate"),
            JLAMA + " #1", Preamble.declaring("""
                    KvBufferCache.KvBuffer kv = $arg("kv"); int numLayers = $arg("numLayers"); int kvHeads = $arg("kvHeads");
                    int headDim = $arg("headDim"); int jlamaPages = $arg("jlamaPages"); int perPage = $arg("perPage");
                    int page = $arg("page"); int n = $arg("n");
                    """).importing("com.github.tjake.jlama.tensor.KvBufferCache"),
            JLAMA + " #2", Preamble.declaring("""
                    KvSegments session = $arg("session"); long fingerprint = $arg("fingerprint");
                    KvChecksum backend = $arg("backend"); int[] blockTable = $arg("blockTable"); long n = $arg("n");
                    long numLocal = $arg("numLocal"); PendingLoads pending = $arg("pending"); String requestId = $arg("requestId");
                    """).importing("io.kvchecksum.engine.verdict.*", "io.kvchecksum.engine.worker.*")
                    .withMembers("static void decode() { } static void prefillLocally() { } static void fail() { }"));

    private static List<Block> blocks;
    private static Compiled compiled;

    /** The modules a README reader can take (their Maven artifacts or, in the reactor, their classes). */
    private static final List<String> PUBLISHED = List.of("bindings", "engine", "kernels-cuda", "kernels-opencl");

    /** Test frameworks on this module's classpath that no README block may use. */
    private static final List<String> TEST_ONLY = List.of("junit-", "opentest4j-", "apiguardian-", "archunit-");

    /**
     * {@return this test's classpath less what a library user does not have: the other modules of this repository
     * (test classes, golden, cli, jmh, bench, the Jlama example's classes) and test frameworks}
     */
    static List<Path> publishedClasspath() {
        Path root = ReadmeBlocks.readme().getParent().toAbsolutePath().normalize();
        List<Path> out = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(e).toAbsolutePath().normalize();
            String name = p.getFileName().toString();
            boolean keep;
            if (p.startsWith(root)) {
                Path rel = root.relativize(p);
                // a module's classes, or its jar once the reactor has packaged it
                keep = rel.getNameCount() == 3 && PUBLISHED.contains(rel.getName(0).toString())
                        && rel.getName(1).toString().equals("target") && (name.equals("classes")
                                || name.startsWith("kvchecksum-") && name.endsWith(".jar") && !name.contains("-tests"));
            } else if (name.startsWith("kvchecksum-")) {
                keep = PUBLISHED.stream().anyMatch(m -> name.startsWith("kvchecksum-" + m + "-")) && !name.contains("-tests");
            } else {
                keep = TEST_ONLY.stream().noneMatch(name::startsWith);
            }
            if (keep) {
                out.add(p);
            }
        }
        return out;
    }

    @BeforeAll
    static void compileTheReadme() throws Exception {
        Path readme = ReadmeBlocks.readme();
        blocks = ReadmeBlocks.extract(Files.readAllLines(readme));
        compiled = ReadmeBlocks.compile(blocks, PREAMBLES, publishedClasspath());
    }

    @Test
    void everyJavaBlockOfTheReadmeCompilesAsWritten() {
        assertTrue(compiled.errors().isEmpty(), () -> "README.md's Java blocks do not compile as written:\n"
                + String.join("\n", compiled.errors()));
        // guards against an extractor that finds nothing: the README has these blocks, each with a preamble
        assertEquals(PREAMBLES.keySet(), blocks.stream().map(Block::key).collect(java.util.stream.Collectors.toSet()),
                "the README's Java blocks and this test's preambles");
    }

    @Test
    void theClasspathHoldsThePublishedModulesOnly() {
        Path root = ReadmeBlocks.readme().getParent().toAbsolutePath().normalize();
        List<Path> cp = publishedClasspath();
        List<String> modules = cp.stream().filter(p -> p.startsWith(root)).map(p -> root.relativize(p).getName(0).toString())
                .distinct().sorted().toList();
        assertEquals(PUBLISHED.stream().sorted().toList(), modules, cp.toString());
        assertTrue(cp.stream().map(p -> p.getFileName().toString()).noneMatch(n -> TEST_ONLY.stream().anyMatch(n::startsWith)),
                cp.toString());
    }

    /** One engine's caches (vLLM flash layout, host memory) and request, with the load's blocks copied in. */
    private static Map<String, Object> engineArgs(Arena arena, boolean corrupt, boolean carrier) {
        Random rnd = new Random(SEED);
        int heads = 8;
        int cell = 128 * 2;
        int numBlocks = 24;
        long pageBytes = 16L * heads * cell;
        long half = numBlocks * pageBytes;
        List<KvMemory> caches = new ArrayList<>();
        List<MemorySegment> segments = new ArrayList<>();
        for (int l = 0; l < 2; l++) {
            byte[] bytes = new byte[(int) (2 * half)];
            rnd.nextBytes(bytes);
            MemorySegment s = arena.allocate(bytes.length, 8);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, s, 0, bytes.length);
            segments.add(s);
            caches.add(KvMemory.host(s));
        }
        long tokens = 150;   // 10 blocks of 16, the last one partial
        List<Integer> ids = new ArrayList<>(IntStream.rangeClosed(1, numBlocks - 1).boxed().toList());   // 0: the null block
        Collections.shuffle(ids, rnd);
        int[] blockTable = ids.subList(0, 10).stream().mapToInt(Integer::intValue).toArray();
        int[] loadTable = ids.subList(10, 20).stream().mapToInt(Integer::intValue).toArray();
        // the transfer: every block's page of K and of V, in every layer, copied to the consumer's page
        for (MemorySegment s : segments) {
            for (int b = 0; b < 10; b++) {
                for (long h = 0; h < 2; h++) {
                    MemorySegment.copy(s, h * half + blockTable[b] * pageBytes, s, h * half + loadTable[b] * pageBytes, pageBytes);
                }
            }
        }
        if (corrupt) {
            // layer 1's V, block 3 of the request, token 5 of the page, head 2, byte 7
            long at = half + loadTable[3] * pageBytes + (5L * heads + 2) * cell + 7;
            MemorySegment s = segments.get(1);
            s.set(ValueLayout.JAVA_BYTE, at, (byte) (s.get(ValueLayout.JAVA_BYTE, at) ^ 0x10));
        }
        Map<String, Object> args = new HashMap<>();
        args.put("connectorName", "TestConnector");
        args.put("connectorCarriesChecksums", carrier);
        args.put("numBlocks", (long) numBlocks);
        args.put("tpRank", 0);
        args.put("tp", 1);
        args.put("ppStage", 0);
        args.put("pp", 1);
        args.put("layerNames", List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"));
        args.put("caches", caches);
        args.put("reqId", "req-1");
        args.put("stream", 0L);
        args.put("blockTable", blockTable);
        args.put("numComputedTokens", tokens);
        args.put("kvTransferParams", new HashMap<String, Object>());
        args.put("loadTable", loadTable);
        args.put("numLocalComputed", 0L);
        return args;
    }

    private static Map<String, Object> runEngineExample(boolean corrupt, boolean carrier) throws Throwable {
        assertTrue(compiled.errors().isEmpty(), () -> String.join("\n", compiled.errors()));
        Block engine = blocks.stream().filter(b -> b.key().equals(ENGINE + " #1")).findFirst().orElseThrow();
        try (Arena arena = Arena.ofConfined(); KvChecksum backend = KvChecksums.cpu()) {
            Map<String, Object> args = engineArgs(arena, corrupt, carrier);
            args.put("backend", backend);
            return compiled.run(engine, args);
        }
    }

    @Test
    void theEngineExampleUsesACleanLoadAndRecomputesACorruptedOne() throws Throwable {
        System.out.println("ReadmeJavaTest seed = 0x" + Long.toHexString(SEED));
        Map<String, Object> clean = runEngineExample(false, true);
        Decision ok = (Decision) ((Map<?, ?>) clean.get("decisions")).get("req-1");
        assertEquals(Action.USE_LOAD, ok.action(), ok.toString());
        assertEquals(Status.MATCH, ok.verdict().status());
        assertEquals(1, ((ChecksumCounters) clean.get("metrics")).verifiedLoads());
        assertInstanceOf(String.class, ((Map<?, ?>) clean.get("params")).get("kv_checksums"));
        assertEquals(Optional.empty(), clean.get("verifiedAgain"), "a load is compared once");

        Map<String, Object> bad = runEngineExample(true, true);
        Decision d = (Decision) ((Map<?, ?>) bad.get("decisions")).get("req-1");
        assertEquals(Action.RECOMPUTE, d.action(), d.toString());
        assertEquals(Status.MISMATCH, d.verdict().status());
        assertArrayEquals(new long[] {3}, d.verdict().group(0).mismatchedBlocks(), Arrays.toString(d.verdict().group(0).mismatchedBlocks()));
        assertEquals(1, ((ChecksumCounters) bad.get("metrics")).mismatchedBlocks());
    }

    @Test
    void aConnectorWithoutACarrierIsRefusedAtStartupFailClosed() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> runEngineExample(false, false));
        assertTrue(e.getMessage().contains("TestConnector"), e.getMessage());
    }
}
