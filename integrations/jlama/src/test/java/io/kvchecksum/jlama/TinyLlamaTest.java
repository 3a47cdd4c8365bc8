package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TinyLlamaTest {
    @TempDir
    Path dir;

    @Test
    void loadsAndGeneratesDeterministically() {
        TinyLlama.write(dir, 42);
        int[] prompt = {TinyLlama.BOS, 300, 301, 302, 17, 400, 5, 9, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320};
        int[] a;
        int[] b;
        try (JlamaInstance x = JlamaInstance.load("x", dir); var kv = x.newSession()) {
            int first = x.prefill(kv, prompt, 0);
            a = x.decode(kv, first, prompt.length, 12);
        }
        try (JlamaInstance y = JlamaInstance.load("y", dir); var kv = y.newSession()) {
            int first = y.prefill(kv, prompt, 0);
            b = y.decode(kv, first, prompt.length, 12);
        }
        System.out.println("tokens " + Arrays.toString(a));
        assertArrayEquals(a, b);
        assertEquals(12, a.length);
    }
}
