package io.kvchecksum;

import java.util.Objects;

/**
 * One request's row of a per-request state buffer (Mamba/SSM state, SGLang's "state buffers"): {@code length} bytes
 * at {@code offset} of {@code memory}. Unlike KV, a state row is not per token, so block checksums and rechunking do
 * not apply to it; it is covered by the page digest ({@link PageDigestPlan}) and by per-request digests.
 *
 * @param name the buffer's name, for reports (e.g. {@code "conv"}, {@code "ssm"})
 * @param memory where the row lives
 * @param offset the row's first byte within {@code memory}
 * @param length the row's size in bytes (zero allowed)
 */
public record StateRow(String name, KvMemory memory, long offset, long length) {

    /**
     * Checks that the row lies inside its memory.
     *
     * @throws InvalidLayoutException when {@code offset} or {@code length} is negative or the row reaches past the
     *     memory
     * @throws NullPointerException when {@code name} or {@code memory} is null
     */
    public StateRow {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(memory, "memory");
        if (offset < 0 || length < 0) {
            throw new InvalidLayoutException("state row " + name + ": offset " + offset + " and length " + length
                    + " must be non-negative");
        }
        if (offset > memory.byteSize() || length > memory.byteSize() - offset) {
            throw new InvalidLayoutException("state row " + name + ": bytes [" + offset + ", " + offset + " + " + length
                    + ") lie outside its memory of " + memory.byteSize() + " bytes");
        }
    }
}
