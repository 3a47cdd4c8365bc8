package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** What {@link ChecksumPayload} says about a group whose values do not end at the request's last block. */
class ChecksumPayloadTest {

    @Test
    void aGroupWhoseValuesDoNotEndAtTheLastBlockIsNamed() {
        assertEquals("group 4: 1 values from block 0 do not end at block 2 (32 tokens of block size 16)",
                ChecksumPayload.rangeProblem(new GroupChecksums(4, 0, 16, 0, new long[1]), 32));
        assertEquals("group 4: 0 values from block 3 do not end at block 2 (32 tokens of block size 16)",
                ChecksumPayload.rangeProblem(new GroupChecksums(4, 0, 16, 3, new long[0]), 32));
        assertEquals("group 4 has no block size", ChecksumPayload.rangeProblem(new GroupChecksums(4, 0, null, 0, new long[0]), 32));
        assertNull(ChecksumPayload.rangeProblem(new GroupChecksums(4, 0, 16, 1, new long[1]), 32));
    }
}
