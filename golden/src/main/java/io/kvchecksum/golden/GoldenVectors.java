package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The committed golden vectors, read from this jar's {@code vectors/} resources. Every backend module runs all of
 * them; the values were written by NumPy, never by our Java code.
 */
public final class GoldenVectors {
    private static final Supplier<Map<String, GoldenVector>> ALL =
            VectorJson.once(() -> VectorJson.vectors("vectors", (name, json, data) -> new GoldenVector(json, data)));
    private static final Supplier<JsonNode> INDEX = VectorJson.once(() -> VectorJson.tree("vectors", "index.json"));
    private static final Supplier<JsonNode> MIXED = VectorJson.once(GoldenVectors::readMixed);
    private static final Supplier<List<GoldenVector>> CELLS = VectorJson.once(() -> List.copyOf(
            VectorJson.vectors("vectors-cells", (name, json, data) -> new GoldenVector(json, data)).values()));
    private static final Supplier<List<CombinationVector>> COMBINATIONS = VectorJson.once(() -> List.copyOf(
            VectorJson.vectors("vectors-combinations", (name, json, data) -> new CombinationVector(json, data)).values()));

    private GoldenVectors() {
    }

    /** {@return every vector, in the generator's order} */
    public static List<GoldenVector> all() {
        return new ArrayList<>(ALL.get().values());
    }

    /**
     * {@return one vector by name}
     *
     * @param name the vector's name
     * @throws IllegalArgumentException when no vector has that name
     */
    public static GoldenVector get(String name) {
        GoldenVector v = ALL.get().get(name);
        if (v == null) {
            throw new IllegalArgumentException("no golden vector named " + name);
        }
        return v;
    }

    /**
     * {@return the relations between vectors the generator asserted ({@code sum}, {@code rechunk}, {@code differs})}
     */
    public static List<JsonNode> relations() {
        return INDEX.get().get("relations").valueStream().toList();
    }

    /**
     * {@return the mixed-mode expectations of vector {@code name} (block checksums and slice sums of the same bytes,
     * written by {@code golden/generator/generate_mixed.py} into {@code vectors-mixed/mixed.json}), as a vector whose
     * {@link GoldenVector#expected()} and {@link GoldenVector#expectedSlices()} are the mixed ones}
     *
     * @param name the vector's name
     * @throws IllegalArgumentException when the mixed expectations have no vector of that name
     */
    public static GoldenVector mixed(String name) {
        JsonNode m = MIXED.get().get("vectors").get(name);
        if (m == null) {
            throw new IllegalArgumentException("vectors-mixed/mixed.json has no vector named " + name);
        }
        return get(name).withExpectations(m.get("expected"), m.get("expected_slices"));
    }

    /** {@return the mixer's {x, MIX(x)} examples NumPy wrote beside the mixed vectors} */
    public static long[][] mixerExamples() {
        JsonNode e = MIXED.get().get("mixer_examples");
        long[][] out = new long[e.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = VectorJson.unsigned(e.get(i));
        }
        return out;
    }

    /**
     * {@return the cell vectors of {@code golden/generator/generate_cells.py} ({@code vectors-cells/}), in the
     * generator's order, with their standard expectations: pieces straddling K and V, index-K caches, and the
     * padded-cells extension ({@link GoldenVector#padCells()})} Each also has mixed-mode expectations
     * ({@link #mixedOf(GoldenVector)}). Read once from the class path.
     *
     * @throws UncheckedIOException when the resources cannot be read
     * @throws IllegalStateException when a resource is missing from the class path
     */
    public static List<GoldenVector> cells() {
        return CELLS.get();
    }

    /**
     * A cell vector with its mixed-mode expectations ({@code expected_mixed}, {@code expected_slices_mixed}).
     *
     * @param cellVector one of {@link #cells()}
     * @return a vector of the same layout and bytes whose expectations are the mixed-mode ones
     */
    public static GoldenVector mixedOf(GoldenVector cellVector) {
        return cellVector.withMixedExpectations();
    }

    /**
     * {@return the combination vectors of {@code golden/generator/generate_combinations.py}
     * ({@code vectors-combinations/}), in the generator's order: padded and straddling cells in a segmented cache,
     * the mixed mode over layers of both cell kinds, and several requests of one group in one plan} Read once from the
     * class path.
     *
     * @throws UncheckedIOException when the resources cannot be read
     * @throws IllegalStateException when a resource is missing from the class path
     */
    public static List<CombinationVector> combinations() {
        return COMBINATIONS.get();
    }

    private static JsonNode readMixed() {
        JsonNode m = VectorJson.tree("vectors-mixed", "mixed.json");
        if (!"mixed".equals(m.path("mode").asText()) || !"feistel3".equals(m.path("mixer").asText())) {
            throw new IllegalStateException("vectors-mixed/mixed.json is for mode " + m.path("mode") + ", mixer "
                    + m.path("mixer") + "; this suite implements mixed/feistel3");
        }
        return m;
    }
}
