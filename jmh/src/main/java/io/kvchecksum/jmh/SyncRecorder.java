package io.kvchecksum.jmh;

import io.kvchecksum.KvChecksum;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts a backend's synchronizing driver calls (CUDA: stream/event synchronize, frees, allocations, blocking copies;
 * OpenCL: {@code clFinish}, {@code clWaitForEvents}), through the counting entry of the backend's module:
 * {@code io.kvchecksum.opencl.SyncCounting.open(String, LongAdder)} and
 * {@code io.kvchecksum.cuda.SyncCounting.open(int, LongAdder)}. They are looked up by reflection, so this module
 * keeps no compile-time dependency on the kernel modules; they live in the modules' test-jars (not in the production
 * jars), which the {@code gpu-backends} profile puts on the run-time class path with the modules.
 *
 * @param backend a backend opened through its module's counting entry
 * @param counter its count of synchronizing calls
 */
public record SyncRecorder(KvChecksum backend, LongAdder counter) {

    /** Synchronizing calls made so far by the recorded backend, from any thread. */
    long syncCalls() {
        return counter.sum();
    }

    /**
     * The backend of that name opened with its synchronizing calls counted, or {@code null} when its module offers
     * no counting entry (or is not on the class path); then the caller opens it plainly and reports the count as
     * missing, never as zero.
     *
     * @throws IllegalStateException when the module has the entry but the backend cannot run here (the reason, as
     *     {@link Backends#open} says it)
     */
    static SyncRecorder open(String name) {
        if (!Backends.ASYNC.contains(name)) {
            return null;
        }
        boolean cl = name.equals("opencl");
        String type = "io.kvchecksum." + name + ".SyncCounting";
        Method open;
        try {
            open = Class.forName(type).getMethod("open", cl ? String.class : int.class, LongAdder.class);
        } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
            return null;
        }
        LongAdder counter = new LongAdder();
        try {
            // OpenCL: the configured device; CUDA: device 0; as KvChecksums.byName does
            return new SyncRecorder((KvChecksum) open.invoke(null, cl ? null : 0, counter), counter);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw new IllegalStateException("backend " + name + " skipped: " + cause.getMessage(), cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(type + ".open is not accessible", e);
        }
    }
}
