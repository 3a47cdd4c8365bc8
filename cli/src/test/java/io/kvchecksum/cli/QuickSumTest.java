package io.kvchecksum.cli;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@link QuickSum}, the reading of {@code sum}'s common command lines without picocli: what it accepts sets every field
 * (mixins included) as picocli does, and prints the same stdout, stderr and exit code; what it declines is left to
 * picocli.
 */
class QuickSumTest {
    private static final String D = Cli.dump("gathered-bf16.safetensors");

    /** Command lines QuickSum must accept: the suite's own (every dump, case and backend), the benchmark's, errors. */
    static List<List<String>> accepted() {
        List<List<String>> all = new ArrayList<>();
        for (JsonNode dump : Cli.manifest().get("dumps")) {
            for (JsonNode c : dump.get("cases")) {
                for (String backend : List.of("cpu", "reference")) {
                    List<String> a = SumTest.args(dump, c, backend);
                    all.add(a);
                    List<String> text = new ArrayList<>(a);
                    text.remove("--json");
                    all.add(text);
                }
            }
        }
        for (JsonNode m : Cli.manifest().get("malformed")) {
            List<String> a = new ArrayList<>(List.of("sum", Cli.dump(m.get("file").asText()), "--layout",
                    m.get("layout").asText(), "--block-size", m.get("block_size").asText(), "--backend", "cpu", "--json"));
            m.get("args").forEach(x -> a.add(x.asText()));
            if (QuickSum.parse(a.toArray(String[]::new)) != null) {
                all.add(a);
            }
        }
        all.add(List.of("sum", D, "--block-size", "16", "-q"));
        all.add(List.of("sum", D, "--block-size", "16"));
        all.add(List.of("sum", "--block-size=16", "--quiet", D, "--json"));
        all.add(List.of("sum", D, "--block-size", "0"));
        all.add(List.of("sum", D, "--block-size", "7", "--first-block", "1"));
        all.add(List.of("sum", D, "--block-size", "16", "--num-tokens", "999999"));
        all.add(List.of("sum", D, "--block-size", "16", "--backend", "auto", "--layout", "no-such-layout"));
        all.add(List.of("sum", D, "--block-size", "16", "--layout", "vllm-flash"));
        all.add(List.of("sum", D, "--block-size", "16", "--head-offset", "999999999"));
        all.add(List.of("sum", Cli.dump("no-such-dump.safetensors"), "--block-size", "16"));
        all.add(List.of("sum", Cli.DUMPS.toString(), "--block-size", "16", "--json"));
        all.add(List.of("sum", "help", "--block-size", "16"));
        return all;
    }

    @TestFactory
    Stream<DynamicTest> acceptedCommandLinesSetPicocliFieldsAndPrintTheSame() {
        return accepted().stream().map(a -> DynamicTest.dynamicTest(String.join(" ", a.subList(1, a.size())), () -> {
            String[] args = a.toArray(String[]::new);
            SumCommand quick = QuickSum.parse(args);
            assertNotNull(quick, "QuickSum should accept " + a);
            CommandLine cl = Main.commandLine(args);
            CommandLine.ParseResult parsed = cl.parseArgs(args);
            Object picocli = parsed.subcommand().commandSpec().userObject();
            assertSameFields(picocli, quick, "sum");

            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            Integer code = QuickSum.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
            Cli.Run viaPicocli = Cli.run(args);
            assertEquals(viaPicocli.code(), code, "exit code");
            assertEquals(viaPicocli.out(), out.toString(), "stdout");
            assertEquals(viaPicocli.err(), err.toString(), "stderr");
        }));
    }

    /** Every field picocli sets (those of the mixins too) holds the same value in both. */
    private static void assertSameFields(Object expected, Object actual, String where) throws IllegalAccessException {
        assertEquals(expected.getClass(), actual.getClass(), where);
        for (Field f : expected.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || f.isAnnotationPresent(CommandLine.Spec.class)
                    || f.getName().equals("payloadText")) {
                continue;
            }
            f.setAccessible(true);
            Object e = f.get(expected);
            Object x = f.get(actual);
            if (f.isAnnotationPresent(CommandLine.Mixin.class)) {
                assertSameFields(e, x, where + "." + f.getName());
            } else {
                assertEquals(e, x, where + "." + f.getName());
                assertEquals(Objects.toString(e), Objects.toString(x), where + "." + f.getName());
            }
        }
    }

    @Test
    void declinesWhatPicocliShouldRead() {
        List<List<String>> declined = List.of(
                List.of("sum", D, "--block-size", "16", "--verbose"),
                List.of("--verbose", "sum", D, "--block-size", "16"),
                List.of("sum", D, "--block-size", "16", "-h"),
                List.of("sum", D, "--block-size", "16", "--version"),
                List.of("sum", D),
                List.of("sum", "--block-size", "16", "-q"),
                List.of("sum", D, D, "--block-size", "16"),
                List.of("sum", D, "--block-size", "16", "--block-size", "16"),
                List.of("sum", D, "--block-size", "16", "-q", "--quiet"),
                List.of("sum", D, "--block-size", "16", "--json", "--json"),
                List.of("sum", D, "--block-size", "016"),
                List.of("sum", D, "--block-size", "+16"),
                List.of("sum", D, "--block-size", "-16"),
                List.of("sum", D, "--block-size", "0x10"),
                List.of("sum", D, "--block-size", "9999999999"),
                List.of("sum", D, "--block-size", "x"),
                List.of("sum", D, "--block-size"),
                List.of("sum", D, "--block-size="),
                List.of("sum", D, "--block-size", "16", "--first-block", "-1"),
                List.of("sum", D, "--block-size", "16", "--backend", "cuda"),
                List.of("sum", D, "--block-size", "16", "--backend", "opencl"),
                List.of("sum", D, "--block-size", "16", "--backend", "CPU"),
                List.of("sum", D, "--block-size", "16", "--layout", "--json"),
                List.of("sum", D, "--block-size", "16", "--layout", "a b"),
                List.of("sum", D, "--block-size", "16", "--mode", "mixed"),
                List.of("sum", D, "--block-size", "16", "--payload"),
                List.of("sum", D, "--block-size", "16", "--pad-cells"),
                List.of("sum", D, "--block-size", "16", "--page-digest"),
                List.of("sum", D, "--block-size", "16", "--json=true"),
                List.of("sum", D, "--block-size", "16", "-q=true"),
                List.of("sum", D, "--block-size", "16", "-qq"),
                List.of("sum", D, "--block-size", "16", "--"),
                List.of("sum", D, "--block-size", "16", "--no-such-option"),
                List.of("sum", "", "--block-size", "16"),
                List.of("verify", D, "--block-size", "16", "-q"),
                List.of("diff", D, D, "--block-size", "16"));
        for (List<String> a : declined) {
            assertNull(QuickSum.parse(a.toArray(String[]::new)), "QuickSum should leave " + a + " to picocli");
            assertNull(QuickSum.run(a.toArray(String[]::new), new PrintWriter(new StringWriter()),
                    new PrintWriter(new StringWriter())), "and run nothing for " + a);
        }
    }

    @Test
    void declinedWhenPicocliWouldTrace() {
        System.setProperty("picocli.trace", "DEBUG");
        try {
            assertNull(QuickSum.parse(new String[] {"sum", D, "--block-size", "16"}));
        } finally {
            System.clearProperty("picocli.trace");
        }
    }
}
