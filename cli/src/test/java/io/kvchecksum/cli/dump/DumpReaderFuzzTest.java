package io.kvchecksum.cli.dump;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzzing of the dump readers (safetensors header, {@code .npy} header, {@code .npz} zip directory and
 * inflation) and of {@link KvDump} over what they return, with Jazzer. The property, as for the payload decoder: a
 * dump is read and described, its tensors lie inside the file, and a checksum over it runs; or
 * {@link InvalidInputException} says what is wrong in one line. Any other exception (an index out of bounds, an
 * arithmetic overflow, an {@code OutOfMemoryError}) is a finding.
 *
 * <p>An input is one selector byte (0 safetensors, 1 {@code .npy}, 2 {@code .npz}: the file's name ends so), one
 * layout byte (an index into {@link KvDump#LAYOUTS}), then the file's bytes. The seeds in
 * {@code src/test/resources/io/kvchecksum/cli/dump/DumpReaderFuzzTestInputs/readDump/} are valid small dumps of each
 * kind. {@code mvn test} replays them and kept findings, then fuzzes for {@code maxDuration} (the cli's surefire
 * configuration sets {@code JAZZER_FUZZ}; {@code -Djazzer.fuzz=0} only replays). A finding fails the build and
 * Jazzer writes it as {@code crash-<sha1>} into that directory: commit it and it stays a regression test.
 */
class DumpReaderFuzzTest {
    private static final String SEEDS = "DumpReaderFuzzTestInputs/readDump/";
    private static final String[] SUFFIX = {".safetensors", ".npy", ".npz"};

    /** The dumps checksummed: small enough that the fuzzer's executions stay fast. */
    private static final long MAX_CHECKSUM_BYTES = 1 << 20;

    private static final KvChecksum REFERENCE = KvChecksums.reference();

    @FuzzTest(maxDuration = "20s")
    void readDump(byte[] input) throws IOException {
        if (input.length < 2) {
            return;
        }
        String suffix = SUFFIX[Byte.toUnsignedInt(input[0]) % SUFFIX.length];
        String layout = KvDump.LAYOUTS.get(Byte.toUnsignedInt(input[1]) % KvDump.LAYOUTS.size());
        Path file = write(input, suffix);
        try {
            read(file, layout, HexFormat.of().formatHex(input, 0, Math.min(input.length, 64)));
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(file.getParent());
        }
    }

    /** The file's bytes in a fresh directory, named {@code layers.0.k} (a lone .npy is the tensor of its name). */
    private static Path write(byte[] input, String suffix) throws IOException {
        Path file = Files.createTempDirectory("kvchecksum-fuzz-").resolve("layers.0.k" + suffix);
        Files.write(file, Arrays.copyOfRange(input, 2, input.length));
        return file;
    }

    /** Reads one dump file; returns whether it was a valid dump for {@code layout}. */
    static boolean read(Path file, String layout, String what) {
        try (DumpFile f = DumpFile.open(file)) {
            for (Tensor t : f.tensors().values()) {
                assertTrue(t.data().byteSize() == Tensor.numel(t.shape(), t.name()) * t.dtype().size(), what + ": " + t);
            }
            KvDump d = KvDump.of(f, new KvDump.Options(layout, 16, null, 0, 0));
            assertNotNull(d.describe());
            if (d.skipReason() != null) {
                // cells that are not whole pieces: a skipped group with its reason, nothing to checksum
                assertTrue(d.skipReason().contains("not whole 8-byte pieces"), what + ": " + d.skipReason());
            } else if (d.kvBytes() <= MAX_CHECKSUM_BYTES) {
                assertEquals(d.request().numBlocks(), REFERENCE.blockChecksums(d.group(), d.request()).length, what);
                if (d.sglang() != null) {
                    assertNotNull(d.sglang().digest(REFERENCE, 0, d.request().numTokens()), what);
                }
            }
            return true;
        } catch (InvalidInputException e) {
            assertNotNull(e.getMessage(), what);
            assertFalse(e.getMessage().isBlank(), what);
            return false;
        }
    }

    /** Every seed is a valid dump, or the fuzzer would start from rejected inputs only. */
    @Test
    void seedsAreValidDumps() throws IOException {
        Path dir = Path.of("src/test/resources/io/kvchecksum/cli/dump").resolve(SEEDS);
        List<Path> seeds;
        try (Stream<Path> files = Files.list(dir)) {
            seeds = files.filter(f -> f.getFileName().toString().startsWith("seed-")).sorted().toList();
        }
        assertEquals(6, seeds.size(), "seeds in " + dir);
        for (Path s : seeds) {
            byte[] input;
            try (InputStream in = getClass().getResourceAsStream(SEEDS + s.getFileName())) {
                input = in.readAllBytes();
            }
            Path file = write(input, SUFFIX[input[0]]);
            try {
                assertTrue(read(file, KvDump.LAYOUTS.get(input[1]), s.toString()), s + " is not a valid dump");
            } finally {
                Files.deleteIfExists(file);
                Files.deleteIfExists(file.getParent());
            }
        }
    }
}
