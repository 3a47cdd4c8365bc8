package io.kvchecksum.cli;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.KvDump;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile and careless inputs: each must end, within a time bound, in one line on stderr (plus, for usage errors,
 * picocli's one-line hint) and its documented exit code: 64 usage, 65 invalid input, 70 internal; never 1 (which
 * means "mismatch"), a stack trace, a hang or an exhausted machine.
 */
class HostileInputTest {
    /** Far above what any of these takes; a hang or a runaway allocation fails here instead of stalling the build. */
    private static final Duration BOUND = Duration.ofSeconds(20);

    @TempDir
    static Path tmp;

    static Path good;
    static String goodPayload;

    @BeforeAll
    static void goodDumpAndPayload() throws IOException {
        good = safetensors("good.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[20,1,4],"data_offsets":[0,160]},
                 "layers.0.v":{"dtype":"BF16","shape":[20,1,4],"data_offsets":[160,320]}}""", 320);
        Cli.Run r = Cli.run("sum", good.toString(), "--block-size", "16", "--payload", "--backend", "cpu", "-q");
        assertEquals(0, r.code(), r.err());
        goodPayload = r.out().strip();
    }

    /** A safetensors file: the header as given, then {@code dataBytes} bytes of a fixed pattern. */
    static Path safetensors(String name, String header, int dataBytes) throws IOException {
        byte[] h = header.replace("\n", "").getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        for (int i = 0; i < dataBytes; i++) {
            b.put((byte) (i * 37 + 11));
        }
        Path p = tmp.resolve(name);
        Files.write(p, b.array());
        return p;
    }

    static Path file(String name, String text) throws IOException {
        Path p = tmp.resolve(name);
        Files.writeString(p, text, StandardCharsets.ISO_8859_1);
        return p;
    }

    /** Runs the command line in the time bound and checks the code and the one line; returns the line. */
    static String fails(int code, String... args) {
        Cli.Run r = assertTimeoutPreemptively(BOUND, () -> Cli.run(args), () -> "no answer within " + BOUND + ": "
                + String.join(" ", args));
        assertEquals(code, r.code(), "exit code of " + r.args() + "\nstdout: " + r.out() + "\nstderr: " + r.err());
        List<String> lines = r.err().lines().filter(l -> !l.isBlank()).toList();
        assertFalse(lines.isEmpty(), "nothing on stderr for " + r.args());
        assertTrue(lines.size() == 1 || (code == Main.USAGE && lines.size() == 2 && lines.get(1).startsWith("Try '")),
                "expected one line on stderr for " + r.args() + ", got:\n" + r.err());
        assertFalse(r.err().contains("\tat ") || r.err().contains("Exception"), "stack trace: " + r.err());
        assertTrue(lines.getFirst().startsWith("kvchecksum: "), lines.getFirst());
        assertTrue(lines.getFirst().length() <= Main.MAX_MESSAGE + 20, "message too long: " + lines.getFirst().length());
        return lines.getFirst();
    }

    static void contains(String line, String... parts) {
        for (String p : parts) {
            assertTrue(line.contains(p), "'" + p + "' not in: " + line);
        }
    }

    // --- @FILE and payload files ------------------------------------------------------------------------------

    @Test
    void expectedFromAFileWithLineBreaksAndWhitespaceIsAccepted() throws IOException {
        StringBuilder wrapped = new StringBuilder("  \n");
        for (int i = 0; i < goodPayload.length(); i += 76) {
            wrapped.append(goodPayload, i, Math.min(goodPayload.length(), i + 76)).append("\r\n");
        }
        Path p = file("wrapped.payload", wrapped + "\n\n");
        Cli.Run r = assertTimeoutPreemptively(BOUND, () -> Cli.run("verify", good.toString(), "--expected", "@" + p,
                "--backend", "cpu", "-q"));
        assertEquals(Main.OK, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("verdict: MATCH"), r.out());
    }

    @Test
    void expectedFromAnEmptyFile() throws IOException {
        contains(fails(65, "verify", good.toString(), "--expected", "@" + file("empty.payload", "")), "empty");
    }

    @Test
    void expectedFromAWhitespaceOnlyFile() throws IOException {
        contains(fails(65, "verify", good.toString(), "--expected", "@" + file("blank.payload", " \n\t\n")), "empty");
    }

    @Test
    void expectedEmptyText() {
        contains(fails(65, "verify", good.toString(), "--expected", ""), "empty");
    }

    @Test
    void expectedFromADirectory() {
        contains(fails(65, "verify", good.toString(), "--expected", "@" + tmp), "directory");
    }

    @Test
    void expectedFromDevUrandom() {
        contains(fails(65, "verify", good.toString(), "--expected", "@/dev/urandom"), "not a regular file");
    }

    @Test
    void expectedFromDevZero() {
        contains(fails(65, "verify", good.toString(), "--expected", "@/dev/zero"), "not a regular file");
    }

    @Test
    @EnabledOnOs({OS.LINUX, OS.MAC})
    void expectedFromAFifoWithNoWriter() throws Exception {
        Path fifo = mkfifo("expected.fifo");
        contains(fails(65, "verify", good.toString(), "--expected", "@" + fifo), "not a regular file");
    }

    @Test
    void expectedFromAMissingFile() {
        contains(fails(65, "verify", good.toString(), "--expected", "@" + tmp.resolve("nope.payload")), "no such file");
    }

    @Test
    void expectedFromAFileTooLargeForAPayload() throws IOException {
        Path big = tmp.resolve("big.payload");
        try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
            f.setLength(PayloadCommand.MAX_PAYLOAD_FILE + 1); // sparse: no disk used
        }
        contains(fails(65, "verify", good.toString(), "--expected", "@" + big), Long.toString(PayloadCommand.MAX_PAYLOAD_FILE + 1),
                "too large");
    }

    @Test
    void expectedIsADumpGivenByMistake() {
        fails(65, "verify", good.toString(), "--expected", "@" + good);
    }

    @Test
    void expectedIsNotBase64() {
        fails(65, "verify", good.toString(), "--expected", "!!!not*base64!!!");
    }

    @Test
    void expectedWithLineBreaksOnTheCommandLineIsAccepted() {
        String broken = goodPayload.substring(0, 10) + "\n" + goodPayload.substring(10);
        Cli.Run r = assertTimeoutPreemptively(BOUND, () -> Cli.run("verify", good.toString(), "--expected", broken, "-q"));
        assertEquals(Main.OK, r.code(), r.err());
    }

    @Test
    void payloadDecodeFileDevZero() {
        contains(fails(65, "payload", "decode", "--file", "/dev/zero"), "not a regular file");
    }

    @Test
    void payloadDecodeAtDevZero() {
        contains(fails(65, "payload", "decode", "@/dev/zero"), "not a regular file");
    }

    @Test
    void payloadDecodeOfABinaryFile() {
        fails(65, "payload", "decode", "--file", good.toString());
    }

    @Test
    void payloadDecodeOfTruncatedBase64() {
        fails(65, "payload", "decode", goodPayload.substring(0, goodPayload.length() / 2));
    }

    @Test
    void payloadWithoutSubcommandIsAUsageError() {
        Cli.Run r = assertTimeoutPreemptively(BOUND, () -> Cli.run("payload"));
        assertEquals(Main.USAGE, r.code());
    }

    // --- dump files that are not files ------------------------------------------------------------------------

    @Test
    void dumpNamedWithAnAt() {
        contains(fails(65, "sum", "@" + good, "--block-size", "16"), "no such file", "without '@'");
    }

    @Test
    @EnabledOnOs({OS.LINUX, OS.MAC})
    void dumpIsAFifoWithNoWriter() throws Exception {
        Path fifo = mkfifo("dump.fifo");
        contains(fails(65, "sum", fifo.toString(), "--block-size", "16"), "not a regular file");
    }

    @Test
    void dumpIsDevZero() {
        contains(fails(65, "sum", "/dev/zero", "--block-size", "16"), "not a regular file");
    }

    @Test
    void dumpIsAnEmptyFile() throws IOException {
        fails(65, "sum", file("empty.safetensors", "").toString(), "--block-size", "16");
    }

    @Test
    void dumpDirectoryWithoutNpyFiles() throws IOException {
        Path d = Files.createDirectories(tmp.resolve("no-npy"));
        contains(fails(65, "sum", d.toString(), "--block-size", "16"), "no .npy");
    }

    @Test
    void npyWithABadMagicIsNotCalledASafetensorsHeader() throws IOException {
        String line = fails(65, "sum", file("bad-magic.npy", "XXNUMPY garbage that is long enough").toString(),
                "--block-size", "16");
        contains(line, ".npy", "magic");
        assertFalse(line.contains("safetensors"), line);
    }

    @Test
    void npzWithoutAZipHeader() throws IOException {
        contains(fails(65, "sum", file("bad.npz", "not a zip at all, just text").toString(), "--block-size", "16"), "zip");
    }

    // --- dumps whose content is wrong --------------------------------------------------------------------------

    @Test
    void oneLayerTwice() throws IOException {
        Path p = safetensors("dup-layer.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[0,32]},
                 "layers.00.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[32,64]}}""", 64);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "layers.0.k", "layers.00.k", "twice");
    }

    @Test
    void vBytesAliasKBytes() throws IOException {
        Path p = safetensors("alias.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[0,32]},
                 "layers.0.v":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[0,32]}}""", 32);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "overlap");
    }

    @Test
    void tensorsPartlyOverlapping() throws IOException {
        Path p = safetensors("partial-overlap.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[0,32]},
                 "layers.0.v":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[16,48]}}""", 48);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "overlap");
    }

    @Test
    void kAndVOfDifferentDtypes() throws IOException {
        Path p = safetensors("mixed-dtype.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[0,32]},
                 "layers.0.v":{"dtype":"F16","shape":[4,1,4],"data_offsets":[32,64]}}""", 64);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "BF16", "F16", "one dtype");
    }

    @Test
    void gatheredDumpWithNoTokens() throws IOException {
        Path p = safetensors("no-tokens.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[0,1,4],"data_offsets":[0,0]}}""", 0);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "no tokens");
    }

    @Test
    void emptyBlockTable() throws IOException {
        Path p = safetensors("empty-table.safetensors", """
                {"layers.0.kv_cache":{"dtype":"BF16","shape":[2,2,16,1,4],"data_offsets":[0,512]},
                 "block_table":{"dtype":"I32","shape":[0],"data_offsets":[512,512]}}""", 512);
        contains(fails(65, "sum", p.toString(), "--block-size", "16", "--layout", "vllm-flash"), "no tokens");
    }

    @Test
    void numTokensTensorZero() throws IOException {
        Path p = safetensors("zero-num-tokens.safetensors", """
                {"layers.0.kv_cache":{"dtype":"BF16","shape":[2,2,16,1,4],"data_offsets":[0,512]},
                 "block_table":{"dtype":"I32","shape":[1],"data_offsets":[512,516]},
                 "num_tokens":{"dtype":"I64","shape":[],"data_offsets":[520,528]}}""", 528);
        // the pattern bytes make num_tokens non-zero: overwrite it and the table with zeros
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            long dataStart = Files.size(p) - 528;
            ch.write(ByteBuffer.allocate(16), dataStart + 512);
        }
        contains(fails(65, "sum", p.toString(), "--block-size", "16", "--layout", "vllm-flash"), "no tokens");
    }

    @Test
    void unsignedBlockTableEntryPrintedAsWritten() throws IOException {
        Path p = safetensors("u64-table.safetensors", """
                {"layers.0.kv_cache":{"dtype":"BF16","shape":[2,2,16,1,4],"data_offsets":[0,512]},
                 "block_table":{"dtype":"U64","shape":[1],"data_offsets":[512,520]}}""", 520);
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {-1, -1, -1, -1, -1, -1, -1, -1}), Files.size(p) - 8);
        }
        String line = fails(65, "sum", p.toString(), "--block-size", "16", "--layout", "vllm-flash");
        contains(line, "18446744073709551615");
        assertFalse(line.contains("9223372036854775807"), line);
    }

    @Test
    void hugeShapeMessageIsCut() throws IOException {
        StringBuilder shape = new StringBuilder("[");
        for (int i = 0; i < 2000; i++) {
            shape.append(i == 0 ? "" : ",").append(1000003);
        }
        shape.append("]");
        Path p = safetensors("huge-shape.safetensors",
                "{\"layers.0.k\":{\"dtype\":\"BF16\",\"shape\":" + shape + ",\"data_offsets\":[0,8]}}", 8);
        fails(65, "sum", p.toString(), "--block-size", "16"); // the length bound is in fails()
    }

    @Test
    void hugeTensorNameMessageIsCut() throws IOException {
        String name = "x".repeat(5000);
        Path p = safetensors("huge-name.safetensors", "{\"" + name + "\":{\"dtype\":\"NOPE\",\"shape\":[1],"
                + "\"data_offsets\":[0,1]}}", 1);
        fails(65, "sum", p.toString(), "--block-size", "16");
    }

    @Test
    void oneTensorNameTwiceInTheHeader() throws IOException {
        Path p = safetensors("dup-key.safetensors", """
                {"layers.0.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[0,32]},
                 "layers.0.k":{"dtype":"BF16","shape":[4,1,4],"data_offsets":[32,64]}}""", 64);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "layers.0.k", "twice");
    }

    @Test
    void headerNestedTooDeep() throws IOException {
        Path p = safetensors("deep.safetensors", "[".repeat(100_000) + "]".repeat(100_000), 0);
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "not valid JSON");
    }

    @Test
    void headerNotUtf8() throws IOException {
        Path p = tmp.resolve("latin1.safetensors");
        byte[] h = "{\"layers.0.k\u00ff\":1}".getBytes(StandardCharsets.ISO_8859_1);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).put(h);
        Files.write(p, b.array());
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "safetensors header");
    }

    @Test
    void headerLengthPastTheFile() throws IOException {
        Path p = tmp.resolve("huge-header-length.safetensors");
        Files.write(p, new byte[] {-1, -1, -1, -1, -1, -1, -1, 127, '{', '}'});
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "header length");
    }

    @Test
    void npzBombIsRefusedWithTheNumbers() throws IOException {
        Path p = tmp.resolve("bomb.npz");
        long usize = NPZ_RATIO_FREE + (8L << 20);
        try (ZipOutputStream z = new ZipOutputStream(Files.newOutputStream(p))) {
            z.putNextEntry(new ZipEntry("layers.0.k.npy"));
            byte[] zeros = new byte[1 << 20];
            for (long w = 0; w < usize; w += zeros.length) {
                z.write(zeros);
            }
            z.closeEntry();
        }
        contains(fails(65, "sum", p.toString(), "--block-size", "16"), "zip bomb", Long.toString(usize));
    }

    /** Npz's package-private limit, restated: a test in this package cannot see the dump package's internals. */
    private static final long NPZ_RATIO_FREE = 64L << 20;

    @Test
    void fileTruncatedWhileBeingRead() throws IOException {
        // a dump mapped, then cut short by another process before the checksum reads it: SIGBUS in the JVM
        Path p = tmp.resolve("shrinking.safetensors");
        Files.copy(good, p);
        try (DumpFile f = DumpFile.open(p)) {
            KvDump d = KvDump.of(f, new KvDump.Options("gathered", 16, null, 0, 0));
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                ch.truncate(0);
            }
            Throwable t = assertThrows(Throwable.class, () -> {
                try (KvChecksum b = BackendOption.open("reference", Main.commandLine())) {
                    ChunkedChecksums.blockChecksums(b, d, ChecksumMode.STANDARD, new PrintWriter(java.io.Writer.nullWriter()),
                            false, "sum");
                }
            });
            StringWriter err = new StringWriter();
            assertEquals(Main.INVALID_INPUT, Main.report(t, new PrintWriter(err), false), t.toString());
            assertEquals("kvchecksum: the file changed or was truncated while being read", err.toString().strip());
        }
    }

    // --- option values: 64 -------------------------------------------------------------------------------------

    @Test
    void layerNameWithoutLayerNumber() {
        contains(fails(64, "sum", good.toString(), "--block-size", "16", "--payload", "--layer-name", "model.attn"), "{L}");
    }

    @Test
    void emptyKvDtype() {
        contains(fails(64, "verify", good.toString(), "--expected", goodPayload, "--kv-dtype", ""), "--kv-dtype");
    }

    @Test
    void fingerprintNotANumber() {
        contains(fails(64, "verify", good.toString(), "--expected", goodPayload, "--fingerprint", "abc"), "--fingerprint");
    }

    @Test
    void blockSizeZero() {
        contains(fails(64, "sum", good.toString(), "--block-size", "0"), "--block-size 0");
    }

    @Test
    void blockSizeBeyondAnInt() {
        fails(64, "sum", good.toString(), "--block-size", "99999999999");
    }

    @Test
    void firstBlockNegative() {
        String line = fails(64, "sum", good.toString(), "--block-size", "16", "--first-block", "-1");
        contains(line, "--first-block -1");
        assertFalse(line.contains("--head-offset"), "one problem per message: " + line);
    }

    @Test
    void headOffsetNegative() {
        String line = fails(64, "sum", good.toString(), "--block-size", "16", "--head-offset", "-3");
        contains(line, "--head-offset -3");
        assertFalse(line.contains("--first-block"), "one problem per message: " + line);
    }

    @Test
    void numTokensZero() {
        contains(fails(64, "sum", good.toString(), "--block-size", "16", "--num-tokens", "0"), "--num-tokens 0");
    }

    @Test
    void unknownLayout() {
        contains(fails(64, "sum", good.toString(), "--block-size", "16", "--layout", "paged"), "unknown layout");
    }

    @Test
    void unknownBackend() {
        contains(fails(64, "sum", good.toString(), "--block-size", "16", "--backend", "tpu"), "--backend");
    }

    @Test
    void tpSizeZero() {
        contains(fails(64, "sum", good.toString(), "--block-size", "16", "--payload", "--tp-size", "0"), "--tp-size 0");
    }

    @Test
    void groupIdNegative() {
        contains(fails(64, "verify", good.toString(), "--expected", goodPayload, "--group-id", "-1"), "--group-id -1");
    }

    @Test
    void unknownOption() {
        fails(64, "sum", good.toString(), "--block-size", "16", "--frobnicate");
    }

    @Test
    void unknownCommand() {
        fails(64, "frobnicate");
    }

    @Test
    void missingRequiredOption() {
        contains(fails(64, "sum", good.toString()), "--block-size");
    }

    @Test
    void demoTooManyTokensIsRefusedBeforeAllocating() {
        contains(fails(64, "demo", "--tokens", "100000000"), "--tokens 100000000", "need about", "limit");
    }

    @Test
    void demoTooManyLayersIsRefused() {
        contains(fails(64, "demo", "--layers", "100000"), "--layers 100000");
    }

    @Test
    void demoTokensAndLayersThatFitNowhereAreRefusedByTheEstimate() {
        contains(fails(64, "demo", "--tokens", "2000000000", "--layers", "1024"), "need about");
    }

    @Test
    void demoTooFewTokens() {
        contains(fails(64, "demo", "--tokens", "10"), "--tokens 10");
    }

    @Test
    void demoWithTooFewWholeBlocksForItsFaults() {
        // 40 tokens hold two whole blocks; the demo once looked forever for four
        contains(fails(64, "demo", "--tokens", "40", "--layers", "1"), "--tokens 40", "64");
    }

    @Test
    void numTokensBeyondTheDump() {
        contains(fails(65, "sum", good.toString(), "--block-size", "16", "--num-tokens", "21"), "holds 20 tokens");
    }

    // --- whatever escapes a command: 70, one line ----------------------------------------------------------------

    @Test
    void anEscapingBugIsOneLineAndSeventy() {
        StringWriter err = new StringWriter();
        assertEquals(Main.INTERNAL, Main.report(new IllegalStateException("boom\nsecond line"), new PrintWriter(err), false));
        List<String> lines = err.toString().lines().toList();
        assertEquals(1, lines.size(), err.toString());
        contains(lines.getFirst(), "internal error", "IllegalStateException", "boom second line", "--verbose");
    }

    @Test
    void anEscapingBugWithVerbosePrintsTheTrace() {
        StringWriter err = new StringWriter();
        assertEquals(Main.INTERNAL, Main.report(new IllegalStateException("boom"), new PrintWriter(err), true));
        assertTrue(err.toString().contains("\tat "), err.toString());
    }

    @Test
    void outOfMemoryIsOneLineAndSeventy() {
        StringWriter err = new StringWriter();
        assertEquals(Main.INTERNAL, Main.report(new OutOfMemoryError("Java heap space"), new PrintWriter(err), false));
        assertEquals(1, err.toString().lines().count(), err.toString());
        contains(err.toString(), "out of memory", "Java heap space");
    }

    @Test
    void anErrorThrownThroughPicocliIsCaught() {
        // an Error escaping a command's call(): the same one line and 70, not a trace from main()
        picocli.CommandLine cl = new picocli.CommandLine(new Thrower());
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        cl.setExecutionExceptionHandler(Main.commandLine().getExecutionExceptionHandler());
        int code = Main.execute(cl);
        assertEquals(Main.INTERNAL, code, err.toString());
        assertEquals(1, err.toString().lines().count(), err.toString());
        contains(err.toString(), "StackOverflowError");
    }

    @picocli.CommandLine.Command(name = "x")
    static final class Thrower implements java.util.concurrent.Callable<Integer> {
        @Override
        public Integer call() {
            throw new StackOverflowError("deep");
        }
    }

    @Test
    void backendAutoIsTheCpu() {
        try (KvChecksum b = BackendOption.open("auto", Main.commandLine())) {
            assertEquals("cpu", b.name());
        }
    }

    private static Path mkfifo(String name) throws Exception {
        Path p = tmp.resolve(name);
        Process mk = new ProcessBuilder("mkfifo", p.toString()).inheritIO().start();
        assertEquals(0, mk.waitFor(), "mkfifo");
        return p;
    }
}
