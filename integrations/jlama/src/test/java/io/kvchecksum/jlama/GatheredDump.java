package io.kvchecksum.jlama;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes a session's first {@code n} positions as a gathered safetensors dump (cli/README.md: {@code layers.<L>.k} and
 * {@code layers.<L>.v}, each {@code [tokens, kv_heads, head_dim]} F32), reading every value through Jlama's own
 * per-position tensors, not through the adapter's strides: an independent path to the same bytes.
 */
final class GatheredDump {
    private GatheredDump() {
    }

    static void write(Path file, KvBufferCache.KvBuffer kv, int layers, int kvHeads, int headDim, int n) throws IOException {
        int row = kvHeads * headDim;
        long tensorBytes = 4L * n * row;
        StringBuilder h = new StringBuilder("{");
        long off = 0;
        for (int l = 0; l < layers; l++) {
            for (String kind : new String[] {"k", "v"}) {
                h.append(h.length() > 1 ? "," : "").append("\"layers.").append(l).append('.').append(kind)
                        .append("\":{\"dtype\":\"F32\",\"shape\":[").append(n).append(',').append(kvHeads).append(',')
                        .append(headDim).append("],\"data_offsets\":[").append(off).append(',').append(off + tensorBytes)
                        .append("]}");
                off += tensorBytes;
            }
        }
        h.append('}');
        while (h.length() % 8 != 0) {
            h.append(' ');
        }
        byte[] header = h.toString().getBytes(StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(8 + header.length + off)).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(header.length).put(header);
        for (int l = 0; l < layers; l++) {
            for (int kind = 0; kind < 2; kind++) {
                for (int t = 0; t < n; t++) {
                    AbstractTensor<?, ?> x = kind == 0 ? kv.getKeyTensorForPosition(l, t) : kv.getValTensorForPosition(l, t);
                    for (int j = 0; j < row; j++) {
                        b.putFloat(x.shape().dims() == 2 ? x.get(0, j) : x.get(j));
                    }
                }
            }
        }
        Files.write(file, b.array());
    }
}
