package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A library consumer on JDK 25 sees no {@code sun.misc.Unsafe} warning from msgpack: a fresh JVM (no options, the test
 * classpath) encodes and decodes a payload through the public API only, and its stderr is empty. The same JVM with
 * {@code -Dmsgpack.universal-buffer=false} (a consumer who wants msgpack's Unsafe buffers) does print the warning: the
 * property is never overridden, and this test can tell a warning when there is one.
 */
class MsgpackWarningTest {

    /** The consumer: public API only, nothing set before the first call. */
    public static final class Consumer {
        private Consumer() {
        }

        /**
         * Encodes and decodes one worker record (a worker's first msgpack use may be its record), then one payload,
         * printing the payload's encoded length and whether both decode to what was encoded.
         *
         * @param args unused
         */
        public static void main(String[] args) {
            io.kvchecksum.engine.worker.WorkerRecord record = new io.kvchecksum.engine.worker.WorkerRecord(0, 0, 40, List.of(),
                    java.util.Map.of(3, "no per-token KV"));
            boolean recordBack = record.equals(io.kvchecksum.engine.worker.WorkerRecordCodec.decode(
                    io.kvchecksum.engine.worker.WorkerRecordCodec.encode(record)));
            ChecksumPayload payload = ChecksumPayload.of(1, 40, List.of(new GroupChecksums(0, 0xfeedL, 16, 0, new long[] {1, 2, 3})));
            byte[] bytes = PayloadCodec.encode(payload);
            ChecksumPayload back = PayloadCodec.decodeBase64(PayloadCodec.encodeBase64(payload));
            System.out.println(bytes.length + " bytes, round trip " + (recordBack && Arrays.equals(bytes, PayloadCodec.encode(back))));
        }
    }

    /**
     * {@code [2, 1, 40, [[0, 0xfeed, 16, 0, bin(24)]]]}: three fixarray headers, six positive fixints (2, 1, 40, 0, 16, 0), 0xfeed as
     * uint16 (3 bytes), a bin 8 header (2) and 24 bytes of values.
     */
    private static final String EXPECTED_STDOUT = (3 + 6 + 3 + 2 + 24) + " bytes, round trip true";

    record Run(int exit, String stdout, String stderr) {
    }

    private static Run run(String... jvmOptions) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of(jvmOptions));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Consumer.class.getName()));
        Process p = new ProcessBuilder(cmd).start();
        p.getOutputStream().close();
        // both outputs are a few lines: read them after the exit
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the consumer JVM did not end in 60 s: " + cmd);
        return new Run(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8),
                new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    @Test
    void aConsumerOnThisJdkSeesNoUnsafeWarning() throws Exception {
        // JEP 498 (JDK 24) prints the warning by default; on an older JDK this test would prove nothing
        assertTrue(Runtime.version().feature() >= 24, "needs JDK 24 or later, runs on " + Runtime.version());
        Run quiet = run();
        assertEquals(0, quiet.exit(), quiet.stderr());
        assertEquals(EXPECTED_STDOUT, quiet.stdout().strip());
        assertTrue(!quiet.stderr().contains("sun.misc.Unsafe"), "stderr of a plain consumer:\n" + quiet.stderr());
        assertArrayEquals(new String[0], quiet.stderr().lines().toArray(), "stderr should be empty:\n" + quiet.stderr());
    }

    @Test
    void aConsumerWhoAsksForUnsafeBuffersGetsThemAndTheWarning() throws Exception {
        Run unsafe = run("-Dmsgpack.universal-buffer=false");
        assertEquals(0, unsafe.exit(), unsafe.stderr());
        assertEquals(EXPECTED_STDOUT, unsafe.stdout().strip());
        assertTrue(unsafe.stderr().contains("sun.misc.Unsafe"), "expected msgpack's Unsafe warning, stderr:\n" + unsafe.stderr());
    }
}
