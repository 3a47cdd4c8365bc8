package io.kvchecksum.spi;

/**
 * How an optional backend module plugs into {@link io.kvchecksum.KvChecksums} without the core depending on it at
 * compile time. Modules register an implementation in {@code META-INF/services/io.kvchecksum.spi.BackendProvider}.
 */
public interface BackendProvider {
    /** The priorities of every backend, in one place: {@link io.kvchecksum.KvChecksums#fastest()} prefers higher. */
    int CUDA_PRIORITY = 300;
    /** OpenCL on a GPU. */
    int OPENCL_GPU_PRIORITY = 200;
    /** The Java CPU backend; {@code fastest()} considers only providers above it and falls back to it. */
    int CPU_PRIORITY = 100;
    /** OpenCL on a CPU device: below the Java CPU backend, which needs no copy. */
    int OPENCL_CPU_PRIORITY = 90;

    /** {@return the backend's name: {@code cuda}, {@code opencl}, ...} */
    String name();

    /**
     * {@return the backend's priority, one of the {@code *_PRIORITY} constants} Higher is preferred by
     * {@link io.kvchecksum.KvChecksums#fastest()}.
     */
    int priority();

    /** {@return whether the backend can run here, and if not, why} Cheap enough to call more than once; may cache. */
    Availability availability();

    /**
     * {@return a new instance; {@link io.kvchecksum.KvChecksums} wraps it in the front, {@link io.kvchecksum.KvChecksum#of}}
     *
     * @throws io.kvchecksum.BackendUnavailableException with the reason when {@link #availability()} is not available
     */
    Backend create();

    /**
     * A backend's availability and, when unavailable, the reason in words.
     *
     * @param available whether the backend can run here
     * @param reason why not when unavailable; when available, a detail such as the device's name (may be null)
     */
    record Availability(boolean available, String reason) {
        /**
         * An available backend.
         *
         * @param detail what was found (e.g. the device), kept as {@link #reason()}; may be null
         * @return the availability
         */
        public static Availability yes(String detail) {
            return new Availability(true, detail);
        }

        /**
         * An unavailable backend.
         *
         * @param reason why it cannot run here, in words a user can act on
         * @return the availability
         */
        public static Availability no(String reason) {
            return new Availability(false, reason);
        }
    }
}
