package io.kvchecksum.cuda;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/** Test layouts moved to other memory: the tests' host layouts placed in (simulated or real) device memory. */
final class Relocation {
    private Relocation() {
    }

    /** The same layout with every region's memory mapped through {@code f} (offsets and strides unchanged). */
    static KvCacheGroup relocate(KvCacheGroup g, UnaryOperator<KvMemory> f) {
        List<CacheLayer> layers = new ArrayList<>();
        for (CacheLayer l : g.layers()) {
            layers.add(new CacheLayer(l.layer(), l.firstHead(), l.numHeads(), relocate(l.k(), f), l.v() == null ? null : relocate(l.v(), f)));
        }
        return new KvCacheGroup(layers, g.pageSize(), g.numPages());
    }

    private static KvRegion relocate(KvRegion r, UnaryOperator<KvMemory> f) {
        return new KvRegion(f.apply(r.memory()), r.offset(), r.pageStride(), r.tokenStride(), r.headStride(), r.cellBytes());
    }
}
