package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Coverage-guided fuzzing of {@link PayloadCodec#decode(byte[])} with Jazzer. The property: the decoder returns a
 * payload that survives an encode/decode round trip unchanged, or throws {@link MalformedPayloadException}; any other
 * exception or a failed round trip is a finding.
 *
 * <p>The seed corpus is {@code src/test/resources/io/kvchecksum/engine/wire/PayloadDecoderFuzzTestInputs/decode/}: valid
 * version 2 and version 1 payloads as raw bytes. Without {@code JAZZER_FUZZ} (an IDE run, a plain JUnit launcher, or
 * {@code mvn test -Djazzer.fuzz=0}) the test runs in regression mode: each file in that directory is one test case. The
 * engine's surefire configuration sets {@code JAZZER_FUZZ=1}, so {@code mvn test} first replays those files, then
 * fuzzes for {@code maxDuration} (Jazzer 0.30 or later: earlier versions cannot instrument JDK 25 class files). A
 * finding fails the build and Jazzer writes the input as {@code crash-<sha1>} into that same source directory: commit
 * it and it runs as a regression test from then on (the seeded loop in {@link PayloadFuzzTest} keeps its findings as
 * hex in {@code fuzz-regressions.txt}). The corpus the fuzzer grows is kept in {@code engine/.cifuzz-corpus/}
 * (ignored by git).
 */
class PayloadDecoderFuzzTest {
    private static final String SEEDS = "PayloadDecoderFuzzTestInputs/decode/";

    @FuzzTest(maxDuration = "20s")
    void decode(byte[] input) {
        ChecksumPayload p;
        try {
            p = PayloadCodec.decode(input);
        } catch (MalformedPayloadException e) {
            return;
        }
        assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p)), HexFormat.of().formatHex(input));
    }

    /** The seeds must be valid payloads (of every version), or the fuzzer starts from rejected inputs only. */
    @Test
    void seedsAreValidPayloads() throws IOException {
        Path dir = Path.of("src/test/resources/io/kvchecksum/engine/wire").resolve(SEEDS);
        List<Path> seeds;
        try (Stream<Path> files = Files.list(dir)) {
            seeds = files.filter(f -> f.getFileName().toString().startsWith("v")).sorted().toList();
        }
        assertFalse(seeds.isEmpty(), "no seeds in " + dir);
        boolean v1 = false;
        boolean v2 = false;
        boolean v3 = false;
        for (Path f : seeds) {
            try (InputStream in = getClass().getResourceAsStream(SEEDS + f.getFileName())) {
                ChecksumPayload p = PayloadCodec.decode(in.readAllBytes());
                assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p)), f.toString());
                v1 |= p.version() == 1;
                v2 |= p.version() == 2;
                v3 |= p.version() == 3;
            }
        }
        assertEquals(List.of(true, true, true), List.of(v1, v2, v3), "seeds of every version");
    }
}
