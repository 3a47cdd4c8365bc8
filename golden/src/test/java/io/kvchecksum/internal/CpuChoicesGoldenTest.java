package io.kvchecksum.internal;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.golden.CopySuite;
import io.kvchecksum.golden.GoldenSuite;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every golden vector through the fast CPU backend with each choice of vector widths its selector
 * ({@link KernelSpecies#choose}) can make in this JVM, on whatever CPU runs the tests: 256-bit MLA streams and 2 KiB
 * head rows from memory (AMD families 25 and 26 with AVX-512)
 * and every loop at the preferred width (elsewhere), each as the
 * backend ships it and with every vector read through the loops for memory (where the choices differ; the vectors are
 * far smaller than the {@link FastCpuBackend#PARALLEL_BYTES} from which the shipped backend takes them). The width
 * itself is the JVM's: this module's {@code vector-avx2} execution runs the suite again with {@code -XX:UseAVX=2}. The
 * in-cache path runs twice more: with every plan in its prepared form from the first call (the shipped backend prepares
 * a plan on its second call, and the suite runs each plan once) and as before issue 28's in-cache work. The verifying
 * copy's vectors run through the copy's loops for memory as well ({@link #copyThroughTheLoopsForMemory}). At 512 bits
 * with AVX-512's registers the mixed mode's 2 KiB rows from memory run in each choice of
 * {@link KernelSpecies#mixedStreams} (one stream; four, on Intel).
 *
 * <p>In package {@code io.kvchecksum.internal} to reach the test-only {@link FastCpuBackend#withStreams}.
 */
class CpuChoicesGoldenTest {
    @TestFactory
    Stream<DynamicNode> everyChoiceOfTheSelector() {
        assertTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(),
                "the golden tests run with jdk.incubator.vector (the parent pom's argLine)");
        List<DynamicNode> nodes = new ArrayList<>();
        for (KernelSpecies.Streams s : KernelSpecies.choices(KernelSpecies.S.vectorBitSize())) {
            for (long streamingBytes : new long[] {FastCpuBackend.PARALLEL_BYTES, 0}) {
                KvChecksum cpu = KvChecksum.of(FastCpuBackend.withStreams(1, s, streamingBytes));
                String name = cpu.description() + (streamingBytes == 0 ? ", every vector read as from memory" : "");
                nodes.add(DynamicContainer.dynamicContainer(name, GoldenSuite.tests(cpu)));
            }
        }
        if (MixedVectorSliceKernel.regsRow(8, 32, 64)) {
            // the mixed mode's 2 KiB rows from memory at 512 bits in one stream and in four (the shipped choice on
            // Intel; its last n % 4 tokens in two)
            for (int streams : KernelSpecies.mixedChoices()) {
                KvChecksum cpu = KvChecksum.of(FastCpuBackend.withMixedStreams(1, streams, 0));
                String name = cpu.description() + ", every vector read as from memory, the mixed mode's 2 KiB rows in "
                        + (streams == 1 ? "one stream" : streams + " streams");
                nodes.add(DynamicContainer.dynamicContainer(name, GoldenSuite.tests(cpu)));
            }
        }
        for (boolean prepared : new boolean[] {true, false}) {
            KvChecksum cpu = KvChecksum.of(FastCpuBackend.inCache(1, prepared));
            String name = cpu.description() + (prepared ? ", every plan prepared on its first call"
                    : ", the in-cache loops before issue 28's in-cache work");
            nodes.add(DynamicContainer.dynamicContainer(name, GoldenSuite.tests(cpu)));
        }
        return nodes.stream();
    }

    /**
     * NumPy's verifying-copy vectors ({@code vectors-copy/}, with the in-place ones staged) through the copy's loops for
     * memory ({@code VectorCopyLoop} without flat streams: {@code multiplyRows} at 512 bits, {@code rowsOfUnits} at 256,
     * this module's {@code vector-avx2} execution), which the shipped backend takes only from
     * {@link FastCpuBackend#PARALLEL_BYTES} on, far above these vectors' sizes: here every copy takes them
     * ({@link CpuCopy}'s {@code fromMemoryBytes} 0), with contiguous streams (MLA) at both of the loops' widths
     * ({@code CpuCopy.NARROW_FROM_MEMORY} and its other choice). {@code CpuCopyTest} runs the same vectors through the
     * in-cache loops.
     */
    @TestFactory
    Stream<DynamicNode> copyThroughTheLoopsForMemory() {
        return Stream.of(true, false).map(narrow -> {
            KvChecksum cpu = KvChecksum.of(FastCpuBackend.withCopy(1, new CpuCopy(CpuCopy.Split.LAYERS, 0,
                    CpuCopy.HEADS_INTO_HND, narrow, CpuCopy.EVEN_PARTS)));
            return DynamicContainer.dynamicContainer(cpu.description(),
                    Stream.concat(CopySuite.tests(cpu), CopySuite.inPlaceFaults(cpu)));
        });
    }
}
