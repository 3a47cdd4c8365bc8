package io.kvchecksum.spi;

import io.kvchecksum.KvChecksum;

/**
 * How an optional backend module plugs into {@link io.kvchecksum.KvChecksums} without the core depending on it at
 * compile time. Modules register an implementation in {@code META-INF/services/io.kvchecksum.spi.BackendProvider}.
 */
public interface BackendProvider {

    /** The backend's name: {@code cuda}, {@code opencl}, ... */
    String name();

    /** Higher is preferred by {@link io.kvchecksum.KvChecksums#fastest()}. The CPU backend has 100. */
    int priority();

    /** Whether the backend can run here, and if not, why. Cheap enough to call more than once; may cache. */
    Availability availability();

    /**
     * A new instance.
     *
     * @throws io.kvchecksum.BackendUnavailableException with the reason when {@link #availability()} is not available
     */
    KvChecksum create();

    /** A backend's availability and, when unavailable, the reason in words. */
    record Availability(boolean available, String reason) {
        public static Availability yes(String detail) {
            return new Availability(true, detail);
        }

        public static Availability no(String reason) {
            return new Availability(false, reason);
        }
    }
}
