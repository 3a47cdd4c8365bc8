package io.kvchecksum.cuda;

import io.kvchecksum.CellPadding;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SliceSums;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fused kernel's fallback for a block that spans more pages than the CTA stages in shared memory
 * ({@code KVC_TABLE_STAGE}, read from the kernel sources so the test follows the constant): page size 1 with blocks of
 * 257 tokens and up (and page size 2 with blocks past twice the stage), where the CTA reads the page ids from global
 * memory instead. On the emulated driver, every alignment class (16-, 8-byte and byte-assembled loads), both modes,
 * block checksums and slice sums, one request and a batch of several in one launch, against the reference backend.
 * No NumPy golden vector has a block of more than 256 pages today (the generator's cases use pages of 2 to 16 slots and
 * blocks of up to 32 tokens), so the reference backend is the oracle here.
 */
class ManyPagesPerBlockTest {
    private static final long SEED = Long.getLong("kvchecksum.seed", 0x257_9A6E5L);
    private static final long STREAM = 0x257L;

    /** {@code KVC_TABLE_STAGE}: the page ids a CTA stages, from the kernel sources (the build compiles the same files). */
    static int tableStage() throws IOException {
        Pattern define = Pattern.compile("#define\\s+KVC_TABLE_STAGE\\s+\\(?(\\d+)");
        try (Stream<Path> files = Files.list(Path.of("src/main/cuda"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".cu") || p.toString().endsWith(".cuh")).sorted().toList()) {
                Matcher m = define.matcher(Files.readString(f));
                if (m.find()) {
                    return Integer.parseInt(m.group(1));
                }
            }
        }
        throw new AssertionError("no #define KVC_TABLE_STAGE in src/main/cuda: the staging limit moved; point this test at it");
    }

    /** The most pages any block of {@code r} touches (the kernel's kvc_block_pages). */
    static long maxPagesPerBlock(RequestBlocks r, int pageSize) {
        long most = 0;
        for (long b = r.firstBlock(); b < Math.ceilDiv(r.numTokens(), (long) r.blockSize()); b++) {
            long bs = b * r.blockSize();
            long be = Math.min(bs + r.blockSize(), r.numTokens());
            long first = (bs - r.startToken()) / pageSize;
            long last = (be - 1 - r.startToken()) / pageSize;
            most = Math.max(most, last - first + 1);
        }
        return most;
    }

    @Test
    void blocksOfMoreThanTheStagedPagesEqualTheReference() throws IOException {
        int stage = tableStage();
        System.out.println("ManyPagesPerBlockTest seed = " + SEED + " (rerun with -Dkvchecksum.seed=" + SEED + "), KVC_TABLE_STAGE = " + stage);
        Random rnd = new Random(SEED);
        KvChecksum reference = KvChecksums.reference();
        int[][] shapes = {{1, stage + 1}, {1, stage + 44}, {1, 2 * stage + 1}, {2, 2 * stage + 2}, {2, 2 * stage + 77}};
        int[] skews = {0, 8, 3};
        int cases = 0;
        for (int[] shape : shapes) {
            for (int skew : skews) {
                int pageSize = shape[0];
                int blockSize = shape[1];
                int numPages = 3 * blockSize / pageSize + 5;
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    int kPieces = skew == 0 ? 2 : 1 + rnd.nextInt(3);
                    int vPieces = skew == 0 ? 2 * rnd.nextInt(2) : rnd.nextInt(3);
                    KvCacheGroup host = UnalignedLayoutTest.skewed(rnd, arena, skew, kPieces, vPieces, 1 + rnd.nextInt(2), pageSize, numPages);
                    List<RequestBlocks> requests = new ArrayList<>();
                    for (int i = 0; i < 2 + rnd.nextInt(2); i++) {
                        long blocks = 1 + rnd.nextInt(3);
                        long firstBlock = rnd.nextInt(2);
                        long tokens = (firstBlock + blocks - 1) * blockSize + 1 + rnd.nextInt(blockSize);
                        int[] table = new int[(int) Math.ceilDiv(tokens - firstBlock * blockSize, (long) pageSize)];
                        for (int t = 0; t < table.length; t++) {
                            table[t] = rnd.nextInt(numPages);
                        }
                        RequestBlocks r = RequestBlocks.of(table, tokens, firstBlock, blockSize);
                        requests.add(r);
                    }
                    // At least one block of the first request must take the fallback.
                    RequestBlocks full = RequestBlocks.of(requests.get(0).pageTable(), Math.max(requests.get(0).numTokens(),
                            (requests.get(0).firstBlock() + 1) * blockSize), requests.get(0).firstBlock(), blockSize);
                    int[] fullTable = new int[(int) Math.ceilDiv(full.numTokens() - full.startToken(), (long) pageSize)];
                    for (int t = 0; t < fullTable.length; t++) {
                        fullTable[t] = rnd.nextInt(numPages);
                    }
                    requests.set(0, RequestBlocks.of(fullTable, full.numTokens(), full.firstBlock(), blockSize));
                    assertTrue(maxPagesPerBlock(requests.get(0), pageSize) > stage, "the case must span more than " + stage + " pages");
                    String label = "page " + pageSize + ", block " + blockSize + ", skew " + skew + ", K" + kPieces + " V" + vPieces
                            + ", " + requests.size() + " requests";
                    check(label, host, requests, reference);
                    cases++;
                }
            }
        }
        assertEquals(shapes.length * skews.length, cases);
    }

    private static void check(String label, KvCacheGroup host, List<RequestBlocks> requests, KvChecksum reference) {
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        try (CudaBackend backend = new CudaBackend(fake, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            KvCacheGroup dev = Relocation.relocate(host, fake::onDevice);
            for (ChecksumMode mode : ChecksumMode.values()) {
                ChecksumSpec spec = new ChecksumSpec(mode, CellPadding.NONE);
                String what = label + ", " + mode.wireName();
                CompiledPlan expectedPlan = reference.compile(host, requests, spec);
                List<long[]> expected = reference.blockChecksums(expectedPlan);
                List<SliceSums> expectedSums = reference.sliceSums(expectedPlan);
                // Each request alone, on the engine's stream.
                for (int r = 0; r < requests.size(); r++) {
                    CompiledPlan one = cuda.compile(dev, List.of(requests.get(r)), spec);
                    try (PendingChecksums p = cuda.submit(one, STREAM)) {
                        assertArrayEquals(expected.get(r), p.get(), what + ", request " + r + " alone");
                    }
                    assertEquals(expectedSums.get(r), cuda.sliceSums(one).get(0), what + ", request " + r + " slice sums");
                }
                // All of them in one launch.
                CompiledPlan plan = cuda.compile(dev, requests, spec);
                fake.launchedNames.clear();
                try (PendingChecksums p = cuda.submit(plan, STREAM)) {
                    long[] got = p.get();
                    for (int r = 0; r < requests.size(); r++) {
                        assertArrayEquals(expected.get(r), plan.blockChecksums(got, r), what + ", batched request " + r);
                    }
                }
                assertEquals(1, fake.launchedNames.size(), what + ": one launch for the batch " + fake.launchedNames);
                assertEquals(expectedSums, cuda.sliceSums(plan), what + ", batched slice sums");
            }
            fake.freeUploads();
        }
    }
}
