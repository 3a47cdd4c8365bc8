package io.kvchecksum.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumSpec;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.KvSegments;
import io.kvchecksum.RequestBlocks;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.IntStream;

/**
 * A zero-copy view of one Jlama session's KV cache as {@link KvSegments}: one {@link KvCacheGroup} per Jlama context
 * page, each describing Jlama's own memory; nothing is copied.
 *
 * <p>Jlama keeps a session's KV in pages of shape {@code [layersPerPage, 2, positionsPerPage, kvHeads * headDim]}
 * (K at index 0, V at 1; F32 or BF16), each page its own tensor, allocated as positions are written. It sizes pages to
 * fit a byte budget (1 MiB for ephemeral sessions), so a real model's session spans many pages: Llama-3.2-1B in F32
 * keeps 16 positions of its 16 layers per page; a model too small to fill a page falls back to pages of one layer and
 * one position. {@code KvBuffer.getKeyTensorsUptoPosition(layer, p)[c]} is layer {@code layer}'s K in context page
 * {@code c}: a slice {@code [positionsPerPage, kvHeads * headDim]}, token-major, one head's {@code headDim} values after
 * another, whose memory segment starts at the page's first position. Context page {@code c} therefore becomes one
 * segment: a group whose every layer has a K and a V {@link KvRegion} over that layer's two slices of page {@code c}
 * (layers in different Jlama pages simply have different memory), token stride {@code kvHeads * headDim * elem}, head
 * stride {@code headDim * elem}, cell {@code headDim * elem} bytes. Its checksum pages are {@code gcd(positionsPerPage,
 * blockSize)} positions, so every block boundary inside it is a page boundary, as {@link KvSegments} requires of a
 * consumer's first loaded block.
 *
 * <p>Limits, each refused with an {@link IllegalArgumentException} naming it: a distributed model whose KV is a sparse
 * column range, a working dtype other than F32 or BF16, and more positions than the model's context.
 */
public final class JlamaKv {

    private final KvSegments segments;
    /** [layer][context page][0 = K, 1 = V]: Jlama's own slices. */
    private final MemorySegment[][][] pages;
    private final int positions;
    private final int positionsPerPage;
    private final long rowBytes;

    JlamaKv(KvSegments segments, MemorySegment[][][] pages, int positions, int positionsPerPage, long rowBytes) {
        this.segments = segments;
        this.pages = pages;
        this.positions = positions;
        this.positionsPerPage = positionsPerPage;
        this.rowBytes = rowBytes;
    }

    /**
     * The view of positions {@code 0 .. positions-1} of {@code buffer}, a session cache of {@code model}, for checksum
     * blocks of {@code blockSize} tokens. Jlama pages not yet allocated are allocated, as Jlama does when it writes a
     * position (a consumer views its session before the load writes it).
     *
     * @param positions how many positions to view, at least 1 and at most the model's context length; the view holds
     *     whole Jlama pages, so {@link #positions()} may be more
     */
    public static JlamaKv of(AbstractModel model, KvBufferCache.KvBuffer buffer, int blockSize, int positions) {
        Config c = model.getConfig();
        int elem = switch (model.getWorkingDType()) {
            case F32 -> 4;
            case BF16 -> 2;
            default -> throw new IllegalArgumentException("Jlama KV of working dtype " + model.getWorkingDType()
                    + " is not supported (F32 or BF16)");
        };
        if (c.kvLength != c.dctx().kvSegmentLength) {
            throw new IllegalArgumentException("a distributed Jlama model holds KV columns " + c.dctx().kvSegmentStart + ".."
                    + c.dctx().kvSegmentEnd + " of " + c.kvLength + "; only whole-KV workers are supported");
        }
        if (positions < 1 || positions > c.contextLength) {
            throw new IllegalArgumentException("cannot view " + positions + " positions of a Jlama session: the model's"
                    + " context holds 1.." + c.contextLength);
        }
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        int kvHeads = c.numberOfKeyValueHeads;
        int headDim = c.kvLength / kvHeads;
        long rowBytes = (long) c.kvLength * elem;
        int layers = c.dctx().numberOfLayers;
        MemorySegment[][][] pages = new MemorySegment[layers][][];
        int perPage = -1;
        for (int l = 0; l < layers; l++) {
            AbstractTensor<?, ?>[] ks = buffer.getKeyTensorsUptoPosition(l, positions - 1);
            AbstractTensor<?, ?>[] vs = buffer.getValTensorsUptoPosition(l, positions - 1);
            pages[l] = new MemorySegment[ks.length][];
            for (int p = 0; p < ks.length; p++) {
                MemorySegment k = ks[p].getMemorySegment();
                MemorySegment v = vs[p].getMemorySegment();
                if (k.byteSize() % rowBytes != 0 || v.byteSize() != k.byteSize()) {
                    throw new IllegalArgumentException("layer " + l + " page " + p + ": K of " + k.byteSize() + " and V of "
                            + v.byteSize() + " bytes are not whole positions of " + rowBytes + " bytes");
                }
                int n = Math.toIntExact(k.byteSize() / rowBytes);
                if (perPage < 0) {
                    perPage = n;
                } else if (n != perPage) {
                    throw new IllegalArgumentException("layer " + l + " page " + p + " holds " + n + " positions, another "
                            + perPage);
                }
                pages[l][p] = new MemorySegment[] {k, v};
            }
            if (pages[l].length != pages[0].length) {
                throw new IllegalArgumentException("layer " + l + " has " + pages[l].length + " Jlama pages, layer 0 "
                        + pages[0].length);
            }
        }
        int checksumPage = BigInteger.valueOf(perPage).gcd(BigInteger.valueOf(blockSize)).intValueExact();
        long pageStride = checksumPage * rowBytes;
        Function<MemorySegment, KvRegion> region = s -> new KvRegion(KvMemory.host(s), 0, pageStride, rowBytes,
                (long) headDim * elem, headDim * elem);
        List<KvCacheGroup> groups = new ArrayList<>(pages[0].length);
        for (int p = 0; p < pages[0].length; p++) {
            List<CacheLayer> ls = new ArrayList<>(layers);
            for (int l = 0; l < layers; l++) {
                // Jlama's layer index is the number in the weights' names (model.layers.<l>.self_attn).
                ls.add(CacheLayer.of(c.dctx().layerStart + l, c.dctx().kvSegmentStart / headDim, kvHeads,
                        region.apply(pages[l][p][0]), region.apply(pages[l][p][1])));
            }
            groups.add(KvCacheGroup.of(checksumPage, perPage / checksumPage, ls));
        }
        return new JlamaKv(KvSegments.of(groups), pages, pages[0].length * perPage, perPage, rowBytes);
    }

    /** The session's KV: one segment per Jlama context page, in position order. */
    public KvSegments segments() {
        return segments;
    }

    /**
     * The block checksums of one engine step over several sessions of one model, in one call: every session's
     * segments compiled into one plan ({@link KvChecksum#compile(List, List, ChecksumSpec)}), so the backend makes one
     * pass over all of them (on the CPU backend: one piece of work over its threads, however many Jlama pages there
     * are), with exactly the values each session's own call gives.
     *
     * @param backend the backend
     * @param sessions the step's sessions, views of one model
     * @param numTokens each session's token count, as many as sessions
     * @param blockSize tokens per block
     * @param spec the mode and padding
     * @return each session's block checksums, in order
     * @throws io.kvchecksum.InvalidLayoutException as {@link KvChecksum#compile(List, List, ChecksumSpec)} says
     */
    public static List<long[]> blockChecksums(KvChecksum backend, List<JlamaKv> sessions, long[] numTokens, int blockSize,
            ChecksumSpec spec) {
        if (numTokens.length != sessions.size()) {
            throw new IllegalArgumentException(numTokens.length + " token counts for " + sessions.size() + " sessions");
        }
        List<RequestBlocks> requests = new ArrayList<>(sessions.size());
        for (long n : numTokens) {
            requests.add(KvSegments.request(n, 0, blockSize));
        }
        return backend.blockChecksums(backend.compile(sessions.stream().map(JlamaKv::segments).toList(), requests, spec));
    }

    /**
     * The block ids of the first {@code numTokens} positions: {@code 0 .. ceil(numTokens / blockSize) - 1}. Jlama
     * addresses KV by position, so block {@code b} is positions {@code [b*blockSize, (b+1)*blockSize)}; a
     * {@code BlockSelection} needs the table, a segmented cache does not read it.
     */
    public static int[] blockTable(long numTokens, int blockSize) {
        return IntStream.range(0, Math.toIntExact(Math.ceilDiv(numTokens, (long) blockSize))).toArray();
    }

    /** Layers in the session. */
    public int numLayers() {
        return pages.length;
    }

    /** Positions the viewed pages hold: whole Jlama pages, at least what {@link #of} was asked for. */
    public int positions() {
        return positions;
    }

    /** Positions per Jlama page. */
    public int positionsPerPage() {
        return positionsPerPage;
    }

    /** Bytes of one position of one layer's K (or V): all KV heads. */
    public long rowBytes() {
        return rowBytes;
    }

    /** Layer {@code l}'s K ({@code value} false) or V of position {@code position}: a slice of Jlama's own page. */
    public MemorySegment row(int l, boolean value, long position) {
        checkPositions(position, 1);
        return pages[l][(int) (position / positionsPerPage)][value ? 1 : 0]
                .asSlice(position % positionsPerPage * rowBytes, rowBytes);
    }

    /**
     * Copies {@code tokens} positions of every layer's K and V from {@code from} (from {@code fromToken}) into
     * {@code to} (from {@code toToken}), page run by page run: what a transfer engine does between two sessions of
     * the same model, whatever their page sizes.
     */
    public static void copy(JlamaKv from, long fromToken, JlamaKv to, long toToken, long tokens) {
        if (from.rowBytes != to.rowBytes || from.numLayers() != to.numLayers()) {
            throw new IllegalArgumentException("sessions of different models: " + from.numLayers() + " layers of "
                    + from.rowBytes + "-byte rows vs " + to.numLayers() + " of " + to.rowBytes);
        }
        from.checkPositions(fromToken, tokens);
        to.checkPositions(toToken, tokens);
        long row = from.rowBytes;
        for (long done = 0; done < tokens; ) {
            long s = fromToken + done;
            long d = toToken + done;
            long run = Math.min(tokens - done, Math.min(from.positionsPerPage - s % from.positionsPerPage,
                    to.positionsPerPage - d % to.positionsPerPage));
            for (int l = 0; l < from.numLayers(); l++) {
                for (int kind = 0; kind < 2; kind++) {
                    MemorySegment.copy(from.pages[l][(int) (s / from.positionsPerPage)][kind], s % from.positionsPerPage * row,
                            to.pages[l][(int) (d / to.positionsPerPage)][kind], d % to.positionsPerPage * row, run * row);
                }
            }
            done += run;
        }
    }

    private void checkPositions(long first, long count) {
        if (first < 0 || count < 0 || first + count > positions) {
            throw new IndexOutOfBoundsException("positions " + first + ".." + (first + count - 1) + " of a view of "
                    + positions);
        }
    }
}
