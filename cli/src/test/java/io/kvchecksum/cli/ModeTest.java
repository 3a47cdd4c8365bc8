package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --mode}: {@code sum --mode mixed} against the mixed-mode values NumPy computed for every dump (dumps.json
 * {@code values_mixed}, from golden/generator's own mixer), its payload (version 3), {@code verify} taking the mode
 * from the payload, {@code diff --mode mixed}, and the refusals.
 */
class ModeTest {
    private static final long FP = 0x9E3779B97F4A7C15L;

    @TestFactory
    Stream<DynamicTest> sumModeMixedMatchesNumpyOnEveryDump() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode dump : Cli.manifest().get("dumps")) {
            for (JsonNode c : dump.get("cases")) {
                for (String backend : List.of("cpu", "reference")) {
                    List<String> args = SumTest.args(dump, c, backend);
                    args.addAll(List.of("--mode", "mixed"));
                    String name = backend + " · mixed · " + dump.get("file").asText() + " · " + String.join(" ", args.subList(2, 11));
                    tests.add(DynamicTest.dynamicTest(name, () -> {
                        Cli.Run r = Cli.run(args.toArray(String[]::new));
                        assertEquals(0, r.code(), r.err());
                        JsonNode j = r.json();
                        assertEquals("mixed", j.get("mode").asText());
                        assertEquals(Cli.strings(c.get("values_mixed")), Cli.strings(j.get("values")), name);
                        assertFalse(Cli.strings(c.get("values")).equals(Cli.strings(j.get("values"))), name);
                    }));
                }
            }
        }
        return tests.stream();
    }

    /** The first dump's first case, on the reference backend (which implements every mode). */
    private static List<String> baseArgs(String command, JsonNode dump, JsonNode c) {
        JsonNode a = c.get("args");
        List<String> args = new ArrayList<>(List.of(command, Cli.dump(dump.get("file").asText()), "--layout",
                dump.get("layout").asText(), "--first-block", a.get("first_block").asText(), "--head-offset",
                a.get("head_offset").asText(), "--fingerprint", Long.toUnsignedString(FP), "--backend", "reference", "-q"));
        if (!a.get("num_tokens").isNull()) {
            args.addAll(List.of("--num-tokens", a.get("num_tokens").asText()));
        }
        return args;
    }

    @Test
    void sumPayloadInMixedModeIsVersionThreeAndVerifyReadsItsMode() {
        JsonNode dump = Cli.manifest().get("dumps").get(0);
        JsonNode c = dump.get("cases").get(0);
        String bs = c.get("args").get("block_size").asText();
        List<String> sum = baseArgs("sum", dump, c);
        sum.addAll(List.of("--block-size", bs, "--payload", "--mode", "mixed"));
        Cli.Run s = Cli.run(sum.toArray(String[]::new));
        assertEquals(Main.OK, s.code(), s.err());
        ChecksumPayload p = PayloadCodec.decodeBase64(s.out().strip());
        assertEquals(3, p.version());
        assertEquals("mixed", p.mode());
        assertEquals(Cli.strings(c.get("values_mixed")),
                Arrays.stream(p.groups().get(0).values()).mapToObj(Long::toUnsignedString).toList());

        // verify takes the mode from the payload: NumPy's mixed values match, a changed one is localized.
        long[] mixed = Cli.strings(c.get("values_mixed")).stream().mapToLong(Long::parseUnsignedLong).toArray();
        Cli.Run ok = Cli.run(verify(dump, c, payload(c, mixed, "mixed")));
        assertEquals(Main.OK, ok.code(), ok.out() + ok.err());
        assertEquals("mixed", ok.json().get("mode").asText());
        mixed[0] ^= 1L << 63;
        Cli.Run bad = Cli.run(verify(dump, c, payload(c, mixed, "mixed")));
        assertEquals(Main.MISMATCH, bad.code(), bad.out() + bad.err());

        // A mode this build does not know: unverified with MODE_DIFFERS, never a mismatch.
        Cli.Run other = Cli.run(verify(dump, c, payload(c, mixed, "later-mode")));
        assertEquals(Main.UNVERIFIED, other.code(), other.out() + other.err());
        assertEquals("MODE_DIFFERS", other.json().get("reason").asText());

        // Text output names the payload's mode.
        List<String> text = new ArrayList<>(List.of(verify(dump, c, s.out().strip())));
        text.remove("--json");
        Cli.Run t = Cli.run(text.toArray(String[]::new));
        assertEquals(Main.OK, t.code(), t.out() + t.err());
        assertTrue(t.out().contains("payload version 3, mode mixed"), t.out());

        // payload decode names the mode of a version-3 payload.
        Cli.Run d = Cli.run("payload", "decode", s.out().strip());
        assertEquals(Main.OK, d.code(), d.err());
        assertTrue(d.out().startsWith("version 3, tp_size 1, mode mixed, "), d.out());
        Cli.Run dj = Cli.run("payload", "decode", s.out().strip(), "--json");
        assertEquals("mixed", dj.json().get("mode").asText());
    }

    private static String payload(JsonNode c, long[] values, String mode) {
        JsonNode a = c.get("args");
        return PayloadCodec.encodeBase64(new ChecksumPayload(3, 1, c.get("num_tokens").asLong(),
                List.of(new GroupChecksums(0, FP, a.get("block_size").asInt(), c.get("first_block").asLong(), values)), mode));
    }

    private static String[] verify(JsonNode dump, JsonNode c, String payload) {
        List<String> args = baseArgs("verify", dump, c);
        args.addAll(List.of("--expected", payload, "--json"));
        return args.toArray(String[]::new);
    }

    @Test
    void diffModeMixedComparesMixedChecksums() {
        for (JsonNode d : Cli.manifest().get("diffs")) {
            Cli.Run r = Cli.run("diff", Cli.dump(d.get("a").asText()), Cli.dump(d.get("b").asText()), "--layout-a",
                    d.get("layout_a").asText(), "--layout-b", d.get("layout_b").asText(), "--block-size",
                    d.get("block_size").asText(), "--backend", "reference", "--mode", "mixed", "--json", "-q");
            assertEquals(d.get("differences").isEmpty() ? 0 : 1, r.code(), r.err());
            JsonNode j = r.json();
            assertEquals("mixed", j.get("mode").asText());
            assertEquals(Cli.strings(d.get("values_a_mixed")), Cli.strings(j.get("values_a")));
            assertEquals(Cli.strings(d.get("values_b_mixed")), Cli.strings(j.get("values_b")));
            assertEquals(0, j.get("bytes_differ_but_checksums_agree").size());
        }
    }

    @Test
    void anUnknownModeIsAUsageErrorOfOneLine() {
        for (String cmd : List.of("sum", "diff")) {
            Cli.Run r = cmd.equals("sum")
                    ? Cli.run("sum", Cli.dump("gathered-f32.npz"), "--block-size", "16", "--mode", "fmix64")
                    : Cli.run("diff", Cli.dump("gathered-f32.npz"), Cli.dump("gathered-f32.npz"), "--mode", "fmix64");
            assertEquals(Main.USAGE, r.code(), r.out() + r.err());
            assertTrue(r.err().contains("--mode: unknown checksum mode 'fmix64': expected standard or mixed"), r.err());
            assertFalse(r.err().contains("\tat "), "no stack trace: " + r.err());
        }
    }
}
