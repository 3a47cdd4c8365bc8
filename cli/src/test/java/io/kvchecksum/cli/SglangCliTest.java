package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.SglangDigestSection;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --layout sglang} end to end: {@code sum} (block checksums from NumPy, page digest from zlib.adler32 and the
 * layout signature from golden/generator/sglang_dumps.py), {@code sum --payload}, {@code verify} (MATCH; one flipped
 * bit: MISMATCH at its block and a digest MISMATCH; a peer with another page size: the weighted sum MATCHes and the
 * digest is UNVERIFIED LAYOUT_DIFFERS), {@code diff}, and malformed SGLang dumps.
 */
class SglangCliTest {
    static final Path DIR = Path.of("src/test/resources/sglang-dumps");
    private static final List<String> BACKENDS = List.of("cpu", "reference");

    static JsonNode manifest() {
        return assertDoesNotThrow(() -> Cli.JSON.readTree(DIR.resolve("sglang.json").toFile()));
    }

    static String dump(String name) {
        return DIR.resolve(name).toString();
    }

    private static List<String> sumArgs(JsonNode dump, JsonNode c, String backend) {
        JsonNode a = c.get("args");
        List<String> args = new ArrayList<>(List.of("sum", dump(dump.get("file").asText()), "--layout", "sglang",
                "--block-size", a.get("block_size").asText(), "--first-block", a.get("first_block").asText(),
                "--head-offset", a.get("head_offset").asText(), "--backend", backend, "-q"));
        if (!a.get("num_tokens").isNull()) {
            args.add("--num-tokens");
            args.add(a.get("num_tokens").asText());
        }
        return args;
    }

    private static void assertDigest(JsonNode expected, SglangDigestSection.Entry e, String name) {
        assertEquals(expected.get("digest").asLong(), e.digest(), name + ": digest");
        assertEquals(Long.parseUnsignedLong(expected.get("signature").asText()), e.signature(), name + ": signature");
        assertEquals(expected.get("page_size").asInt(), e.pageSize(), name);
        assertEquals(expected.get("first_token").asLong(), e.firstToken(), name);
        assertEquals(expected.get("num_pages").asInt(), e.numPages(), name);
    }

    @TestFactory
    Stream<DynamicTest> sumMatchesNumpyAndZlibOnEveryDumpAndCase() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode dump : manifest().get("dumps")) {
            for (JsonNode c : dump.get("cases")) {
                for (String backend : BACKENDS) {
                    List<String> args = sumArgs(dump, c, backend);
                    String name = backend + " · " + dump.get("file").asText() + " · " + String.join(" ", args.subList(4, 10));
                    tests.add(DynamicTest.dynamicTest(name, () -> {
                        List<String> json = new ArrayList<>(args);
                        json.add("--json");
                        Cli.Run r = Cli.run(json.toArray(String[]::new));
                        assertEquals(0, r.code(), r.err());
                        JsonNode j = r.json();
                        assertEquals(Cli.strings(c.get("values")), Cli.strings(j.get("values")), name);
                        assertEquals(c.get("num_tokens").asLong(), j.get("num_tokens").asLong(), name);
                        JsonNode d = j.get("sglang_digest");
                        JsonNode e = c.get("sglang_digest");
                        for (String f : List.of("digest", "page_size", "first_token", "num_pages")) {
                            assertEquals(e.get(f).asLong(), d.get(f).asLong(), name + ": " + f);
                        }
                        assertEquals(e.get("signature").asText(), d.get("signature").asText(), name + ": signature");

                        // --payload: the same values and the section with the same digest and signature.
                        List<String> p = new ArrayList<>(args);
                        p.add("--payload");
                        Cli.Run pr = Cli.run(p.toArray(String[]::new));
                        assertEquals(0, pr.code(), pr.err());
                        ChecksumPayload payload = fromParams(pr.out().strip());
                        assertEquals(2, payload.version(), "the checksums stay seed 003's version 2");
                        assertEquals(Cli.strings(c.get("values")), Arrays.stream(payload.groups().getFirst().values())
                                .mapToObj(Long::toUnsignedString).toList());
                        SglangDigestSection s = (SglangDigestSection) payload.section(SglangDigestSection.NAME);
                        assertEquals(1, s.entries().size());
                        assertDigest(e, s.entries().getFirst(), name);
                    }));
                }
            }
        }
        return tests.stream();
    }

    /** The GPU-class backends on the same dumps (first case each), skipped with the backend's reason where absent. */
    @TestFactory
    Stream<DynamicTest> openclAndCudaAgreeWhereAvailable() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String backend : List.of("opencl", "cuda")) {
            for (JsonNode dump : manifest().get("dumps")) {
                JsonNode c = dump.get("cases").get(0);
                tests.add(DynamicTest.dynamicTest(backend + " · " + dump.get("file").asText(), () -> {
                    List<String> args = sumArgs(dump, c, backend);
                    args.add("--json");
                    Cli.Run r = Cli.run(args.toArray(String[]::new));
                    if (r.code() == Main.USAGE && r.err().contains(backend)) {
                        Assumptions.abort(backend + " unavailable: " + r.err().strip());
                    }
                    assertEquals(0, r.code(), r.err());
                    JsonNode j = r.json();
                    assertEquals(backend, j.get("backend").asText());
                    assertEquals(Cli.strings(c.get("values")), Cli.strings(j.get("values")));
                    assertEquals(c.get("sglang_digest").get("digest").asLong(), j.get("sglang_digest").get("digest").asLong());
                    assertEquals(c.get("sglang_digest").get("signature").asText(),
                            j.get("sglang_digest").get("signature").asText());
                }));
            }
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> malformedSglangDumpsAreOneLineAndExit65() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode m : manifest().get("malformed")) {
            String file = m.get("file").asText();
            tests.add(DynamicTest.dynamicTest(file + " · " + m.get("note").asText(), () -> {
                List<String> args = new ArrayList<>(List.of("sum", dump(file), "--layout", "sglang", "--block-size",
                        m.get("block_size").asText(), "--backend", "cpu", "--json"));
                m.get("args").forEach(a -> args.add(a.asText()));
                Cli.Run r = Cli.run(args.toArray(String[]::new));
                assertEquals(Main.INVALID_INPUT, r.code(), r.out() + r.err());
                assertTrue(r.out().isEmpty(), r.out());
                String line = r.errorLine();
                assertTrue(line.contains(m.get("error").asText()), "'" + line + "' should name " + m.get("error").asText());
            }));
        }
        return tests.stream();
    }

    /** {@code sum --payload}'s output with a section: the kv_transfer_params entries, decoded. */
    static ChecksumPayload fromParams(String json) throws Exception {
        JsonNode j = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
        assertEquals(2, j.size(), json);
        return PayloadCodec.decodeBase64(j.get("kv_checksums").asText(), j.get("kv_checksum_sections").asText());
    }

    private static String producerPayload(String file, int blockSize) {
        Cli.Run r = Cli.run("sum", dump(file), "--layout", "sglang", "--block-size", Integer.toString(blockSize),
                "--payload", "--backend", "cpu", "-q");
        assertEquals(0, r.code(), r.err());
        return r.out().strip();
    }

    private static Cli.Run verify(String file, String payload, String... more) {
        List<String> args = new ArrayList<>(List.of("verify", dump(file), "--layout", "sglang", "--expected", payload,
                "--backend", "cpu", "-q"));
        args.addAll(List.of(more));
        return Cli.run(args.toArray(String[]::new));
    }

    @Test
    void roundTripMatchesItself() {
        String p = producerPayload("sglang-bf16-page16.safetensors", 16);
        Cli.Run r = verify("sglang-bf16-page16.safetensors", p, "--json");
        assertEquals(Main.OK, r.code(), r.out() + r.err());
        JsonNode j = r.json();
        assertEquals("MATCH", j.get("status").asText());
        assertEquals("sglang-digest", j.get("sections").get(0).get("section").asText());
        assertEquals("MATCH", j.get("sections").get(0).get("status").asText());
        Cli.Run text = verify("sglang-bf16-page16.safetensors", p);
        assertTrue(text.out().contains("section sglang-digest MATCH"), text.out());
    }

    @Test
    void oneFlippedBitIsAMismatchAtItsBlockAndADigestMismatch() {
        JsonNode f = manifest().get("flipped");
        String p = producerPayload(f.get("producer").asText(), f.get("block_size").asInt());
        Cli.Run r = verify(f.get("consumer").asText(), p, "--json");
        assertEquals(Main.MISMATCH, r.code(), r.out() + r.err());
        JsonNode j = r.json();
        JsonNode g = j.get("groups").get(0);
        assertEquals("MISMATCH", g.get("status").asText());
        assertEquals(f.get("mismatched_blocks"), g.get("mismatched_blocks"));
        JsonNode s = j.get("sections").get(0);
        assertEquals("MISMATCH", s.get("status").asText(), s.toString());
        assertTrue(s.get("detail").asText().contains("!="), s.toString());
    }

    @Test
    void aPeerWithAnotherPageSizeMatchesTheWeightedSumAndLeavesTheDigestUnverified() {
        JsonNode peer = manifest().get("peer");
        String p = producerPayload(peer.get("producer").asText(), peer.get("block_size").asInt());
        Cli.Run r = verify(peer.get("consumer").asText(), p, "--json");
        assertEquals(Main.OK, r.code(), "a section's UNVERIFIED leaves the exit code to the groups: " + r.out() + r.err());
        JsonNode j = r.json();
        assertEquals("MATCH", j.get("status").asText());
        assertEquals("MATCH", j.get("groups").get(0).get("status").asText());
        JsonNode s = j.get("sections").get(0);
        assertEquals("UNVERIFIED", s.get("status").asText(), s.toString());
        assertEquals("LAYOUT_DIFFERS", s.get("reason").asText(), s.toString());
        Cli.Run text = verify(peer.get("consumer").asText(), p);
        assertEquals(Main.OK, text.code());
        assertTrue(text.out().contains("section sglang-digest UNVERIFIED (LAYOUT_DIFFERS)"), text.out());
        assertTrue(text.out().contains("page 16 vs") && text.out().contains("page 8"), text.out());
        assertTrue(text.out().contains("verdict: MATCH"), text.out());
    }

    @Test
    void aProducerDigestAgainstAnotherLayoutIsOneSideOnlyAndNoDigestWithoutTheFlag() {
        // The gathered dump of the same request does not exist; a page-1 SGLang dump read as gathered would be another
        // model, so use the producer's payload against the diff dumps' model only for the option checks.
        Cli.Run refused = Cli.run("sum", Cli.dump("gathered-bf16.safetensors"), "--block-size", "16", "--page-digest",
                "--backend", "cpu");
        assertEquals(Main.INVALID_INPUT, refused.code(), refused.out() + refused.err());
        assertTrue(refused.errorLine().contains("--layout sglang"), refused.err());
        Cli.Run plain = Cli.run("sum", dump("sglang-bf16-page16.safetensors"), "--layout", "sglang", "--block-size", "16",
                "--payload", "--no-page-digest", "--backend", "cpu");
        assertEquals(0, plain.code(), plain.err());
        ChecksumPayload v2 = PayloadCodec.decodeBase64(plain.out().strip());
        assertEquals(2, v2.version());
        assertNull(v2.section(SglangDigestSection.NAME));
        // A consumer whose producer sent no digest: nothing to compare, no section line.
        Cli.Run r = verify("sglang-bf16-page16.safetensors", plain.out().strip(), "--json");
        assertEquals(Main.OK, r.code(), r.out() + r.err());
        assertEquals(0, r.json().get("sections").size());
    }

    @Test
    void theSectionsTravelUnderTheirOwnKeyAndEveryFormReadsThem() throws Exception {
        String p = producerPayload("sglang-bf16-page16.safetensors", 16);
        ChecksumPayload both = fromParams(p);
        JsonNode j = new com.fasterxml.jackson.databind.ObjectMapper().readTree(p);
        String checksums = j.get("kv_checksums").asText();
        String sections = j.get("kv_checksum_sections").asText();
        // The checksums alone are what a seed-003 reader reads: version 2, without the section.
        ChecksumPayload plain = PayloadCodec.decodeBase64(checksums);
        assertEquals(2, plain.version());
        assertNull(plain.section(SglangDigestSection.NAME));
        assertEquals(both.groups(), plain.groups());
        // sum --payload --json gives both parts apart.
        Cli.Run sj = Cli.run("sum", dump("sglang-bf16-page16.safetensors"), "--layout", "sglang", "--block-size", "16",
                "--payload", "--json", "--backend", "cpu", "-q");
        assertEquals(0, sj.code(), sj.err());
        assertEquals(checksums, sj.json().get("payload").asText());
        assertEquals(sections, sj.json().get("payload_sections").asText());
        // verify: the JSON object, the two parts apart, or kv_transfer_params with other keys from a file.
        Path params = Files.createTempFile("kv-transfer-params", ".json");
        Files.writeString(params, "{\"do_remote_prefill\": true, \"remote_block_ids\": [4, 5], \"kv_checksums\": \""
                + checksums + "\", \"kv_checksum_sections\": \"" + sections + "\"}");
        Path sectionsFile = Files.createTempFile("kv-checksum-sections", ".b64");
        Files.writeString(sectionsFile, sections + "\n");
        try {
            for (List<String> expected : List.of(List.of(p), List.of(checksums, "--expected-sections", sections),
                    List.of(checksums, "--expected-sections", "@" + sectionsFile), List.of("@" + params))) {
                Cli.Run r = verify("sglang-bf16-page16.safetensors", expected.get(0),
                        java.util.stream.Stream.concat(expected.stream().skip(1), java.util.stream.Stream.of("--json"))
                                .toArray(String[]::new));
                assertEquals(Main.OK, r.code(), expected + ": " + r.out() + r.err());
                assertEquals("sglang-digest", r.json().get("sections").get(0).get("section").asText(), expected.toString());
                assertEquals("MATCH", r.json().get("sections").get(0).get("status").asText(), expected.toString());
            }
            // Only the checksums: nothing to compare the consumer's digest with, no section verdict.
            Cli.Run alone = verify("sglang-bf16-page16.safetensors", checksums, "--json");
            assertEquals(Main.OK, alone.code(), alone.out() + alone.err());
            assertEquals(0, alone.json().get("sections").size());
            // payload decode reads the same forms and names the sections.
            for (List<String> given : List.of(List.of(p), List.of(checksums, "--sections", sections), List.of("@" + params))) {
                List<String> args = new ArrayList<>(List.of("payload", "decode"));
                args.addAll(given);
                Cli.Run d = Cli.run(args.toArray(String[]::new));
                assertEquals(0, d.code(), given + ": " + d.err());
                assertTrue(d.out().startsWith("version 2, "), d.out());
                assertTrue(d.out().contains("sections: sglang-digest\n"), d.out());
                args.add("--json");
                Cli.Run dj = Cli.run(args.toArray(String[]::new));
                assertEquals("sglang-digest", dj.json().get("sections").get(0).asText(), given.toString());
            }
            // Mistakes are named: the sections twice, a JSON object without the checksums, sections that are not.
            Cli.Run twice = Cli.run("payload", "decode", p, "--sections", sections);
            assertEquals(Main.INVALID_INPUT, twice.code(), twice.out() + twice.err());
            assertTrue(twice.errorLine().contains("given twice"), twice.err());
            Cli.Run noKey = Cli.run("payload", "decode", "{\"kv_checksum_sections\": \"" + sections + "\"}");
            assertEquals(Main.INVALID_INPUT, noKey.code(), noKey.out() + noKey.err());
            assertTrue(noKey.errorLine().contains("no string \"kv_checksums\""), noKey.err());
            Cli.Run badSections = Cli.run("payload", "decode", checksums, "--sections", checksums);
            assertEquals(Main.INVALID_INPUT, badSections.code(), badSections.out() + badSections.err());
            assertTrue(badSections.errorLine().contains("sections_value"), badSections.err());
            Cli.Run notJson = Cli.run("payload", "decode", "{\"kv_checksums\": ");
            assertEquals(Main.INVALID_INPUT, notJson.code(), notJson.out() + notJson.err());
            assertTrue(notJson.errorLine().contains("not a JSON object"), notJson.err());
        } finally {
            Files.delete(params);
            Files.delete(sectionsFile);
        }
    }

    @Test
    void payloadDecodeShowsTheDigestEntries() {
        JsonNode e = manifest().get("dumps").get(0).get("cases").get(0).get("sglang_digest");
        String p = producerPayload("sglang-bf16-page16.safetensors", 16);
        Cli.Run text = Cli.run("payload", "decode", p);
        assertEquals(0, text.code(), text.err());
        assertTrue(text.out().contains(String.format("section sglang-digest: group 0 worker 0: adler32 %08x over 4 pages",
                e.get("digest").asLong())), text.out());
        Cli.Run json = Cli.run("payload", "decode", p, "--json");
        JsonNode d = json.json().get("sglang_digest").get(0);
        assertEquals(e.get("digest").asLong(), d.get("digest").asLong());
        assertEquals(e.get("signature").asText(), d.get("signature").asText());
        assertEquals(0, d.get("worker").asInt());
    }

    @Test
    void textOutputOfSumShowsTheDigestLine() {
        JsonNode c = manifest().get("dumps").get(0).get("cases").get(0);
        Cli.Run r = Cli.run("sum", dump("sglang-bf16-page16.safetensors"), "--layout", "sglang", "--block-size", "16",
                "--backend", "cpu", "-q");
        assertEquals(0, r.code(), r.err());
        String digest = String.format("%08x", c.get("sglang_digest").get("digest").asLong());
        String sig = String.format("%016x", Long.parseUnsignedLong(c.get("sglang_digest").get("signature").asText()));
        assertTrue(r.out().contains("page digest: adler32 " + digest + " over 4 pages of 16 tokens from position 0;"
                + " layout signature " + sig), r.out());
        assertTrue(r.out().contains("sglang, page 16, 128 slots"), r.out());
    }

    @Test
    void diffLocalizesTheFlippedBitAndFindsTheTwoPagingsIdentical() {
        Cli.Run same = Cli.run("diff", dump("sglang-bf16-page16.safetensors"), dump("sglang-bf16-page8.safetensors"),
                "--layout-a", "sglang", "--layout-b", "sglang", "--block-size", "16", "--backend", "cpu", "--json", "-q");
        assertEquals(0, same.code(), same.out() + same.err());
        assertTrue(same.json().get("identical").asBoolean());
        Cli.Run d = Cli.run("diff", dump("sglang-bf16-page16.safetensors"), dump("sglang-bf16-page16-flipped.safetensors"),
                "--layout-a", "sglang", "--layout-b", "sglang", "--block-size", "16", "--backend", "cpu", "-q");
        assertEquals(1, d.code(), d.out() + d.err());
        assertTrue(d.out().contains("layer 1 head 0 tokens 37..37: V bytes 3..3"), d.out());
        assertTrue(d.out().contains("layers.1.v_buffer+"), d.out());
        JsonNode m = manifest().get("dumps");
        assertNotEquals(m.get(0).get("cases").get(0).get("sglang_digest").get("signature").asText(),
                m.get(1).get("cases").get(0).get("sglang_digest").get("signature").asText(), "page 16 and page 8 differ");
    }
}
