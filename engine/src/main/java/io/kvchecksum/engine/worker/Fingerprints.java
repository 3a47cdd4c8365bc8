package io.kvchecksum.engine.worker;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;

/**
 * Fingerprints of a group's layers, so that a consumer can tell that the producer's group holds the same layers with
 * the same spec types and dtypes before comparing values.
 *
 * <p>A layer's hash is the first 8 bytes, read little-endian, of the SHA-256 of the layer's canonical text: the
 * Python {@code repr} of the tuple {@code (layer_name, spec_type, dtype)}, e.g.
 * {@code ('model.layers.0.self_attn.attn', 'FullAttentionSpec', 'torch.bfloat16')} (for names of printable ASCII,
 * the text an earlier Python revision hashed). A group's fingerprint is the sum of its layers' hashes modulo 2^64:
 * a sum does not depend on the order or on how PP splits the layers across stages, so each stage reports the sum of
 * its own layers and the stages' sums add up to the whole group's fingerprint. TP ranks hold the same layers:
 * take one rank's value per stage, never the sum over ranks ({@link Aggregator} does this).
 *
 * <p>Not a security measure: it detects configuration mistakes, not forgeries. Thread-safe.
 */
public final class Fingerprints {

    private Fingerprints() {
    }

    /**
     * {@return the 64-bit hash of one layer: its name, its KV cache spec type and its dtype, as the engine names them}
     *
     * @param layerName the engine's layer name (e.g. {@code model.layers.0.self_attn.attn}); not null
     * @param specType the KV cache spec's type name (e.g. {@code FullAttentionSpec}); not null
     * @param dtype the cache's dtype as the engine prints it (e.g. {@code torch.bfloat16}); not null
     * @throws NullPointerException when an argument is null
     */
    public static long ofLayer(String layerName, String specType, String dtype) {
        String text = "(" + pyRepr(Objects.requireNonNull(layerName, "layerName")) + ", "
                + pyRepr(Objects.requireNonNull(specType, "specType")) + ", " + pyRepr(Objects.requireNonNull(dtype, "dtype")) + ")";
        byte[] d;
        try {
            d = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            // Every Java platform must provide SHA-256.
            throw new IllegalStateException(e);
        }
        return ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    /**
     * {@return the fingerprint of a group (or of one PP stage's part of it): the sum of its layers' hashes modulo 2^64}
     *
     * @param layerHashes the {@link #ofLayer} hashes of the layers counted, in any order; no null element
     */
    public static long ofGroup(Iterable<Long> layerHashes) {
        long s = 0;
        for (long h : layerHashes) {
            s += h;
        }
        return s;
    }

    /** Python's repr of a str for the characters layer names use: single quotes unless the text holds one. */
    static String pyRepr(String s) {
        char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder b = new StringBuilder().append(q);
        for (char c : s.toCharArray()) {
            b.append(switch (c) {
                case '\n' -> "\\n";
                case '\r' -> "\\r";
                case '\t' -> "\\t";
                default -> c == '\\' || c == q ? "\\" + c
                        : c < 0x20 || c == 0x7f ? String.format("\\x%02x", (int) c) : String.valueOf(c);
            });
        }
        return b.append(q).toString();
    }
}
