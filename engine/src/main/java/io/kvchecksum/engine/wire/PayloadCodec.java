package io.kvchecksum.engine.wire;

import io.kvchecksum.ChecksumMode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.msgpack.value.ValueFactory;
import org.msgpack.value.ValueType;

/**
 * The wire format of a {@link ChecksumPayload}: two msgpack values, the checksums and (when the payload has any) its
 * sections; base64 for text carriers, raw bytes for carriers that move bytes. In vLLM's {@code kv_transfer_params}
 * the checksums go under {@value #CHECKSUMS_KEY} and the sections under {@value #SECTIONS_KEY} (seed 003: proxies
 * forward keys they do not know); a connector that carries checksums in its own messages carries the sections as a
 * second byte string beside them.
 *
 * <pre>
 * checksums, version 3: [3, tp_size, num_tokens, mode, [[group_id, fingerprint, block_size, start, values], ...], {}]
 * checksums, version 2: [2, tp_size, num_tokens, [[group_id, fingerprint, block_size, start, values], ...]]
 * checksums, version 1: [1, num_tokens, [[group_id, fingerprint, start, values], ...]]      (read only)
 * final form tagged 1:  [1, tp_size, num_tokens, [[group_id, fingerprint, block_size, start, values], ...]]
 * sections:             [1, {name: value, ...}]
 * </pre>
 * The seed defines the final form without naming its version number, so a writer may tag it 1: a version-1 tag on
 * exactly the final form's shape (four elements whose groups have five fields) is read as the final form, and its
 * payload is version 2 (re-encoding writes the tag 2). No other tag is dispatched by shape.
 * {@code values} is a msgpack bin of little-endian unsigned 64-bit block checksums; {@code fingerprint} is an unsigned
 * 64-bit integer (msgpack uint64 when its top bit is set); every other number is a non-negative integer.
 *
 * <p><b>The checksums never change with the sections.</b> The standard mode writes version 2, byte for byte seed
 * 003's final form, with or without sections; other modes write version 3, whose sixth element this writer leaves
 * empty. {@code mode} is a msgpack str, the checksum mode's name ({@code "standard"}, {@code "mixed"}; 1..32 of
 * {@code a-z 0-9 -}): a name this reader does not know still decodes, and the verifier reports it as
 * {@code MODE_DIFFERS}.
 *
 * <p><b>Sections</b>: {@code [1, map]}, the map from section name (str, 1..64 bytes, each name once) to any msgpack
 * value. Every section is optional, and a reader skips the sections it does not know (the known ones:
 * {@link PayloadSections}). New information goes into new sections, never into new positions; the leading 1 is the
 * sections value's own version, which only an incompatible change would raise (a reader rejects any other). Earlier
 * releases wrote sections inline, as version 3's sixth element: that form is still read (rolling upgrades), and a
 * section present both inline and in the separate value is malformed.
 *
 * <p><b>Decoding treats the input as hostile</b> (it arrives from the network, through proxies): every length is
 * checked against the bytes actually present before anything is allocated, so no input makes it allocate more than
 * about the input's size; unknown versions, wrong types, negative or out-of-range numbers, values that are not whole
 * 8-byte words, a section nested deeper than 32 levels, a version-2 or -3 group whose values do not end at the
 * request's last block, and trailing bytes are all rejected with {@link MalformedPayloadException} naming the field.
 * No other exception escapes the decoder.
 *
 * <p>Stateless and thread-safe.
 */
public final class PayloadCodec {
    static {
        MsgpackBuffers.ensure();   // before msgpack's first buffer: no sun.misc.Unsafe warning on JDK 24+
    }

    /** The {@code kv_transfer_params} key of the checksums, as seed 003 names it. */
    public static final String CHECKSUMS_KEY = "kv_checksums";
    /** The {@code kv_transfer_params} key of the sections, beside {@value #CHECKSUMS_KEY}. */
    public static final String SECTIONS_KEY = "kv_checksum_sections";
    /** The version of the sections value this release writes and reads. */
    public static final int SECTIONS_VERSION = 1;

    private static final long MAX_INT = Integer.MAX_VALUE;

    private PayloadCodec() {
    }

    /**
     * {@return the payload's checksums as msgpack bytes, in the payload's own version (a version-1 payload is written
     * as version 1), without its sections} The bytes are the same whether or not the payload has sections; the
     * sections are {@link #encodeSections}.
     *
     * @param payload the payload to write; not null (it was validated when built)
     */
    public static byte[] encode(ChecksumPayload payload) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            boolean v3 = payload.version() == 3;
            boolean v2 = payload.version() >= 2;
            p.packArrayHeader(v3 ? 6 : v2 ? 4 : 3);
            p.packInt(payload.version());
            if (v2) {
                p.packInt(payload.tpSize());
            }
            p.packLong(payload.numTokens());
            if (v3) {
                p.packString(payload.mode());
            }
            p.packArrayHeader(payload.groups().size());
            for (GroupChecksums g : payload.groups()) {
                p.packArrayHeader(v2 ? 5 : 4);
                p.packInt(g.groupId());
                PayloadSection.packUnsigned(p, g.fingerprint());
                if (v2) {
                    p.packInt(g.blockSize());
                }
                p.packLong(g.start());
                ByteBuffer buf = ByteBuffer.allocate(Math.multiplyExact(g.numBlocks(), 8)).order(ByteOrder.LITTLE_ENDIAN);
                buf.asLongBuffer().put(g.values());
                p.packBinaryHeader(buf.capacity());
                p.writePayload(buf.array());
            }
            if (v3) {
                // Sections travel beside the checksums; the position stays for readers of the earlier inline form.
                p.packMapHeader(0);
            }
            return p.toByteArray();
        } catch (IOException e) {
            // A buffer packer writes to memory and cannot fail with I/O.
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@return the payload's sections as msgpack bytes, {@code [1, {name: value, ...}]} in name order, or {@code null}
     * when it has none}
     *
     * @param payload the payload whose sections to write; not null
     */
    public static byte[] encodeSections(ChecksumPayload payload) {
        if (payload.sections().isEmpty()) {
            return null;
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(2);
            p.packInt(SECTIONS_VERSION);
            p.packMapHeader(payload.sections().size());
            for (PayloadSection section : payload.sections().values()) {
                p.packString(section.name());
                section.pack(p);
            }
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@return the payload's checksums as base64 (RFC 4648, with padding) of {@link #encode}: the value of
     * {@value #CHECKSUMS_KEY}}
     *
     * @param payload the payload to write; not null
     */
    public static String encodeBase64(ChecksumPayload payload) {
        return Base64.getEncoder().encodeToString(encode(payload));
    }

    /**
     * {@return the payload's sections as base64 of {@link #encodeSections}, the value of {@value #SECTIONS_KEY}, or
     * {@code null} when it has none (then the key is left out)}
     *
     * @param payload the payload whose sections to write; not null
     */
    public static String encodeSectionsBase64(ChecksumPayload payload) {
        byte[] b = encodeSections(payload);
        return b == null ? null : Base64.getEncoder().encodeToString(b);
    }

    /**
     * Decodes the checksums alone: {@code decode(bytes, null)}.
     *
     * @param bytes exactly one msgpack-encoded checksum payload (version 3, 2 or 1), untrusted; null is rejected as
     *     malformed
     * @return the payload, validated as {@link ChecksumPayload} validates; sections inline in a version-3 payload of
     *     an earlier release are read, those this library does not know skipped
     * @throws MalformedPayloadException for anything but exactly one well-formed payload
     */
    public static ChecksumPayload decode(byte[] bytes) {
        return decode(bytes, null, PayloadSections.KNOWN);
    }

    /**
     * Decodes the checksums and, when there are any, the sections that travelled beside them.
     *
     * @param checksums exactly one msgpack-encoded checksum payload (version 3, 2 or 1), untrusted; null is rejected
     *     as malformed
     * @param sectionsOrNull exactly one msgpack-encoded sections value ({@code [1, {...}]}), untrusted, or {@code null}
     *     when none came
     * @return the payload in the checksums' version, with the sections of both values (inline ones from an earlier
     *     release's version 3, and the separate ones); sections this library does not know are skipped
     * @throws MalformedPayloadException for anything but one well-formed payload and, if given, one well-formed sections
     *     value; also when a section is both inline and in the separate value, or the payload is version 1 (which has
     *     no sections) and sections came with it
     */
    public static ChecksumPayload decode(byte[] checksums, byte[] sectionsOrNull) {
        return decode(checksums, sectionsOrNull, PayloadSections.KNOWN);
    }

    /** {@link #decode(byte[], byte[])} knowing the sections {@code known} (for tests of the section mechanism). */
    static ChecksumPayload decode(byte[] bytes, Map<String, PayloadSections.Known> known) {
        return decode(bytes, null, known);
    }

    /** {@link #decode(byte[], byte[])} knowing the sections {@code known}. */
    static ChecksumPayload decode(byte[] checksums, byte[] sectionsOrNull, Map<String, PayloadSections.Known> known) {
        if (checksums == null) {
            throw new MalformedPayloadException("payload: no bytes (null)");
        }
        Decoded decoded = read(checksums, known, "payload", Reader::payload);
        ChecksumPayload payload = decoded.payload();
        if (sectionsOrNull == null) {
            return payload;
        }
        Sections separate = read(sectionsOrNull, known, "sections_value", Reader::sectionsValue);
        if (payload.version() == 1 && !separate.names().isEmpty()) {
            throw new MalformedPayloadException("sections_value: a version-1 payload has no sections, got "
                    + separate.names().size());
        }
        Map<String, PayloadSection> all = new TreeMap<>(payload.sections());
        for (Map.Entry<String, PayloadSection> e : separate.known().entrySet()) {
            if (all.putIfAbsent(e.getKey(), e.getValue()) != null) {
                throw inlineAndSeparate(e.getKey());
            }
        }
        // A section neither side knows may still be in both places: the writer is wrong either way.
        for (String name : separate.names()) {
            if (decoded.inlineNames().contains(name)) {
                throw inlineAndSeparate(name);
            }
        }
        return new ChecksumPayload(payload.version(), payload.tpSize(), payload.numTokens(), payload.groups(),
                payload.mode(), all);
    }

    private static MalformedPayloadException inlineAndSeparate(String name) {
        return new MalformedPayloadException("sections." + WireValues.printable(name)
                + ": both inline in the version-3 payload and in the separate sections value");
    }

    /**
     * Decodes base64 text (standard alphabet; padding optional) of the checksums alone.
     *
     * @param text base64 of one payload, untrusted; surrounding white space is ignored, null is rejected as malformed
     * @return the payload, as {@link #decode(byte[])} returns it
     * @throws MalformedPayloadException for text that is not base64 or bytes {@link #decode(byte[])} rejects
     */
    public static ChecksumPayload decodeBase64(String text) {
        return decodeBase64(text, null);
    }

    /**
     * Decodes the base64 texts of {@value #CHECKSUMS_KEY} and {@value #SECTIONS_KEY}.
     *
     * @param checksums base64 of one payload, untrusted; surrounding white space is ignored, null is rejected as
     *     malformed
     * @param sectionsOrNull base64 of one sections value, untrusted, or {@code null} when none came (an empty text is
     *     malformed: a writer leaves the key out instead)
     * @return the payload, as {@link #decode(byte[], byte[])} returns it
     * @throws MalformedPayloadException for text that is not base64 or bytes {@link #decode(byte[], byte[])} rejects
     */
    public static ChecksumPayload decodeBase64(String checksums, String sectionsOrNull) {
        if (checksums == null) {
            throw new MalformedPayloadException("payload: no text (null)");
        }
        return decode(base64(checksums, "payload"), sectionsOrNull == null ? null : base64(sectionsOrNull, "sections_value"));
    }

    private static byte[] base64(String text, String field) {
        try {
            return Base64.getDecoder().decode(text.strip());
        } catch (IllegalArgumentException e) {
            throw new MalformedPayloadException(field + ": not base64: " + e.getMessage(), e);
        }
    }

    /** A value read by {@link Reader}. */
    private interface Read<T> {
        T apply(Reader r) throws IOException;
    }

    /** Reads exactly one value of {@code bytes} with {@code what}; msgpack-java's own errors become malformed. */
    private static <T> T read(byte[] bytes, Map<String, PayloadSections.Known> known, String top, Read<T> what) {
        MessageUnpacker u = MessagePack.newDefaultUnpacker(bytes);
        Reader r = new Reader(u, bytes, known);
        r.field = top;
        try (u) {
            T value = what.apply(r);
            if (u.hasNext()) {
                throw new MalformedPayloadException(top + ": " + r.remaining() + " trailing bytes after the "
                        + (top.equals("payload") ? "payload" : "sections value"));
            }
            return value;
        } catch (IOException | MessagePackException e) {
            // msgpack-java's own errors (a value cut short, a size it cannot represent) carry no field name.
            throw new MalformedPayloadException(r.field + ": not valid msgpack (" + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")", e);
        }
    }

    /** Sections read from one map: the known ones decoded, and every name (known or not). */
    private record Sections(Map<String, PayloadSection> known, Set<String> names) {
        static final Sections NONE = new Sections(Map.of(), Set.of());
    }

    /** A payload as read, with the names of its inline sections (known or not), for the check against the others. */
    private record Decoded(ChecksumPayload payload, Set<String> inlineNames) {
    }

    /** Reads one payload, checking each field's type and size against the bytes left before using it. */
    private static final class Reader {
        private final MessageUnpacker u;
        private final byte[] input;
        private final Map<String, PayloadSections.Known> known;
        /** The field being read, for errors msgpack-java raises without one. */
        String field = "payload";

        Reader(MessageUnpacker u, byte[] input, Map<String, PayloadSections.Known> known) {
            this.u = u;
            this.input = input;
            this.known = known;
        }

        long remaining() {
            return input.length - u.getTotalReadBytes();
        }

        Decoded payload() throws IOException {
            int n = arrayHeader("payload");
            if (n < 3) {
                throw new MalformedPayloadException("payload: an array of " + n
                        + " elements; expected 6 (version 3), 4 (version 2) or 3 (version 1)");
            }
            long version = integer("version", 0, MAX_INT);
            // The seed names no version number for the final form: a writer may tag it 1. Only a version-1 tag with
            // exactly the final form's shape (four elements, five-field groups, which carry the block size only the
            // final revision has) is read as the final form; no other tag is ever dispatched by shape.
            boolean finalFormTaggedOne = version == 1 && n == 4;
            int readAs = finalFormTaggedOne ? 2 : (int) version;
            if (readAs < 1 || readAs > 3) {
                throw new MalformedPayloadException("version: unknown payload version " + version + " (this reader knows 1, 2 and 3)");
            }
            int elements = readAs == 3 ? 6 : readAs == 2 ? 4 : 3;
            if (n != elements) {
                throw new MalformedPayloadException("payload: version " + readAs + " has " + elements + " elements, got " + n);
            }
            Integer tp = readAs >= 2 ? (int) integer("tp_size", 1, MAX_INT) : null;
            long numTokens = integer("num_tokens", 0, Long.MAX_VALUE);
            String mode = readAs == 3 ? WireValues.mode(value("mode", ValueType.STRING), "mode")
                    : ChecksumMode.STANDARD.wireName();
            List<GroupChecksums> groups = groups(readAs >= 2, numTokens, finalFormTaggedOne);
            Sections sections = readAs == 3 ? sections() : Sections.NONE;
            return new Decoded(new ChecksumPayload(readAs, tp, numTokens, groups, mode, sections.known()), sections.names());
        }

        /** The separate sections value: {@code [1, {name: value, ...}]}. */
        Sections sectionsValue() throws IOException {
            int n = arrayHeader("sections_value");
            if (n != 2) {
                throw new MalformedPayloadException("sections_value: an array of " + n
                        + " elements; expected 2 ([version, sections])");
            }
            long version = integer("sections_value.version", 0, MAX_INT);
            if (version != SECTIONS_VERSION) {
                throw new MalformedPayloadException("sections_value.version: unknown sections version " + version
                        + " (this reader knows " + SECTIONS_VERSION + ")");
            }
            return sections();
        }

        /**
         * A map of named sections (version 3's inline one, or the separate value's): every value is first checked
         * to be well-formed msgpack within the input and at most 32 levels deep; the known ones are then decoded from
         * exactly their own bytes, the others dropped.
         */
        private Sections sections() throws IOException {
            next("sections", ValueType.MAP);
            // Every entry takes at least two bytes.
            int n = claimed("sections", u.unpackMapHeader(), 2, "entries");
            Map<String, PayloadSection> out = new TreeMap<>();
            Set<String> names = new HashSet<>();
            for (int i = 0; i < n; i++) {
                String at = "sections[" + i + "].name";
                String name = WireValues.text(value(at, ValueType.STRING), at, 64);
                if (!names.add(name)) {
                    throw new MalformedPayloadException("sections: '" + WireValues.printable(name) + "' appears twice");
                }
                long from = u.getTotalReadBytes();
                skip("sections." + WireValues.printable(name), 0);
                PayloadSections.Known k = known.get(name);
                if (k != null) {
                    this.field = "sections." + name;
                    PayloadSection s;
                    try {
                        s = k.decoder().apply(read(from));
                    } catch (MalformedPayloadException e) {
                        throw e;
                    } catch (RuntimeException e) {
                        // A decoder's own slip (a type it did not check) is still a malformed section, never a crash.
                        throw new MalformedPayloadException("sections." + WireValues.printable(name) + ": " + e, e);
                    }
                    if (s == null || !s.name().equals(name)) {
                        throw new IllegalStateException("the decoder of section " + name + " returned " + s);
                    }
                    out.put(name, s);
                }
            }
            return new Sections(out, names);
        }

        /** Skips one value of any type, checking every count against the bytes left, at most 32 levels deep. */
        private void skip(String field, int depth) throws IOException {
            this.field = field;
            if (depth > 32) {
                throw new MalformedPayloadException(field + ": nested deeper than 32 levels");
            }
            if (!u.hasNext()) {
                throw new MalformedPayloadException(field + ": truncated, the input ends before it");
            }
            ValueType t = u.getNextFormat().getValueType();
            if (t == ValueType.ARRAY || t == ValueType.MAP) {
                // Every element takes at least one byte, every entry two.
                int n = t == ValueType.ARRAY ? claimed(field, u.unpackArrayHeader(), 1, "elements")
                        : 2 * claimed(field, u.unpackMapHeader(), 2, "entries");
                for (int i = 0; i < n; i++) {
                    skip(field, depth + 1);
                }
            } else if (t == ValueType.STRING || t == ValueType.BINARY || t == ValueType.EXTENSION) {
                int len = t == ValueType.STRING ? u.unpackRawStringHeader()
                        : t == ValueType.BINARY ? u.unpackBinaryHeader() : u.unpackExtensionTypeHeader().getLength();
                u.readPayloadAsReference(claimed(field, len, 1, "bytes"));
            } else {
                u.skipValue();
            }
        }

        /** The value that starts at input offset {@code from} and was just skipped, so its sizes are checked. */
        private Value read(long from) throws IOException {
            try (MessageUnpacker one = MessagePack.newDefaultUnpacker(input, (int) from, (int) (u.getTotalReadBytes() - from))) {
                return one.unpackValue();
            }
        }

        /** The next integer, string or bin, its size checked against the bytes left. */
        private Value value(String field, ValueType type) throws IOException {
            next(field, type);
            if (type == ValueType.INTEGER) {
                return u.unpackValue();
            }
            byte[] raw = u.readPayload(claimed(field, type == ValueType.STRING ? u.unpackRawStringHeader()
                    : u.unpackBinaryHeader(), 1, "bytes"));
            return type == ValueType.STRING ? ValueFactory.newString(raw, true) : ValueFactory.newBinary(raw, true);
        }

        /**
         * {@return {@code n}, a count of {@code unit} each taking at least {@code minBytes} bytes, when the bytes left
         * can hold them} A larger count (or one msgpack-java read as negative) is a lie, rejected naming the field.
         */
        private int claimed(String field, int n, int minBytes, String unit) {
            if (n < 0 || n > remaining() / minBytes) {
                throw new MalformedPayloadException(field + ": claims " + Integer.toUnsignedString(n) + " " + unit
                        + " but only " + remaining() + (unit.equals("bytes") ? "" : " bytes") + " follow");
            }
            return n;
        }

        private List<GroupChecksums> groups(boolean v2, long numTokens, boolean taggedOne) throws IOException {
            int n = arrayHeader("groups");
            // Never preallocate from an untrusted count: each group takes several bytes, so the list grows only as
            // far as the input really holds groups.
            List<GroupChecksums> groups = new ArrayList<>(Math.min(n, 16));
            for (int i = 0; i < n; i++) {
                String at = "groups[" + i + "]";
                int fields = arrayHeader(at);
                int expected = v2 ? 5 : 4;
                if (fields != expected) {
                    throw new MalformedPayloadException(at + ": a group has " + expected + " elements in "
                            + (taggedOne ? "a version-1-tagged payload of the final form (4 elements)" : "version " + (v2 ? "2 and 3" : "1"))
                            + ", got " + fields);
                }
                int groupId = (int) integer(at + ".group_id", 0, MAX_INT);
                long fingerprint = WireValues.unsigned64(value(at + ".fingerprint", ValueType.INTEGER), at + ".fingerprint");
                Integer blockSize = v2 ? (int) integer(at + ".block_size", 1, MAX_INT) : null;
                long start = integer(at + ".start", 0, Long.MAX_VALUE);
                ByteBuffer raw = value(at + ".values", ValueType.BINARY).asBinaryValue().asByteBuffer();
                if (raw.remaining() % 8 != 0) {
                    throw new MalformedPayloadException(at + ".values: " + raw.remaining()
                            + " bytes is not a whole number of 8-byte words");
                }
                long[] values = new long[raw.remaining() / 8];
                raw.order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(values);
                GroupChecksums g = new GroupChecksums(groupId, fingerprint, blockSize, start, values);
                if (v2) {
                    String problem = ChecksumPayload.rangeProblem(g, numTokens);
                    if (problem != null) {
                        throw new MalformedPayloadException(at + ".values: " + problem);
                    }
                }
                groups.add(g);
            }
            return groups;
        }

        private void next(String field, ValueType type) throws IOException {
            this.field = field;
            if (!u.hasNext()) {
                throw new MalformedPayloadException(field + ": truncated, the input ends before it");
            }
            ValueType t = u.getNextFormat().getValueType();
            if (t != type) {
                throw new MalformedPayloadException(field + ": expected " + type.name().toLowerCase() + ", got "
                        + t.name().toLowerCase());
            }
        }

        private int arrayHeader(String field) throws IOException {
            next(field, ValueType.ARRAY);
            // Every element takes at least one byte.
            return claimed(field, u.unpackArrayHeader(), 1, "elements");
        }

        private long integer(String field, long min, long max) throws IOException {
            return WireValues.integer(value(field, ValueType.INTEGER), field, min, max);
        }
    }
}
