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

import java.util.ArrayList;
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
 * buffer is described by an address of its own: every buffer that is not a sub-buffer (a "root") gets a slot of 2^44
 * bytes in a space of this backend's from 2^62 up, and a sub-buffer ({@code clCreateSubBuffer}) lies in its parent's
 * slot at its origin, so that sub-buffers of one buffer overlap exactly where their bytes do. Buffers are found by
 * that address.
 */
final class RegisteredBuffers {
    /** The first address of the registrations' space, and the bytes of each root's slot (larger than any buffer). */
    private static final long SPACE = 1L << 62;
    private static final int SLOT_BITS = 44;

    private final cl_context context;
    /**
     * Registered buffers by their address, the latest first (a sub-buffer at origin 0 shares its parent's address;
     * an entry of a buffer released without {@link #forget} may linger until its handle is registered again).
     */
    private final Map<Long, List<Registration>> registered = new ConcurrentHashMap<>();
    /** The address of each registered buffer, by handle. */
    private final Map<Long, Long> addresses = new ConcurrentHashMap<>();
    /** The slot of each root buffer (registered, or the parent of a registered sub-buffer), by handle. */
    private final Map<Long, Long> slots = new ConcurrentHashMap<>();
    private long nextSlot;

    /**
     * A registered buffer: its handle, the buffer it lies in ({@code root}, {@code rootMem}: itself, or a sub-buffer's
     * parent, which lives at least as long as the sub-buffer) and its first byte's offset there.
     */
    record Registration(cl_mem mem, long root, cl_mem rootMem, long origin, long size) {
    }

    RegisteredBuffers(cl_context context) {
        this.context = context;
    }

    /**
     * Registers {@code mem} (of this context) and describes it as device memory of its {@code CL_MEM_SIZE} at its
     * address (the same while it stays registered; a sub-buffer's within its parent's slot).
     */
    synchronized KvMemory register(cl_mem mem) {
        Objects.requireNonNull(mem, "mem");
        requireOwnContext(mem);
        long size = size(mem);
        long handle = mem.getNativePointer();
        cl_mem rootMem = new cl_mem();
        JoclApi.check(CL.clGetMemObjectInfo(mem, CL.CL_MEM_ASSOCIATED_MEMOBJECT, Sizeof.cl_mem, Pointer.to(rootMem), null),
                "clGetMemObjectInfo(CL_MEM_ASSOCIATED_MEMOBJECT)");
        long parent = rootMem.getNativePointer();
        rootMem = parent == 0 ? mem : rootMem;
        long root = parent == 0 ? handle : parent;
        long origin = parent == 0 ? 0 : info(mem, CL.CL_MEM_OFFSET, "CL_MEM_OFFSET");
        // Placed afresh on every registration: a handle may be reused by a new buffer after the old one's release.
        forget(handle);
        Long slot = slots.get(root);
        if (slot == null) {
            slot = SPACE + (nextSlot++ << SLOT_BITS);
            slots.put(root, slot);
        }
        long address = slot + origin;
        addresses.put(handle, address);
        List<Registration> at = new ArrayList<>(registered.getOrDefault(address, List.of()));
        at.addFirst(new Registration(mem, root, rootMem, origin, size));
        registered.put(address, List.copyOf(at));
        return KvMemory.device(address, size);
    }

    /** Ends a registration; one never made is ignored. */
    synchronized void forget(cl_mem mem) {
        forget(mem.getNativePointer());
    }

    private void forget(long handle) {
        Long address = addresses.remove(handle);
        if (address != null) {
            List<Registration> at = new ArrayList<>(registered.getOrDefault(address, List.of()));
            at.removeIf(r -> r.mem().getNativePointer() == handle);
            if (at.isEmpty()) {
                registered.remove(address);
            } else {
                registered.put(address, List.copyOf(at));
            }
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
        return registration(dm, what).mem();
    }

    /**
     * The registration behind {@code dm} (which buffer, and where it lies in its root), its size checked; throws
     * {@link InvalidLayoutException} otherwise, {@code what} (naming {@code dm}) leading the message.
     */
    Registration registration(KvMemory.Device dm, String what) {
        Registration r = null;
        for (Registration c : registered.getOrDefault(dm.address(), List.of())) {
            if (r == null || (c.size() >= dm.byteSize() && r.size() < dm.byteSize())) {
                r = c;
            }
        }
        if (r == null) {
            throw new InvalidLayoutException(what + " is not a cl_mem registered with buffer(cl_mem) of this backend "
                    + "(opencl reads OpenCL buffers of its own context, not CUDA pointers)");
        }
        requireOwnContext(r.mem());
        long size = size(r.mem());
        if (dm.byteSize() > size) {
            throw new InvalidLayoutException(what + " claims " + dm.byteSize() + " bytes, but the cl_mem's CL_MEM_SIZE is "
                    + size);
        }
        return r;
    }

    /** A pointer-sized {@code clGetMemObjectInfo} answer (a handle or an offset) of {@code mem}. */
    private static long info(cl_mem mem, int param, String name) {
        long[] v = new long[1];
        JoclApi.check(CL.clGetMemObjectInfo(mem, param, Sizeof.size_t, Pointer.to(v), null),
                "clGetMemObjectInfo(" + name + ")");
        return v[0];
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
