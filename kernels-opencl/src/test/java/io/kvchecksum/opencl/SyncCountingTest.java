package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvChecksums;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.PendingChecksums;
import io.kvchecksum.RequestBlocks;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link SyncCounting}: a submit counts 0 synchronizing calls, its get() at least 1; only the listed calls count. */
class SyncCountingTest {

    @Test
    void countsExactlyTheSynchronizingCalls() throws Exception {
        List<String> forwarded = new ArrayList<>();
        ClApi stub = (ClApi) Proxy.newProxyInstance(ClApi.class.getClassLoader(), new Class<?>[] {ClApi.class},
                (proxy, m, args) -> {
                    forwarded.add(m.getName());
                    return m.getReturnType() == int.class ? (Object) 0 : null;
                });
        LongAdder n = new LongAdder();
        ClApi counting = SyncCounting.counting(stub, n);
        int methods = 0;
        for (Method m : ClApi.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers()) || m.isDefault()) {
                continue;
            }
            Object[] args = new Object[m.getParameterCount()];
            Class<?>[] types = m.getParameterTypes();
            for (int i = 0; i < args.length; i++) {
                args[i] = types[i] == int.class ? (Object) 0 : types[i] == long.class ? (Object) 0L : null;
            }
            long before = n.sum();
            m.invoke(counting, args);
            assertEquals(ClApi.SYNCHRONIZING.contains(m.getName()) ? 1 : 0, n.sum() - before, m.getName());
            assertEquals(m.getName(), forwarded.getLast(), "every call is forwarded");
            methods++;
        }
        assertEquals(15, methods, "ClApi changed: check which of its calls synchronize");
    }

    @Test
    void submitCountsZeroAndGetAtLeastOne() {
        OpenClTests.requireOpenCl();
        LongAdder syncs = new LongAdder();
        try (Arena arena = Arena.ofShared(); KvChecksum cl = SyncCounting.open(null, syncs)) {
            MemorySegment seg = arena.allocate(1024, 64);
            for (int i = 0; i < 128; i++) {
                seg.setAtIndex(ValueLayout.JAVA_LONG, i, 0xC2B2AE3D27D4EB4FL * (i + 7));
            }
            KvMemory mem = KvMemory.host(seg);
            KvCacheGroup g = KvCacheGroup.of(4, 4, List.of(CacheLayer.of(2, 0, 2, new KvRegion(mem, 0, 256, 64, 32, 16),
                    new KvRegion(mem, 16, 256, 64, 32, 16))));
            RequestBlocks r = RequestBlocks.of(new int[] {3, 1, 2}, 11, 4);
            long[] expected = KvChecksums.reference().blockChecksums(g, r);
            for (int i = 0; i < 3; i++) {
                long before = syncs.sum();
                PendingChecksums p = cl.submit(g, r);
                assertEquals(0, syncs.sum() - before, "submit() must make no synchronizing call");
                long beforeGet = syncs.sum();
                long[] values = p.get();
                long inGet = syncs.sum() - beforeGet;
                assertTrue(inGet >= 1, "get() waits on the read's event: " + inGet);
                System.out.println("OpenCL SyncCounting: submit 0, get " + inGet);
                p.close();
                assertArrayEquals(expected, values);
            }
        }
    }
}
