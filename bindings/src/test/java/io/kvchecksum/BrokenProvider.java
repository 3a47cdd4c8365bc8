package io.kvchecksum;

import io.kvchecksum.internal.FastCpuBackend;
import io.kvchecksum.spi.Backend;
import io.kvchecksum.spi.BackendLimits;
import io.kvchecksum.spi.BackendProvider;

import java.util.OptionalLong;

/**
 * A provider registered for the tests only: it says it is available, ranks above the CPU backend, and computes
 * wrong checksums (off by one), so {@code fastest()} must skip it and {@code status()} must say why.
 */
public final class BrokenProvider implements BackendProvider {
    @Override
    public String name() {
        return "broken";
    }

    @Override
    public int priority() {
        return CPU_PRIORITY + 50;
    }

    @Override
    public Availability availability() {
        return Availability.yes("test backend that computes wrong checksums");
    }

    @Override
    public Backend create() {
        Backend cpu = new FastCpuBackend(1);
        return new Backend() {
            @Override
            public String name() {
                return "broken";
            }

            @Override
            public String description() {
                return "broken (off by one)";
            }

            @Override
            public BackendLimits limits() {
                return cpu.limits();
            }

            @Override
            public PendingChecksums run(CompiledPlan plan, CompiledPlan.Output output, OptionalLong stream) {
                long[] v = cpu.run(plan, output, stream).get();
                for (int i = 0; i < v.length; i++) {
                    v[i]++;
                }
                return PendingChecksums.completed(v);
            }

            @Override
            public long pageDigest(PageDigestPlan plan) {
                return cpu.pageDigest(plan);
            }

            @Override
            public void close() {
            }
        };
    }
}
