package io.kvchecksum.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/** Tasks of one call run on the CPU backend's pool and joined on the calling thread. */
final class PoolCalls {
    private PoolCalls() {
    }

    /**
     * Runs {@code calls} on {@code pool} and waits for all of them. A task's runtime exception is rethrown as it was
     * (another cause wrapped); an interrupt of the waiting thread is kept and reported.
     *
     * @param doing what the tasks do, for the interrupt's message ("checksumming", ...)
     * @return each call's result, in the order of {@code calls}
     */
    static <T> List<T> invokeAll(ExecutorService pool, List<? extends Callable<T>> calls, String doing) {
        try {
            List<Future<T>> done = pool.invokeAll(calls);
            List<T> results = new ArrayList<>(done.size());
            for (Future<T> f : done) {
                results.add(f.get());
            }
            return results;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while " + doing, e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
    }
}
