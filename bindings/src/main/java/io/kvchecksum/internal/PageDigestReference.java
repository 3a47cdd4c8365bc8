package io.kvchecksum.internal;

import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.PageDigestPlan;

import java.lang.foreign.MemorySegment;
import java.util.zip.Adler32;

/** SGLang's page digest read literally: {@code java.util.zip.Adler32} over the plan's runs, host memory only. */
public final class PageDigestReference {
    private static final long CHUNK = 1 << 20;

    private PageDigestReference() {
    }

    /** Adler-32 of the plan's stream, in {@code [0, 2^32)}. */
    public static long digest(PageDigestPlan plan, String backend) {
        if (!plan.isHostResident()) {
            throw new InvalidLayoutException("backend " + backend + " cannot read device memory for the page digest");
        }
        Adler32 a = new Adler32();
        for (PageDigestPlan.Run r : plan.runs()) {
            MemorySegment s = ((KvMemory.Host) r.memory()).segment();
            for (long at = 0; at < r.length(); at += CHUNK) {
                a.update(s.asSlice(r.offset() + at, Math.min(CHUNK, r.length() - at)).asByteBuffer());
            }
        }
        return a.getValue();
    }
}
