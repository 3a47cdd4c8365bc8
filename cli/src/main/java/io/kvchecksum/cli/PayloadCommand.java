package io.kvchecksum.cli;

import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.regex.Pattern;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code payload}: what travels with a request. */
@Command(name = "payload", mixinStandardHelpOptions = true, description = "Checksum payloads: base64 msgpack; the wire format is in README.md (\"End to end in an engine\").",
        subcommands = PayloadCommand.Decode.class)
final class PayloadCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return Main.USAGE;
    }

    /**
     * The largest payload file read: a 128k-token prompt's payload is ~90 KB of base64; 64 MiB leaves room for
     * thousands of groups and million-token prompts, and still refuses a dump given by mistake.
     */
    static final long MAX_PAYLOAD_FILE = 64L << 20;

    /**
     * Reads a payload given as base64 text, as {@code @FILE}, or from {@code file}. A file must be a regular file of at
     * most {@link #MAX_PAYLOAD_FILE} bytes (a directory, FIFO or device is refused at once, without blocking); line
     * breaks and surrounding whitespace in the base64 are ignored.
     */
    static ChecksumPayload read(String text, Path file) {
        String s = text;
        if (file == null && s != null && s.startsWith("@")) {
            file = Path.of(s.substring(1));
        }
        if (file != null) {
            long size = DumpFile.requireRegularFile(file);
            if (size > MAX_PAYLOAD_FILE) {
                throw new InvalidInputException(file + ": " + size + " bytes is too large for a checksum payload (at most "
                        + MAX_PAYLOAD_FILE + "; a 128k-token prompt's payload is about 90 KB)");
            }
            try {
                byte[] b = Files.readAllBytes(file);
                if (b.length > MAX_PAYLOAD_FILE) { // it grew since it was measured
                    throw new InvalidInputException(file + ": more than " + MAX_PAYLOAD_FILE + " bytes");
                }
                s = new String(b, StandardCharsets.ISO_8859_1);
            } catch (IOException e) {
                throw new InvalidInputException("cannot read " + file + ": " + e.getMessage());
            }
        }
        String base64 = WHITESPACE.matcher(s).replaceAll("");
        if (base64.isEmpty()) {
            throw new InvalidInputException((file == null ? "the payload" : file.toString()) + " is empty");
        }
        return PayloadCodec.decodeBase64(base64);
    }

    private static final Pattern WHITESPACE = Pattern.compile("\\s+");

    static Map<String, Object> toJson(ChecksumPayload p) {
        Map<String, Object> o = Json.object("version", p.version(), "tp_size", p.tpSize(), "num_tokens", p.numTokens(),
                "mode", p.mode(), "groups", p.groups().stream().map(g -> Json.object("group_id", g.groupId(),
                        "fingerprint", Long.toUnsignedString(g.fingerprint()), "block_size", g.blockSize(), "start",
                        g.start(), "values", Json.unsigned(g.values()))).toList());
        PageDigestOption.putJson(o, p);
        return o;
    }

    static String summary(GroupChecksums g) {
        return "group " + g.groupId() + ": " + g.numBlocks() + " block" + (g.numBlocks() == 1 ? "" : "s")
                + (g.blockSize() == null ? "" : " of " + g.blockSize() + " tokens") + " from block " + g.start()
                + ", fingerprint " + Long.toUnsignedString(g.fingerprint());
    }

    /** {@code payload decode}. */
    @Command(name = "decode", mixinStandardHelpOptions = true,
            description = "Decodes a base64 checksum payload (version 3 or 2, or the earlier version 1).")
    static final class Decode implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        static final class Source {
            @Parameters(index = "0", paramLabel = "PAYLOAD", description = "The base64 text (or @FILE).")
            String text;

            @Option(names = "--file", paramLabel = "PATH", description = "Read the base64 text from a file.")
            Path file;
        }

        @ArgGroup(exclusive = true, multiplicity = "1")
        Source source;

        @Option(names = "--json", description = "Print one JSON object on stdout.")
        boolean json;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            ChecksumPayload p = read(source.text, source.file);
            if (json) {
                Json.print(out, toJson(p));
                return Main.OK;
            }
            out.println("version " + p.version() + ", tp_size " + (p.tpSize() == null ? "-" : p.tpSize()) + ", "
                    + (p.version() >= 3 ? "mode " + p.mode() + ", " : "") + p.numTokens() + " tokens, " + p.groups().size() + " group" + (p.groups().size() == 1 ? "" : "s"));
            for (GroupChecksums g : p.groups()) {
                out.println(summary(g));
                long[] v = g.values();
                for (int i = 0; i < v.length; i++) {
                    out.printf("%8d  %20s%n", g.start() + i, Long.toUnsignedString(v[i]));
                }
            }
            PageDigestOption.lines(p).forEach(out::println);
            out.flush();
            return Main.OK;
        }
    }
}
