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
 */
public interface SyncRecorder {

    /** Synchronizing calls made so far by the recorded backend, from any thread. */
    long syncCalls();

    /** A backend opened through its module's counting entry, and its count. */
    record Counted(KvChecksum backend, LongAdder counter) implements SyncRecorder {
        @Override
        public long syncCalls() {
            return counter.sum();
        }
    }

    /**
     * The backend of that name opened with its synchronizing calls counted, or {@code null} when its module offers
     * no counting entry (or is not on the class path); then the caller opens it plainly and reports the count as
     * missing, never as zero.
     *
     * @throws IllegalStateException when the module has the entry but the backend cannot run here (the reason, as
     *     {@link Backends#open} says it)
     */
    static Counted open(String name) {
        String type;
        Class<?> specType;
        Object spec;
        switch (name) {
            case "opencl" -> {
                type = "io.kvchecksum.opencl.SyncCounting";
                specType = String.class;
                spec = null;  // the configured device, as KvChecksums.byName("opencl")
            }
            case "cuda" -> {
                type = "io.kvchecksum.cuda.SyncCounting";
                specType = int.class;
                spec = 0;     // device 0, as KvChecksums.byName("cuda")
            }
            default -> {
                return null;
            }
        }
        Method open;
        try {
            open = Class.forName(type).getMethod("open", specType, LongAdder.class);
        } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
            return null;
        }
        LongAdder counter = new LongAdder();
        try {
            return new Counted((KvChecksum) open.invoke(null, spec, counter), counter);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw new IllegalStateException("backend " + name + " skipped: " + cause.getMessage(), cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(type + ".open is not accessible", e);
        }
    }
}
