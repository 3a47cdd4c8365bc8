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

    private GoldenVectors() {
    }

    /** Every vector, in the generator's order. */
    public static List<GoldenVector> all() {
        return new ArrayList<>(load().values());
    }

    /** One vector by name. */
    public static GoldenVector get(String name) {
        GoldenVector v = load().get(name);
        if (v == null) {
            throw new IllegalArgumentException("no golden vector named " + name);
        }
        return v;
    }

    /** The relations between vectors the generator asserted ({@code sum}, {@code rechunk}, {@code differs}). */
    public static List<JsonNode> relations() {
        List<JsonNode> out = new ArrayList<>();
        index().get("relations").forEach(out::add);
        return out;
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
