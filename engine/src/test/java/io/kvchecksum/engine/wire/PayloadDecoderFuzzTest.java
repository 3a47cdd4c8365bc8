package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Coverage-guided fuzzing of {@link PayloadCodec}'s two decoders with Jazzer: every input is decoded as the checksums
 * ({@link PayloadCodec#decode(byte[])}) and as the sections value beside fixed checksums
 * ({@link PayloadCodec#decode(byte[], byte[])}: a version-2 payload, and an earlier release's version 3 with a known
 * section inline, so a section in both places is reached). One {@code @FuzzTest} covers both because Jazzer fuzzes
 * only one per JVM. The property: each decode returns a payload that survives an encode/decode round trip (checksums
 * and sections) unchanged, or throws {@link MalformedPayloadException}; any other exception or a failed round trip is
 * a finding.
 *
 * <p>The seed corpus is {@code src/test/resources/io/kvchecksum/engine/wire/PayloadDecoderFuzzTestInputs/decode/}: valid
 * payloads of every version ({@code v*}) and valid sections values ({@code s*}) as raw bytes. Without
 * {@code JAZZER_FUZZ} (an IDE run, a plain JUnit launcher, or {@code mvn test -Djazzer.fuzz=0}) the test runs in
 * regression mode: each file in that directory is one test case. The engine's surefire configuration sets
 * {@code JAZZER_FUZZ=1}, so {@code mvn test} first replays those files, then fuzzes for {@code maxDuration} (Jazzer 0.30
 * or later: earlier versions cannot instrument JDK 25 class files). A finding fails the build and Jazzer writes the
 * input as {@code crash-<sha1>} into that same source directory: commit it and it runs as a regression test from then
 * on (the seeded loop in {@link PayloadFuzzTest} keeps its findings as hex in {@code fuzz-regressions.txt}). The corpus
 * the fuzzer grows is kept in {@code engine/.cifuzz-corpus/} (ignored by git).
 */
class PayloadDecoderFuzzTest {
    private static final String SEEDS = "PayloadDecoderFuzzTestInputs/decode/";
    /** [2, 2, 20, [[3, 2^64-1, 16, 1, bin(8)]]]. */
    static final byte[] V2 = HexFormat.of().parseHex("94020214919503cfffffffffffffffff1001c4080807060504030201");
    /** An earlier release's [3, 1, 16, "standard", [], {"state-digests": ["standard", [["ssm", 1]]]}]. */
    static final byte[] V3_INLINE = HexFormat.of().parseHex("96030110a87374616e646172649081ad73746174652d64696765737473"
            + "92a87374616e646172649192a373736d01");

    @FuzzTest(maxDuration = "20s")
    void decode(byte[] input) {
        roundTrips(input, null);
        roundTrips(V2, input);
        roundTrips(V3_INLINE, input);
    }

    /** Decodes; a payload must survive a round trip unchanged. Throws only for a finding. */
    static boolean roundTrips(byte[] checksums, byte[] sections) {
        ChecksumPayload p;
        try {
            p = PayloadCodec.decode(checksums, sections);
        } catch (MalformedPayloadException e) {
            return false;
        }
        assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p), PayloadCodec.encodeSections(p)),
                HexFormat.of().formatHex(checksums) + " / " + (sections == null ? "-" : HexFormat.of().formatHex(sections)));
        return true;
    }

    /**
     * The seeds must be valid (payloads of every version, sections values with every known section), or the fuzzer
     * starts from rejected inputs only.
     */
    @Test
    void seedsAreValidPayloadsAndSectionsValues() throws IOException {
        assertEquals(1, PayloadCodec.decode(V3_INLINE).sections().size(), "the fixed inline payload carries its section");
        Path dir = Path.of("src/test/resources/io/kvchecksum/engine/wire").resolve(SEEDS);
        List<Path> seeds;
        try (Stream<Path> files = Files.list(dir)) {
            seeds = files.filter(f -> f.getFileName().toString().matches("(v[123]|s)-.*")).sorted().toList();
        }
        assertFalse(seeds.isEmpty(), "no seeds in " + dir);
        Set<Integer> versions = new TreeSet<>();
        Set<String> sections = new TreeSet<>();
        for (Path f : seeds) {
            try (InputStream in = getClass().getResourceAsStream(SEEDS + f.getFileName())) {
                byte[] b = in.readAllBytes();
                if (f.getFileName().toString().startsWith("v")) {
                    assertTrue(roundTrips(b, null), f.toString());
                    versions.add(PayloadCodec.decode(b).version());
                } else {
                    assertTrue(roundTrips(V2, b), f.toString());
                    sections.addAll(PayloadCodec.decode(V2, b).sections().keySet());
                }
            }
        }
        assertEquals(Set.of(1, 2, 3), versions, "payload seeds of every version");
        assertEquals(PayloadSections.KNOWN.keySet(), sections, "sections seeds of every known section");
    }
}
