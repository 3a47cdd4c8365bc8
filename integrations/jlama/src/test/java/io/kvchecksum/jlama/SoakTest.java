package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The soak: short in CI ({@code soak.seconds}, 20 by default), long by one command:
 * {@code mvn -B -pl integrations/jlama -am verify -Dtest=SoakTest -Dsurefire.failIfNoSpecifiedTests=false -Dsoak.seconds=600};
 * {@code -Dsoak.verifyInCopy=true} loads through a staging buffer and verifies inside the copy into the session.
 */
class SoakTest {
    @TempDir
    Path models;

    @Test
    void soak() throws InterruptedException {
        double seconds = Double.parseDouble(System.getProperty("soak.seconds", "20"));
        long seed = Long.getLong("soak.seed", 20261129L);
        var s = new Soak.Settings(seconds, 4, 0.3, 256, 0.25, 4, 16, seed);
        // Every session spans many Jlama pages: one per position and layer (TinyLlama.Shape.POSITION_PAGES).
        Path dir = TinyLlama.write(models.resolve("tiny"), seed, TinyLlama.Shape.POSITION_PAGES);
        Soak.Report r;
        String backendName;
        try (JlamaInstance p = JlamaInstance.load("prefill", dir); JlamaInstance d = JlamaInstance.load("decode", dir);
                KvChecksum backend = KvChecksums.fastest()) {
            backendName = backend.toString();
            r = Soak.run(p, d, backend, s, System.out, Math.max(5, seconds / 20), Boolean.getBoolean("soak.verifyInCopy"));
        }
        r.print(System.out, s, backendName);
        assertEquals(0, r.thrown.get(), "thrown into the step: " + r.firstThrown);
        assertEquals(0, r.falseMismatches.get(), "false mismatches");
        assertEquals(0, r.sum(r.missed), "missed faults (none of these classes is in the blind spot)");
        assertEquals(0, r.wrongBlocks.get(), "mismatches reported at other blocks than the faulted ones");
        assertEquals(0, r.unexpectedUnverified.get(), "unverified loads without a payload fault");
        assertEquals(0, r.wrongTokens.get(), "fail-closed recompute served other tokens than one instance");
        assertEquals(0, r.pendingAtEnd, "verify-once registry grew");
        // Every mismatch verdict reached the logger the soak gave the policy, as one error line.
        long mismatches = r.falseMismatches.get() + r.detected.entrySet().stream()
                .filter(e -> !e.getKey().payloadFault() && e.getKey() != KvTransfer.Fault.NONE)
                .mapToLong(e -> e.getValue().get()).sum();
        assertEquals(mismatches, r.logged.get(System.Logger.Level.ERROR).get(), "error lines vs mismatch verdicts");
        assertTrue(r.sum(r.injected) > 0, "no fault was injected");
        // Bounded memory. The library's state per request must be gone (pending expectations above). The live heap
        // also holds Jlama's own tensor pool, which fills towards its 100 MB cap (plus cached slice views) as prompt
        // lengths it has not seen arrive, then flattens: a fixed ceiling, not a ratio to the start, is the bound.
        long last = r.liveHeapAtQuarters.get(r.liveHeapAtQuarters.size() - 1);
        assertTrue(last <= (256L << 20), "live heap after the run " + (last >> 20) + " MiB, over the 256 MiB bound");
    }
}
