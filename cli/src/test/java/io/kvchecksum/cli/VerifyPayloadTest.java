package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.worker.Fingerprints;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code verify}, {@code payload decode} and {@code sum --payload}. Expected payloads are built from the block
 * checksums NumPy computed (dumps.json), never from the code under test.
 */
class VerifyPayloadTest {
    private static final long FP = 0x9E3779B97F4A7C15L;

    private static long[] values(JsonNode c) {
        return Cli.strings(c.get("values")).stream().mapToLong(Long::parseUnsignedLong).toArray();
    }

    private static String payload(JsonNode c, long[] values, long fingerprint) {
        JsonNode a = c.get("args");
        return PayloadCodec.encodeBase64(ChecksumPayload.of(1, c.get("num_tokens").asLong(),
                List.of(new GroupChecksums(0, fingerprint, a.get("block_size").asInt(), c.get("first_block").asLong(), values))));
    }

    private static List<String> verifyArgs(JsonNode dump, JsonNode c, String payload) {
        JsonNode a = c.get("args");
        List<String> args = new ArrayList<>(List.of("verify", Cli.dump(dump.get("file").asText()), "--expected", payload,
                "--layout", dump.get("layout").asText(), "--first-block", a.get("first_block").asText(), "--head-offset",
                a.get("head_offset").asText(), "--fingerprint", Long.toUnsignedString(FP), "--backend", "cpu", "--json", "-q"));
        if (!a.get("num_tokens").isNull()) {
            args.add("--num-tokens");
            args.add(a.get("num_tokens").asText());
        }
        return args;
    }

    @TestFactory
    Stream<DynamicTest> verifyMatchesAndLocalizesAMismatchOnEveryDump() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode dump : Cli.manifest().get("dumps")) {
            JsonNode c = dump.get("cases").get(0);
            tests.add(DynamicTest.dynamicTest("verify · " + dump.get("file").asText(), () -> {
                Cli.Run ok = Cli.run(verifyArgs(dump, c, payload(c, values(c), FP)).toArray(String[]::new));
                assertEquals(Main.OK, ok.code(), ok.out() + ok.err());
                assertEquals("MATCH", ok.json().get("status").asText());

                long[] wrong = values(c);
                int bad = wrong.length - 1;
                wrong[bad] ^= 1L << 40;
                Cli.Run mm = Cli.run(verifyArgs(dump, c, payload(c, wrong, FP)).toArray(String[]::new));
                assertEquals(Main.MISMATCH, mm.code(), mm.out() + mm.err());
                JsonNode g = mm.json().get("groups").get(0);
                assertEquals("MISMATCH", g.get("status").asText());
                assertEquals(1, g.get("mismatched_blocks").size());
                assertEquals(c.get("first_block").asLong() + bad, g.get("mismatched_blocks").get(0).asLong());
            }));
        }
        return tests.stream();
    }

    @Test
    void verifyTheChangedDumpAgainstTheProducerPayload() {
        JsonNode d = Cli.manifest().get("diffs").get(1);
        long[] producer = Cli.strings(d.get("values_a")).stream().mapToLong(Long::parseUnsignedLong).toArray();
        String p = PayloadCodec.encodeBase64(ChecksumPayload.of(2, 48, List.of(new GroupChecksums(0, FP, 16, 0, producer))));
        Cli.Run r = Cli.run("verify", Cli.dump("diff-b-flash.safetensors"), "--layout", "vllm-flash", "--expected", p,
                "--fingerprint", Long.toUnsignedString(FP), "--backend", "cpu", "-q");
        assertEquals(Main.MISMATCH, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("group 0: MISMATCH at blocks 1, 2"), r.out());
        assertTrue(r.out().contains("verdict: MISMATCH"), r.out());
    }

    @Test
    void fingerprintThatDiffersIsUnverified() {
        JsonNode dump = Cli.manifest().get("dumps").get(0);
        JsonNode c = dump.get("cases").get(0);
        List<String> args = verifyArgs(dump, c, payload(c, values(c), FP + 1));
        Cli.Run r = Cli.run(args.toArray(String[]::new));
        assertEquals(Main.UNVERIFIED, r.code(), r.out() + r.err());
        JsonNode g = r.json().get("groups").get(0);
        assertEquals("UNVERIFIED", g.get("status").asText());
        assertEquals("FINGERPRINT_DIFFERS", g.get("reason").asText());
    }

    @Test
    void defaultFingerprintIsVllmsLayerNamesAndDtype() {
        JsonNode dump = Cli.manifest().get("dumps").get(0); // gathered bf16, layers 0..3
        JsonNode c = dump.get("cases").get(0);
        Cli.Run r = Cli.run("sum", Cli.dump(dump.get("file").asText()), "--block-size", "16", "--payload", "--backend", "cpu",
                "-q");
        assertEquals(0, r.code(), r.err());
        ChecksumPayload p = PayloadCodec.decodeBase64(r.out().strip());
        List<Long> h = new ArrayList<>();
        for (int l = 0; l < 4; l++) {
            h.add(Fingerprints.ofLayer("model.layers." + l + ".self_attn.attn", "FullAttentionSpec", "torch.bfloat16"));
        }
        GroupChecksums g = p.groups().getFirst();
        assertEquals(Fingerprints.ofGroup(h), g.fingerprint());
        assertArrayEquals(values(c), g.values());
        assertEquals(37, p.numTokens());
        assertEquals(16, g.blockSize());
        assertEquals(0, g.start());
    }

    @Test
    void sumPayloadThenPayloadDecodeJsonRoundTrips(@TempDir Path tmp) throws Exception {
        JsonNode dump = Cli.manifest().get("dumps").get(5); // vllm-flash bf16
        JsonNode c = dump.get("cases").get(0);
        Cli.Run s = Cli.run("sum", Cli.dump(dump.get("file").asText()), "--layout", "vllm-flash", "--block-size", "16",
                "--payload", "--tp-size", "4", "--group-id", "3", "--fingerprint", "18446744073709551615", "--backend", "cpu",
                "-q");
        assertEquals(0, s.code(), s.err());
        Path f = tmp.resolve("payload.txt");
        Files.writeString(f, s.out());
        for (String[] args : List.of(new String[] {"payload", "decode", s.out().strip(), "--json"},
                new String[] {"payload", "decode", "--file", f.toString(), "--json"})) {
            Cli.Run r = Cli.run(args);
            assertEquals(0, r.code(), r.err());
            JsonNode j = r.json();
            assertEquals(2, j.get("version").asInt());
            assertEquals(4, j.get("tp_size").asInt());
            assertEquals(55, j.get("num_tokens").asLong());
            JsonNode g = j.get("groups").get(0);
            assertEquals(3, g.get("group_id").asInt());
            assertEquals("18446744073709551615", g.get("fingerprint").asText());
            assertEquals(16, g.get("block_size").asInt());
            assertEquals(0, g.get("start").asLong());
            assertEquals(Cli.strings(c.get("values")), Cli.strings(g.get("values")));
        }
        Cli.Run verify = Cli.run("verify", Cli.dump(dump.get("file").asText()), "--layout", "vllm-flash", "--expected",
                "@" + f, "--group-id", "3", "--fingerprint", "18446744073709551615", "--backend", "cpu", "-q");
        assertEquals(0, verify.code(), verify.out() + verify.err());
        assertTrue(verify.out().contains("verdict: MATCH"), verify.out());
    }

    @Test
    void payloadDecodeTextListsTheValues() {
        JsonNode c = Cli.manifest().get("dumps").get(0).get("cases").get(0);
        Cli.Run r = Cli.run("payload", "decode", payload(c, values(c), FP));
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().startsWith("version 2, tp_size 1, 37 tokens, 1 group"), r.out());
        for (String v : Cli.strings(c.get("values"))) {
            assertTrue(r.out().contains(v), r.out());
        }
    }

    @Test
    void malformedPayloadsAreInvalidInput() {
        JsonNode c = Cli.manifest().get("dumps").get(0).get("cases").get(0);
        String good = payload(c, values(c), FP);
        byte[] raw = PayloadCodec.encode(PayloadCodec.decodeBase64(good));
        raw[1] = 9; // version 9
        String unknownVersion = java.util.Base64.getEncoder().encodeToString(raw);
        for (String bad : List.of("not base64 !!", good.substring(0, good.length() / 2), unknownVersion, "")) {
            Cli.Run r = Cli.run("payload", "decode", bad, "--json");
            assertEquals(Main.INVALID_INPUT, r.code(), "'" + bad + "': " + r.out() + r.err());
            assertTrue(r.out().isEmpty());
            r.errorLine();
            Cli.Run v = Cli.run("verify", Cli.dump("gathered-bf16.safetensors"), "--expected", bad, "--backend", "cpu");
            assertEquals(Main.INVALID_INPUT, v.code(), v.out() + v.err());
        }
        assertEquals(Main.INVALID_INPUT, Cli.run("payload", "decode", "--file", Cli.dump("no-such-payload")).code());
        assertEquals(Main.USAGE, Cli.run("payload", "decode").code(), "PAYLOAD or --file is required");
    }
}
