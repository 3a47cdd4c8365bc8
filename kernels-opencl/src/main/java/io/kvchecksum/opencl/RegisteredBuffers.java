package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.SlicePlan;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_context;
import org.jocl.cl_mem;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The engine buffers registered with {@link OpenClBackend#buffer(cl_mem)}, and the runtime checks of device
 * memory (registrations change at runtime, so these are not limits the compiler knows): a handle must be registered,
 * of the backend's context, no smaller than described, and one operation reads one buffer. The checks query OpenCL
 * directly ({@code clGetMemObjectInfo}), not through {@link ClApi}: they enqueue nothing.
 *
 * <p>A {@code cl_mem} is a handle, not an address, and buffers' handles lie a few hundred bytes apart; the library
 * compares device addresses (the verifying copy refuses a source and a destination whose byte ranges overlap). So each
 * registration is described by an address of its own, in a space of this backend's from 2^62 up where registrations'
 * ranges never overlap, and buffers are found by that address.
 */
final class RegisteredBuffers {
    private final cl_context context;
    /** The first address of the registrations' space; each range ends at least {@link #GAP} before the next. */
    private static final long SPACE = 1L << 62;
    private static final long GAP = 1L << 16;

    /** Registered buffers by their address. */
    private final Map<Long, cl_mem> registered = new ConcurrentHashMap<>();
    /** The address of each registered buffer, by handle. */
    private final Map<Long, Long> addresses = new ConcurrentHashMap<>();
    private long next = SPACE;

    RegisteredBuffers(cl_context context) {
        this.context = context;
    }

    /**
     * Registers {@code mem} (of this context) and describes it as device memory of its {@code CL_MEM_SIZE} at its
     * address (the same while it stays registered).
     */
    synchronized KvMemory register(cl_mem mem) {
        Objects.requireNonNull(mem, "mem");
        requireOwnContext(mem);
        long size = size(mem);
        Long address = addresses.get(mem.getNativePointer());
        if (address == null) {
            address = next;
            next = Math.addExact(next, (Math.ceilDiv(Math.max(1, size), GAP) + 1) * GAP);
            addresses.put(mem.getNativePointer(), address);
        }
        registered.put(address, mem);
        return KvMemory.device(address, size);
    }

    /** Ends a registration; one never made is ignored. */
    synchronized void forget(cl_mem mem) {
        Long address = addresses.remove(mem.getNativePointer());
        if (address != null) {
            registered.remove(address, mem);
        }
    }

    /**
     * The one registered buffer every region of a device plan lies in, its described size checked against its
     * {@code CL_MEM_SIZE} now; throws {@link InvalidLayoutException} before anything is enqueued otherwise.
     */
    cl_mem of(SlicePlan plan) {
        cl_mem mem = null;
        for (CacheLayer l : plan.group().layers()) {
            for (KvRegion r : l.v() == null ? List.of(l.k()) : List.of(l.k(), l.v())) {
                KvMemory.Device dm = (KvMemory.Device) r.memory();
                String where = "layer " + l.layer() + " " + (r == l.k() ? "K" : "V") + " region's " + dm;
                cl_mem m = lookup(dm, where);
                if (mem != null && m != mem) {
                    throw new InvalidLayoutException(where + " is another cl_mem than the first region's (0x"
                            + Long.toHexString(mem.getNativePointer()) + "): the kernels read one buffer per operation");
                }
                mem = m;
            }
        }
        return mem;
    }

    /**
     * The registered cl_mem behind {@code dm}, its size checked; throws {@link InvalidLayoutException} otherwise,
     * {@code what} (naming {@code dm}) leading the message.
     */
    cl_mem lookup(KvMemory.Device dm, String what) {
        cl_mem m = registered.get(dm.address());
        if (m == null) {
            throw new InvalidLayoutException(what + " is not a cl_mem registered with buffer(cl_mem) of this backend "
                    + "(opencl reads OpenCL buffers of its own context, not CUDA pointers)");
        }
        requireOwnContext(m);
        long size = size(m);
        if (dm.byteSize() > size) {
            throw new InvalidLayoutException(what + " claims " + dm.byteSize() + " bytes, but the cl_mem's CL_MEM_SIZE is "
                    + size);
        }
        return m;
    }

    private void requireOwnContext(cl_mem mem) {
        long[] ctx = new long[1];
        JoclApi.check(CL.clGetMemObjectInfo(mem, CL.CL_MEM_CONTEXT, Sizeof.cl_context, Pointer.to(ctx), null),
                "clGetMemObjectInfo(CL_MEM_CONTEXT)");
        if (ctx[0] != context.getNativePointer()) {
            throw new InvalidLayoutException("the cl_mem 0x" + Long.toHexString(mem.getNativePointer()) + " belongs to "
                    + "another OpenCL context (0x" + Long.toHexString(ctx[0]) + ") than this backend's (0x"
                    + Long.toHexString(context.getNativePointer()) + "): open the backend with open(engineContext, device)");
        }
    }

    /** {@return the buffer's {@code CL_MEM_SIZE}} */
    static long size(cl_mem mem) {
        long[] size = new long[1];
        JoclApi.check(CL.clGetMemObjectInfo(mem, CL.CL_MEM_SIZE, Sizeof.size_t, Pointer.to(size), null),
                "clGetMemObjectInfo(CL_MEM_SIZE)");
        return size[0];
    }
}
