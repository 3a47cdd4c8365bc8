package io.kvchecksum.engine.worker;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.PageProbe;
import io.kvchecksum.engine.wire.PayloadSection;
import io.kvchecksum.engine.wire.StateDigestsSection;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A {@link WorkerRecord} as bytes, so a worker process sends its record to the aggregating rank: msgpack, versioned,
 * and read as untrusted input (every count checked against the bytes left before anything is allocated, every field
 * checked for type and range; the one exception is {@link MalformedRecordException}, naming the field).
 *
 * <p>Version 1, one msgpack array:
 * <pre>{@code
 * [1, tp_rank, pp_stage, num_tokens, mode, failure, groups, skipped, state, probes]
 *   failure  nil, or the backend's failure as a str
 *   groups   [[group_id, fingerprint (uint64), block_size, start, end, [[replicas, index, values], ...]], ...]
 *            values: a bin of (end - start) little-endian int64, the partial block checksums of that copy
 *   skipped  {group_id: reason (str)}
 *   state    nil (the side digests no state), or [[name, digest (uint64), shard, shards, stage, copy, copies,
 *            length], ...] (length -1: unknown, the old section form only)
 *   probes   nil (the side runs no probe), or [[replicas, index, page_size, probe_bytes, first_token, num_tokens,
 *            bin], ...], bin holding per page the little-endian int64 head then tail partial sum
 * }</pre>
 * Stateless and thread-safe.
 */
public final class WorkerRecordCodec {
    /** The version this codec writes and the only one it reads. */
    public static final int VERSION = 1;
    /** The longest text (failure, reason) a record carries, in bytes. */
    public static final int MAX_TEXT_BYTES = 1 << 16;

    static {
        // A worker may send its record before anything loads PayloadCodec, whose initializer makes msgpack use its
        // ByteBuffer-based buffers (no sun.misc.Unsafe warning on JDK 24+): initialize it before msgpack's first buffer.
        try {
            Class.forName(io.kvchecksum.engine.wire.PayloadCodec.class.getName(), true, WorkerRecordCodec.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private WorkerRecordCodec() {
    }

    /**
     * {@return the record as msgpack bytes}
     *
     * @param r the record; not null
     * @throws NullPointerException when {@code r} is null
     */
    public static byte[] encode(WorkerRecord r) {
        Objects.requireNonNull(r, "record");
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(10);
            p.packInt(VERSION);
            p.packInt(r.tpRank());
            p.packInt(r.ppStage());
            p.packLong(r.numTokens());
            p.packString(r.mode().wireName());
            if (r.backendFailure() == null) {
                p.packNil();
            } else {
                packText(p, r.backendFailure());
            }
            p.packArrayHeader(r.groups().size());
            for (PartialGroup g : r.groups()) {
                p.packArrayHeader(6);
                p.packInt(g.groupId());
                PayloadSection.packUnsigned(p, g.fingerprint());
                p.packInt(g.range().blockSize());
                p.packLong(g.range().start());
                p.packLong(g.range().end());
                Map<ReplicaKey, long[]> columns = g.columns();
                p.packArrayHeader(columns.size());
                for (Map.Entry<ReplicaKey, long[]> c : columns.entrySet()) {
                    p.packArrayHeader(3);
                    p.packInt(c.getKey().replicas());
                    p.packInt(c.getKey().index());
                    packLongs(p, c.getValue());
                }
            }
            p.packMapHeader(r.skippedGroups().size());
            for (Map.Entry<Integer, String> e : new TreeMap<>(r.skippedGroups()).entrySet()) {
                p.packInt(e.getKey());
                packText(p, e.getValue());
            }
            if (r.stateDigests() == null) {
                p.packNil();
            } else {
                p.packArrayHeader(r.stateDigests().size());
                for (StateDigestsSection.Entry e : r.stateDigests()) {
                    e.pack(p);
                }
            }
            if (r.probes() == null) {
                p.packNil();
            } else {
                p.packArrayHeader(r.probes().size());
                for (Map.Entry<ReplicaKey, PageProbe.Probes> e : r.probes().entrySet()) {
                    PageProbe.Probes x = e.getValue();
                    p.packArrayHeader(7);
                    p.packInt(e.getKey().replicas());
                    p.packInt(e.getKey().index());
                    p.packInt(x.pageSize());
                    p.packInt(x.probeBytes());
                    p.packLong(x.firstToken());
                    p.packLong(x.numTokens());
                    long[] h = x.head();
                    long[] t = x.tail();
                    ByteBuffer b = ByteBuffer.allocate(16 * h.length).order(ByteOrder.LITTLE_ENDIAN);
                    for (int i = 0; i < h.length; i++) {
                        b.putLong(h[i]).putLong(t[i]);
                    }
                    p.packBinaryHeader(b.capacity());
                    p.writePayload(b.array());
                }
            }
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException("writing to memory", e);
        }
    }

    /**
     * {@return the record {@code bytes} hold}
     *
     * @param bytes one record as {@link #encode} writes it; untrusted
     * @throws MalformedRecordException when the bytes are not exactly one well-formed version-1 record (the message
     *     names the field)
     * @throws NullPointerException when {@code bytes} is null
     */
    public static WorkerRecord decode(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        Reader in = new Reader(bytes);
        try (MessageUnpacker u = in.u) {
            WorkerRecord r = in.record();
            if (u.hasNext()) {
                throw new MalformedRecordException("record: " + in.remaining() + " bytes after the record");
            }
            return r;
        } catch (MalformedRecordException e) {
            throw e;
        } catch (IOException | MessagePackException e) {
            throw new MalformedRecordException(in.field + ": not msgpack: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            // A value's own check (a range, a stage) is still a malformed record, never another exception.
            throw new MalformedRecordException(in.field + ": " + e.getMessage(), e);
        }
    }

    private static void packText(MessagePacker p, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > MAX_TEXT_BYTES) {
            // A failure's text can be long (a stack of causes): its head is what a log needs.
            s = new String(b, 0, MAX_TEXT_BYTES - 3, StandardCharsets.UTF_8);
            while (s.getBytes(StandardCharsets.UTF_8).length > MAX_TEXT_BYTES - 3) {
                s = s.substring(0, s.length() - 1);
            }
            s = s + "...";
        }
        p.packString(s);
    }

    private static void packLongs(MessagePacker p, long[] v) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asLongBuffer().put(v);
        p.packBinaryHeader(b.capacity());
        p.writePayload(b.array());
    }

    /** Reads one record, checking each field's type and size against the bytes left before using it. */
    private static final class Reader {
        final MessageUnpacker u;
        final int length;
        String field = "record";

        Reader(byte[] input) {
            this.u = MessagePack.newDefaultUnpacker(input);
            this.length = input.length;
        }

        long remaining() {
            return length - u.getTotalReadBytes();
        }

        WorkerRecord record() throws IOException {
            int n = array("record");
            if (n != 10) {
                throw new MalformedRecordException("record: an array of " + n + " elements; expected 10 (version 1)");
            }
            long version = integer("version", 0, Integer.MAX_VALUE);
            if (version != VERSION) {
                throw new MalformedRecordException("version: unknown record version " + version + " (this reader knows "
                        + VERSION + ")");
            }
            int tp = (int) integer("tp_rank", 0, Integer.MAX_VALUE);
            int pp = (int) integer("pp_stage", 0, Integer.MAX_VALUE);
            long numTokens = integer("num_tokens", 0, Long.MAX_VALUE);
            String modeName = text("mode", 32);
            ChecksumMode mode;
            try {
                mode = ChecksumMode.of(modeName);
            } catch (IllegalArgumentException e) {
                throw new MalformedRecordException("mode: unknown checksum mode '" + printable(modeName) + "'", e);
            }
            String failure = nil("failure") ? null : text("failure", MAX_TEXT_BYTES);
            int ng = array("groups");
            List<PartialGroup> groups = new ArrayList<>(Math.min(ng, 16));
            for (int i = 0; i < ng; i++) {
                groups.add(group("groups[" + i + "]"));
            }
            next("skipped", ValueType.MAP);
            int ns = claimed("skipped", u.unpackMapHeader(), 2, "entries");
            Map<Integer, String> skipped = new TreeMap<>();
            for (int i = 0; i < ns; i++) {
                int id = (int) integer("skipped[" + i + "].group_id", 0, Integer.MAX_VALUE);
                if (skipped.put(id, text("skipped[" + i + "].reason", MAX_TEXT_BYTES)) != null) {
                    throw new MalformedRecordException("skipped[" + i + "].group_id: group " + id + " appears twice");
                }
            }
            List<StateDigestsSection.Entry> state = null;
            if (!nil("state")) {
                int ne = array("state");
                state = new ArrayList<>(Math.min(ne, 16));
                for (int i = 0; i < ne; i++) {
                    state.add(entry("state[" + i + "]"));
                }
            }
            Map<ReplicaKey, PageProbe.Probes> probes = null;
            if (!nil("probes")) {
                int np = array("probes");
                probes = new LinkedHashMap<>();
                for (int i = 0; i < np; i++) {
                    String at = "probes[" + i + "]";
                    if (array(at) != 7) {
                        throw new MalformedRecordException(at + ": expected 7 elements");
                    }
                    ReplicaKey key = key(at);
                    int ps = (int) integer(at + ".page_size", 1, Integer.MAX_VALUE);
                    int pb = (int) integer(at + ".probe_bytes", 8, Integer.MAX_VALUE);
                    long first = integer(at + ".first_token", 0, Long.MAX_VALUE);
                    long tokens = integer(at + ".num_tokens", first, Long.MAX_VALUE);
                    long pages = Math.ceilDiv(tokens - first, (long) ps);
                    ByteBuffer b = ByteBuffer.wrap(bin(at + ".bin")).order(ByteOrder.LITTLE_ENDIAN);
                    if (b.capacity() != 16 * pages) {
                        throw new MalformedRecordException(at + ".bin: " + b.capacity() + " bytes, but " + pages + " pages of "
                                + ps + " tokens from " + first + " to " + tokens + " need " + 16 * pages);
                    }
                    long[] h = new long[(int) pages];
                    long[] t = new long[(int) pages];
                    for (int k = 0; k < pages; k++) {
                        h[k] = b.getLong();
                        t[k] = b.getLong();
                    }
                    if (probes.put(key, new PageProbe.Probes(ps, pb, first, tokens, h, t)) != null) {
                        throw new MalformedRecordException(at + ": copy " + key + " appears twice");
                    }
                }
            }
            field = "record";
            return new WorkerRecord(tp, pp, numTokens, groups, skipped, failure, mode, state, probes);
        }

        private PartialGroup group(String at) throws IOException {
            if (array(at) != 6) {
                throw new MalformedRecordException(at + ": expected 6 elements");
            }
            int id = (int) integer(at + ".group_id", 0, Integer.MAX_VALUE);
            long fingerprint = unsigned(at + ".fingerprint");
            int blockSize = (int) integer(at + ".block_size", 1, Integer.MAX_VALUE);
            long start = integer(at + ".start", 0, Long.MAX_VALUE);
            long end = integer(at + ".end", start, Long.MAX_VALUE);
            int nc = array(at + ".columns");
            Map<ReplicaKey, long[]> columns = new LinkedHashMap<>();
            for (int c = 0; c < nc; c++) {
                String col = at + ".columns[" + c + "]";
                if (array(col) != 3) {
                    throw new MalformedRecordException(col + ": expected 3 elements");
                }
                ReplicaKey key = key(col);
                byte[] raw = bin(col + ".values");
                if (raw.length != 8 * (end - start)) {
                    throw new MalformedRecordException(col + ".values: " + raw.length + " bytes, but blocks " + start + ".."
                            + end + " need " + 8 * (end - start));
                }
                long[] v = new long[raw.length / 8];
                ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(v);
                if (columns.put(key, v) != null) {
                    throw new MalformedRecordException(col + ": copy " + key + " appears twice");
                }
            }
            field = at;
            return new PartialGroup(id, fingerprint, new BlockRange(blockSize, start, end), columns);
        }

        private StateDigestsSection.Entry entry(String at) throws IOException {
            if (array(at) != 8) {
                throw new MalformedRecordException(at + ": expected 8 elements");
            }
            String name = text(at + ".name", 64);
            long digest = unsigned(at + ".digest");
            int shard = (int) integer(at + ".shard", 0, StateDigestsSection.MAX_SHARDS);
            int shards = (int) integer(at + ".shards", 1, StateDigestsSection.MAX_SHARDS);
            int stage = (int) integer(at + ".stage", 0, Integer.MAX_VALUE);
            int copy = (int) integer(at + ".copy", 0, StateDigestsSection.MAX_SHARDS);
            int copies = (int) integer(at + ".copies", 1, StateDigestsSection.MAX_SHARDS);
            long length = integer(at + ".length", StateDigestsSection.Entry.UNKNOWN_LENGTH, Long.MAX_VALUE);
            field = at;
            return new StateDigestsSection.Entry(name, shard, shards, stage, copy, copies, length, digest);
        }

        private ReplicaKey key(String at) throws IOException {
            int replicas = (int) integer(at + ".replicas", 1, Integer.MAX_VALUE);
            int index = (int) integer(at + ".index", 0, replicas - 1);
            return new ReplicaKey(replicas, index);
        }

        private void next(String f, ValueType type) throws IOException {
            field = f;
            if (!u.hasNext()) {
                throw new MalformedRecordException(f + ": truncated, the input ends before it");
            }
            ValueType t = u.getNextFormat().getValueType();
            if (t != type) {
                throw new MalformedRecordException(f + ": expected " + type.name().toLowerCase() + ", got "
                        + t.name().toLowerCase());
            }
        }

        /** Consumes a nil and returns true, or returns false leaving the next value. */
        private boolean nil(String f) throws IOException {
            field = f;
            if (!u.hasNext()) {
                throw new MalformedRecordException(f + ": truncated, the input ends before it");
            }
            return u.tryUnpackNil();
        }

        private int array(String f) throws IOException {
            next(f, ValueType.ARRAY);
            return claimed(f, u.unpackArrayHeader(), 1, "elements");
        }

        private int claimed(String f, int n, int minBytes, String unit) {
            if (n < 0 || n > remaining() / minBytes) {
                throw new MalformedRecordException(f + ": claims " + Integer.toUnsignedString(n) + " " + unit
                        + " but only " + remaining() + " bytes follow");
            }
            return n;
        }

        private long integer(String f, long min, long max) throws IOException {
            next(f, ValueType.INTEGER);
            org.msgpack.value.IntegerValue v = u.unpackValue().asIntegerValue();
            if (!v.isInLongRange() || v.toLong() < min || v.toLong() > max) {
                throw new MalformedRecordException(f + ": " + v + " is outside " + min + ".." + max);
            }
            return v.toLong();
        }

        private long unsigned(String f) throws IOException {
            next(f, ValueType.INTEGER);
            BigInteger b = u.unpackValue().asIntegerValue().toBigInteger();
            if (b.signum() < 0 || b.bitLength() > 64) {
                throw new MalformedRecordException(f + ": " + b + " is not an unsigned 64-bit integer");
            }
            return b.longValue();
        }

        private String text(String f, int maxBytes) throws IOException {
            next(f, ValueType.STRING);
            int n = claimed(f, u.unpackRawStringHeader(), 1, "bytes");
            if (n > maxBytes) {
                throw new MalformedRecordException(f + ": " + n + " bytes, at most " + maxBytes);
            }
            return new String(u.readPayload(n), StandardCharsets.UTF_8);
        }

        private byte[] bin(String f) throws IOException {
            next(f, ValueType.BINARY);
            return u.readPayload(claimed(f, u.unpackBinaryHeader(), 1, "bytes"));
        }
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        s.codePoints().forEach(c -> b.append(c >= 0x20 && c < 0x7f ? Character.toString(c) : String.format("\\u%04x", c)));
        return b.toString();
    }
}
