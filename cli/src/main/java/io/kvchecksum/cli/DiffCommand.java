package io.kvchecksum.cli;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.cli.dump.KvDump;
import io.kvchecksum.cli.dump.Tensor;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * {@code diff}: two dumps of one request, in any two layouts. Block checksums say which blocks differ; an exact byte
 * comparison of every cell then says, inside each block, which layers, heads, token ranges and cell bytes changed
 * (also where bytes differ but the checksums agree, which the checksum's known weaknesses allow).
 */
@Command(name = "diff", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Localizes the differences between two dumps of one request.",
                "Any two layouts. Which blocks differ, and inside each block which layers, heads, token ranges and"
                        + " cell bytes. Exit 0 identical, 1 different, 2 skipped (cells not whole 8-byte pieces without"
                        + " --pad-cells)."})
final class DiffCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DUMP_A")
    Path a;

    @Parameters(index = "1", paramLabel = "DUMP_B")
    Path b;

    @Option(names = "--layout", paramLabel = "L", defaultValue = "gathered", description = "Layout of both dumps (default gathered).")
    String layout;

    @Option(names = "--layout-a", paramLabel = "L", description = "Layout of DUMP_A (overrides --layout).")
    String layoutA;

    @Option(names = "--layout-b", paramLabel = "L", description = "Layout of DUMP_B (overrides --layout).")
    String layoutB;

    @Option(names = "--block-size", paramLabel = "B",
            description = "Tokens per block (default 16, or the smallest multiple of both dumps' page sizes).")
    Integer blockSize;

    @Option(names = "--num-tokens", paramLabel = "N", description = "The request's token count (default: each dump's).")
    Long numTokens;

    @Option(names = "--first-block", paramLabel = "F", defaultValue = "0", description = "First block position of both dumps.")
    long firstBlock;

    @Option(names = "--head-offset", paramLabel = "H0", defaultValue = "0", description = "Global head number of head 0 (both).")
    int headOffset;

    @Option(names = "--pad-cells", description = "Checksum cells that are not whole 8-byte pieces zero-padded (see sum --help).")
    boolean padCells;

    @Option(names = "--index-k-head", paramLabel = "H", description = "Global head number of the index-K caches (see sum --help).")
    Integer indexKHead;

    @Mixin
    BackendOption backend;

    @Mixin
    ModeOption modeOption;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    @Mixin
    QuietOption quiet;

    @Option(names = "--max-blocks", paramLabel = "K", defaultValue = "20",
            description = "Print the differences of at most K blocks, then a line with the total (default ${DEFAULT-VALUE};"
                    + " --json lists all).")
    int maxBlocks;

    /** One run of consecutive tokens of one (layer, head) whose cells differ, with the cell bytes that changed. */
    record Change(long block, int layer, int head, long tokenFirst, long tokenLast, int[] kBytes, int[] vBytes,
            String tensorA, long offsetA, String tensorB, long offsetB) {
    }

    /** The comparison. */
    record Result(int blockSize, long firstBlock, long numTokensA, long numTokensB, long[] valuesA, long[] valuesB,
            List<Change> changes, List<Long> blocksDiffering, List<Long> bytesDifferButChecksumsAgree) {
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (maxBlocks < 1) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--max-blocks " + maxBlocks + ": must be 1 or more");
        }
        io.kvchecksum.ChecksumMode mode = modeOption.mode(spec.commandLine());
        String la = layoutA != null ? layoutA : layout;
        String lb = layoutB != null ? layoutB : layout;
        try (DumpFile fa = DumpFile.open(a); DumpFile fb = DumpFile.open(b)) {
            int bs = blockSize != null ? blockSize : defaultBlockSize(fa, la, fb, lb);
            io.kvchecksum.CellPadding padding = padCells ? io.kvchecksum.CellPadding.ZEROS : io.kvchecksum.CellPadding.NONE;
            KvDump da = KvDump.of(fa, new KvDump.Options(la, bs, numTokens, firstBlock, headOffset, padding, indexKHead));
            KvDump db = KvDump.of(fb, new KvDump.Options(lb, bs, numTokens, firstBlock, headOffset, padding, indexKHead));
            String skip = da.skipReason() != null ? "A " + da.skipReason() : db.skipReason() != null ? "B " + db.skipReason() : null;
            if (skip != null) {
                // as an engine skips such a group: no checksums, no verdict (exit 2, as verify's unverified)
                if (json) {
                    Json.print(out, Json.object("identical", null, "skipped", skip));
                } else {
                    out.println("skipped: " + skip);
                }
                out.flush();
                return Main.UNVERIFIED;
            }
            Result r;
            String desc;
            String name;
            try (KvChecksum be = backend.open(spec.commandLine())) {
                r = compare(da, db, be, err, quiet.progressShown(), mode);
                desc = be.description();
                name = be.name();
            }
            if (json) {
                Json.print(out, Json.object("identical", r.changes.isEmpty() && r.numTokensA == r.numTokensB,
                        "block_size", r.blockSize, "first_block", r.firstBlock, "num_tokens_a", r.numTokensA,
                        "num_tokens_b", r.numTokensB, "mode", mode.wireName(), "backend", name, "backend_description",
                        desc, "values_a", Json.unsigned(r.valuesA), "values_b", Json.unsigned(r.valuesB),
                        "blocks_differing", r.blocksDiffering, "bytes_differ_but_checksums_agree",
                        r.bytesDifferButChecksumsAgree, "differences", r.changes.stream().map(c -> Json.object("block",
                                c.block, "layer", c.layer, "head", c.head, "token_first", c.tokenFirst, "token_last",
                                c.tokenLast, "k_bytes", c.kBytes, "v_bytes", c.vBytes, "a", location(da, c.tensorA,
                                        c.offsetA), "b", location(db, c.tensorB, c.offsetB))).toList()));
            } else {
                out.println("A: " + da.describe());
                out.println("B: " + db.describe());
                out.println("blocks of " + bs + " tokens from block " + firstBlock + "; backend " + desc
                        + (mode == io.kvchecksum.ChecksumMode.STANDARD ? "" : "; mode " + mode.wireName()));
                if (r.numTokensA != r.numTokensB) {
                    out.println("token counts differ: A has " + r.numTokensA + ", B has " + r.numTokensB
                            + "; compared the blocks both hold");
                }
                RequestBlocks req = da.request();
                long current = -1;
                int printed = 0;
                for (Change c : r.changes) {
                    if (c.block != current) {
                        if (printed == maxBlocks) {
                            break;
                        }
                        printed++;
                        current = c.block;
                        int i = (int) (c.block - r.firstBlock);
                        out.println("block " + c.block + " (tokens " + req.blockStart(c.block) + ".."
                                + (Math.min(req.blockEnd(c.block), Math.min(r.numTokensA, r.numTokensB)) - 1) + "): checksum A "
                                + Long.toUnsignedString(r.valuesA[i]) + (r.valuesA[i] == r.valuesB[i] ? " == B (bytes differ!)"
                                : " != B " + Long.toUnsignedString(r.valuesB[i])));
                    }
                    out.println("  layer " + c.layer + " head " + c.head + " tokens " + c.tokenFirst + ".." + c.tokenLast
                            + ": " + bytesText(c) + "; first change at A " + where(da, c.tensorA, c.offsetA) + ", B "
                            + where(db, c.tensorB, c.offsetB));
                }
                int nb = Math.min(r.valuesA.length, r.valuesB.length);
                if (r.blocksDiffering.size() > maxBlocks) {
                    out.println("... " + (r.blocksDiffering.size() - maxBlocks) + " more differing blocks not shown"
                            + " (--max-blocks " + maxBlocks + "; --json lists all)");
                }
                out.println(r.changes.isEmpty() ? "identical: " + nb + " blocks, every cell equal"
                        : r.blocksDiffering.size() + " of " + nb + " blocks differ");
            }
            out.flush();
            return r.changes.isEmpty() && r.numTokensA == r.numTokensB ? Main.OK : Main.MISMATCH;
        }
    }

    private static Map<String, Object> location(KvDump d, String tensor, long offset) {
        long base = d.file().get(tensor).fileOffset();
        return Json.object("tensor", tensor, "offset", offset, "file_offset", base < 0 ? null : base + offset);
    }

    private static String where(KvDump d, String tensor, long offset) {
        long base = d.file().get(tensor).fileOffset();
        return tensor + "+" + offset + (base < 0 ? "" : " (file byte " + (base + offset) + ")");
    }

    private static String bytesText(Change c) {
        return Stream.of(c.kBytes == null ? null : "K bytes " + c.kBytes[0] + ".." + c.kBytes[1],
                c.vBytes == null ? null : "V bytes " + c.vBytes[0] + ".." + c.vBytes[1])
                .filter(Objects::nonNull).collect(Collectors.joining(", "));
    }

    private static int defaultBlockSize(DumpFile fa, String la, DumpFile fb, String lb) {
        int pa = KvDump.of(fa, new KvDump.Options(la, 1 << 20, null, 0, 0)).pageSize();
        int pb = KvDump.of(fb, new KvDump.Options(lb, 1 << 20, null, 0, 0)).pageSize();
        long lcm = (long) pa / BigInteger.valueOf(pa).gcd(BigInteger.valueOf(pb)).longValue() * pb;
        long bs = lcm >= 16 ? lcm : lcm * Math.ceilDiv(16, lcm);
        return (int) Math.min(bs, 1 << 20);
    }

    /** Compares two dumps: their block checksums in {@code mode}, then every cell's bytes. */
    static Result compare(KvDump da, KvDump db, KvChecksum be, PrintWriter err, boolean progress,
            io.kvchecksum.ChecksumMode mode) {
        Map<Long, KvDump.Layer> sa = slices(da);
        Map<Long, KvDump.Layer> sb = slices(db);
        if (!sa.keySet().equals(sb.keySet())) {
            throw new InvalidInputException("the dumps do not hold the same layers and heads: A has " + slicesText(da)
                    + ", B has " + slicesText(db));
        }
        for (KvDump.Layer la : da.layers()) {
            CacheLayer ca = la.cache();
            CacheLayer cb = sb.get(key(la)).cache();
            if (ca.numHeads() != cb.numHeads()) {
                throw new InvalidInputException("layer " + la.layer() + ": A holds " + ca.numHeads() + " heads, B "
                        + cb.numHeads());
            }
            int vA = ca.v() == null ? 0 : ca.v().cellBytes();
            int vB = cb.v() == null ? 0 : cb.v().cellBytes();
            if (ca.k().cellBytes() != cb.k().cellBytes() || vA != vB) {
                throw new InvalidInputException("layer " + la.layer() + ": cells differ in size: A " + ca.k().cellBytes() + "+"
                        + vA + " bytes (K+V), B " + cb.k().cellBytes() + "+" + vB);
            }
        }
        long[] va = ChunkedChecksums.blockChecksums(be, da, mode, err, progress, "diff A");
        long[] vb = ChunkedChecksums.blockChecksums(be, db, mode, err, progress, "diff B");
        RequestBlocks r = da.request();
        long n = Math.min(da.request().numTokens(), db.request().numTokens());
        long start = r.startToken();
        List<Change> changes = new ArrayList<>();
        List<Long> differing = new ArrayList<>();
        List<Long> agree = new ArrayList<>();
        int nb = Math.min(va.length, vb.length);
        long perToken = da.group().bytesPerToken();
        try (Progress p = new Progress(err, progress, "diff bytes", (n - start) * perToken)) {
            for (int i = 0; i < nb; i++) {
                long block = r.firstBlock() + i;
                long t0 = r.blockStart(block);
                long t1 = Math.min(r.blockEnd(block), n);
                int before = changes.size();
                for (KvDump.Layer la : da.layers()) {
                    KvDump.Layer lb = sb.get(key(la));
                    for (int h = 0; h < la.cache().numHeads(); h++) {
                        scan(da, la, db, lb, h, block, t0, t1, changes);
                    }
                }
                boolean bytesDiffer = changes.size() > before;
                if (bytesDiffer || va[i] != vb[i]) {
                    differing.add(block);
                }
                if (bytesDiffer && va[i] == vb[i]) {
                    agree.add(block);
                }
                p.update((t1 - start) * perToken);
            }
        }
        return new Result(r.blockSize(), r.firstBlock(), da.request().numTokens(), db.request().numTokens(), va, vb, changes,
                differing, agree);
    }

    /** Finds runs of tokens in {@code [t0, t1)} where the cells of (layer, local head h) differ. */
    private static void scan(KvDump da, KvDump.Layer la, KvDump db, KvDump.Layer lb, int h, long block, long t0, long t1,
            List<Change> out) {
        int hb = la.cache().firstHead() + h - lb.cache().firstHead();
        int[] kRange = null;
        int[] vRange = null;
        long runFirst = -1;
        long runLast = -1;
        long offA = 0;
        long offB = 0;
        String tensorA = null;
        String tensorB = null;
        for (long t = t0; t <= t1; t++) {
            int[] k = null;
            int[] v = null;
            if (t < t1) {
                k = diffCell(da, la, false, db, lb, t, h, hb);
                v = la.cache().v() == null ? null : diffCell(da, la, true, db, lb, t, h, hb);
            }
            if (k != null || v != null) {
                if (runFirst < 0) {
                    runFirst = t;
                    boolean inV = k == null;
                    int first = inV ? v[0] : k[0];
                    Tensor ta = inV ? la.vTensor() : la.kTensor();
                    Tensor tb = inV ? lb.vTensor() : lb.kTensor();
                    tensorA = ta.name();
                    tensorB = tb.name();
                    offA = da.cellOffset(la, inV, t, h) + first;
                    offB = db.cellOffset(lb, inV, t, hb) + first;
                }
                runLast = t;
                kRange = union(kRange, k);
                vRange = union(vRange, v);
            } else if (runFirst >= 0) {
                out.add(new Change(block, la.layer(), la.cache().firstHead() + h, runFirst, runLast, kRange, vRange, tensorA,
                        offA, tensorB, offB));
                runFirst = -1;
                kRange = null;
                vRange = null;
            }
        }
    }

    private static int[] union(int[] r, int[] x) {
        if (x == null) {
            return r;
        }
        return r == null ? x.clone() : new int[] {Math.min(r[0], x[0]), Math.max(r[1], x[1])};
    }

    /** The first and last differing byte of one cell, or {@code null} when the cells are equal. */
    private static int[] diffCell(KvDump da, KvDump.Layer la, boolean v, KvDump db, KvDump.Layer lb, long t, int ha, int hb) {
        int cell = (v ? la.cache().v() : la.cache().k()).cellBytes();
        MemorySegment ma = ((KvMemory.Host) (v ? la.cache().v() : la.cache().k()).memory()).segment();
        MemorySegment mb = ((KvMemory.Host) (v ? lb.cache().v() : lb.cache().k()).memory()).segment();
        long oa = da.cellOffset(la, v, t, ha);
        long ob = db.cellOffset(lb, v, t, hb);
        long first = MemorySegment.mismatch(ma, oa, oa + cell, mb, ob, ob + cell);
        if (first < 0) {
            return null;
        }
        int last = cell - 1;
        while (last > first && ma.get(java.lang.foreign.ValueLayout.JAVA_BYTE, oa + last)
                == mb.get(java.lang.foreign.ValueLayout.JAVA_BYTE, ob + last)) {
            last--;
        }
        return new int[] {(int) first, last};
    }

    /** A layer's cache: its number and, for a second cache of the layer (index-K), which one. */
    private static long key(KvDump.Layer l) {
        return 2L * l.layer() + (l.indexK() ? 1 : 0);
    }

    private static Map<Long, KvDump.Layer> slices(KvDump d) {
        return d.layers().stream().collect(Collectors.toMap(DiffCommand::key, l -> l));
    }

    private static String slicesText(KvDump d) {
        return "layers:heads " + d.layers().stream().map(l -> l.layer() + ":" + l.cache().numHeads())
                .collect(Collectors.joining(" "));
    }
}
