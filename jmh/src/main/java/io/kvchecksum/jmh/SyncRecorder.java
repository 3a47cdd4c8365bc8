package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;

/**
 * Counts a backend's synchronizing driver calls (CUDA: stream/context/event synchronize, blocking copies; OpenCL:
 * {@code clFinish}, blocking reads and writes, {@code clWaitForEvents}), from the recording wrapper of the backend's
 * module.
 */
public interface SyncRecorder {

    /** Synchronizing calls made so far by the recorded backend, from any thread. */
    long syncCalls();

    /**
     * The recorder of {@code backend}, or {@code null} when its module offers none; then the benchmark reports the
     * count as missing, never as zero.
     */
    static SyncRecorder of(KvChecksum backend) {
        // The kernel modules' recording wrappers are looked up here once their API exists (see jmh/README.md).
        return null;
    }
}
