package io.kvchecksum.cli;

import io.kvchecksum.RequestBlocks;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.cli.dump.KvDump;
import io.kvchecksum.engine.ChecksumPayload;
import io.kvchecksum.engine.GroupChecksums;
import io.kvchecksum.engine.GroupVerdict;
import io.kvchecksum.engine.LoadVerdict;
import io.kvchecksum.engine.Status;
import io.kvchecksum.engine.UnverifiedReason;
import io.kvchecksum.engine.Verifier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/** {@code verify}: the consumer's side: checksums the dump and compares them with the producer's payload. */
@Command(name = "verify", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Checks a consumer's dump against the producer's payload.",
                "A verdict per group: MATCH, MISMATCH with the block positions, UNVERIFIED with the reason.",
                "Exit 0 match, 1 mismatch, 2 unverified, 65 malformed dump or payload."})
final class VerifyCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DUMP", description = "The consumer's dump.")
    Path dump;

    @Option(names = "--expected", paramLabel = "PAYLOAD", required = true,
            description = "The producer's base64 payload, or @FILE to read it from a file.")
    String expected;

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

    @Option(names = {"-q", "--quiet"}, description = "No progress bar.")
    boolean quiet;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        fingerprint.validate();
        if (groupId < 0) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--group-id " + groupId + ": must be 0 or more");
        }
        ChecksumPayload exp = PayloadCommand.read(expected, null);
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
                    && d.request().numTokens() > exp.numTokens() && exp.numTokens() >= d.request().startToken()) {
                // a paged dump's last page holds slots past the request: count only the producer's tokens
                d = KvDump.of(file, new KvDump.Options(o.layout(), b, exp.numTokens(), o.firstBlock(), o.headOffset()));
            }
            RequestBlocks r = d.request();
            try (ChosenBackend be = backend.open(spec.commandLine());
                    Progress p = new Progress(err, !quiet, "verify", d.kvBytes())) {
                long[] values = be.blockChecksums(d, p);
                p.close();
                ChecksumPayload actual = ChecksumPayload.of(exp.tpSize() == null ? 1 : exp.tpSize(), r.numTokens(),
                        List.of(new GroupChecksums(groupId, fingerprint.of(d), r.blockSize(), r.firstBlock(), values)));
                ChecksumPayload expOne = new ChecksumPayload(exp.version(), exp.tpSize(), exp.numTokens(),
                        exp.groups().stream().filter(g -> g.groupId() == groupId).toList());
                LoadVerdict v = Verifier.compare(expOne, actual);
                if (json) {
                    Map<String, Object> j = new LinkedHashMap<>();
                    j.put("status", v.status().name());
                    j.put("reason", v.reason() == null ? null : v.reason().name());
                    j.put("detail", v.detail());
                    j.put("backend", be.backend().name());
                    j.put("backend_description", be.backend().description());
                    j.put("block_size", r.blockSize());
                    j.put("first_block", r.firstBlock());
                    j.put("num_tokens", r.numTokens());
                    List<Object> gs = new ArrayList<>();
                    for (GroupVerdict g : v.groups()) {
                        Map<String, Object> gj = new LinkedHashMap<>();
                        gj.put("group_id", g.groupId());
                        gj.put("status", g.status().name());
                        gj.put("mismatched_blocks", g.mismatchedBlocks());
                        gj.put("reason", g.reason() == null ? null : g.reason().name());
                        gj.put("detail", g.detail());
                        gs.add(gj);
                    }
                    j.put("groups", gs);
                    j.put("groups_not_checked", others);
                    Json.print(out, j);
                } else {
                    out.println("dump:     " + d.describe());
                    out.println("expected: payload version " + exp.version() + ", tp_size "
                            + (exp.tpSize() == null ? "-" : exp.tpSize()) + ", " + exp.numTokens() + " tokens; "
                            + (eg == null ? "no group " + groupId : PayloadCommand.summary(eg)));
                    out.println("actual:   " + PayloadCommand.summary(actual.groups().getFirst()) + " (" + r.numTokens()
                            + " tokens)");
                    out.println("backend:  " + be.backend().description());
                    for (GroupVerdict g : v.groups()) {
                        out.println("group " + g.groupId() + ": " + g.status() + describe(g));
                        if (g.reason() == UnverifiedReason.FINGERPRINT_DIFFERS) {
                            out.println("  the fingerprint hashes the engine's layer names, spec type and dtype, which a dump"
                                    + " does not record: see --layer-name, --spec-type, --kv-dtype, or pass the producer's"
                                    + " with --fingerprint if you know the layers are the same");
                        }
                    }
                    if (!others.isEmpty()) {
                        out.println("not checked (not in this dump): group" + (others.size() == 1 ? " " : "s ")
                                + others.stream().map(String::valueOf).collect(Collectors.joining(", ")));
                    }
                    out.println("verdict: " + v.status() + (v.reason() == null ? "" : " (" + v.reason() + ": " + v.detail() + ")"));
                }
                out.flush();
                return v.status() == Status.MATCH ? Main.OK : v.status() == Status.MISMATCH ? Main.MISMATCH : Main.UNVERIFIED;
            }
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
