package io.kvchecksum.cli;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.cli.dump.KvDump;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.GroupChecksums;
import io.kvchecksum.engine.wire.Verifier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/** {@code verify}: the consumer's side: checksums the dump and compares them with the producer's payload. */
@Command(name = "verify", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Checks a consumer's dump against the producer's payload.",
                "A verdict per group: MATCH, MISMATCH with the block positions, UNVERIFIED with the reason.",
                "The checksum mode (standard, mixed) is the payload's.",
                "Exit 0 match, 1 mismatch, 2 unverified (also: the dump's group skipped, cells not whole 8-byte pieces"
                        + " without --pad-cells), 65 malformed dump or payload."})
final class VerifyCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DUMP", description = "The consumer's dump.")
    Path dump;

    @Option(names = "--expected", paramLabel = "PAYLOAD", required = true,
            description = "The producer's base64 payload (kv_checksums), or a JSON object with \"kv_checksums\" and"
                    + " \"kv_checksum_sections\" (its kv_transfer_params), or @FILE to read either from a file.")
    String expected;

    @Option(names = "--expected-sections", paramLabel = "SECTIONS",
            description = "The producer's sections (kv_checksum_sections) when given apart: base64 or @FILE.")
    String expectedSections;

    @Option(names = "--block-size", paramLabel = "B",
            description = "Tokens per checksum block of the dump (default: the payload group's block size).")
    Integer blockSize;

    @Mixin
    DumpOptions dumpOptions;

    @Option(names = "--group-id", paramLabel = "G", defaultValue = "0",
            description = "The payload group the dump holds (default 0); other groups are listed as not checked.")
    int groupId;

    @Mixin
    FingerprintOptions fingerprint;

    @Mixin
    BackendOption backend;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    @Mixin
    QuietOption quiet;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        fingerprint.validate();
        if (groupId < 0) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--group-id " + groupId + ": must be 0 or more");
        }
        ChecksumPayload exp = PayloadCommand.read(expected, null, expectedSections);
        GroupChecksums eg = exp.groups().stream().filter(g -> g.groupId() == groupId).findFirst().orElse(null);
        List<Integer> others = exp.groups().stream().map(GroupChecksums::groupId).filter(g -> g != groupId).distinct().toList();
        int b;
        if (blockSize != null) {
            b = blockSize;
        } else if (eg != null && eg.blockSize() != null) {
            b = eg.blockSize();
        } else {
            throw new InvalidInputException("the payload " + (eg == null ? "has no group " + groupId
                    : "(version " + exp.version() + ") carries no block size for group " + groupId)
                    + ": give the dump's --block-size");
        }
        try (DumpFile file = DumpFile.open(dump)) {
            KvDump.Options o = dumpOptions.options(b);
            KvDump d = KvDump.of(file, o);
            if (dumpOptions.numTokens == null && file.get("num_tokens") == null
                    && d.request().numTokens() > exp.numTokens() && exp.numTokens() > d.request().startToken()) {
                // a paged dump's last page holds slots past the request: count only the producer's tokens
                d = KvDump.of(file, o.withNumTokens(exp.numTokens()));
            }
            RequestBlocks r = d.request();
            // The payload's mode; a mode this build does not know is computed in the standard mode and reported by the
            // comparison as MODE_DIFFERS.
            ChecksumMode mode = exp.checksumMode() == null ? ChecksumMode.STANDARD : exp.checksumMode();
            try (KvChecksum be = backend.open(spec.commandLine())) {
                // A group that cannot be checksummed without padding is skipped, as an engine skips it: nothing is
                // computed, and the comparison says the group was checksummed on one side only (or on neither).
                String skip = d.skipReason();
                long[] values = skip != null ? new long[0]
                        : ChunkedChecksums.blockChecksums(be, d, mode, err, quiet.progressShown(), "verify");
                ChecksumPayload actual = PageDigestOption.withConsumerDigest(ChecksumPayload.of(mode,
                        exp.tpSize() == null ? 1 : exp.tpSize(), r.numTokens(), skip != null ? List.of()
                                : List.of(new GroupChecksums(groupId, fingerprint.of(d), r.blockSize(), r.firstBlock(),
                                        values))), exp, d, be, groupId);
                ChecksumPayload expOne = new ChecksumPayload(exp.version(), exp.tpSize(), exp.numTokens(),
                        exp.groups().stream().filter(g -> g.groupId() == groupId).toList(), exp.mode(),
                        PageDigestOption.expectedSections(exp, groupId));
                LoadVerdict v = Verifier.compare(expOne, actual);
                Verdict verdict = Verdict.of(v, groupId, eg, exp.numTokens(), r, values.length);
                if (json) {
                    List<Object> gs = v.groups().stream().map(g -> {
                        boolean mine = g.groupId() == groupId && Verdict.INCOMPLETE_DUMP.equals(verdict.reason());
                        return (Object) Json.object("group_id", g.groupId(), "status", (mine ? verdict.status()
                                : g.status()).name(), "mismatched_blocks", g.mismatchedBlocks(), "reason", mine
                                ? verdict.reason() : g.reason() == null ? null : g.reason().name(),
                                "detail", mine ? verdict.detail() : g.detail());
                    }).toList();
                    Json.print(out, Json.object("status", verdict.status().name(), "reason", verdict.reason(), "detail",
                            verdict.detail(), "note", verdict.note(), "hint", verdict.hint(), "backend",
                            be.name(), "backend_description", be.description(), "block_size",
                            r.blockSize(), "first_block", r.firstBlock(), "num_tokens", r.numTokens(), "mode", exp.mode(),
                            "skipped", skip, "groups", gs, "sections",
                            v.sections().stream().map(PageDigestOption::json).toList(), "groups_not_checked", others));
                } else {
                    out.println("dump:     " + d.describe());
                    out.println("expected: payload version " + exp.version() + ", mode " + exp.mode() + ", tp_size "
                            + (exp.tpSize() == null ? "-" : exp.tpSize()) + ", " + exp.numTokens() + " tokens; "
                            + (eg == null ? "no group " + groupId : PayloadCommand.summary(eg)));
                    out.println("actual:   " + (skip != null ? "group " + groupId + " skipped: " + skip
                            : PayloadCommand.summary(actual.groups().getFirst()) + " (" + r.numTokens() + " tokens)"));
                    out.println("backend:  " + be.description());
                    for (GroupVerdict g : v.groups()) {
                        boolean mine = g.groupId() == groupId && Verdict.INCOMPLETE_DUMP.equals(verdict.reason());
                        out.println("group " + g.groupId() + ": " + (mine ? verdict.status() + " " + verdict.reason()
                                + ": " + verdict.detail() : g.status() + describe(g)));
                        if (g.reason() == UnverifiedReason.FINGERPRINT_DIFFERS) {
                            out.println("  the fingerprint hashes the engine's layer names, spec type and dtype, which a dump"
                                    + " does not record: see --layer-name, --spec-type, --kv-dtype, or pass the producer's"
                                    + " with --fingerprint if you know the layers are the same");
                        }
                        if (g.groupId() == groupId && verdict.note() != null) {
                            out.println("  note: " + verdict.note());
                        }
                    }
                    for (io.kvchecksum.engine.verdict.SectionVerdict sv : v.sections()) {
                        out.println("section " + sv);
                    }
                    if (!others.isEmpty()) {
                        out.println("not checked (not in this dump): group" + (others.size() == 1 ? " " : "s ")
                                + others.stream().map(String::valueOf).collect(Collectors.joining(", ")));
                    }
                    out.println("verdict: " + verdict.status() + (verdict.reason() == null ? ""
                            : " (" + verdict.reason() + ": " + verdict.detail() + ")"));
                    if (verdict.hint() != null) {
                        out.println("hint: " + verdict.hint());
                    }
                }
                out.flush();
                return verdict.status() == Status.MATCH ? Main.OK
                        : verdict.status() == Status.MISMATCH ? Main.MISMATCH : Main.UNVERIFIED;
            }
        }
    }

    /**
     * The command's verdict: the engine's comparison (which compares the positions both sides cover, as an engine
     * must), then what the dump covered. A dump that lacks whole payload blocks is UNVERIFIED (INCOMPLETE_DUMP, exit
     * 2) naming them: those blocks were never compared, so MATCH would claim what was not checked. A dump that lacks
     * only part of the payload's last block (a consumer one token short, the usual case) stays MATCH with a note.
     *
     * @param status the verdict
     * @param reason why it is UNVERIFIED (an engine reason, or INCOMPLETE_DUMP), else {@code null}
     * @param detail the details
     * @param note a block that was not compared although the verdict stands, or {@code null}
     * @param hint the usual operator mistakes when every compared block differs, or {@code null}
     */
    record Verdict(Status status, String reason, String detail, String note, String hint) {
        static final String INCOMPLETE_DUMP = "INCOMPLETE_DUMP";

        static Verdict of(LoadVerdict v, int groupId, GroupChecksums expected, long expectedTokens, RequestBlocks dump,
                int dumpBlocks) {
            GroupVerdict g = v.groups().stream().filter(x -> x.groupId() == groupId).findFirst().orElse(null);
            Verdict engine = new Verdict(v.status(), v.reason() == null ? null : v.reason().name(), v.detail(), null, null);
            if (g == null || expected == null || expected.blockSize() == null) {
                return engine;
            }
            long b = expected.blockSize();
            long pEnd = expected.start() + expected.numBlocks();
            long dumpEnd = dump.numTokens();
            long partial = dumpEnd % b != 0 && dumpEnd < expectedTokens ? dumpEnd / b : -1;
            if (g.status() == Status.MATCH) {
                long firstLacking = Math.max(expected.start(), Math.ceilDiv(dumpEnd, b));
                if (firstLacking < pEnd) {
                    long n = pEnd - firstLacking;
                    String blocks = n == 1 ? "block " + firstLacking : "blocks " + firstLacking + ".." + (pEnd - 1);
                    return new Verdict(Status.UNVERIFIED, INCOMPLETE_DUMP, "the dump ends at token " + dumpEnd + " of the "
                            + "payload's " + expectedTokens + ": payload " + blocks + " (" + n + " of " + expected.numBlocks()
                            + ") were never compared" + (partial >= expected.start() ? ", nor the partial block " + partial : ""),
                            null, null);
                }
                if (partial >= expected.start() && partial < pEnd) {
                    return new Verdict(v.status(), engine.reason(), v.detail(), "block " + partial + " was not compared: the"
                            + " dump holds its tokens " + partial * b + ".." + (dumpEnd - 1) + " of " + partial * b + ".."
                            + (Math.min((partial + 1) * b, expectedTokens) - 1) + " (a consumer's last, partial block)", null);
                }
                return engine;
            }
            if (g.status() == Status.MISMATCH && b == dump.blockSize()) {
                long from = Math.max(expected.start(), dump.firstBlock());
                long to = Math.min(pEnd, dump.firstBlock() + dumpBlocks);
                long compared = to - from - (partial >= from && partial < to ? 1 : 0);
                if (compared >= 2 && g.mismatchedBlocks().length >= compared) {
                    return new Verdict(v.status(), engine.reason(), v.detail(), null, "every compared block differs: the"
                            + " usual causes are a TP shard dumped without --head-offset (rank r holding k heads: r*k) and a"
                            + " dump that starts at another block without --first-block");
                }
            }
            return engine;
        }
    }

    private static String describe(GroupVerdict g) {
        return switch (g.status()) {
            case MATCH -> g.detail() == null || g.detail().isEmpty() ? "" : " (" + g.detail() + ")";
            case MISMATCH -> " at block" + (g.mismatchedBlocks().length == 1 ? " " : "s ")
                    + Arrays.stream(g.mismatchedBlocks()).mapToObj(String::valueOf).collect(Collectors.joining(", "))
                    + (g.detail() == null ? "" : " (" + g.detail() + ")");
            case UNVERIFIED -> " " + g.reason() + (g.detail() == null ? "" : ": " + g.detail());
        };
    }
}
