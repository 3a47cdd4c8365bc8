package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.KvDump;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The adapter's checksums equal those the CLI's dump reader computes from the same KV written out as a dump. */
class JlamaKvTest {
    static final long SEED = 20261129L;
    static JlamaInstance jlama;

    @TempDir
    static Path models;

    @TempDir
    Path out;

    @BeforeAll
    static void load() {
        jlama = JlamaInstance.load("adapter", TinyLlama.write(models.resolve("tiny"), SEED));
    }

    @AfterAll
    static void close() {
        jlama.close();
    }

    static int[] prompt(long seed, int n) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] p = new int[n];
        p[0] = TinyLlama.BOS;
        for (int i = 1; i < n; i++) {
            p[i] = 3 + r.nextInt(TinyLlama.VOCAB - 3);
        }
        return p;
    }

    @ParameterizedTest(name = "{0} tokens")
    @ValueSource(ints = {1, 15, 16, 17, 37, 64, 100})
    void adapterChecksumsEqualTheCliReadingADump(int n) throws Exception {
        System.out.println("JlamaKvTest seed " + SEED + ", prompt seed " + (SEED + n));
        try (var kv = jlama.newSession(); KvChecksum fast = KvChecksums.fastest(); KvChecksum ref = KvChecksums.reference()) {
            jlama.prefill(kv, prompt(SEED + n, n), 0);
            JlamaKv view = JlamaKv.of(jlama.model(), kv, 16);
            assertEquals(TinyLlama.LAYERS, view.group().layers().size());
            assertEquals(TinyLlama.KV_HEADS, view.group().layers().get(0).numHeads());
            // Zero-copy: the group's memory is Jlama's own segment, not a copy of it.
            assertSame(view.keys(0), ((KvMemory.Host) view.group().layers().get(0).k().memory()).segment());
            long[] adapter = fast.blockChecksums(view.group(), RequestBlocks.of(view.pageTable(n), n, 16));

            Path dump = out.resolve("jlama-" + n + ".safetensors");
            GatheredDump.write(dump, kv, TinyLlama.LAYERS, TinyLlama.KV_HEADS, TinyLlama.HEAD_DIM, n);
            try (DumpFile f = DumpFile.open(dump)) {
                KvDump d = KvDump.of(f, new KvDump.Options("gathered", 16, null, 0, 0));
                long[] cli = ref.blockChecksums(d.group(), d.request());
                assertArrayEquals(cli, adapter, fast + " over Jlama's cache vs the CLI's reader (" + ref + ") of its dump");
            }
        }
    }

    @Test
    void oneChangedValueInJlamasCacheChangesItsBlockOnly() {
        int n = 40;
        try (var kv = jlama.newSession(); KvChecksum k = KvChecksums.fastest()) {
            jlama.prefill(kv, prompt(SEED, n), 0);
            JlamaKv view = JlamaKv.of(jlama.model(), kv, 16);
            RequestBlocks req = RequestBlocks.of(view.pageTable(n), n, 16);
            long[] before = k.blockChecksums(view.group(), req);
            // Layer 2's V at position 20 (block 1), head 3's first value, through Jlama's tensor API.
            var t = kv.getValTensorForPosition(2, 20);
            t.set(t.get(0, 3 * TinyLlama.HEAD_DIM) + 1.0f, 0, 3 * TinyLlama.HEAD_DIM);
            long[] after = k.blockChecksums(view.group(), req);
            assertEquals(before[0], after[0]);
            assertNotEquals(before[1], after[1]);
            assertEquals(before[2], after[2]);
            // Positions past the request (later decode writes) are not read.
            view.values(2).set(ValueLayout.JAVA_FLOAT_UNALIGNED, 45 * view.rowBytes(), 123f);
            assertArrayEquals(after, k.blockChecksums(view.group(), req));
        }
    }
}
