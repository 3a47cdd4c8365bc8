package io.kvchecksum.internal;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.RequestBlocks;

/** Argument checks shared by the backends; every one runs before any KV byte is read. */
public final class Checks {
    private Checks() {
    }

    /** The request fits the group, and (for CPU backends) every region is host memory. */
    public static void validate(KvCacheGroup group, RequestBlocks request, String backend, boolean hostOnly) {
        if (group == null || request == null) {
            throw new InvalidLayoutException("group and request must not be null");
        }
        request.validateAgainst(group);
        if (hostOnly) {
            for (CacheLayer l : group.layers()) {
                requireHost(l.k().memory(), backend, l.layer(), "K");
                if (l.v() != null) {
                    requireHost(l.v().memory(), backend, l.layer(), "V");
                }
            }
        }
    }

    private static void requireHost(KvMemory m, String backend, int layer, String kind) {
        if (!(m instanceof KvMemory.Host)) {
            throw new InvalidLayoutException("backend '" + backend + "' reads host memory only, but layer " + layer + " "
                    + kind + " region is " + m);
        }
    }
}
