package io.kvchecksum.internal;

import io.kvchecksum.spi.CpuModel;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

import java.util.List;

/**
 * The vector widths of the CPU backend's Vector API loops, chosen once per JVM from data, never from a setting; loaded
 * only where the JVM has {@code jdk.incubator.vector}.
 *
 * <p>The loops run at the JVM's preferred width ({@code LongVector.SPECIES_PREFERRED}: 512 bits with AVX-512, 256 with
 * AVX2, or where the JVM is started with {@code -XX:UseAVX=2}). On AMD family 25 (Zen 4, by {@code /proc/cpuinfo})
 * with a preferred width over 256 bits, MLA's contiguous streams read from memory run at 256 bits instead
 * ({@link Streams#NARROW}): there a 512-bit load is two 256-bit halves, and a plain 512-bit read loop runs at about
 * half the rate of a 256-bit one from memory on one core (11 against 21 GB/s), while in cache the 512-bit loops are the
 * faster ones; MLA bf16 at 4x LLC read 0.885 of the bound with it against 0.764 with every loop at 512 bits
 * (docs/bench-cpu.md, "What limits the ratios"). Llama-3-8B's 2 KiB rows of side-by-side heads from memory likewise
 * ({@code VectorSliceKernel.rowPass256}: medians 1.11-1.18 of the 512-bit row pass's, docs/bench-cpu.md, "Side-by-side
 * heads from memory"). On AMD family 26 (Zen 5) with AVX-512 the same choice measured faster for both: the 2 KiB rows
 * 1.10-1.28x (medians) and MLA bf16's streams 1.05-1.14x from memory (256 MiB and 1 GiB, 2 threads; docs/bench-cpu.md,
 * "The width of MLA's streams on Zen 5"). On Intel (family 6, Emerald Rapids) with AVX-512 both read faster at 512 bits
 * from memory in the same A/B (1 GiB, 2 threads, a loaded machine; medians 0.75-0.80 of the bound against 0.64-0.69
 * for the 2 KiB rows, 0.80 against 0.69 for MLA's streams; docs/bench-cpu.md, "On Intel (Emerald Rapids): the fused
 * pass"), so Intel takes {@link Streams#PREFERRED}. Tests give the kernels each choice through
 * {@link VectorSliceKernel#VectorSliceKernel(Streams)} and {@code FastCpuBackend.withStreams}.
 */
final class KernelSpecies {
    /** The species of the standard and the mixed kernels: the JVM's preferred one. */
    static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;

    /** Whether the JVM has AVX-512's 32 vector registers. */
    static final boolean WIDE_REGISTER_FILE = S.vectorBitSize() >= 512;

    /**
     * How the standard kernel reads contiguous streams from memory, and why, for the backend's description.
     *
     * @param narrow whether contiguous streams and 2 KiB rows of side-by-side heads read from memory use 256-bit vectors
     *         while the other loops use {@link #S}
     * @param why the reason, as the backend's description gives it
     */
    record Streams(boolean narrow, String why) {
        /** Every loop at the preferred width. */
        static final Streams PREFERRED = new Streams(false, "preferred width");
        /**
         * The choice on AMD families 25 and 26 (Zen 4, Zen 5) with AVX-512: MLA streams and 2 KiB rows of side-by-side
         * heads from memory at 256 bits.
         */
        static final Streams NARROW = new Streams(true,
                "preferred width; MLA streams and 2 KiB head rows from memory 256-bit (AMD family 25 or 26)");
    }

    /** The choice for this JVM on this CPU. */
    static final Streams CHOSEN = choose(S.vectorBitSize(), CpuModel.cpuinfo());

    /**
     * Whether a whole cell's block read from memory as one stream without V (DeepSeek MLA's latent rows) takes its two
     * halves in lockstep ({@code VectorSliceKernel.streamHalves}) rather than one stream: with AVX-512's registers
     * (AMD's families 25 and 26 read such streams at 256 bits, {@link Streams#NARROW}, before this choice applies),
     * and on Intel at 256 bits too, where its twelve sums and two live loads fit AVX2's sixteen registers: DeepSeek MLA
     * bf16 at 1 GiB read 1.02-1.05x the one stream's median at 512 bits and 1.09-1.11x with {@code -XX:UseAVX=2}
     * (docs/bench-cpu.md, "Two streams a block"). Other CPUs at 256 bits are unmeasured and keep one stream.
     */
    static final boolean STREAM_HALVES = streamHalves(S.vectorBitSize(), CpuModel.cpuinfo());

    /**
     * {@return whether {@link #STREAM_HALVES} holds at {@code preferredBits} on the CPU {@code cpuinfo} names}
     *
     * @param preferredBits the JVM's preferred vector width
     * @param cpuinfo the first lines of {@code /proc/cpuinfo} (empty where it cannot be read)
     */
    static boolean streamHalves(int preferredBits, List<String> cpuinfo) {
        return preferredBits >= 512 || CpuModel.intel(cpuinfo);
    }

    /**
     * How many streams of the block the mixed kernel reads in lockstep for 2 KiB rows at 512 bits from memory: four
     * ({@code MixedVectorSliceKernel.rowFour}) on Intel (family 6, Emerald Rapids), where the mixer's cycles add to
     * the misses' and more streams overlap them (two: 1.20-1.30x one stream; four: 1.09-1.13x two, medians;
     * docs/bench-cpu.md, "On Intel (Emerald Rapids): two streams every tier compiles" and "... four streams"); one
     * ({@code rowRegs}) elsewhere, as measured on AMD before. Two ({@code rowTwo}) is not chosen on any CPU; tests and
     * A/B runs still run it, and {@code rowFour} takes it for a block's last {@code n % 4} tokens.
     */
    static final int MIXED_STREAMS = mixedStreams(CpuModel.cpuinfo());

    /**
     * {@return how many streams the mixed kernel's 2 KiB rows take on the CPU {@code cpuinfo} names: 4 on Intel, else 1}
     *
     * @param cpuinfo the first lines of {@code /proc/cpuinfo} (empty where it cannot be read)
     */
    static int mixedStreams(List<String> cpuinfo) {
        return CpuModel.intel(cpuinfo) ? 4 : 1;
    }

    /**
     * {@return every choice {@link #mixedStreams} makes on the CPUs {@link #choices} tells apart, without repeats}
     * For tests that run each choice on whatever CPU runs them (the choice only matters at 512 bits).
     */
    static List<Integer> mixedChoices() {
        return CPUS.stream().map(KernelSpecies::mixedStreams).distinct().toList();
    }

    /** The CPUs the selectors tell apart, as {@code /proc/cpuinfo} names them: AMD families 25 and 26, Intel. */
    private static final List<List<String>> CPUS = List.of(
            List.of("vendor_id\t: AuthenticAMD", "cpu family\t: 25"),
            List.of("vendor_id\t: AuthenticAMD", "cpu family\t: 26"),
            List.of("vendor_id\t: GenuineIntel", "cpu family\t: 6"));

    private KernelSpecies() {
    }

    /**
     * {@return {@link Streams#NARROW} on AMD families 25 and 26 where the preferred width is over 256 bits, else
     * {@link Streams#PREFERRED}}
     *
     * @param preferredBits the JVM's preferred vector width
     * @param cpuinfo the first lines of {@code /proc/cpuinfo} (empty where it cannot be read)
     */
    static Streams choose(int preferredBits, List<String> cpuinfo) {
        return preferredBits > 256 && (CpuModel.amdFamily(cpuinfo, 25) || CpuModel.amdFamily(cpuinfo, 26))
                ? Streams.NARROW : Streams.PREFERRED;
    }

    /**
     * {@return every choice {@link #choose} makes at {@code preferredBits} on the CPUs it tells apart (AMD families 25
     * and 26, anything else), without repeats} For tests that run each choice on whatever CPU runs them: a CPU the
     * selector learns to tell apart is added here, next to {@link #choose}, not in each test.
     *
     * @param preferredBits the JVM's preferred vector width
     */
    static List<Streams> choices(int preferredBits) {
        return CPUS.stream().map(cpuinfo -> choose(preferredBits, cpuinfo)).distinct().toList();
    }
}
