package io.kvchecksum.cuda;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import static io.kvchecksum.cuda.Cuda.check;

/**
 * What the backend keeps per CUDA context: side streams for the result copies, a stream of its own for blocking
 * calls, and a pool of slots (pinned staging, device buffer, two events) so that a steady-state enqueue allocates
 * and frees nothing. cuMemAlloc may be slow and cuMemFree may synchronize the device, so buffers only grow (on an
 * enqueue larger than any before it in this context) and are freed by {@link #close()} alone.
 *
 * <p>Thread-safe: the pool is guarded by this object's lock; a slot belongs to one computation at a time.
 */
final class ContextResources {
    /** Side streams the result copies go round; more than one keeps one slow request from delaying the others' copies. */
    static final int SIDE_STREAMS = 2;

    /** Buffers and events of one computation in flight. */
    static final class Slot {
        long pinned;
        long pinnedBytes;
        long device;
        long deviceBytes;
        final long launched;
        final long copied;
        /** The plan whose descriptors and table the device buffer holds (uploaded by a job that was enqueued), or null. */
        Object uploadKey;

        Slot(long launched, long copied) {
            this.launched = launched;
            this.copied = copied;
        }
    }

    private final CudaDriver driver;
    final long context;
    final LaunchPlanner planner;
    final long ownStream;
    private final long[] sideStreams = new long[SIDE_STREAMS];
    private int nextSide;
    private final ArrayDeque<Slot> free = new ArrayDeque<>();
    private final List<Slot> retiring = new ArrayList<>();
    private final List<Slot> quarantined = new ArrayList<>();
    private final List<Slot> all = new ArrayList<>();
    private final List<Long> oldDevice = new ArrayList<>();
    private final List<Long> oldPinned = new ArrayList<>();

    /** Creates the streams; the context must be current on this thread. */
    ContextResources(CudaDriver driver, long context, int maxBlocksPerLaunch) {
        this.driver = driver;
        this.context = context;
        int[] dev = new int[1];
        check(driver, driver.cuCtxGetDevice(dev), "cuCtxGetDevice");
        this.planner = new LaunchPlanner(Cuda.attribute(driver, dev[0], Cuda.ATTR_MULTIPROCESSOR_COUNT), maxBlocksPerLaunch);
        long[] s = new long[1];
        check(driver, driver.cuStreamCreate(s, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
        this.ownStream = s[0];
        for (int i = 0; i < SIDE_STREAMS; i++) {
            check(driver, driver.cuStreamCreate(s, Cuda.STREAM_NON_BLOCKING), "cuStreamCreate");
            sideStreams[i] = s[0];
        }
    }

    synchronized long sideStream() {
        long s = sideStreams[nextSide];
        nextSide = (nextSide + 1) % SIDE_STREAMS;
        return s;
    }

    /** A free slot with at least the given capacities; grows one (allocating) only when none is large enough. */
    synchronized Slot acquire(long pinnedBytes, long deviceBytes) {
        reclaim();
        Slot pick = null;
        for (Slot s : free) {
            if (s.pinnedBytes >= pinnedBytes && s.deviceBytes >= deviceBytes) {
                pick = s;
                break;
            }
        }
        if (pick == null) {
            pick = free.isEmpty() ? newSlot() : free.peekFirst();
            grow(pick, pinnedBytes, deviceBytes);
        }
        free.remove(pick);
        return pick;
    }

    /** Returns a slot whose work has completed. */
    synchronized void release(Slot s) {
        free.addFirst(s);
    }

    /** Returns a slot whose work may still run: it is reused only once its copy event has completed. */
    synchronized void retire(Slot s) {
        retiring.add(s);
    }

    /**
     * Takes out of service a slot whose end could not be marked with an event (a failed {@code cuEventRecord}): work
     * still queued may read or write it, and nothing would tell when it stops, so it is never handed out again and only
     * {@link #close()} frees it.
     */
    synchronized void quarantine(Slot s) {
        quarantined.add(s);
    }

    /** Slots taken out of service by {@link #quarantine}, for tests. */
    synchronized int quarantinedSlots() {
        return quarantined.size();
    }

    private void reclaim() {
        for (Iterator<Slot> it = retiring.iterator(); it.hasNext(); ) {
            Slot s = it.next();
            int rc = driver.cuEventQuery(s.copied);
            if (rc == Cuda.SUCCESS) {
                it.remove();
                free.addFirst(s);
            } else if (rc != Cuda.ERROR_NOT_READY) {
                check(driver, rc, "cuEventQuery");
            }
        }
    }

    private Slot newSlot() {
        long[] e = new long[1];
        check(driver, driver.cuEventCreate(e, Cuda.EVENT_DISABLE_TIMING), "cuEventCreate");
        long launched = e[0];
        check(driver, driver.cuEventCreate(e, Cuda.EVENT_DISABLE_TIMING), "cuEventCreate");
        Slot s = new Slot(launched, e[0]);
        all.add(s);
        return s;
    }

    private void grow(Slot s, long pinnedBytes, long deviceBytes) {
        if (s.pinnedBytes < pinnedBytes) {
            long n = larger(s.pinnedBytes, pinnedBytes);
            s.pinned = replace(true, n, s.pinned, oldPinned);
            s.pinnedBytes = n;
        }
        if (s.deviceBytes < deviceBytes) {
            long n = larger(s.deviceBytes, deviceBytes);
            s.device = replace(false, n, s.device, oldDevice);
            s.deviceBytes = n;
            s.uploadKey = null;
        }
    }

    /** The new size of a buffer of {@code have} bytes that must hold {@code want}: at least double, at least 4 KiB. */
    private static long larger(long have, long want) {
        return Math.max(want, Math.max(4096, 2 * have));
    }

    /**
     * Allocates {@code n} bytes of pinned host or of device memory in place of {@code old} (0: none), which goes to
     * {@code retired} (work in flight may still use it), and returns the new address.
     */
    private long replace(boolean pinned, long n, long old, List<Long> retired) {
        long[] p = new long[1];
        if (pinned) {
            check(driver, driver.cuMemAllocHost(p, n), "cuMemAllocHost(" + n + " bytes)");
        } else {
            check(driver, driver.cuMemAlloc(p, n), "cuMemAlloc(" + n + " bytes)");
        }
        if (old != 0) {
            retired.add(old);
        }
        return p[0];
    }

    /** Waits for work still in flight and frees everything; the context must be current. */
    synchronized void close() {
        for (Slot s : all) {
            driver.cuEventSynchronize(s.copied);
        }
        if (!quarantined.isEmpty()) {
            // Their events say nothing: wait for the streams the backend owns; cuMemFree(Host) below also waits for
            // work of the device still using the memory.
            for (long side : sideStreams) {
                driver.cuStreamSynchronize(side);
            }
            driver.cuStreamSynchronize(ownStream);
        }
        for (Slot s : all) {
            if (s.pinned != 0) {
                driver.cuMemFreeHost(s.pinned);
            }
            if (s.device != 0) {
                driver.cuMemFree(s.device);
            }
            driver.cuEventDestroy(s.launched);
            driver.cuEventDestroy(s.copied);
        }
        oldPinned.forEach(driver::cuMemFreeHost);
        oldDevice.forEach(driver::cuMemFree);
        for (long s : sideStreams) {
            driver.cuStreamDestroy(s);
        }
        driver.cuStreamDestroy(ownStream);
        all.clear();
        free.clear();
        retiring.clear();
        quarantined.clear();
    }
}
