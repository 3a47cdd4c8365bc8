package io.kvchecksum;

import io.kvchecksum.spi.BackendProvider;

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
    public KvChecksum create() {
        KvChecksum cpu = KvChecksums.cpu(1);
        return new KvChecksum() {
            @Override
            public String name() {
                return "broken";
            }

            @Override
            public String description() {
                return "broken (off by one)";
            }

            @Override
            public long[] blockChecksums(SlicePlan plan) {
                long[] v = cpu.blockChecksums(plan);
                for (int i = 0; i < v.length; i++) {
                    v[i]++;
                }
                return v;
            }

            @Override
            public SliceSums sliceSums(SlicePlan plan) {
                return cpu.sliceSums(plan);
            }
        };
    }
}
