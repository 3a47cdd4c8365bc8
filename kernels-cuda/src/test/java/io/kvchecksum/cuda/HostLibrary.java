package io.kvchecksum.cuda;

import com.sun.jna.Library;
import com.sun.jna.Native;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The host test library ({@code src/test/cuda/kvchecksum_host.cu}, built by nvcc into target/native): the kernels'
 * shared {@code __host__ __device__} arithmetic, run on the CPU.
 */
interface HostLibrary extends Library {
    /** One simulated cuLaunchKernel; {@code params} is the address of the kernel's parameter struct. */
    int kvc_emulate(String kernel, int gx, int gy, int gz, int bx, int by, int bz, long params);

    long kvc_abi(int which);

    long kvc_factor_host(int layer, int head);

    /**
     * What the staging phases of the emulated checksum kernels copied since the last call, then reset: {@code out[0]}
     * page ids, {@code out[1]} 8-byte words of slice descriptors.
     */
    void kvc_stage_counts(long[] out);

    /**
     * The whole-piece walk's batches of the emulated checksum kernels since the last call, then reset: {@code out[0]}
     * loads that were on (not past the block's tokens or the walk's last slice), {@code out[1]} batches of a lane. Their
     * ratio is how many of a batch's {@code KVC_BATCH_SLOTS} loads a lane has in flight at run time.
     */
    void kvc_batch_counts(long[] out);

    /**
     * The library, or a test abort naming why: built with {@code -Dkvchecksum.skipCuda=true}. If the build was not
     * told to skip CUDA, a missing library is a build failure and the test fails.
     */
    static HostLibrary load() {
        String path = System.getProperty("kvchecksum.cuda.hostlib", "target/native/libkvchecksum_host.so");
        boolean skipped = Boolean.getBoolean("kvchecksum.skipCuda");
        if (!Files.isRegularFile(Path.of(path))) {
            assumeTrue(!skipped, "the host test library was not built (-Dkvchecksum.skipCuda=true): " + path);
            fail("the host test library " + path + " is missing although CUDA was not skipped: the nvcc step of the build did not run");
        }
        return Holder.get(path);
    }

    final class Holder {
        private static HostLibrary lib;

        private Holder() {
        }

        static synchronized HostLibrary get(String path) {
            if (lib == null) {
                lib = Native.load(Path.of(path).toAbsolutePath().toString(), HostLibrary.class);
            }
            return lib;
        }
    }
}
