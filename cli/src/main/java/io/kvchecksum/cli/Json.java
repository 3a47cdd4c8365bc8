package io.kvchecksum.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.PrintWriter;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** JSON output: one object per command on stdout; 64-bit checksums as unsigned decimal strings (exact in every reader). */
final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    static List<String> unsigned(long[] values) {
        return Arrays.stream(values).mapToObj(Long::toUnsignedString).toList();
    }

    /** A JSON object of {@code key, value, key, value, ...} in that order; values may be {@code null}. */
    static Map<String, Object> object(Object... keysAndValues) {
        Map<String, Object> o = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            o.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return o;
    }

    static void print(PrintWriter out, Object value) {
        try {
            out.println(MAPPER.writeValueAsString(value));
            out.flush();
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
