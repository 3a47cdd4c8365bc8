package io.kvchecksum.engine.wire;

import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A payload as it travels: the checksums' bytes ({@link PayloadCodec#encode}) and, when the payload has sections,
 * the sections' bytes beside them ({@link PayloadCodec#encodeSections}). A connector that moves bytes carries both
 * byte strings; a text carrier puts {@link #params()} into {@code kv_transfer_params}.
 *
 * <p>The arrays are copied in and out, and equality compares their contents.
 *
 * @param checksums the encoded checksums; not null
 * @param sections the encoded sections, or {@code null} when the payload has none
 */
public record WirePayload(byte[] checksums, byte[] sections) {

    /**
     * Copies the arrays.
     *
     * @throws NullPointerException when {@code checksums} is null
     */
    public WirePayload {
        checksums = Objects.requireNonNull(checksums, "checksums").clone();
        sections = sections == null ? null : sections.clone();
    }

    /**
     * {@return {@code payload} encoded: its checksums, and its sections when it has any}
     *
     * @param payload the payload to encode; not null
     */
    public static WirePayload of(ChecksumPayload payload) {
        return new WirePayload(PayloadCodec.encode(payload), PayloadCodec.encodeSections(payload));
    }

    /** {@return a copy of the encoded checksums} */
    @Override
    public byte[] checksums() {
        return checksums.clone();
    }

    /** {@return a copy of the encoded sections, or {@code null} when there are none} */
    @Override
    public byte[] sections() {
        return sections == null ? null : sections.clone();
    }

    /** {@return the checksums as base64: the value of {@value PayloadCodec#CHECKSUMS_KEY}} */
    public String checksumsBase64() {
        return Base64.getEncoder().encodeToString(checksums);
    }

    /** {@return the sections as base64, the value of {@value PayloadCodec#SECTIONS_KEY}, or {@code null} when none} */
    public String sectionsBase64() {
        return sections == null ? null : Base64.getEncoder().encodeToString(sections);
    }

    /**
     * {@return the entries to add to the request's {@code kv_transfer_params}: {@value PayloadCodec#CHECKSUMS_KEY}, and
     * {@value PayloadCodec#SECTIONS_KEY} when there are sections (the key is left out otherwise); in that order,
     * unmodifiable}
     */
    public Map<String, String> params() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(PayloadCodec.CHECKSUMS_KEY, checksumsBase64());
        if (sections != null) {
            m.put(PayloadCodec.SECTIONS_KEY, sectionsBase64());
        }
        return Collections.unmodifiableMap(m);
    }

    /**
     * {@return the payload decoded again, as the consumer decodes it ({@link PayloadCodec#decode(byte[], byte[])})}
     *
     * @throws MalformedPayloadException when the bytes are not a well-formed payload (never for bytes {@link #of}
     *     wrote)
     */
    public ChecksumPayload decode() {
        return PayloadCodec.decode(checksums, sections);
    }

    /**
     * {@return true when {@code o} is a wire payload with the same bytes}
     *
     * @param o the object to compare with
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof WirePayload w && Arrays.equals(checksums, w.checksums) && Arrays.equals(sections, w.sections);
    }

    /** {@return a hash of the bytes} */
    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(checksums) + Arrays.hashCode(sections);
    }

    /** {@return the sizes, not the bytes} */
    @Override
    public String toString() {
        return "WirePayload[checksums=" + checksums.length + " bytes, sections="
                + (sections == null ? "none" : sections.length + " bytes") + "]";
    }
}
