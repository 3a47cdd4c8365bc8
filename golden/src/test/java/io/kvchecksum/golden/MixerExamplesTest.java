package io.kvchecksum.golden;

import io.kvchecksum.Definition;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Java mixer against the {x, MIX(x)} pairs NumPy wrote beside the mixed-mode vectors. */
class MixerExamplesTest {
    @Test
    void feistel3AgreesWithNumPy() {
        long[][] examples = GoldenVectors.mixerExamples();
        assertTrue(examples.length >= 10, "only " + examples.length + " examples");
        for (long[] e : examples) {
            assertEquals(e[1], Definition.feistel3(e[0]), "MIX(" + Long.toUnsignedString(e[0]) + ")");
        }
    }
}
