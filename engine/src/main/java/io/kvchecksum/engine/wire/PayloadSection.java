package io.kvchecksum.engine.wire;

import org.msgpack.core.MessagePacker;

import java.io.IOException;
import java.math.BigInteger;

/**
 * A named section of a payload that this library knows (see {@link PayloadSections} for the list and
 * {@code docs/wire-format.md} for each one's layout). A payload carries each section at most once; a reader that does
 * not know a section skips it, so a section is always optional and never changes what the groups' values mean.
 *
 * <p>Implementations are immutable values with {@code equals}; the name is the section's key in the sections map
 * ({@link PayloadCodec#encodeSections}).
 */
public interface PayloadSection {

    /**
     * {@return the section's key: 1..64 bytes of {@code a-z 0-9 _ -}, the same for every instance of one section type}
     */
    String name();

    /**
     * Writes the section's value, exactly one msgpack value.
     *
     * @param packer the sections value's packer, positioned after the section's name
     * @throws IOException when the packer fails to write (an in-memory packer does not)
     */
    void pack(MessagePacker packer) throws IOException;

    /**
     * Writes {@code v} as the wire's unsigned 64-bit integer: msgpack uint64 when its top bit is set, else the smallest
     * form. Every checksum, digest and fingerprint on the wire, in sections and in worker records alike, is written so.
     *
     * @param p where to write
     * @param v the value, read as unsigned
     * @throws IOException when the packer fails
     */
    static void packUnsigned(MessagePacker p, long v) throws IOException {
        p.packBigInteger(new BigInteger(Long.toUnsignedString(v)));
    }
}
