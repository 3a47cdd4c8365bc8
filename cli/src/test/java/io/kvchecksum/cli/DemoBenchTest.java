package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.engine.Status;
import io.kvchecksum.spi.BackendProvider.Availability;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.HashSet;
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
        try (ChosenBackend b = ChosenBackend.open("cpu", Main.commandLine())) {
            r = Demo.run(c, b, new PrintWriter(log));
        }
        assertEquals(Status.MATCH, r.clean(), log.toString());
        assertEquals(4, r.faults().size());
        Set<String> names = new HashSet<>();
        for (Demo.Outcome o : r.faults()) {
            names.add(o.name());
            assertEquals(Status.MISMATCH, o.status(), o.name());
            assertTrue(o.localized(), o.name() + ": injected " + java.util.Arrays.toString(o.injectedBlocks()) + ", reported "
                    + java.util.Arrays.toString(o.reportedBlocks()));
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
        assertTrue(r.out().contains("backend   cpu") || r.out().contains("backend   "), r.out());
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
            assertEquals(f.get("injected_blocks").toString().replace(" ", ""), sorted(f.get("reported_blocks")));
            assertTrue(f.get("localized").asBoolean());
        }
    }

    private static String sorted(JsonNode a) {
        return a.toString();
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
                    continue; // a device backend that cannot read host memory says so
                }
                assertTrue(res.get("gbps").asDouble() > 0 && res.get("read_gbps").asDouble() > 0, res.toString());
                assertEquals(res.get("gbps").asDouble() / res.get("read_gbps").asDouble(), res.get("ratio").asDouble(), 1e-9);
            }
        }
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
