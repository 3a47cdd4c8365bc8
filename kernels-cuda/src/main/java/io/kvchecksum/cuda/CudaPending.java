package io.kvchecksum.cuda;

import io.kvchecksum.PendingChecksums;

import java.lang.foreign.MemorySegment;

import static io.kvchecksum.cuda.Cuda.check;

/**
 * Results on their way into pinned host memory. {@link #get()} waits on the copy's event only (never on the
 * caller's stream, the context or the device), copies the values out and gives the slot back to the pool, so
 * after {@code get()} closing is optional. Closing without {@code get()} hands the slot back once its copy is done.
 */
final class CudaPending implements PendingChecksums {
    private final CudaDriver driver;
    private final ContextResources resources;
    private ContextResources.Slot slot;
    private final long resultOffset;
    private final int count;
    private long[] values;

    CudaPending(CudaDriver driver, ContextResources resources, ContextResources.Slot slot, long resultOffset, int count) {
        this.driver = driver;
        this.resources = resources;
        this.slot = slot;
        this.resultOffset = resultOffset;
        this.count = count;
    }

    @Override
    @SuppressWarnings("restricted") // the pinned result area was sized for `count` values when the slot was acquired
    public long[] get() {
        if (values == null) {
            if (slot == null) {
                throw new IllegalStateException("closed before get()");
            }
            check(driver, driver.cuEventSynchronize(slot.copied), "cuEventSynchronize(result copy)");
            long[] v = new long[count];
            MemorySegment.copy(MemorySegment.ofAddress(slot.pinned + resultOffset).reinterpret(8L * count), KernelAbi.U64, 0,
                    v, 0, count);
            values = v;
            resources.release(slot);
            slot = null;
        }
        return values.clone();
    }

    @Override
    public boolean isDone() {
        if (values != null) {
            return true;
        }
        if (slot == null) {
            return false;
        }
        int rc = driver.cuEventQuery(slot.copied);
        if (rc == Cuda.ERROR_NOT_READY) {
            return false;
        }
        check(driver, rc, "cuEventQuery(result copy)");
        return true;
    }

    @Override
    public void close() {
        if (slot != null) {
            resources.retire(slot);
            slot = null;
        }
    }
}
