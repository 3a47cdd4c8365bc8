package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.UnverifiedReason;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

class PayloadCodecTest {
    private static final HexFormat HEX = HexFormat.of();

    static ChecksumPayload randomPayload(Random rnd) {
        long numTokens = rnd.nextInt(5000);
        List<GroupChecksums> groups = new ArrayList<>();
        int n = rnd.nextInt(4);
        for (int g = 0; g < n; g++) {
            int bs = 1 << (rnd.nextInt(6));
            long blocks = Math.ceilDiv(numTokens, bs);
            long start = blocks == 0 ? 0 : rnd.nextLong(blocks + 1);
            long[] values = new long[(int) (blocks - start)];
            for (int i = 0; i < values.length; i++) {
                values[i] = rnd.nextLong();
            }
            groups.add(new GroupChecksums(g, rnd.nextLong(), bs, start, values));
        }
        // A third in the mixed mode: version 3.
        io.kvchecksum.ChecksumMode mode = rnd.nextInt(3) == 0 ? io.kvchecksum.ChecksumMode.MIXED : io.kvchecksum.ChecksumMode.STANDARD;
        return ChecksumPayload.of(mode, 1 + rnd.nextInt(8), numTokens, groups);
    }

    @Test
    void roundTripsRandomPayloadsExactly() {
        long seed = 20260505L;
        Random rnd = new Random(seed);
        for (int i = 0; i < 500; i++) {
            ChecksumPayload p = randomPayload(rnd);
            assertEquals(p, PayloadCodec.decode(PayloadCodec.encode(p)), "seed " + seed + " iteration " + i);
            assertEquals(p, PayloadCodec.decodeBase64(PayloadCodec.encodeBase64(p)), "seed " + seed + " iteration " + i);
        }
    }

    @Test
    void writesTheDocumentedBytes() {
        // Built by hand from the msgpack spec: [2, 2, 20, [[3, 2^64-1, 16, 1, bin(8)]]].
        long value = 0x0102030405060708L;
        ChecksumPayload p = ChecksumPayload.of(2, 20, List.of(new GroupChecksums(3, -1L, 16, 1, new long[] {value})));
        String expected = "94" + "02" + "02" + "14" + "91" + "95" + "03" + "cf" + "ffffffffffffffff" + "10" + "01" + "c408"
                + "0807060504030201";
        assertEquals(expected, HEX.formatHex(PayloadCodec.encode(p)));
    }

    @Test
    void writesTheDocumentedVersionThreeBytes() {
        // Built by hand from the msgpack spec: [3, 2, 20, "mixed", [[3, 2^64-1, 16, 1, bin(8)]], {}].
        long value = 0x0102030405060708L;
        ChecksumPayload p = ChecksumPayload.of(io.kvchecksum.ChecksumMode.MIXED, 2, 20,
                List.of(new GroupChecksums(3, -1L, 16, 1, new long[] {value})));
        String expected = "96" + "03" + "02" + "14" + "a56d69786564" + "91" + "95" + "03" + "cf" + "ffffffffffffffff" + "10"
                + "01" + "c408" + "0807060504030201" + "80";
        assertEquals(expected, HEX.formatHex(PayloadCodec.encode(p)));
        assertEquals(p, PayloadCodec.decode(HEX.parseHex(expected)));
        assertEquals(3, p.version());
        assertEquals("mixed", p.mode());
        // The standard mode still writes version 2, byte for byte.
        assertEquals(2, ChecksumPayload.of(io.kvchecksum.ChecksumMode.STANDARD, 2, 20, p.groups()).version());
    }

    @Test
    void versionThreeSkipsSectionsItDoesNotKnowAndRejectsBadOnes() {
        String head = "03" + "02" + "14" + "a56d69786564" + "91" + "95" + "03" + "cf" + "ffffffffffffffff" + "10" + "01" + "c408"
                + "0807060504030201";
        // {"x": [1, {"y": bin(2)}], "n": nil}
        ChecksumPayload p = PayloadCodec.decode(HEX.parseHex("96" + head + "82" + "a178" + "9201" + "81a179c4020102" + "a16e" + "c0"));
        assertEquals("mixed", p.mode());
        assertEquals(1, p.groups().size());
        String[][] bad = {
            {"96" + head + "82" + "a178" + "c0" + "a178" + "c0", "sections: 'x' appears twice"},
            {"96" + head + "81" + "01" + "c0", "sections[0].name: expected string, got integer"},
            {"96" + head + "81" + "a0" + "c0", "sections[0].name: empty"},
            {"96" + head + "c0", "sections: expected map, got nil"},
            {"96" + head + "81" + "a178" + "dd7fffffff", "sections.x: claims 2147483647 elements"},
            {"96" + head + "81" + "a178" + "91".repeat(40) + "c0", "nested deeper than 32 levels"},
            {"95" + head, "payload: version 3 has 6 elements, got 5"},
            {"96" + "03" + "02" + "14" + "a54d69786564" + "90" + "80", "mode: 'Mixed' is not"},
            {"96" + "03" + "02" + "14" + "07" + "90" + "80", "mode: expected string, got integer"},
        };
        for (String[] b : bad) {
            MalformedPayloadException e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(HEX.parseHex(b[0])),
                    b[0]);
            assertTrue(e.getMessage().contains(b[1]), b[0] + ": " + e.getMessage());
        }
    }

    @Test
    void readsVersionOne() {
        // [1, 20, [[0, 2^63, 1, bin(16)]]], as the earlier revision wrote it.
        byte[] b = HEX.parseHex("93" + "01" + "14" + "91" + "94" + "00" + "cf8000000000000000" + "01" + "c410"
                + "0100000000000000" + "ffffffffffffffff");
        ChecksumPayload p = PayloadCodec.decode(b);
        assertEquals(1, p.version());
        assertNull(p.tpSize());
        assertEquals(20, p.numTokens());
        GroupChecksums g = p.groups().get(0);
        assertNull(g.blockSize());
        assertEquals(Long.MIN_VALUE, g.fingerprint());
        assertArrayEquals(new long[] {1, -1}, g.values());
        assertArrayEquals(b, PayloadCodec.encode(p), "a version-1 payload is written back in version 1");
        // Version-1 values number pieces per block: never compared, reported as such.
        assertEquals(UnverifiedReason.UNSUPPORTED_PAYLOAD_VERSION, Verifier.compare(p, p).reason());
    }

    @Test
    void aLongPromptIsAbout87KilobytesOfBase64() {
        int blocks = 128 * 1024 / 16;
        ChecksumPayload p = ChecksumPayload.of(1, 128 * 1024, List.of(new GroupChecksums(0, 1, 16, 0, new long[blocks])));
        int len = PayloadCodec.encodeBase64(p).length();
        assertTrue(len > 87_000 && len < 88_000, "base64 length " + len);
    }

    static void rejects(String hex, String field) {
        MalformedPayloadException e = assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(HEX.parseHex(hex)));
        assertTrue(e.getMessage().contains(field), "message '" + e.getMessage() + "' should name " + field);
    }

    @Test
    void rejectsEachMalformedFieldByName() {
        rejects("", "truncated");
        rejects("c0", "payload");                                   // nil
        rejects("94" + "03" + "01" + "00" + "90", "version");       // unknown version 3
        rejects("94" + "ff" + "01" + "00" + "90", "version");       // negative version
        rejects("94" + "02" + "00" + "00" + "90", "tp_size");       // tp 0
        rejects("94" + "02" + "01" + "a131" + "90", "num_tokens");  // a string
        rejects("94" + "02" + "01" + "d0ff" + "90", "num_tokens");  // negative
        rejects("94" + "02" + "01" + "10" + "c0", "groups");        // nil groups
        rejects("94" + "02" + "01" + "10" + "dd7fffffff", "groups"); // 2^31-1 groups claimed, none there
        rejects("94" + "02" + "01" + "10" + "91" + "94000010" + "00c400", "groups[0]");          // 4 fields in v2
        rejects("94" + "02" + "01" + "10" + "91" + "95" + "00" + "00" + "00" + "00" + "c400", "groups[0].block_size");
        rejects("94" + "02" + "01" + "10" + "91" + "95" + "00" + "ff" + "10" + "00" + "c400", "groups[0].fingerprint");
        rejects("94" + "02" + "01" + "10" + "91" + "95" + "00" + "00" + "10" + "00" + "c403010203", "groups[0].values");
        rejects("94" + "02" + "01" + "10" + "91" + "95" + "00" + "00" + "10" + "00" + "c6ffffffff", "groups[0].values");
        rejects("94" + "02" + "01" + "10" + "91" + "95" + "00" + "00" + "10" + "00" + "9100", "groups[0].values"); // array
        // 16 tokens of block size 16 is one block; zero values from block 0 do not reach it.
        rejects("94" + "02" + "01" + "10" + "91" + "95" + "00" + "00" + "10" + "00" + "c400", "groups[0].values");
        rejects("94" + "02" + "01" + "00" + "90" + "00", "trailing");
        rejects("93" + "02" + "01" + "90", "version 2 has 4");
        rejects("cf" + "ff", "payload");                           // a truncated uint64 at the top
        rejects("94" + "02" + "01" + "cf" + "ff", "num_tokens");     // a truncated uint64 inside
    }

    @Test
    void rejectsTextThatIsNotBase64() {
        assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decodeBase64("not base64!"));
        assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decodeBase64(null));
        assertThrows(MalformedPayloadException.class, () -> PayloadCodec.decode(null));
    }

    @Test
    void acceptsSmallNumbersWrittenInWideForms() {
        // A non-canonical encoder may write 2 as uint64 and 20 as uint32.
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(HEX.parseHex("94" + "cf0000000000000002" + "01" + "ce00000014" + "90"));
        ChecksumPayload p = PayloadCodec.decode(b.toByteArray());
        assertEquals(20, p.numTokens());
        assertEquals(2, p.version());
    }

    @Test
    void numbersAtTheirLimits() {
        // tp_size 2^31-1 is read, 2^31 is not; a group id likewise; fingerprint 0 and 2^63 are written canonically.
        ChecksumPayload wide = PayloadCodec.decode(HEX.parseHex("94" + "02" + "ce7fffffff" + "00" + "90"));
        assertEquals(Integer.MAX_VALUE, wide.tpSize());
        rejects("94" + "02" + "ce80000000" + "00" + "90", "tp_size");
        rejects("94" + "02" + "01" + "cf8000000000000000" + "90", "num_tokens");
        assertEquals(Long.MAX_VALUE, PayloadCodec.decode(HEX.parseHex("94" + "02" + "01" + "cf7fffffffffffffff" + "90")).numTokens());
        assertEquals(Long.MAX_VALUE, PayloadCodec.decode(HEX.parseHex("94" + "02" + "01" + "d37fffffffffffffff" + "90")).numTokens());
        ChecksumPayload zero = ChecksumPayload.of(1, 16, List.of(new GroupChecksums(0, 0, 16, 1, new long[0])));
        assertEquals("94020110" + "91" + "95" + "00" + "00" + "10" + "01" + "c400", HEX.formatHex(PayloadCodec.encode(zero)));
        ChecksumPayload top = ChecksumPayload.of(1, 16, List.of(new GroupChecksums(0, Long.MIN_VALUE, 16, 1, new long[0])));
        assertEquals("94020110" + "91" + "95" + "00" + "cf8000000000000000" + "10" + "01" + "c400", HEX.formatHex(PayloadCodec.encode(top)));
        assertEquals(top, PayloadCodec.decode(PayloadCodec.encode(top)));
        ChecksumPayload max = ChecksumPayload.of(1, 16, List.of(new GroupChecksums(0, Long.MAX_VALUE, 16, 1, new long[0])));
        assertEquals("94020110" + "91" + "95" + "00" + "cf7fffffffffffffff" + "10" + "01" + "c400", HEX.formatHex(PayloadCodec.encode(max)));
        // Version-1 groups are checked for their shape but not for a block range (they carry no block size).
        ChecksumPayload v1 = PayloadCodec.decode(HEX.parseHex("93" + "01" + "10" + "91" + "94" + "00" + "00" + "05" + "c400"));
        assertEquals(5, v1.groups().get(0).start());
        // Trailing bytes after a whole version-1 payload, and a count claiming more elements than bytes follow.
        rejects("93" + "01" + "10" + "90" + "c0", "trailing");
        rejects("93" + "01" + "10" + "91" + "94", "groups[0]: claims 4 elements but only 0 bytes follow");
        rejects("dc0003" + "01", "payload");
        rejects("93" + "01" + "10" + "91" + "95" + "00" + "00" + "10" + "00" + "c400", "groups[0]: a group has 4 elements in version 1, got 5");
        rejects("94" + "02" + "01" + "cf" + "ff", "num_tokens: not valid msgpack (");
    }
}
