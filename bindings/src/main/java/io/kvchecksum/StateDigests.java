package io.kvchecksum;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Per-request digests of state rows (Mamba/SSM state, SGLang's state buffers), computed by any backend through its
 * own slice sums ({@link KvChecksum#stateDigests}).
 *
 * <p><b>The definition.</b> A row of {@code L} bytes is read as {@code P = ceil(L/8)} little-endian 8-byte pieces;
 * when {@code L} is not a multiple of 8 the last piece is the last {@code L mod 8} bytes <b>zero-padded at its end</b>
 * (its high bytes are 0). The digest is {@code D = sum_{p<P} v(x_p)*(2p+1) mod 2^64}, with {@code v} the identity in
 * the standard mode and {@link Definition#feistel3} in the mixed mode: the KV slice sum of a request of one token
 * whose one cell is the row. An empty row has digest 0. There is no layer/head factor and no block: a state row is
 * per request, so the block, TP/PP and rechunking laws do not apply to it; two digests are compared as a whole.
 *
 * <p><b>How every backend computes it.</b> All rows form one {@link KvCacheGroup} of one-token cells, checksummed in
 * the requested mode by the backend's slice sums in one plan (one launch on a GPU backend, on the caller's stream for
 * {@link KvChecksum#submitStateDigests}): row {@code i}'s whole pieces are layer {@code i}, head 0 (cell = the row's
 * first {@code 8*floor(L/8)} bytes), whose slice sum is the row's sum over its whole pieces. The tail of a row with
 * {@code L mod 8 = r != 0} is layer {@code i}, head 1, whose cell is the 8-byte window of the row's memory ending at
 * the row's end (bytes 0..7 of the memory for a row that ends before byte 8): with weight 1 that slice sum is the
 * window's piece itself (through the mixer in the mixed mode, which is a bijection and is undone on the host), from
 * which the {@code r} tail bytes are taken, zero-padded, mixed where the mode says, and weighted
 * {@code 2*floor(L/8)+1}. The window may therefore read up to 7 bytes of the row's memory
 * outside the row (never outside the memory); they never enter the digest. A row in a memory of fewer than 8 bytes
 * has no such window: its tail is read directly on host memory and refused on device memory.
 */
public final class StateDigests {
    private StateDigests() {
    }

    /**
     * The digest of every row, in order, computed by {@code backend} in {@code mode} on its own stream; waits for them.
     *
     * @param backend the backend whose {@link KvChecksum#sliceSums(SlicePlan)} reads the rows, not null
     * @param rows the state rows, none null; may be empty (then the result is empty)
     * @param mode the checksum mode, not null
     * @return a new array of {@code rows.size()} digests, {@code [i]} for {@code rows.get(i)}
     * @throws NullPointerException when {@code backend}, {@code rows} or one of its rows is null
     * @throws InvalidLayoutException when the backend cannot read a row's memory or does not implement the mode
     *     (before anything is read), or a row's tail cannot be windowed on device memory
     */
    public static long[] compute(KvChecksum backend, List<StateRow> rows, ChecksumMode mode) {
        try (PendingChecksums p = start(backend, rows, mode, OptionalLong.empty())) {
            return p.get();
        }
    }

    /**
     * Starts the digests of {@code rows}: one one-token slice-sums plan of every row's whole pieces and every tail's
     * window (one launch on a GPU backend), run on {@code stream} (as {@link KvChecksum#submit(CompiledPlan, long)}
     * describes it) or, when empty, on the backend's own; the digests are assembled when the pending values are read.
     *
     * <p>The plan is in the requested mode, tails included: a tail window is one piece of weight 1, so its slice sum in
     * the mixed mode is {@code feistel3(window)}, and the mixer is undone ({@link #unmix}) to take the tail bytes out.
     */
    static PendingChecksums start(KvChecksum backend, List<StateRow> rows, ChecksumMode mode, OptionalLong stream) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(rows, "rows");
        if (mode == null) {
            throw new InvalidLayoutException("mode must not be null");
        }
        long[] out = new long[rows.size()];
        List<CacheLayer> cells = new ArrayList<>();
        // Per cell of the plan: its row, and for a tail window the bit where the tail's bytes start (-1: whole pieces).
        List<int[]> what = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            StateRow s = Objects.requireNonNull(rows.get(i), "rows[" + i + "]");
            long full = s.length() & ~7L;
            int r = (int) (s.length() & 7);
            if (full > Integer.MAX_VALUE - 7) {
                throw new InvalidLayoutException("state row " + s.name() + ": " + s.length()
                        + " bytes exceed the largest cell a plan describes (2^31 - 8 bytes)");
            }
            if (full > 0) {
                cells.add(CacheLayer.kOnly(i, 0, 1, new KvRegion(s.memory(), s.offset(), 0, 0, 0, (int) full)));
                what.add(new int[] {i, -1});
            }
            if (r == 0) {
                continue;
            }
            long end = s.offset() + s.length();
            long size = s.memory().byteSize();
            if (size < 8) {
                if (!(s.memory() instanceof KvMemory.Host h)) {
                    throw new InvalidLayoutException("state row " + s.name() + ": its memory of " + size
                            + " bytes holds no 8-byte window for its " + r + " tail bytes on device memory");
                }
                out[i] = tail(s, h.segment(), mode, full, r);
                continue;
            }
            // The tail bytes [end - r, end) sit at bytes (end - r - start).. of the window's little-endian piece. The
            // window is head 1 of the row's layer, so a row's two cells are distinct slices of one group.
            long start = Math.max(0, end - 8);
            cells.add(CacheLayer.kOnly(i, 1, 1, new KvRegion(s.memory(), start, 0, 0, 0, 8)));
            what.add(new int[] {i, (int) (8 * (end - r - start))});
        }
        if (cells.isEmpty()) {
            return PendingChecksums.completed(out);
        }
        CompiledPlan plan = SlicePlan.of(new KvCacheGroup(cells, 1, 1), RequestBlocks.of(new int[] {0}, 1, 1), mode).compiled();
        PendingChecksums sums = backend.startSliceSums(plan, stream);
        return new PendingChecksums() {
            private long[] digests;

            @Override
            public long[] get() {
                if (digests == null) {
                    SliceSums s = plan.sliceSums(sums.get(), 0);
                    sums.close();
                    long[] d = out.clone();
                    for (int k = 0; k < what.size(); k++) {
                        int i = what.get(k)[0];
                        int shift = what.get(k)[1];
                        if (shift < 0) {
                            d[i] += s.get(k, 0);
                            continue;
                        }
                        long window = mode == ChecksumMode.MIXED ? unmix(s.get(k, 0)) : s.get(k, 0);
                        long length = rows.get(i).length();
                        long piece = (window >>> shift) & ((1L << (8 * (length & 7))) - 1);
                        d[i] += Definition.pieceValue(piece, mode) * Definition.weight(length >>> 3);
                    }
                    digests = d;
                }
                return digests.clone();
            }

            @Override
            public boolean isDone() {
                return digests != null || sums.isDone();
            }

            @Override
            public void close() {
                sums.close();
            }
        };
    }

    /**
     * {@return {@code y}'s preimage under {@link Definition#feistel3}: its three rounds in reverse order} Each round
     * changes one 32-bit half by a function of the other, which it leaves alone, so applying it again undoes it.
     *
     * @param y a value of {@code feistel3}
     */
    static long unmix(long y) {
        long p = (y & 0xFFFFFFFFL) * 0xC2B2AE35L;
        y ^= (p ^ (p >>> 32)) << 32;
        p = (y >>> 32) * 0x85EBCA6BL;
        y ^= (p ^ (p >>> 32)) & 0xFFFFFFFFL;
        p = (y & 0xFFFFFFFFL) * 0x9E3779B9L;
        y ^= (p ^ (p >>> 32)) << 32;
        return y;
    }

    private static long tail(StateRow s, MemorySegment seg, ChecksumMode mode, long full, int r) {
        long piece = 0;
        for (int b = 0; b < r; b++) {
            piece |= (seg.get(ValueLayout.JAVA_BYTE, s.offset() + full + b) & 0xFFL) << (8 * b);
        }
        return Definition.pieceValue(piece, mode) * Definition.weight(full >>> 3);
    }

    /**
     * The definition read literally on host memory, single-threaded: an oracle for tests, independent of the plan.
     *
     * @param row the state row, in host memory
     * @param mode the checksum mode, not null
     * @return the row's digest, the same value {@link #compute} gives for it
     * @throws InvalidLayoutException when the row is not in host memory
     */
    public static long reference(StateRow row, ChecksumMode mode) {
        if (!(row.memory() instanceof KvMemory.Host h)) {
            throw new InvalidLayoutException("state row " + row.name() + ": the reference reads host memory only");
        }
        MemorySegment seg = h.segment();
        ValueLayout.OfLong le = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        long full = row.length() & ~7L;
        long d = 0;
        for (long p = 0; p < full >>> 3; p++) {
            d += Definition.pieceValue(seg.get(le, row.offset() + 8 * p), mode) * Definition.weight(p);
        }
        int r = (int) (row.length() & 7);
        return r == 0 ? d : d + tail(row, seg, mode, full, r);
    }
}
