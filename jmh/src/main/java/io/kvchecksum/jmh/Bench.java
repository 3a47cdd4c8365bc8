package io.kvchecksum.jmh;

import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.TimeUnit;

/**
 * What every benchmark here shares: the run settings (JMH reads these class annotations from the superclass) and the
 * flags every forked JVM needs (constants, so that annotations and the suite share them), the
 * resources a trial's set-up opens, closed at its end in reverse order, and the checks set-up makes before timing.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {Bench.VECTOR, Bench.NATIVE, Bench.HEAP})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public abstract class Bench {
    /** The fast CPU backend's Vector API loop; without it the backend silently runs its scalar fallback. */
    static final String VECTOR = "--add-modules=jdk.incubator.vector";
    /** The GPU backends call native drivers (JNA, JOCL, FFM). */
    static final String NATIVE = "--enable-native-access=ALL-UNNAMED";
    /** The KV lives off-heap in arenas; the heap holds only tables and results. */
    static final String HEAP = "-Xmx2g";

    private final Deque<AutoCloseable> open = new ArrayDeque<>();

    /** {@return {@code c}, closed at the trial's end, before everything registered earlier} */
    protected final <T extends AutoCloseable> T closing(T c) {
        open.push(c);
        return c;
    }

    @TearDown(Level.Trial)
    public final void closeAll() throws Exception {
        while (!open.isEmpty()) {
            open.pop().close();
        }
    }

    /** Fails set-up with {@code message} unless {@code ok}: a wrong result fails the benchmark instead of timing it. */
    static void check(boolean ok, String message) {
        if (!ok) {
            throw new IllegalStateException(message);
        }
    }
}
