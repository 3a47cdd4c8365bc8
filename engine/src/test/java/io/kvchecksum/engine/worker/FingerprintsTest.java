package io.kvchecksum.engine.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

class FingerprintsTest {

    @Test
    void layerHashIsTheFirstEightBytesOfSha256OfThePythonTuple() {
        // Expected values from Python: int.from_bytes(hashlib.sha256(str(t).encode()).digest()[:8], 'little').
        assertEquals(Long.parseUnsignedLong("15636031808374526850"),
                Fingerprints.ofLayer("model.layers.0.self_attn.attn", "FullAttentionSpec", "torch.bfloat16"));
        // A quote in the name makes Python switch to double quotes.
        assertEquals(Long.parseUnsignedLong("16344668020809103570"),
                Fingerprints.ofLayer("model.layers.7.mlp's", "MLAAttentionSpec", "torch.float8_e4m3fn"));
    }

    @Test
    void eachFieldMatters() {
        long base = Fingerprints.ofLayer("model.layers.0.attn", "FullAttentionSpec", "torch.bfloat16");
        assertNotEquals(base, Fingerprints.ofLayer("model.layers.1.attn", "FullAttentionSpec", "torch.bfloat16"));
        assertNotEquals(base, Fingerprints.ofLayer("model.layers.0.attn", "SlidingWindowSpec", "torch.bfloat16"));
        assertNotEquals(base, Fingerprints.ofLayer("model.layers.0.attn", "FullAttentionSpec", "torch.float16"));
    }

    @Test
    void groupFingerprintIsInvariantToThePpSplit() {
        long seed = 77L;
        Random rnd = new Random(seed);
        List<Long> hashes = new ArrayList<>();
        for (int l = 0; l < 61; l++) {
            hashes.add(Fingerprints.ofLayer("model.layers." + l + ".self_attn.attn", "MLAAttentionSpec", "torch.bfloat16"));
        }
        long whole = Fingerprints.ofGroup(hashes);
        for (int trial = 0; trial < 200; trial++) {
            int stages = 1 + rnd.nextInt(8);
            // Random contiguous split into stages (some may be empty), each reporting its own layers' sum.
            int[] cuts = rnd.ints(stages - 1, 0, hashes.size() + 1).sorted().toArray();
            long sum = 0;
            int from = 0;
            for (int s = 0; s < stages; s++) {
                int to = s < cuts.length ? cuts[s] : hashes.size();
                sum += Fingerprints.ofGroup(hashes.subList(from, to));
                from = to;
            }
            assertEquals(whole, sum, "seed " + seed + " trial " + trial);
        }
        // Summing per worker instead of per stage (TP2: every stage counted twice) is detected.
        assertNotEquals(whole, 2 * whole);
        // Dropping a layer changes it.
        assertNotEquals(whole, Fingerprints.ofGroup(hashes.subList(1, hashes.size())));
    }

    @Test
    void textIsPythonsReprOfTheTuple() {
        // Each expectation is Python's repr() of the string.
        assertEquals("\"a'b\"", Fingerprints.pyRepr("a'b"));
        assertEquals("'a\\'b\"c'", Fingerprints.pyRepr("a'b\"c"));
        assertEquals("'\\x1f'", Fingerprints.pyRepr("\u001f"));
        assertEquals("'\\x7f'", Fingerprints.pyRepr("\u007f"));
        assertEquals("'\\x00'", Fingerprints.pyRepr("\u0000"));
        assertEquals("' '", Fingerprints.pyRepr(" "));
        assertEquals("\"'x\"", Fingerprints.pyRepr("'x"), "a single quote first");
        assertEquals("'\"a\\''", Fingerprints.pyRepr("\"a'"), "a double quote first");
        assertEquals("'~'", Fingerprints.pyRepr("~"));
        assertEquals("'\\\\'", Fingerprints.pyRepr("\\"));
        assertEquals("'\\n\\t\\r'", Fingerprints.pyRepr("\n\t\r"));
        assertEquals(3L + 5L + -1L, Fingerprints.ofGroup(List.of(3L, 5L, -1L)), "a sum modulo 2^64");
        assertEquals(0L, Fingerprints.ofGroup(List.of()));
    }
}
