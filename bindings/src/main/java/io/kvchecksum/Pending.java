package io.kvchecksum;

import java.util.Objects;
import java.util.function.Function;

/**
 * A result that may still be computing: what the stream-ordered auxiliary operations return
 * ({@link KvChecksum#submitSliceSums}, {@link KvChecksum#submitPageDigest}; {@link PageProbe#submit} returns its own
 * {@link PageProbe.PendingProbes}). On a GPU backend the work is enqueued on the caller's stream and the call returns
 * without waiting for the device; only {@link #get()} waits. CPU backends compute on the calling thread and return
 * completed results.
 *
 * <p>Not thread-safe: one thread waits and reads. {@link #close()} releases what the computation holds (pinned
 * buffers, events) and must be called once the value is no longer needed, or after {@code get()}.
 *
 * @param <T> the value's type
 */
public interface Pending<T> extends AutoCloseable {

    /**
     * Waits for the computation and returns its value; later calls return the same value.
     *
     * @return the value
     * @throws IllegalStateException when the handle was closed before the value was read
     */
    T get();

    /** {@return true when {@link #get()} would not block} */
    boolean isDone();

    /** Releases what the computation holds; after {@code get()}, or instead of it when the value is not wanted. */
    @Override
    default void close() {
    }

    /**
     * {@return a value that is already known}
     *
     * @param value the value, returned by every {@code get()}
     * @param <T> the value's type
     */
    static <T> Pending<T> completed(T value) {
        return new Pending<>() {
            @Override
            public T get() {
                return value;
            }

            @Override
            public boolean isDone() {
                return true;
            }
        };
    }

    /**
     * {@return the pending values of {@code values} turned into a {@code T} by {@code finish} when they are read}
     * {@code finish} runs at most once, in the first {@code get()}; closing the result closes {@code values}.
     *
     * @param values the pending values, not null
     * @param finish what makes the result of the values (called with a copy it may keep), not null
     * @param <T> the result's type
     */
    static <T> Pending<T> of(PendingChecksums values, Function<long[], T> finish) {
        Objects.requireNonNull(values, "values");
        Objects.requireNonNull(finish, "finish");
        return new Pending<>() {
            private T value;
            private boolean done;

            @Override
            public T get() {
                if (!done) {
                    value = finish.apply(values.get());
                    done = true;
                    values.close();
                }
                return value;
            }

            @Override
            public boolean isDone() {
                return done || values.isDone();
            }

            @Override
            public void close() {
                values.close();
            }
        };
    }
}
