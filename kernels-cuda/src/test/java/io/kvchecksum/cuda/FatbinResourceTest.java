package io.kvchecksum.cuda;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The jar's resource is a fatbin holding sm_80 and sm_90 machine code and compute_90 PTX. Read from the fatbin
 * container header (magic 0xBA55ED50; entries of kind 1 = PTX, 2 = ELF, with the target architecture at offset 28),
 * since cuobjdump is not installed on every build machine.
 */
class FatbinResourceTest {
    record Entry(int kind, int arch) {
    }

    static List<Entry> entries(byte[] fatbin) {
        ByteBuffer b = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0xBA55ED50, b.getInt(0), "fatbin magic");
        int headerSize = Short.toUnsignedInt(b.getShort(6));
        long size = b.getLong(8);
        assertEquals(fatbin.length, headerSize + size, "fatbin size field");
        List<Entry> out = new ArrayList<>();
        long off = headerSize;
        while (off < headerSize + size) {
            int at = (int) off;
            int kind = Short.toUnsignedInt(b.getShort(at));
            int entryHeader = b.getInt(at + 4);
            long payload = b.getLong(at + 8);
            out.add(new Entry(kind, b.getInt(at + 28)));
            off += entryHeader + payload;
        }
        return out;
    }

    @Test
    void fatbinCarriesSm80Sm90AndComputePtx() {
        byte[] fatbin = Cuda.fatbin();
        if (fatbin == null) {
            assumeTrue(!Boolean.getBoolean("kvchecksum.skipCuda"), "built with -Dkvchecksum.skipCuda=true: no kernels in the jar");
        }
        assertNotNull(fatbin, Cuda.FATBIN_RESOURCE + " is missing although CUDA was not skipped");
        List<Entry> e = entries(fatbin);
        assertTrue(e.contains(new Entry(2, 80)), "sm_80 machine code in " + e);
        assertTrue(e.contains(new Entry(2, 90)), "sm_90 machine code in " + e);
        assertTrue(e.contains(new Entry(1, 90)), "compute_90 PTX in " + e);
        String text = new String(fatbin, java.nio.charset.StandardCharsets.ISO_8859_1);
        for (String k : CudaBackend.KERNELS) {
            assertTrue(text.contains(k), "kernel " + k + " in the fatbin");
        }
    }
}
