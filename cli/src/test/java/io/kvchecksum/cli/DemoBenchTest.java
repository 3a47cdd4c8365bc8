package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.spi.BackendProvider.Availability;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo (structured result and output) and the bench table. */
class DemoBenchTest {

    @Test
    void demoDetectsEveryFaultAtItsBlock() {
        Demo.Config c = new Demo.Config(7, 4, 8, 128, 2, 301, 16, 16, 8);
        StringWriter log = new StringWriter();
        Demo.Result r;
        try (KvChecksum b = BackendOption.open("cpu", Main.commandLine())) {
            r = Demo.run(c, b, new PrintWriter(log));
        }
        assertEquals(Status.MATCH, r.clean(), log.toString());
        assertEquals(4, r.faults().size());
        Set<String> names = new HashSet<>();
        for (Demo.Outcome o : r.faults()) {
            names.add(o.name());
            assertEquals(Status.MISMATCH, o.status(), o.name());
            assertTrue(o.localized(), o.name() + ": injected " + Arrays.toString(o.injectedBlocks()) + ", reported "
                    + Arrays.toString(o.reportedBlocks()));
        }
        assertEquals(Set.of("one flipped bit", "stale block", "two blocks swapped", "block never written"), names);
        assertEquals(2, r.faults().stream().filter(o -> o.name().equals("two blocks swapped")).findFirst().orElseThrow()
                .injectedBlocks().length);
        assertTrue(r.allAsExpected());
        assertTrue(log.toString().contains("seed 7"), log.toString());
    }

    @Test
    void noArgumentsRunsTheLlamaDemo() {
        Cli.Run r = Cli.run();
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("seed " + DemoCommand.DEFAULT_SEED), r.out());
        assertTrue(r.out().contains("32 layers x 8 KV heads x head dim 128"), r.out());
        assertTrue(r.out().contains("clean transfer verified; 4 of 4 faults detected at the injected blocks"), r.out());
        assertTrue(r.out().contains("backend   cpu ("), "auto is the CPU backend, named with its details: " + r.out());
    }

    @Test
    void demoJsonIsTheStructuredResult() {
        Cli.Run r = Cli.run("demo", "--tokens", "100", "--layers", "2", "--seed", "11", "--backend", "reference", "--json");
        assertEquals(0, r.code(), r.err());
        JsonNode j = r.json();
        assertEquals("MATCH", j.get("clean").asText());
        assertEquals(11, j.get("seed").asLong());
        assertTrue(j.get("backend").asText().startsWith("reference"), j.toString());
        assertEquals(4, j.get("faults").size());
        for (JsonNode f : j.get("faults")) {
            assertEquals("MISMATCH", f.get("status").asText());
            assertEquals(sorted(f.get("injected_blocks")), sorted(f.get("reported_blocks")), f.toString());
            assertFalse(f.get("injected_blocks").isEmpty(), f.toString());
            assertTrue(f.get("localized").asBoolean());
        }
    }

    private static List<Long> sorted(JsonNode a) {
        List<Long> s = new ArrayList<>();
        a.forEach(n -> s.add(n.asLong()));
        s.sort(null);
        return s;
    }

    @Test
    void benchListsEveryBackendWithRatesOrTheReason() {
        Cli.Run r = Cli.run("bench", "--sizes", "1,2", "--seconds", "0.01", "--json", "-q");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.err().isEmpty(), r.err());
        JsonNode j = r.json();
        Map<String, Availability> status = KvChecksums.status();
        assertEquals(status.size(), j.get("backends").size());
        for (JsonNode b : j.get("backends")) {
            Availability a = status.get(b.get("backend").asText());
            assertEquals(a.available(), b.get("available").asBoolean(), b.toString());
            if (!a.available()) {
                assertFalse(b.get("reason").asText().isBlank());
                continue;
            }
            assertEquals(2, b.get("results").size(), b.toString());
            for (JsonNode res : b.get("results")) {
                if (res.has("error")) {
                    // only CUDA cannot read host memory (it takes device pointers); every other backend must measure
                    assertEquals("cuda", b.get("backend").asText(), res.toString());
                    assertTrue(res.get("error").asText().contains("host"), res.toString());
                    continue;
                }
                double gbps = res.get("gbps").asDouble();
                double read = res.get("read_gbps").asDouble();
                assertTrue(gbps > 0 && read > 0, res.toString());
                assertEquals(gbps > read, res.get("bound_in_doubt").asBoolean(), res.toString());
                if (gbps > read) {
                    assertTrue(res.get("ratio").isNull(), "a ratio above 1 is not a result: " + res);
                } else {
                    assertEquals(gbps / read, res.get("ratio").asDouble(), 1e-9);
                }
            }
        }
    }

    @Test
    void aRatioAboveOneIsNotPrintedAsAResult() {
        assertEquals("0.50", BenchCommand.ratioText(5, 10));
        assertEquals("1.00", BenchCommand.ratioText(10, 10));
        assertEquals("doubt", BenchCommand.ratioText(23.4, 14.8));
        assertEquals("doubt", BenchCommand.ratioText(1, 0));
    }

    @Test
    void benchTextNamesTheReadRate() {
        Cli.Run r = Cli.run("bench", "--sizes", "1", "--seconds", "0.01", "-q");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("read GB/s"), r.out());
        assertTrue(r.out().contains("cpu"), r.out());
        assertTrue(r.out().contains("reference"), r.out());
    }
}
