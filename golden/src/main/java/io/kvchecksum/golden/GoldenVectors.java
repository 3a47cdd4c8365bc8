package io.kvchecksum.golden;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The committed golden vectors, read from this jar's {@code vectors/} resources. Every backend module runs all of
 * them; the values were written by NumPy, never by our Java code.
 */
public final class GoldenVectors {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static volatile Map<String, GoldenVector> all;
    private static volatile JsonNode mixed;
    private static volatile List<GoldenVector> cells;
    private static volatile List<CombinationVector> combinations;

    private GoldenVectors() {
    }

    /** {@return every vector, in the generator's order} */
    public static List<GoldenVector> all() {
        return new ArrayList<>(load().values());
    }

    /**
     * {@return one vector by name}
     *
     * @param name the vector's name
     * @throws IllegalArgumentException when no vector has that name
     */
    public static GoldenVector get(String name) {
        GoldenVector v = load().get(name);
        if (v == null) {
            throw new IllegalArgumentException("no golden vector named " + name);
        }
        return v;
    }

    /**
     * {@return the relations between vectors the generator asserted ({@code sum}, {@code rechunk}, {@code differs})}
     */
    public static List<JsonNode> relations() {
        List<JsonNode> out = new ArrayList<>();
        index().get("relations").forEach(out::add);
        return out;
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
        JsonNode m = mixedJson().get("vectors").get(name);
        if (m == null) {
            throw new IllegalArgumentException("vectors-mixed/mixed.json has no vector named " + name);
        }
        return get(name).withExpectations(m.get("expected"), m.get("expected_slices"));
    }

    /** {@return the mixer's {x, MIX(x)} examples NumPy wrote beside the mixed vectors} */
    public static long[][] mixerExamples() {
        JsonNode e = mixedJson().get("mixer_examples");
        long[][] out = new long[e.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = new long[] {Long.parseUnsignedLong(e.get(i).get(0).asText()), Long.parseUnsignedLong(e.get(i).get(1).asText())};
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
        List<GoldenVector> c = cells;
        if (c == null) {
            List<GoldenVector> out = new ArrayList<>();
            try (InputStream in = cellResource("index.json")) {
                for (JsonNode n : JSON.readTree(in).get("vectors")) {
                    String name = n.asText();
                    try (InputStream j = cellResource(name + ".json"); InputStream b = cellResource(name + ".bin")) {
                        out.add(new GoldenVector(JSON.readTree(j), b.readAllBytes()));
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("reading vectors-cells", e);
            }
            c = List.copyOf(out);
            cells = c;
        }
        return c;
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
        List<CombinationVector> c = combinations;
        if (c == null) {
            List<CombinationVector> out = new ArrayList<>();
            try (InputStream in = combinationResource("index.json")) {
                for (JsonNode n : JSON.readTree(in).get("vectors")) {
                    String name = n.asText();
                    try (InputStream j = combinationResource(name + ".json");
                         InputStream b = combinationResource(name + ".bin")) {
                        out.add(new CombinationVector(JSON.readTree(j), b.readAllBytes()));
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("reading vectors-combinations", e);
            }
            c = List.copyOf(out);
            combinations = c;
        }
        return c;
    }

    private static InputStream combinationResource(String name) {
        InputStream in = GoldenVectors.class.getResourceAsStream("/vectors-combinations/" + name);
        if (in == null) {
            throw new IllegalStateException("golden resource vectors-combinations/" + name + " is missing from the class path");
        }
        return in;
    }

    private static InputStream cellResource(String name) {
        InputStream in = GoldenVectors.class.getResourceAsStream("/vectors-cells/" + name);
        if (in == null) {
            throw new IllegalStateException("golden resource vectors-cells/" + name + " is missing from the class path");
        }
        return in;
    }

    private static JsonNode mixedJson() {
        JsonNode m = mixed;
        if (m == null) {
            try (InputStream in = GoldenVectors.class.getResourceAsStream("/vectors-mixed/mixed.json")) {
                if (in == null) {
                    throw new IllegalStateException("golden resource vectors-mixed/mixed.json is missing from the class path");
                }
                m = JSON.readTree(in);
            } catch (IOException e) {
                throw new UncheckedIOException("reading vectors-mixed/mixed.json", e);
            }
            if (!"mixed".equals(m.path("mode").asText()) || !"feistel3".equals(m.path("mixer").asText())) {
                throw new IllegalStateException("vectors-mixed/mixed.json is for mode " + m.path("mode") + ", mixer "
                        + m.path("mixer") + "; this suite implements mixed/feistel3");
            }
            mixed = m;
        }
        return m;
    }

    private static JsonNode index() {
        try (InputStream in = resource("index.json")) {
            return JSON.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Map<String, GoldenVector> load() {
        Map<String, GoldenVector> m = all;
        if (m == null) {
            synchronized (GoldenVectors.class) {
                m = all;
                if (m == null) {
                    m = new LinkedHashMap<>();
                    for (JsonNode n : index().get("vectors")) {
                        String name = n.asText();
                        try (InputStream j = resource(name + ".json"); InputStream b = resource(name + ".bin")) {
                            m.put(name, new GoldenVector(JSON.readTree(j), b.readAllBytes()));
                        } catch (IOException e) {
                            throw new UncheckedIOException("reading golden vector " + name, e);
                        }
                    }
                    all = m;
                }
            }
        }
        return m;
    }

    private static InputStream resource(String name) {
        InputStream in = GoldenVectors.class.getResourceAsStream("/vectors/" + name);
        if (in == null) {
            throw new IllegalStateException("golden vector resource vectors/" + name + " is missing from the class path");
        }
        return in;
    }
}
