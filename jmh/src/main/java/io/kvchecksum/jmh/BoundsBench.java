package io.kvchecksum.jmh;

import io.kvchecksum.bench.MemoryBound;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The memory bounds on exactly the bytes {@link ChecksumBench} checksums for the same shape and size (the same
 * fixture: same seed, same pages): {@code read} reads every byte with one {@link MemoryBound.Reader} (the suite runs
 * each and takes the fastest as the read bound), {@code copy} copies every byte.
 *
 * <p>Both use the threads the CPU backend uses at that size (all cores from 4 MiB, the calling thread below). GB/s is
 * {@code kvBytes / score} for both; a copy also writes as many bytes as it reads.
 */
@State(Scope.Benchmark)
public class BoundsBench extends Bench {
    /** A {@link ModelShape#id()}. */
    @Param({"llama3-8b-tp1", "llama3-70b-tp8", "deepseek-mla-bf16", "deepseek-mla-fp8"})
    public String shape;

    /** Tokens, or a KV size rounded to whole 16-token blocks; see {@link ModelShape#tokens}. */
    @Param({"1MiB", "4xLLC"})
    public String size;

    /** A {@link MemoryBound.Reader#id()}; one that does not run in this JVM fails set-up with the reason. */
    @Param({"vector", "vector256", "scalar", "native"})
    public String reader;

    /** Threads; 0 means the machine's cores, as the CPU backend {@code KvChecksums.cpu()} uses. */
    @Param({"0"})
    public int threads;

    private MemoryBound bound;
    private MemoryBound.Reader how;
    private long loop;

    /**
     * The loop the reader ran, as a JMH secondary result {@code loopBits}: the vector width in bits ({@code vector}:
     * the JVM's preferred width; {@code vector256}: 256), 0 for {@code scalar}, -1 for {@code native} (the C library's
     * own loop).
     */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Loop {
        /** The reader's loop: {@link Backends#loopBits}'s numbers. */
        public long loopBits;
    }

    /** {@return the vector width in bits of a reader's loop, 0 for the scalar one, -1 for the native one} */
    static long loopBits(MemoryBound.Reader r) {
        return switch (r) {
            case VECTOR -> Preferred.BITS;
            case VECTOR256 -> 256;
            case SCALAR -> 0;
            case NATIVE -> -1;
        };
    }

    /** Loaded only where the Vector API module is present (the vector readers are unavailable otherwise). */
    private static final class Preferred {
        static final long BITS = jdk.incubator.vector.LongVector.SPECIES_PREFERRED.vectorBitSize();
    }

    @Setup(Level.Trial)
    public void setUp() {
        KvFixture fx = closing(KvFixture.of(shape, size));
        int t = threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
        how = MemoryBound.Reader.of(reader);
        check(how.unavailable() == null, "reader " + reader + " skipped: " + how.unavailable());
        bound = closing(new MemoryBound(fx.segments(), t));
        long expected = how == MemoryBound.Reader.NATIVE ? 0 : bound.readScalar();
        long got = bound.read(how);
        check(got == expected, "read bound: " + reader + " reader returned " + Long.toUnsignedString(got)
                + ", expected " + Long.toUnsignedString(expected));
        bound.verifyCopy();
        loop = loopBits(how);
        System.out.println("# read bound reader " + reader + ": loop "
                + (how == MemoryBound.Reader.NATIVE ? "the C library's memcmp" : Backends.loopName(loop)) + ", "
                + (bound.parallel() ? t + " threads" : "the calling thread") + "; case " + shape + " "
                + ModelShape.of(shape).at(size).label(size) + ", " + fx.kvBytes() + " bytes");
    }

    /** Reads every KV byte once with one reader: the fastest reader is the speed limit of any checksum of it. */
    @Benchmark
    public long read(Loop named) {
        named.loopBits = loop;
        return bound.read(how);
    }

    /** Copies every KV byte once: what a transfer's staging copy costs, for scale. */
    @Benchmark
    public long copy() {
        return bound.copy();
    }
}
