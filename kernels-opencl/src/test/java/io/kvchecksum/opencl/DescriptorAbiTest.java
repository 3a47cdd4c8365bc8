package io.kvchecksum.opencl;

import io.kvchecksum.CacheLayer;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.RequestBlocks;
import io.kvchecksum.SlicePlan;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_context_properties;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_program;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The descriptor words' ABI on both sides: {@link Descriptors} (Java) writes each field at its word offset, and the
 * kernels' {@code DESC_*} macros read each field from the same word (a batch's request words: the {@code REQ_*}
 * macros, against the same offsets). A hand-built slice plan whose every field has a distinct value is serialized;
 * the Java side is checked word by word against values worked out by hand, and on an OpenCL device a kernel compiled
 * together with the shipped source reads the fields back through the macros.
 */
class DescriptorAbiTest {
    /** Fields in the order the echo kernel writes them. */
    private static final List<String> FIELDS = List.of("FACTOR", "PIECES", "K_PIECES", "K_BASE", "K_PAGE_STRIDE",
            "K_TOKEN_STRIDE", "V_BASE", "V_PAGE_STRIDE", "V_TOKEN_STRIDE", "K_ALIGNED", "V_ALIGNED", "WORDS");

    private static final String ECHO = """
            __kernel void descriptor_echo(__global const ulong *desc, uint n, __global ulong *out) {
                uint i = get_global_id(0);
                if (i >= n) {
                    return;
                }
                __global const ulong *d = desc + (ulong) i * DESC_WORDS;
                __global ulong *o = out + (ulong) i * 12;
                o[0] = d[DESC_FACTOR];
                o[1] = d[DESC_PIECES];
                o[2] = d[DESC_K_PIECES];
                o[3] = d[DESC_K_BASE];
                o[4] = d[DESC_K_PAGE_STRIDE];
                o[5] = d[DESC_K_TOKEN_STRIDE];
                o[6] = d[DESC_V_BASE];
                o[7] = d[DESC_V_PAGE_STRIDE];
                o[8] = d[DESC_V_TOKEN_STRIDE];
                o[9] = (d[DESC_FLAGS] & DESC_K_ALIGNED) ? 1 : 0;
                o[10] = (d[DESC_FLAGS] & DESC_V_ALIGNED) ? 1 : 0;
                o[11] = DESC_WORDS;
            }
            """;

    /**
     * Layer 3, global heads 5 and 6, pages of 2 slots, in one 4096-byte segment. K: offset 8, strides (page 512,
     * token 128, head 48), 16-byte cells: every address a multiple of 8. V: offset 2061 (odd), strides (400, 96, 24),
     * 24-byte cells. The request reads pages 2 and 1, so the copied span starts at K's lowest byte, 8 + 1*512 = 520.
     */
    private static Descriptors sample(Arena arena) {
        KvMemory m = KvMemory.host(arena.allocate(4096, 64));
        KvCacheGroup g = KvCacheGroup.of(2, 4, List.of(CacheLayer.of(3, 5, 2, new KvRegion(m, 8, 512, 128, 48, 16),
                new KvRegion(m, 2061, 400, 96, 24, 24))));
        return Descriptors.of(List.of(SlicePlan.of(g, RequestBlocks.of(new int[] {2, 1}, 4, 2))));
    }

    /** The fields of head {@code h} (0 or 1), worked out by hand from the layout above, in {@link #FIELDS} order. */
    private static long[] expected(int h) {
        long span = 520;
        return new long[] {
            2L * (3 * 65536 + 5 + h) + 1, // m = 2*(layer*2^16 + global head) + 1
            5, 2,                          // 2 K pieces + 3 V pieces
            8 + 48L * h - span, 512, 128,  // K base of page 0 relative to the copied span (before it: wraps)
            2061 + 24L * h - span, 400, 96,
            1, 0,                          // K aligned, V not
            10,
        };
    }

    @Test
    void javaWritesEveryFieldAtItsWord() {
        try (Arena arena = Arena.ofConfined()) {
            Descriptors d = sample(arena);
            assertEquals(1, d.spans.size());
            assertEquals(520, d.spans.get(0).from());
            assertEquals(2 * Descriptors.WORDS, d.desc.length);
            int[] at = {Descriptors.FACTOR, Descriptors.PIECES, Descriptors.K_PIECES, Descriptors.K_BASE,
                Descriptors.K_PAGE_STRIDE, Descriptors.K_TOKEN_STRIDE, Descriptors.V_BASE, Descriptors.V_PAGE_STRIDE,
                Descriptors.V_TOKEN_STRIDE};
            for (int h = 0; h < 2; h++) {
                long[] want = expected(h);
                for (int f = 0; f < at.length; f++) {
                    assertEquals(want[f], d.desc[h * Descriptors.WORDS + at[f]], "head " + h + " " + FIELDS.get(f));
                }
                long flags = d.desc[h * Descriptors.WORDS + Descriptors.FLAGS];
                assertEquals(want[9], flags & Descriptors.K_ALIGNED, "head " + h + " K_ALIGNED");
                assertEquals(want[10], (flags & Descriptors.V_ALIGNED) != 0 ? 1 : 0, "head " + h + " V_ALIGNED");
            }
        }
    }

    @Test
    void kernelSourceDefinesTheSameWordOffsets() {
        Map<String, Long> defined = new LinkedHashMap<>();
        Matcher m = Pattern.compile("#define DESC_(\\w+) (\\d+)u?").matcher(OpenClBackend.kernelSource());
        while (m.find()) {
            defined.put(m.group(1), Long.parseLong(m.group(2)));
        }
        Map<String, Long> java = new LinkedHashMap<>();
        java.put("FACTOR", (long) Descriptors.FACTOR);
        java.put("PIECES", (long) Descriptors.PIECES);
        java.put("K_PIECES", (long) Descriptors.K_PIECES);
        java.put("K_BASE", (long) Descriptors.K_BASE);
        java.put("K_PAGE_STRIDE", (long) Descriptors.K_PAGE_STRIDE);
        java.put("K_TOKEN_STRIDE", (long) Descriptors.K_TOKEN_STRIDE);
        java.put("V_BASE", (long) Descriptors.V_BASE);
        java.put("V_PAGE_STRIDE", (long) Descriptors.V_PAGE_STRIDE);
        java.put("V_TOKEN_STRIDE", (long) Descriptors.V_TOKEN_STRIDE);
        java.put("FLAGS", (long) Descriptors.FLAGS);
        java.put("WORDS", (long) Descriptors.WORDS);
        java.put("K_ALIGNED", Descriptors.K_ALIGNED);
        java.put("V_ALIGNED", Descriptors.V_ALIGNED);
        assertEquals(java, defined, "DESC_* macros of kvchecksum.cl against Descriptors");
    }

    @Test
    void kernelSourceDefinesTheSameRequestWords() {
        Map<String, Long> defined = new LinkedHashMap<>();
        Matcher m = Pattern.compile("#define REQ_(\\w+) (\\d+)").matcher(OpenClBackend.kernelSource());
        while (m.find()) {
            defined.put(m.group(1), Long.parseLong(m.group(2)));
        }
        assertEquals(Map.of("START_TOKEN", (long) Descriptors.REQ_START_TOKEN, "FIRST_BLOCK",
                (long) Descriptors.REQ_FIRST_BLOCK, "NUM_TOKENS", (long) Descriptors.REQ_NUM_TOKENS, "BLOCK_BEGIN",
                (long) Descriptors.REQ_BLOCK_BEGIN, "TABLE_OFFSET", (long) Descriptors.REQ_TABLE_OFFSET, "WORDS",
                (long) Descriptors.REQ_WORDS), defined, "REQ_* macros of kvchecksum.cl against Descriptors");
    }

    @Test
    void theCompiledKernelReadsEveryFieldFromItsWord() {
        OpenClTests.requireOpenCl();
        OpenClDevices.Found found = OpenClDevices.select(OpenClDevices.configuredSpec());
        cl_context_properties props = new cl_context_properties();
        props.addProperty(CL.CL_CONTEXT_PLATFORM, found.platform());
        int[] err = new int[1];
        cl_context ctx = CL.clCreateContext(props, 1, new cl_device_id[] {found.device()}, null, null, err);
        JoclApi.check(err[0], "clCreateContext");
        String source = OpenClBackend.kernelSource() + "\n" + ECHO;
        cl_program program = null;
        cl_command_queue queue = null;
        cl_kernel kernel = null;
        cl_mem in = null;
        cl_mem out = null;
        try (Arena arena = Arena.ofConfined()) {
            queue = CL.clCreateCommandQueue(ctx, found.device(), 0, err);
            JoclApi.check(err[0], "clCreateCommandQueue");
            program = CL.clCreateProgramWithSource(ctx, 1, new String[] {source}, new long[] {source.length()}, err);
            JoclApi.check(err[0], "clCreateProgramWithSource");
            JoclApi.check(CL.clBuildProgram(program, 1, new cl_device_id[] {found.device()}, "", null, null), "clBuildProgram");
            kernel = CL.clCreateKernel(program, "descriptor_echo", err);
            JoclApi.check(err[0], "clCreateKernel");
            long[] desc = sample(arena).desc;
            long[] echoed = new long[2 * 12];
            in = CL.clCreateBuffer(ctx, CL.CL_MEM_READ_ONLY | CL.CL_MEM_COPY_HOST_PTR, (long) desc.length * Sizeof.cl_ulong,
                    Pointer.to(desc), err);
            JoclApi.check(err[0], "clCreateBuffer");
            out = CL.clCreateBuffer(ctx, CL.CL_MEM_WRITE_ONLY, (long) echoed.length * Sizeof.cl_ulong, null, err);
            JoclApi.check(err[0], "clCreateBuffer");
            JoclApi.check(CL.clSetKernelArg(kernel, 0, Sizeof.cl_mem, Pointer.to(in)), "clSetKernelArg");
            JoclApi.check(CL.clSetKernelArg(kernel, 1, Sizeof.cl_uint, Pointer.to(new int[] {2})), "clSetKernelArg");
            JoclApi.check(CL.clSetKernelArg(kernel, 2, Sizeof.cl_mem, Pointer.to(out)), "clSetKernelArg");
            JoclApi.check(CL.clEnqueueNDRangeKernel(queue, kernel, 1, null, new long[] {2}, null, 0, null, null),
                    "clEnqueueNDRangeKernel");
            JoclApi.check(CL.clEnqueueReadBuffer(queue, out, CL.CL_TRUE, 0, (long) echoed.length * Sizeof.cl_ulong,
                    Pointer.to(echoed), 0, null, null), "clEnqueueReadBuffer");
            for (int h = 0; h < 2; h++) {
                long[] want = expected(h);
                for (int f = 0; f < FIELDS.size(); f++) {
                    assertEquals(want[f], echoed[h * 12 + f], "head " + h + " DESC_" + FIELDS.get(f) + " read by the kernel");
                }
            }
        } finally {
            if (out != null) {
                CL.clReleaseMemObject(out);
            }
            if (in != null) {
                CL.clReleaseMemObject(in);
            }
            if (kernel != null) {
                CL.clReleaseKernel(kernel);
            }
            if (program != null) {
                CL.clReleaseProgram(program);
            }
            if (queue != null) {
                CL.clReleaseCommandQueue(queue);
            }
            CL.clReleaseContext(ctx);
        }
    }
}
