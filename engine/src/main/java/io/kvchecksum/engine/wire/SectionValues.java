package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import org.msgpack.core.MessagePacker;
import org.msgpack.value.Value;

import java.io.IOException;
import java.math.BigInteger;
import java.util.List;

/**
 * Reading and writing the msgpack values of known sections: each check names the field
 * ({@code sections.<name>.<field>}) in the {@link MalformedPayloadException} it throws.
 */
final class SectionValues {
    private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

    private SectionValues() {
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
            throw new MalformedPayloadException(field + ": expected an unsigned integer, got " + v.getValueType());
        }
        BigInteger b = v.asIntegerValue().toBigInteger();
        if (b.signum() < 0 || b.compareTo(TWO_64) >= 0) {
            throw new MalformedPayloadException(field + ": " + b + " is not an unsigned 64-bit value");
        }
        return b.longValue();
    }

    /** An integer in {@code [min, max]}. */
    static long integer(Value v, String field, long min, long max) {
        if (!v.isIntegerValue() || !v.asIntegerValue().isInLongRange()) {
            throw new MalformedPayloadException(field + ": expected an integer in " + min + ".." + max + ", got " + v);
        }
        long x = v.asIntegerValue().toLong();
        if (x < min || x > max) {
            throw new MalformedPayloadException(field + ": " + x + " is out of range (" + min + ".." + max + ")");
        }
        return x;
    }

    /** A UTF-8 string of 1..{@code maxBytes} bytes of printable ASCII. */
    static String name(Value v, String field, int maxBytes) {
        if (!v.isStringValue()) {
            throw new MalformedPayloadException(field + ": expected a string, got " + v.getValueType());
        }
        byte[] raw = v.asStringValue().asByteArray();
        if (raw.length == 0 || raw.length > maxBytes) {
            throw new MalformedPayloadException(field + ": " + raw.length + " bytes, expected 1.." + maxBytes);
        }
        for (byte b : raw) {
            if (b < 0x20 || b > 0x7e) {
                throw new MalformedPayloadException(field + ": byte 0x" + Integer.toHexString(b & 0xff)
                        + " is not printable ASCII");
            }
        }
        return new String(raw, java.nio.charset.StandardCharsets.US_ASCII);
    }

    static byte[] bin(Value v, String field) {
        if (!v.isBinaryValue()) {
            throw new MalformedPayloadException(field + ": expected a bin, got " + v.getValueType());
        }
        return v.asBinaryValue().asByteArray();
    }

    /** {@return the verdict of a section only one side sent: "{@code what} sent by the producer only" or the consumer} */
    static SectionVerdict oneSideOnly(String section, String what, PayloadSection producer) {
        return SectionVerdict.unverified(section, UnverifiedReason.ONE_SIDE_ONLY, what + " sent by the "
                + (producer == null ? "consumer" : "producer") + " only");
    }

    static void packUnsigned(MessagePacker p, long v) throws IOException {
        if (v >= 0) {
            p.packLong(v);
        } else {
            p.packBigInteger(new BigInteger(Long.toUnsignedString(v)));
        }
    }
}
