package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import org.msgpack.value.Value;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Reading and writing the msgpack values of a payload's fields and of its known sections: each check names the field
 * ({@code groups[1].start}, {@code sections.<name>.<field>}) in the {@link MalformedPayloadException} it throws.
 * {@link PayloadCodec} checks a value's sizes against the input before it hands it here.
 */
final class WireValues {
    /** A checksum mode's wire name: 1..32 of {@code a-z 0-9 -}. */
    static final Pattern MODE = Pattern.compile("[a-z0-9-]{1,32}");

    private WireValues() {
    }

    static List<Value> array(Value v, String field, int minSize, int maxSize) {
        if (!v.isArrayValue()) {
            throw new MalformedPayloadException(field + ": expected an array, got " + v.getValueType());
        }
        List<Value> a = v.asArrayValue().list();
        if (a.size() < minSize || a.size() > maxSize) {
            throw new MalformedPayloadException(field + ": " + a.size() + " elements, expected " + minSize
                    + (minSize == maxSize ? "" : ".." + maxSize));
        }
        return a;
    }

    /** An unsigned 64-bit integer, as its two's complement bits. */
    static long unsigned64(Value v, String field) {
        if (!v.isIntegerValue()) {
            throw new MalformedPayloadException(field + ": expected an unsigned 64-bit integer, got " + v.getValueType());
        }
        BigInteger b = v.asIntegerValue().isInLongRange() ? BigInteger.valueOf(v.asIntegerValue().toLong())
                : v.asIntegerValue().toBigInteger();
        if (b.signum() < 0) {
            throw new MalformedPayloadException(field + ": " + b + " is negative");
        }
        if (b.bitLength() > 64) {
            throw new MalformedPayloadException(field + ": " + b + " is not an unsigned 64-bit integer");
        }
        return b.longValue();
    }

    /** An integer in {@code [min, max]}. */
    static long integer(Value v, String field, long min, long max) {
        if (!v.isIntegerValue() || !v.asIntegerValue().isInLongRange()) {
            throw new MalformedPayloadException(field + ": expected an integer in " + min + ".." + max + ", got "
                    + (v.isIntegerValue() ? v.toString() : v.getValueType().toString()));
        }
        long x = v.asIntegerValue().toLong();
        if (x < min || x > max) {
            throw new MalformedPayloadException(field + ": " + x + " is outside " + min + ".." + max);
        }
        return x;
    }

    /** A string of 1..{@code maxBytes} bytes, read as UTF-8 (a malformed sequence as U+FFFD). */
    static String text(Value v, String field, int maxBytes) {
        if (!v.isStringValue()) {
            throw new MalformedPayloadException(field + ": expected a string, got " + v.getValueType());
        }
        byte[] raw = v.asStringValue().asByteArray();
        if (raw.length == 0) {
            throw new MalformedPayloadException(field + ": empty");
        }
        if (raw.length > maxBytes) {
            throw new MalformedPayloadException(field + ": " + raw.length + " bytes, at most " + maxBytes);
        }
        return new String(raw, StandardCharsets.UTF_8);
    }

    /** A string of 1..{@code maxBytes} bytes of printable ASCII. */
    static String name(Value v, String field, int maxBytes) {
        String s = text(v, field, maxBytes);
        if (!s.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
            throw new MalformedPayloadException(field + ": '" + printable(s) + "' is not printable ASCII");
        }
        return s;
    }

    /** A checksum mode's wire name ({@link #MODE}). */
    static String mode(Value v, String field) {
        String m = text(v, field, 32);
        if (!MODE.matcher(m).matches()) {
            throw new MalformedPayloadException(field + ": '" + printable(m) + "' is not 1..32 of a-z, 0-9 and '-'");
        }
        return m;
    }

    static byte[] bin(Value v, String field) {
        if (!v.isBinaryValue()) {
            throw new MalformedPayloadException(field + ": expected a bin, got " + v.getValueType());
        }
        return v.asBinaryValue().asByteArray();
    }

    /** {@code s} with every character but printable ASCII (and the backslash) escaped as {@code \\uXXXX}, for messages. */
    static String printable(String s) {
        return s.codePoints().mapToObj(c -> c >= 0x20 && c < 0x7f && c != '\\' ? Character.toString(c)
                : String.format("\\u%04x", c)).collect(Collectors.joining());
    }

    /** {@return the verdict of a section only one side sent: "{@code what} sent by the producer only" or the consumer} */
    static SectionVerdict oneSideOnly(String section, String what, PayloadSection producer) {
        return SectionVerdict.unverified(section, UnverifiedReason.ONE_SIDE_ONLY, what + " sent by the "
                + (producer == null ? "consumer" : "producer") + " only");
    }
}
