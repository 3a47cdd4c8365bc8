package io.kvchecksum.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JVM that {@code java -jar} restarts with the Vector API module ends with the JVM that started it, even when
 * that one is killed outright (SIGKILL, which it cannot pass on): a supervisor's timeout must not leave an orphan
 * computing at full speed.
 */
class ChildJvmTest {
    @Test
    @EnabledOnOs({OS.LINUX, OS.MAC})
    void theRestartedJvmEndsWhenItsParentIsKilled(@TempDir Path tmp) throws Exception {
        Path log = tmp.resolve("child.log");
        Process parent = new ProcessBuilder("sleep", "120").start();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // bench for a long time: busy, as the orphan in the issue was
        Process child = new ProcessBuilder(List.of(java, "-cp", System.getProperty("java.class.path"),
                "-D" + Main.PARENT_PROPERTY + "=" + parent.pid(), Main.class.getName(), "bench", "--sizes", "1",
                "--seconds", "10", "-q"))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertTrue(!child.waitFor(2, TimeUnit.SECONDS), () -> "the child should still be running while its parent"
                    + " lives; it said: " + read(log));
            parent.destroyForcibly().waitFor();
            assertTrue(child.waitFor(20, TimeUnit.SECONDS), () -> "the child outlived its killed parent: " + read(log));
            assertEquals(143, child.exitValue());
        } finally {
            child.destroyForcibly();
            parent.destroyForcibly();
        }
    }

    @Test
    void onlyDemoAndBenchRestartForTheVectorLoop() {
        // KVCHECKSUM_VECTOR is not set in the build; if it were, it would decide instead
        org.junit.jupiter.api.Assumptions.assumeTrue(System.getenv("KVCHECKSUM_VECTOR") == null);
        assertTrue(Main.vectorPays(new String[0]), "no arguments: the demo");
        assertTrue(Main.vectorPays(new String[] {"demo", "--tokens", "100"}));
        assertTrue(Main.vectorPays(new String[] {"--verbose", "bench"}));
        assertTrue(!Main.vectorPays(new String[] {"sum", "x.safetensors", "--block-size", "16"}));
        assertTrue(!Main.vectorPays(new String[] {"verify", "x", "--expected", "@p"}));
        assertTrue(!Main.vectorPays(new String[] {"diff", "a", "b"}));
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
