package io.kvchecksum.internal;

import io.kvchecksum.KvChecksum;

import java.util.ArrayList;
import java.util.List;

/**
 * For tests outside this package: the fast CPU backend with each choice of vector widths its selector
 * ({@link KernelSpecies#choose}) can make in this JVM, whatever CPU runs the tests, every request read through the
 * loops for memory (where the choices differ). Empty in a JVM without {@code jdk.incubator.vector}.
 */
public final class CpuChoices {
    private CpuChoices() {
    }

    /**
     * {@return one front per choice the selector can make at this JVM's preferred width: on an AVX-512 JVM both
     * {@code KernelSpecies.Streams}, at 256 bits the one}
     *
     * @param threads threads per call of each backend
     */
    public static List<KvChecksum> everyChoice(int threads) {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            return List.of();
        }
        List<KvChecksum> out = new ArrayList<>();
        for (KernelSpecies.Streams s : KernelSpecies.choices(KernelSpecies.S.vectorBitSize())) {
            out.add(KvChecksum.of(FastCpuBackend.withStreams(threads, s, 0)));
        }
        return out;
    }

    /**
     * {@return the in-cache paths besides the shipped one: every plan prepared from its first call (the shipped backend
     * prepares a plan on its second), and the loops before issue 28's in-cache work; empty without
     * {@code jdk.incubator.vector}}
     *
     * @param threads threads per call of each backend
     */
    public static List<KvChecksum> inCacheForms(int threads) {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            return List.of();
        }
        return List.of(KvChecksum.of(FastCpuBackend.inCache(threads, true)), KvChecksum.of(FastCpuBackend.inCache(threads, false)));
    }

    /**
     * {@return the verifying copy's other choices: the split over the pool before the split by layers (run ranges, each
     * over every group run by run), every copy through the loops for memory (the shipped backend takes them from
     * {@code PARALLEL_BYTES} on), and the in-cache loop's other choice for rows into HND (head by head, Intel's, or token
     * rows: {@code CpuCopy.HEADS_INTO_HND}), the loops for memory with the other stream width and parts
     * ({@code CpuCopy.NARROW_FROM_MEMORY}, {@code CpuCopy.EVEN_PARTS}) and the in-cache flat rows with the other
     * {@code CpuCopy.STEPPED_QUADS}; in a JVM without {@code jdk.incubator.vector} the latter is the scalar loop, as
     * shipped}
     *
     * @param threads threads per call of each backend
     */
    public static List<KvChecksum> copyChoices(int threads) {
        return List.of(KvChecksum.of(FastCpuBackend.runRangeCopy(threads)),
                KvChecksum.of(FastCpuBackend.withCopy(threads, new CpuCopy(CpuCopy.Split.LAYERS, 0))),
                KvChecksum.of(FastCpuBackend.withCopy(threads, new CpuCopy(CpuCopy.Split.LAYERS, FastCpuBackend.PARALLEL_BYTES,
                        !CpuCopy.HEADS_INTO_HND))),
                KvChecksum.of(FastCpuBackend.withCopy(threads, new CpuCopy(CpuCopy.Split.LAYERS, 0, CpuCopy.HEADS_INTO_HND,
                        !CpuCopy.NARROW_FROM_MEMORY, !CpuCopy.EVEN_PARTS))),
                KvChecksum.of(FastCpuBackend.withCopy(threads, new CpuCopy(CpuCopy.Split.LAYERS, FastCpuBackend.PARALLEL_BYTES,
                        CpuCopy.HEADS_INTO_HND, CpuCopy.NARROW_FROM_MEMORY, CpuCopy.EVEN_PARTS, !CpuCopy.STEPPED_QUADS))));
    }
}
