package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.kvchecksum.CacheLayer;
import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvCacheGroup;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.KvMemory;
import io.kvchecksum.KvRegion;
import io.kvchecksum.StateRow;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;

import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The state-row digests NumPy wrote ({@code golden/generator/generate_state.py} into {@code vectors-state/}), run
 * through a backend's {@link KvChecksum#stateDigests} in both modes, each case as one call and each row alone. Part of
 * {@link GoldenSuite#tests}: the placement hook moves {@code state.bin} (presented as a one-layer group covering the
 * whole file) where the backend's other vectors go, and the rows follow it.
 */
public final class GoldenStateRows {
    private static final Supplier<Loaded> LOADED = VectorJson.once(GoldenStateRows::load);

    private GoldenStateRows() {
    }

    /**
     * One row: where it lies in {@code state.bin} and NumPy's digests in both modes.
     *
     * @param name the row's name, as the generator gave it
     * @param offset the row's first byte in {@code state.bin}
     * @param length the row's length in bytes (any, not only multiples of 8)
     * @param standard NumPy's digest in the standard mode (unsigned 64-bit, held in a {@code long})
     * @param mixed NumPy's digest in the mixed mode (unsigned 64-bit, held in a {@code long})
     */
    public record Row(String name, long offset, long length, @JsonDeserialize(using = VectorJson.Unsigned.class) long standard,
            @JsonDeserialize(using = VectorJson.Unsigned.class) long mixed) {
    }

    /**
     * One call's rows.
     *
     * @param name the case's name
     * @param description what the case exercises, in words
     * @param rows the rows passed in one {@link KvChecksum#stateDigests} call, in order
     */
    public record Case(String name, String description, List<Row> rows) {
        /** Holds a copy of {@code rows}. */
        public Case {
            rows = List.copyOf(rows);
        }
    }

    /** {@code state.json}, and {@code state.bin} whose length it gives. */
    private record Loaded(long bytes, List<Case> cases, byte[] data) {
    }

    /**
     * {@return every case, in the generator's order} Read once from the class path.
     *
     * @throws UncheckedIOException when the resources cannot be read
     * @throws IllegalStateException when a resource is missing or {@code state.bin}'s size differs from
     *     {@code state.json}'s
     */
    public static List<Case> cases() {
        return LOADED.get().cases();
    }

    /**
     * {@return a copy of {@code state.bin}: the bytes every row lives in}
     *
     * @throws UncheckedIOException when the resources cannot be read
     * @throws IllegalStateException when a resource is missing or {@code state.bin}'s size differs from
     *     {@code state.json}'s
     */
    public static byte[] bytes() {
        return LOADED.get().data().clone();
    }

    static DynamicNode tests(KvChecksum backend, Function<GoldenSuite.HostCase, KvCacheGroup> placement) {
        return DynamicContainer.dynamicContainer(backend.name() + " · state rows", DynamicTest.stream(cases().stream(),
                c -> backend.name() + " · state rows · " + c.name(), c -> check(backend, c, placement)));
    }

    private static void check(KvChecksum k, Case c, Function<GoldenSuite.HostCase, KvCacheGroup> placement) {
        byte[] bytes = LOADED.get().data();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(bytes.length, 64);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, seg, 0, bytes.length);
            KvCacheGroup host = new KvCacheGroup(List.of(CacheLayer.kOnly(0, 0, 1,
                    new KvRegion(KvMemory.host(seg), 0, 0, 0, 0, bytes.length))), 1, 1);
            KvRegion placed = placement.apply(new GoldenSuite.HostCase(null, host, List.of(seg))).layers().get(0).k();
            List<StateRow> rows = new ArrayList<>();
            long[] standard = new long[c.rows().size()];
            long[] mixed = new long[c.rows().size()];
            for (int i = 0; i < standard.length; i++) {
                Row r = c.rows().get(i);
                rows.add(new StateRow(r.name(), placed.memory(), placed.offset() + r.offset(), r.length()));
                standard[i] = r.standard();
                mixed[i] = r.mixed();
            }
            String who = k.name() + " · state rows · " + c.name();
            assertArrayEquals(standard, k.stateDigests(rows, ChecksumMode.STANDARD), who + " (standard, one call)");
            for (int i = 0; i < rows.size(); i++) {
                assertEquals(standard[i], k.stateDigests(List.of(rows.get(i)), ChecksumMode.STANDARD)[0],
                        who + " (standard, " + rows.get(i) + " alone)");
            }
            assertArrayEquals(mixed, k.stateDigests(rows, ChecksumMode.MIXED), who + " (mixed, one call)");
        }
    }

    private static Loaded load() {
        Loaded json = VectorJson.JSON.convertValue(VectorJson.tree("vectors-state", "state.json"), Loaded.class);
        byte[] data = VectorJson.bytes("vectors-state", "state.bin");
        if (json.bytes() != data.length) {
            throw new IllegalStateException("vectors-state/state.bin has " + data.length + " bytes, state.json says "
                    + json.bytes());
        }
        return new Loaded(json.bytes(), List.copyOf(json.cases()), data);
    }
}
