package io.kvchecksum.cuda;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.CellPadding;
import io.kvchecksum.CompiledPlan;
import io.kvchecksum.CopyPlan;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvSegments;
import io.kvchecksum.PageDigestPlan;
import io.kvchecksum.PageProbe;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.worker.BlockSelection;
import io.kvchecksum.engine.worker.ReplicaKey;
import io.kvchecksum.engine.worker.Side;
import io.kvchecksum.engine.worker.StateShard;
import io.kvchecksum.engine.worker.ReceivedKv;
import io.kvchecksum.engine.worker.WorkerChecksummer;
import io.kvchecksum.engine.worker.WorkerRecord;
import io.kvchecksum.golden.CopyVector;
import io.kvchecksum.golden.DigestVector;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Every public enqueue entry point that takes a stream refuses a stream capturing a CUDA graph, with the capture
 * named, before it puts anything on a stream: the upload, kernel, event and result copy would be recorded into the
 * graph instead of running, and the values would never arrive. The entry points are found by reflection over the
 * public classes of the bindings ({@code io.kvchecksum..}), the engine's worker ({@code io.kvchecksum.engine..}) and this
 * backend ({@code io.kvchecksum.cuda}): every public method whose name contains "submit" and that takes a
 * {@code long} (a stream handle). The test holds an explicit case for each one and fails, naming it, when a new one
 * appears without a case.
 */
class CaptureRefusalTest {
    private static final long SEED = 0xCA97_0E5L;
    private static final long STREAM = 0xCA97L;
    /** Driver calls that put work on a stream: none may happen when an enqueue is refused. */
    private static final Set<String> ENQUEUING = Set.of("cuMemcpyHtoDAsync", "cuLaunchKernel", "cuEventRecord",
            "cuMemcpyDtoHAsync", "cuMemsetD8Async", "cuStreamWaitEvent", "cuMemcpyDtoDAsync");

    /** {@code owner#name(simple parameter types)} of a method, the key of the cases below. */
    static String key(Method m) {
        return m.getDeclaringClass().getName().replace("io.kvchecksum.", "") + "#" + m.getName() + "("
                + Arrays.stream(m.getParameterTypes()).map(Class::getSimpleName).collect(Collectors.joining(",")) + ")";
    }

    /** The public classes (nested ones too) of the packages under {@code prefix} in {@code anchor}'s code source. */
    static List<Class<?>> publicClasses(Class<?> anchor, String prefix) throws IOException, URISyntaxException {
        Path root = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        String dir = prefix.replace('.', '/');
        if (Files.isDirectory(root)) {
            try (Stream<Path> files = Files.walk(root.resolve(dir))) {
                files.map(p -> root.relativize(p).toString().replace('\\', '/')).filter(n -> n.endsWith(".class")).forEach(names::add);
            }
        } else {
            try (JarFile jar = new JarFile(root.toFile())) {
                jar.stream().map(java.util.jar.JarEntry::getName).filter(n -> n.startsWith(dir) && n.endsWith(".class")).forEach(names::add);
            }
        }
        List<Class<?>> out = new ArrayList<>();
        for (String n : names) {
            if (n.endsWith("module-info.class") || n.endsWith("package-info.class")) {
                continue;
            }
            Class<?> c;
            try {
                c = Class.forName(n.substring(0, n.length() - ".class".length()).replace('/', '.'), false, anchor.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                throw new AssertionError("cannot load " + n, e);
            }
            boolean visible = true;
            for (Class<?> k = c; k != null; k = k.getEnclosingClass()) {
                visible &= Modifier.isPublic(k.getModifiers());
            }
            if (visible && !c.isAnonymousClass() && !c.isSynthetic()) {
                out.add(c);
            }
        }
        return out;
    }

    /** Every public {@code *submit*} method taking a {@code long}, by {@link #key}. */
    static Set<String> enqueueEntryPoints() throws IOException, URISyntaxException {
        Set<String> out = new TreeSet<>();
        List<Class<?>> classes = new ArrayList<>();
        classes.addAll(publicClasses(KvChecksum.class, "io.kvchecksum"));
        classes.addAll(publicClasses(WorkerChecksummer.class, "io.kvchecksum.engine"));
        classes.addAll(publicClasses(CudaBackend.class, "io.kvchecksum.cuda"));
        for (Class<?> c : classes) {
            for (Method m : c.getDeclaredMethods()) {
                boolean takesLong = Arrays.stream(m.getParameterTypes()).anyMatch(t -> t == long.class || t == Long.class);
                if (Modifier.isPublic(m.getModifiers()) && !m.isSynthetic() && m.getName().toLowerCase(java.util.Locale.ROOT).contains("submit")
                        && takesLong) {
                    out.add(key(m));
                }
            }
        }
        return out;
    }

    @Test
    void everyEnqueueEntryPointRefusesACapturingStreamBeforeEnqueuing() throws Exception {
        System.out.println("CaptureRefusalTest seed = 0x" + Long.toHexString(SEED));
        FakeCudaDriver fake = new FakeCudaDriver(HostLibrary.load());
        RecordingDriver rec = new RecordingDriver(fake);
        Random rnd = new Random(SEED);
        try (Arena arena = Arena.ofShared(); CudaBackend backend = new CudaBackend(rec.driver, 0, Cuda.fatbin(), 1 << 20)) {
            KvChecksum cuda = KvChecksum.of(backend);
            List<Long> uploads = new ArrayList<>();
            RandomCase c;
            do {
                c = RandomCase.make(rnd, arena, true);
            } while (c.request().numBlocks() == 0 || c.request().firstBlock() != 0);
            KvCacheGroup dev = RandomLayoutTest.onDevice(fake, c.group(), uploads);
            RequestBlocks r = c.request();
            SlicePlan plan = SlicePlan.of(dev, r);
            RequestBlocks second = RequestBlocks.of(r.pageTable(), r.numTokens(), 0, r.blockSize());
            CompiledPlan batch = cuda.compile(dev, List.of(r, second), new ChecksumSpec(ChecksumMode.MIXED, CellPadding.NONE));
            MemorySegment rowBytes = arena.allocate(256, 8);
            KvMemory rowsOnDevice = fake.onDevice(KvMemory.host(rowBytes));
            List<StateRow> rows = List.of(new StateRow("ssm", rowsOnDevice, 0, 136), new StateRow("conv", rowsOnDevice, 136, 101));
            List<StateShard> state = rows.stream().map(StateShard::whole).toList();
            long segTokens = Math.min(40, dev.numPages() * (long) dev.pageSize());
            KvSegments.Plan segments = KvSegments.of(List.of(dev)).plan(segTokens, 0, dev.pageSize());
            // The worker: its group's blocks, state digests and the page probe, all on the engine's stream.
            // Distinct pages (a page holds one block of a request), shuffled.
            List<Integer> ids = new ArrayList<>(java.util.stream.IntStream.range(0, (int) dev.numPages()).boxed().toList());
            java.util.Collections.shuffle(ids, rnd);
            int[] blockTable = ids.subList(0, (int) Math.ceilDiv(segTokens, (long) dev.pageSize())).stream().mapToInt(i -> i).toArray();
            WorkerChecksummer worker = WorkerChecksummer.builder(cuda)
                    .groups(List.of(new WorkerChecksummer.WorkerGroup(0, 42, List.of(new WorkerChecksummer.ReplicaPart(ReplicaKey.NONE, dev)))))
                    .stateDigests(true).pageProbe(0, PageProbe.DEFAULT_PROBE_BYTES).build();
            List<BlockSelection> sel = List.of(BlockSelection.producer(0, blockTable, -1, segTokens, dev.pageSize(), null));
            // The consumer's verifying copy: the same request received into another device buffer of the same layout.
            List<BlockSelection> consumed = List.of(BlockSelection.consumer(0, blockTable, -1, 0, segTokens, dev.pageSize(), null));
            List<ReceivedKv> received = List.of(new ReceivedKv(0, RandomLayoutTest.onDevice(fake, c.group(), uploads), blockTable));

            // A verifying copy between simulated device buffers (the first of NumPy's copy vectors).
            CopyVector cv = CopyVector.all().get(0);
            List<KvMemory> cvMemory = cv.buffers(arena).stream().map(m -> fake.onDevice(KvMemory.host(m))).toList();
            CopyPlan copy = cuda.compileCopy(cv.source(cvMemory), cv.sourceRequest(), cv.destination(cvMemory),
                    cv.destinationRequest(), cv.spec());

            // One case per entry point: the call with the capturing stream.
            Map<String, Supplier<AutoCloseable>> cases = new LinkedHashMap<>();
            cases.put("KvChecksum#submit(CompiledPlan,long)", () -> cuda.submit(batch, STREAM));
            cases.put("KvChecksum#submit(SlicePlan,long)", () -> cuda.submit(plan, STREAM));
            cases.put("KvChecksum#submit(KvCacheGroup,RequestBlocks,long)", () -> cuda.submit(dev, r, STREAM));
            cases.put("KvChecksum#submitStateDigests(List,ChecksumMode,long)", () -> cuda.submitStateDigests(rows, ChecksumMode.STANDARD, STREAM));
            cases.put("KvChecksum#submitSliceSums(SlicePlan,long)", () -> cuda.submitSliceSums(plan, STREAM));
            cases.put("KvChecksum#submitCopy(CopyPlan,long)", () -> cuda.submitCopy(copy, STREAM));
            cases.put("PageProbe#submit(KvChecksum,SlicePlan,int,long)", () -> PageProbe.submit(cuda, plan, PageProbe.DEFAULT_PROBE_BYTES, STREAM));
            cases.put("KvSegments$Plan#submit(KvChecksum,long)", () -> segments.submit(cuda, STREAM));
            cases.put("cuda.CudaBackend#submitPageDigest(PageDigestPlan,long)", () -> backend.submitPageDigest(digestPlan(arena, fake), STREAM));
            cases.put("KvChecksum#submitPageDigest(PageDigestPlan,long)", () -> cuda.submitPageDigest(digestPlan(arena, fake), STREAM));
            cases.put("spi.Backend#submitPageDigest(PageDigestPlan,long)",
                    () -> ((io.kvchecksum.spi.Backend) backend).submitPageDigest(digestPlan(arena, fake), STREAM));
            cases.put("engine.worker.WorkerChecksummer#submit(Side,long,List,long)", () -> worker.submit(Side.PRODUCER, segTokens, sel, STREAM));
            cases.put("engine.worker.WorkerChecksummer#copyAndSubmit(long,List,List,List,long)",
                    () -> worker.copyAndSubmit(segTokens, consumed, received, List.of(), STREAM));
            cases.put("engine.worker.WorkerChecksummer#submit(Side,long,List,List,long)",
                    () -> worker.submit(Side.PRODUCER, segTokens, List.of(), state, STREAM));  // the auxiliary parts alone
            Map<String, Supplier<WorkerChecksummer.PendingRecord>> reported = new LinkedHashMap<>();
            reported.put("engine.worker.WorkerChecksummer#trySubmit(Side,long,List,long)", () -> worker.trySubmit(Side.PRODUCER, segTokens, sel, STREAM));
            reported.put("engine.worker.WorkerChecksummer#trySubmit(Side,long,List,List,long)",
                    () -> worker.trySubmit(Side.PRODUCER, segTokens, sel, state, STREAM));
            reported.put("engine.worker.WorkerChecksummer#tryCopyAndSubmit(long,List,List,List,long)",
                    () -> worker.tryCopyAndSubmit(segTokens, consumed, received, List.of(), STREAM));

            Set<String> covered = new TreeSet<>(cases.keySet());
            covered.addAll(reported.keySet());
            Set<String> found = enqueueEntryPoints();
            Set<String> unlisted = new TreeSet<>(found);
            unlisted.removeAll(covered);
            assertTrue(unlisted.isEmpty(), "public enqueue entry points taking a stream without a capture-refusal case here: "
                    + unlisted + " (add one to CaptureRefusalTest)");
            Set<String> gone = new TreeSet<>(covered);
            gone.removeAll(found);
            assertTrue(gone.isEmpty(), "cases for entry points that no longer exist: " + gone);
            System.out.println("CaptureRefusalTest: " + found.size() + " entry points: " + found);

            fake.capturing.add(STREAM);
            for (Map.Entry<String, Supplier<AutoCloseable>> e : cases.entrySet()) {
                rec.take();
                IllegalStateException x = assertThrows(IllegalStateException.class, () -> e.getValue().get().close(), e.getKey());
                assertTrue(x.getMessage().contains("capturing a CUDA graph"), e.getKey() + ": " + x.getMessage());
                assertNothingEnqueued(e.getKey(), rec.take());
            }
            for (Map.Entry<String, Supplier<WorkerChecksummer.PendingRecord>> e : reported.entrySet()) {
                rec.take();
                try (WorkerChecksummer.PendingRecord p = e.getValue().get()) {
                    assertNothingEnqueued(e.getKey(), rec.take());
                    assertTrue(p.isDone(), e.getKey() + ": a refused enqueue is done at once");
                    WorkerRecord record = p.record();
                    assertTrue(record.isFailed() && !record.isLayoutRefused(), e.getKey() + ": " + record);
                    assertTrue(record.backendFailure().contains("capturing a CUDA graph"), e.getKey() + ": " + record.backendFailure());
                }
            }
            // Each case enqueues once the capture has ended: the refusal above was the capture's.
            fake.capturing.clear();
            for (Map.Entry<String, Supplier<AutoCloseable>> e : cases.entrySet()) {
                rec.take();
                e.getValue().get().close();
                assertTrue(rec.take().stream().anyMatch(call -> call.name().equals("cuLaunchKernel")), e.getKey() + " launched nothing");
            }
            for (Map.Entry<String, Supplier<WorkerChecksummer.PendingRecord>> e : reported.entrySet()) {
                rec.take();
                e.getValue().get().close();
                assertTrue(rec.take().stream().anyMatch(call -> call.name().equals("cuLaunchKernel")), e.getKey() + " launched nothing");
            }
            fake.freeUploads();
            uploads.forEach(fake::cuMemFree);
        }
    }

    /** The reflection finds what it should: KvChecksum's stream submits are among the entry points, its own-stream ones not. */
    @Test
    void theScanFindsTheStreamSubmitsOnly() throws Exception {
        Set<String> found = enqueueEntryPoints();
        assertTrue(found.contains("KvChecksum#submit(SlicePlan,long)"), found.toString());
        assertFalse(found.contains("KvChecksum#submit(SlicePlan)"), found.toString());
        assertEquals(found.size(), new TreeSet<>(found).size());
    }

    private static void assertNothingEnqueued(String who, List<RecordingDriver.Call> calls) {
        for (RecordingDriver.Call call : calls) {
            assertFalse(ENQUEUING.contains(call.name()), who + ": a refused enqueue called " + call.name() + " (" + calls + ")");
        }
    }

    private static PageDigestPlan digestPlan(Arena arena, FakeCudaDriver fake) {
        assumeTrue(DigestVector.present(), "the kvchecksum-golden jar carries no vectors-digest/index.json");
        return DigestVector.all().stream().map(v -> v.plan(arena, fake::onDevice)).filter(p -> p.totalBytes() > 0).findFirst()
                .orElseThrow();
    }
}
