package io.kvchecksum.internal;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The vector widths of the CPU backend's Vector API loops, chosen once per JVM; loaded only where the JVM has
 * {@code jdk.incubator.vector}.
 *
 * <p>The loops run at the JVM's preferred width. On AMD family 25 (Zen 4) with AVX-512, MLA's contiguous streams read
 * from memory run at 256 bits instead ({@link #NARROW_STREAMS}): there a 512-bit load is two 256-bit halves, and a
 * plain 512-bit read loop runs at about half the rate of a 256-bit one from memory on one core (11 against 21 GB/s),
 * while in cache the 512-bit loops are the faster ones (docs/bench-cpu.md). {@code -Dkvchecksum.cpu.vectorBits=256} or
 * {@code 512} sets one width for every loop (512 only where the JVM prefers it).
 */
final class KernelSpecies {
    /** The species of the standard and the mixed kernels. */
    static final VectorSpecies<Long> S;
    /** Whether contiguous streams read from memory use 256-bit vectors while the other loops use {@link #S}. */
    static final boolean NARROW_STREAMS;
    /** Why the widths are what they are, for the backend's description. */
    static final String WHY;

    static {
        VectorSpecies<Long> preferred = LongVector.SPECIES_PREFERRED;
        String asked = System.getProperty("kvchecksum.cpu.vectorBits", "").trim();
        if (asked.equals("256") || asked.equals("512")) {
            boolean supported = preferred.vectorBitSize() >= Integer.parseInt(asked);
            S = asked.equals("256") && supported ? LongVector.SPECIES_256 : preferred;
            NARROW_STREAMS = false;
            WHY = "kvchecksum.cpu.vectorBits=" + asked + (supported ? "" : " unsupported here: preferred width");
        } else if (preferred.vectorBitSize() > 256 && zen4()) {
            S = preferred;
            NARROW_STREAMS = true;
            WHY = "preferred width; MLA streams from memory 256-bit (AMD family 25)";
        } else {
            S = preferred;
            NARROW_STREAMS = false;
            WHY = "preferred width";
        }
    }

    /** Whether the JVM has AVX-512's 32 vector registers, whatever the width of {@link #S}. */
    static final boolean WIDE_REGISTER_FILE = LongVector.SPECIES_PREFERRED.vectorBitSize() >= 512;

    private KernelSpecies() {
    }

    /** AMD family 25 by {@code /proc/cpuinfo} (Linux); false wherever that cannot be read. */
    private static boolean zen4() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().limit(40).toList();
            return lines.stream().anyMatch(l -> l.matches("vendor_id\\s*:\\s*AuthenticAMD"))
                    && lines.stream().anyMatch(l -> l.matches("cpu family\\s*:\\s*25"));
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
