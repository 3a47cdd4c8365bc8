package io.kvchecksum.cli;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.KvDump;
import io.kvchecksum.engine.auxiliary.SglangDigests;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.PayloadCodec;
import io.kvchecksum.engine.wire.SglangDigestSection;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code sum}: the block checksums of a dump, or the payload a producer would send for it. */
@Command(name = "sum", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The block checksums of a KV dump, or its payload.",
                "Dumps: safetensors, .npz, .npy, or a directory of .npy files.",
                "With --payload: the checksum payload a producer would send for it (base64; with sections, a JSON object of"
                        + " the kv_transfer_params entries).",
                "Exit 2 when the group is skipped (cells not whole 8-byte pieces without --pad-cells), with the reason."})
final class SumCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DUMP", description = "The dump file (or directory of .npy files).")
    Path dump;

    @Option(names = "--block-size", paramLabel = "B", required = true, description = "Tokens per checksum block.")
    int blockSize;

    @Mixin
    DumpOptions dumpOptions;

    @Mixin
    BackendOption backend;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    @Mixin
    ModeOption modeOption;

    @Option(names = "--payload", description = "Print the base64 payload (version 2; 3 with --mode mixed) instead of the values;"
            + " with sections (SGLang's page digest) the kv_transfer_params entries as one JSON object,"
            + " {\"kv_checksums\": ..., \"kv_checksum_sections\": ...}.")
    boolean payload;

    /** What {@code --payload} prints, set by {@link #print}. */
    private String payloadText;

    @Option(names = "--tp-size", paramLabel = "T", defaultValue = "1", description = "The TP size the payload names (default 1).")
    int tpSize;

    @Option(names = "--group-id", paramLabel = "G", defaultValue = "0", description = "The payload's group id (default 0).")
    int groupId;

    @Mixin
    FingerprintOptions fingerprint;

    @Mixin
    PageDigestOption pageDigest;

    @Mixin
    QuietOption quiet;

    @Override
    public Integer call() {
        return run(spec.commandLine(), spec.commandLine().getOut(), spec.commandLine().getErr());
    }

    /**
     * The command, printing to {@code out} and {@code err}; {@code cl} is the command line usage errors name, {@code null}
     * when {@link QuickSum} parsed the arguments (which it does only where no usage error can follow).
     */
    int run(CommandLine cl, PrintWriter out, PrintWriter err) {
        if (payload && tpSize <= 0) {
            throw new ParameterException(cl, "--tp-size " + tpSize + ": must be positive");
        }
        if (payload && groupId < 0) {
            throw new ParameterException(cl, "--group-id " + groupId + ": must be 0 or more");
        }
        fingerprint.validate();
        ChecksumMode mode = modeOption.mode(cl);
        try (DumpFile file = DumpFile.open(dump)) {
            KvDump d = KvDump.of(file, dumpOptions.options(blockSize));
            if (d.skipReason() != null) {
                print(d, mode, null, new long[0], null, out);
                if (payload) {
                    err.println("kvchecksum: group " + groupId + " skipped (left out of the payload): " + d.skipReason());
                }
                err.flush();
                return Main.UNVERIFIED;
            }
            try (KvChecksum b = backend.open(cl)) {
                long[] values = ChunkedChecksums.blockChecksums(b, d, mode, err, quiet.progressShown(), "sum");
                print(d, mode, b, values, pageDigest.entry(d, b, groupId), out);
            }
        }
        return Main.OK;
    }

    /**
     * Prints the block checksums (with {@code --payload}, the payload) of the dump as {@code be} computed them; with
     * {@code be} null, a dump whose group cannot be checksummed without padding (cells not whole 8-byte pieces,
     * {@code --pad-cells} not given): the group is skipped with the reason, as an engine skips it, and nothing is
     * computed. With {@code --payload} the payload an engine would send then, without the group (its consumer sees it
     * as checksummed on one side only, or not at all).
     */
    private void print(KvDump d, ChecksumMode mode, KvChecksum be, long[] values, SglangDigestSection.Entry digest,
            PrintWriter out) {
        RequestBlocks r = d.request();
        Map<String, Object> o = new LinkedHashMap<>();
        if (payload) {
            ChecksumPayload p = SglangDigests.attach(ChecksumPayload.of(mode, tpSize, r.numTokens(), be == null ? List.of()
                    : List.of(new GroupChecksums(groupId, fingerprint.of(d), r.blockSize(), r.firstBlock(), values))),
                    digest == null ? List.of() : List.of(digest));
            o.put("payload", PayloadCodec.encodeBase64(p));
            if (!p.sections().isEmpty()) {
                o.put("payload_sections", PayloadCodec.encodeSectionsBase64(p));
            }
            payloadText = PayloadCommand.text(p);
        } else if (json) {
            o.put("block_size", r.blockSize());
            o.put("first_block", r.firstBlock());
            o.put("num_tokens", r.numTokens());
            o.put("mode", mode.wireName());
        }
        if (json) {
            if (be == null) {
                o.put("skipped", d.skipReason());
            } else {
                o.put("backend", be.name());
                o.put("backend_description", be.description());
            }
            if (!payload) {
                o.put("values", Json.unsigned(values));
                if (digest != null) {
                    o.put("sglang_digest", PageDigestOption.json(digest));
                }
            }
            Json.print(out, o);
        } else if (payload) {
            out.println(payloadText);
        } else if (be == null) {
            out.println("dump:    " + d.describe());
            out.println("skipped: " + d.skipReason());
        } else {
            out.println("dump:    " + d.describe());
            out.println("request: tokens " + r.startToken() + ".." + (r.numTokens() - 1) + " of " + r.numTokens()
                    + ", blocks " + r.firstBlock() + ".." + (r.firstBlock() + values.length - 1) + " of "
                    + r.blockSize() + " tokens, head offset " + dumpOptions.headOffset);
            out.println("backend: " + be.description());
            if (mode != ChecksumMode.STANDARD) {
                out.println("mode:    " + mode.wireName());
            }
            if (digest != null) {
                out.println("page digest: " + PageDigestOption.line(digest));
            }
            // what printf("%8s  %-17s  %20s%n", ...) prints, built by hand: a 2 GiB dump has a thousand rows, and
            // java.util.Formatter, still interpreted in a one-shot JVM, took tens of milliseconds over them
            String nl = System.lineSeparator();
            StringBuilder rows = new StringBuilder(64 * (values.length + 1));
            row(rows, "block", "tokens", "checksum", nl);
            for (int i = 0; i < values.length; i++) {
                long bp = r.firstBlock() + i;
                row(rows, Long.toString(bp), r.blockStart(bp) + ".." + (r.blockEnd(bp) - 1),
                        Long.toUnsignedString(values[i]), nl);
            }
            out.print(rows);
        }
        out.flush();
    }

    /** One row of the block table: {@code block} right-aligned in 8, {@code tokens} left-aligned in 17, the checksum
     * right-aligned in 20, two spaces between (wider values push on, as printf's widths do). */
    private static void row(StringBuilder b, String block, String tokens, String checksum, String nl) {
        b.repeat(' ', Math.max(0, 8 - block.length())).append(block).append("  ").append(tokens)
                .repeat(' ', Math.max(0, 17 - tokens.length())).append("  ")
                .repeat(' ', Math.max(0, 20 - checksum.length())).append(checksum).append(nl);
    }
}
