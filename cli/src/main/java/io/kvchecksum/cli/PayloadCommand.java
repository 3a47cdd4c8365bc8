package io.kvchecksum.cli;

import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.WirePayload;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.util.List;
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
     * Reads a payload given as base64 text, as {@code @FILE}, or from {@code file}: {@link #read(String, Path, String)}
     * without separate sections.
     */
    static ChecksumPayload read(String text, Path file) {
        return read(text, file, null);
    }

    /**
     * Reads a payload: {@code text} (or {@code @FILE}, or {@code file}) is either the base64 checksums
     * ({@code kv_checksums}) or a JSON object such as a request's {@code kv_transfer_params}, whose
     * {@value PayloadCodec#CHECKSUMS_KEY} and, when present, {@value PayloadCodec#SECTIONS_KEY} are read (its other keys
     * are ignored). {@code sections}, base64 or {@code @FILE}, gives the sections separately. A file must be a regular
     * file of at most {@link #MAX_PAYLOAD_FILE} bytes (a directory, FIFO or device is refused at once, without
     * blocking); line breaks and surrounding whitespace in the base64 are ignored.
     */
    static ChecksumPayload read(String text, Path file, String sections) {
        String what = file != null ? file.toString() : text != null && text.startsWith("@") ? text.substring(1) : "the payload";
        String s = text(text, file);
        String checksums;
        String sectionsBase64 = sections == null ? null : base64(text(sections, null), "the sections");
        if (s.strip().startsWith("{")) {
            JsonNode params;
            try {
                params = new ObjectMapper().readTree(s);
            } catch (JsonProcessingException e) {
                throw new InvalidInputException(what + ": not a JSON object: " + e.getOriginalMessage());
            }
            JsonNode c = params.get(PayloadCodec.CHECKSUMS_KEY);
            if (c == null || !c.isTextual()) {
                throw new InvalidInputException(what + ": the JSON object has no string \"" + PayloadCodec.CHECKSUMS_KEY
                        + "\"" + (c == null ? "" : " (it is " + c.getNodeType().name().toLowerCase(java.util.Locale.ROOT) + ")"));
            }
            checksums = base64(c.asText(), what);
            JsonNode sn = params.get(PayloadCodec.SECTIONS_KEY);
            if (sn != null && !sn.isNull()) {
                if (!sn.isTextual()) {
                    throw new InvalidInputException(what + ": \"" + PayloadCodec.SECTIONS_KEY + "\" is not a string");
                }
                if (sectionsBase64 != null) {
                    throw new InvalidInputException("the sections are given twice: \"" + PayloadCodec.SECTIONS_KEY
                            + "\" in " + what + " and as an option");
                }
                sectionsBase64 = base64(sn.asText(), what + " \"" + PayloadCodec.SECTIONS_KEY + "\"");
            }
        } else {
            checksums = base64(s, what);
        }
        return PayloadCodec.decodeBase64(checksums, sectionsBase64);
    }

    /** The text of {@code text}, of {@code @FILE} or of {@code file}, within {@link #MAX_PAYLOAD_FILE} bytes. */
    private static String text(String text, Path file) {
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
        return s;
    }

    /** {@code s} without whitespace, refused when nothing is left. */
    private static String base64(String s, String what) {
        String base64 = WHITESPACE.matcher(s).replaceAll("");
        if (base64.isEmpty()) {
            throw new InvalidInputException(what + " is empty");
        }
        return base64;
    }

    private static final Pattern WHITESPACE = Pattern.compile("\\s+");

    /**
     * What {@code sum --payload} prints: the base64 checksums when the payload has no sections (what earlier releases
     * printed), else the {@code kv_transfer_params} entries as one JSON object, which {@code --expected} and
     * {@code payload decode} read back.
     */
    static String text(ChecksumPayload p) {
        WirePayload w = WirePayload.of(p);
        if (w.sections() == null) {
            return w.checksumsBase64();
        }
        try {
            return new ObjectMapper().writeValueAsString(w.params());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    static Map<String, Object> toJson(ChecksumPayload p) {
        Map<String, Object> o = Json.object("version", p.version(), "tp_size", p.tpSize(), "num_tokens", p.numTokens(),
                "mode", p.mode(), "groups", p.groups().stream().map(g -> Json.object("group_id", g.groupId(),
                        "fingerprint", Long.toUnsignedString(g.fingerprint()), "block_size", g.blockSize(), "start",
                        g.start(), "values", Json.unsigned(g.values()))).toList());
        o.put("sections", List.copyOf(p.sections().keySet()));
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
            description = {"Decodes a checksum payload (version 3 or 2, or the earlier version 1): the base64 of"
                    + " kv_transfer_params[\"kv_checksums\"], or a JSON object holding it and \"kv_checksum_sections\".",
                    "--sections gives the sections separately (base64 or @FILE)."})
    static final class Decode implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        static final class Source {
            @Parameters(index = "0", paramLabel = "PAYLOAD",
                    description = "The base64 text, or a JSON object with \"kv_checksums\" (or @FILE).")
            String text;

            @Option(names = "--file", paramLabel = "PATH", description = "Read the base64 text from a file.")
            Path file;
        }

        @ArgGroup(exclusive = true, multiplicity = "1")
        Source source;

        @Option(names = "--sections", paramLabel = "SECTIONS",
                description = "The sections that travelled beside the checksums (kv_checksum_sections): base64 or @FILE.")
        String sections;

        @Option(names = "--json", description = "Print one JSON object on stdout.")
        boolean json;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            ChecksumPayload p = read(source.text, source.file, sections);
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
            if (!p.sections().isEmpty()) {
                out.println("sections: " + String.join(", ", p.sections().keySet()));
            }
            PageDigestOption.lines(p).forEach(out::println);
            out.flush();
            return Main.OK;
        }
    }
}
