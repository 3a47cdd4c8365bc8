package io.kvchecksum.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** JSON output: one object per command on stdout; 64-bit checksums as unsigned decimal strings (exact in every reader). */
final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    static List<String> unsigned(long[] values) {
        List<String> out = new ArrayList<>(values.length);
        for (long v : values) {
            out.add(Long.toUnsignedString(v));
        }
        return out;
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
