package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Verdicts an operator can act on: what a verdict covered (an incomplete dump is UNVERIFIED, a consumer one token
 * short is MATCH with a note), the hint when every block differs, {@code diff --max-blocks}, the same JSON fields in
 * every command, and progress only on a terminal.
 */
class VerdictTest {
    @TempDir
    static Path tmp;

    /** The producer's payload for 40 tokens in blocks of 16: blocks 0 (0..15), 1 (16..31), 2 (32..39). */
    static String payload40;

    @BeforeAll
    static void producer() throws IOException {
        Cli.Run r = Cli.run("sum", gathered("p40", 40, 0).toString(), "--block-size", "16", "--payload", "-q");
        assertEquals(0, r.code(), r.err());
        payload40 = r.out().strip();
    }

    /**
     * A gathered dump of one layer, one head, head_dim 4 (bf16): token t's K and V bytes depend only on t and
     * {@code salt}, so a dump of the first n tokens holds exactly the first n tokens of a longer one.
     */
    static Path gathered(String name, int tokens, int salt) throws IOException {
        int cell = 8;
        String header = "{\"layers.0.k\":{\"dtype\":\"BF16\",\"shape\":[" + tokens + ",1,4],\"data_offsets\":[0," + tokens * cell
                + "]},\"layers.0.v\":{\"dtype\":\"BF16\",\"shape\":[" + tokens + ",1,4],\"data_offsets\":[" + tokens * cell + ","
                + 2 * tokens * cell + "]}}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + 2 * tokens * cell).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        for (int kv = 0; kv < 2; kv++) {
            for (int t = 0; t < tokens; t++) {
                for (int j = 0; j < cell; j++) {
                    b.put((byte) (t * 131 + j * 7 + kv * 3 + salt * 59));
                }
            }
        }
        Path p = tmp.resolve(name + ".safetensors");
        Files.write(p, b.array());
        return p;
    }

    @Test
    void aDumpLackingWholeBlocksIsUnverifiedNamingThem() throws IOException {
        Cli.Run r = Cli.run("verify", gathered("c20", 20, 0).toString(), "--expected", payload40, "-q");
        assertEquals(Main.UNVERIFIED, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("verdict: UNVERIFIED (INCOMPLETE_DUMP: the dump ends at token 20 of the payload's 40:"
                + " payload block 2 (1 of 3) were never compared, nor the partial block 1)"), r.out());
        Cli.Run j = Cli.run("verify", gathered("c20j", 20, 0).toString(), "--expected", payload40, "-q", "--json");
        assertEquals(Main.UNVERIFIED, j.code());
        assertEquals("UNVERIFIED", j.json().get("status").asText());
        assertEquals("INCOMPLETE_DUMP", j.json().get("reason").asText());
        assertEquals("INCOMPLETE_DUMP", j.json().get("groups").get(0).get("reason").asText());
    }

    @Test
    void aDumpOfOnlyTheFirstBlockLacksTwo() throws IOException {
        Cli.Run r = Cli.run("verify", gathered("c16", 16, 0).toString(), "--expected", payload40, "-q");
        assertEquals(Main.UNVERIFIED, r.code(), r.out());
        assertTrue(r.out().contains("payload blocks 1..2 (2 of 3) were never compared)"), r.out());
    }

    @Test
    void aConsumerOneTokenShortMatchesWithANote() throws IOException {
        Cli.Run r = Cli.run("verify", gathered("c39", 39, 0).toString(), "--expected", payload40, "-q");
        assertEquals(Main.OK, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("verdict: MATCH"), r.out());
        assertTrue(r.out().contains("note: block 2 was not compared: the dump holds its tokens 32..38 of 32..39"), r.out());
        Cli.Run j = Cli.run("verify", gathered("c39j", 39, 0).toString(), "--expected", payload40, "-q", "--json");
        assertEquals("MATCH", j.json().get("status").asText());
        assertTrue(j.json().get("note").asText().startsWith("block 2 was not compared"), j.out());
    }

    @Test
    void aCompleteDumpMatchesWithoutANote() throws IOException {
        Cli.Run r = Cli.run("verify", gathered("c40", 40, 0).toString(), "--expected", payload40, "-q", "--json");
        assertEquals(Main.OK, r.code(), r.out() + r.err());
        assertTrue(r.json().get("note").isNull(), r.out());
        assertTrue(r.json().get("hint").isNull(), r.out());
    }

    @Test
    void everyBlockDifferingGivesTheHint() throws IOException {
        Cli.Run r = Cli.run("verify", gathered("c40", 40, 0).toString(), "--expected", payload40, "-q", "--head-offset", "1");
        assertEquals(Main.MISMATCH, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("MISMATCH at blocks 0, 1, 2"), r.out());
        assertTrue(r.out().contains("hint: every compared block differs: the usual causes are a TP shard dumped without"
                + " --head-offset"), r.out());
        assertTrue(r.out().contains("--first-block"), r.out());
    }

    @Test
    void oneBlockDifferingGivesNoHint() throws IOException {
        Path p = gathered("c40-one", 40, 0);
        byte[] b = Files.readAllBytes(p);
        b[b.length - 1] ^= 1; // the last V byte: block 2 only
        Files.write(p, b);
        Cli.Run r = Cli.run("verify", p.toString(), "--expected", payload40, "-q");
        assertEquals(Main.MISMATCH, r.code(), r.out());
        assertTrue(r.out().contains("MISMATCH at block 2"), r.out());
        assertFalse(r.out().contains("hint:"), r.out());
    }

    @Test
    void diffPrintsAtMostMaxBlocksThenTheTotal() throws IOException {
        String a = gathered("d-a", 64, 0).toString();
        String b = gathered("d-b", 64, 1).toString();
        Cli.Run r = Cli.run("diff", a, b, "--max-blocks", "1", "-q");
        assertEquals(Main.MISMATCH, r.code(), r.out() + r.err());
        assertEquals(1, r.out().lines().filter(l -> l.startsWith("block ")).count(), r.out());
        assertTrue(r.out().contains("... 3 more differing blocks not shown (--max-blocks 1; --json lists all)"), r.out());
        assertTrue(r.out().contains("4 of 4 blocks differ"), r.out());
        Cli.Run d = Cli.run("diff", a, b, "--max-blocks", "1", "-q");
        assertEquals(r.out(), d.out());
        Cli.Run j = Cli.run("diff", a, b, "--max-blocks", "1", "-q", "--json");
        assertEquals(4, j.json().get("blocks_differing").size(), j.out());
    }

    @Test
    void diffDefaultsToTwentyBlocks() throws IOException {
        Cli.Run r = Cli.run("diff", gathered("d-a22", 22 * 16, 0).toString(), gathered("d-b22", 22 * 16, 1).toString(), "-q");
        assertEquals(Main.MISMATCH, r.code());
        assertEquals(20, r.out().lines().filter(l -> l.startsWith("block ")).count(), r.out());
        assertTrue(r.out().contains("... 2 more differing blocks not shown (--max-blocks 20"), r.out());
    }

    @Test
    void diffMaxBlocksZeroIsAUsageError() throws IOException {
        Cli.Run r = Cli.run("diff", gathered("z-a", 16, 0).toString(), gathered("z-b", 16, 0).toString(), "--max-blocks", "0");
        assertEquals(Main.USAGE, r.code(), r.err());
    }

    @Test
    void everyJsonNamesTheBackendAndDescribesItInTheSameFields() throws IOException {
        String dump = gathered("j40", 40, 0).toString();
        String[][] commands = {
                {"sum", dump, "--block-size", "16", "--json", "-q"},
                {"sum", dump, "--block-size", "16", "--payload", "--json", "-q"},
                {"verify", dump, "--expected", payload40, "--json", "-q"},
                {"diff", dump, dump, "--json", "-q"},
                {"demo", "--tokens", "64", "--layers", "1", "--json"},
        };
        for (String[] c : commands) {
            Cli.Run r = Cli.run(c);
            assertEquals(0, r.code(), r.args() + ": " + r.err());
            JsonNode j = r.json();
            assertEquals("cpu", j.get("backend").asText(), r.args() + ": " + r.out());
            assertTrue(j.get("backend_description").asText().startsWith("cpu ("), r.args() + ": " + r.out());
        }
    }

    @Test
    void progressOnlyOnATerminalAndNeverWithQuiet() {
        String before = System.getProperty("kvchecksum.stderrTty");
        try {
            System.setProperty("kvchecksum.stderrTty", "false");
            assertFalse(Progress.shown(false));
            System.setProperty("kvchecksum.stderrTty", "true");
            assertTrue(Progress.shown(false));
            assertFalse(Progress.shown(true));
        } finally {
            if (before == null) {
                System.clearProperty("kvchecksum.stderrTty");
            } else {
                System.setProperty("kvchecksum.stderrTty", before);
            }
        }
    }

    @Test
    void workUnderASecondDrawsNoBar() {
        StringWriter err = new StringWriter();
        try (Progress p = new Progress(new PrintWriter(err), true, "sum", 100)) {
            p.update(50);
            p.update(100);
        }
        assertEquals("", err.toString());
    }
}
