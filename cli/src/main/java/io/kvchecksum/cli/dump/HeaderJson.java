package io.kvchecksum.cli.dump;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;

/**
 * A safetensors header read into a JSON tree with Jackson's streaming parser. Jackson's {@code ObjectMapper} would do
 * the same, but setting one up costs about a third of a second of a one-shot run's start-up; the parser's own limits
 * (nesting depth, number and string lengths) still apply. A key given twice in one object is refused: the format has
 * one entry per tensor, and which of two would count is a guess.
 *
 * <p>The headers dumps have in practice (ASCII names and strings without escapes, integers, nothing deep) are first
 * read by {@link Plain}, a few dozen lines that build the very tree Jackson would, through the same node factory
 * calls in the same order: in a fresh JVM Jackson's parser, interpreted, was a large part of a one-shot
 * {@code sum}'s start-up. Anything else, every malformed header included, goes to Jackson, so what is accepted and
 * every error message stay Jackson's.
 */
final class HeaderJson {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private HeaderJson() {
    }

    /** Jackson's factory, made on first use: the plain headers never need it. */
    private static final class Factory {
        static final JsonFactory FACTORY = new JsonFactory();
    }

    /** The JSON value in {@code text}, which must hold exactly one. */
    static JsonNode read(byte[] text) throws IOException {
        JsonNode plain = new Plain(text).document();
        if (plain != null) {
            return plain;
        }
        return jackson(text);
    }

    /** {@link #read} by Jackson's streaming parser, whatever the text. */
    static JsonNode jackson(byte[] text) throws IOException {
        try (JsonParser p = Factory.FACTORY.createParser(text)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new JsonParseException(p, "no content");
            }
            JsonNode n = value(p, t);
            if (p.nextToken() != null) {
                throw new JsonParseException(p, "content after the header's JSON value");
            }
            return n;
        }
    }

    private static JsonNode value(JsonParser p, JsonToken t) throws IOException {
        return switch (t) {
            case START_OBJECT -> {
                ObjectNode o = NODES.objectNode();
                for (JsonToken k = p.nextToken(); k == JsonToken.FIELD_NAME; k = p.nextToken()) {
                    String name = p.currentName();
                    if (o.has(name)) {
                        throw new JsonParseException(p, "key '" + name + "' appears twice");
                    }
                    o.set(name, value(p, p.nextToken()));
                }
                yield o;
            }
            case START_ARRAY -> {
                ArrayNode a = NODES.arrayNode();
                for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
                    a.add(value(p, e));
                }
                yield a;
            }
            case VALUE_STRING -> NODES.textNode(p.getText());
            case VALUE_NUMBER_INT -> p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                    ? NODES.numberNode(p.getBigIntegerValue()) : NODES.numberNode(p.getLongValue());
            case VALUE_NUMBER_FLOAT -> NODES.numberNode(p.getDoubleValue());
            case VALUE_TRUE -> NODES.booleanNode(true);
            case VALUE_FALSE -> NODES.booleanNode(false);
            case VALUE_NULL -> NODES.nullNode();
            default -> throw new JsonParseException(p, "unexpected " + t);
        };
    }

    /**
     * A reader of plain JSON only: objects, arrays, strings of printable ASCII without escapes, integers that fit a
     * long (no fraction or exponent), true, false and null, nested at most {@value #MAX_DEPTH} deep, no key twice in
     * an object. For such a text it returns what {@link #jackson} returns; for any other it returns {@code null}, and
     * Jackson reads the text (and words any error).
     */
    static final class Plain {
        /** Deeper headers go to Jackson, whose own limit (hundreds) then applies. */
        static final int MAX_DEPTH = 32;
        /** Longer strings go to Jackson, whose limits on names and strings then apply. */
        static final int MAX_STRING = 1000;

        private final byte[] b;
        private int i;

        Plain(byte[] b) {
            this.b = b;
        }

        /** The one value of the text, or {@code null}. */
        JsonNode document() {
            JsonNode v = value(0);
            if (v == null) {
                return null;
            }
            skipSpace();
            return i == b.length ? v : null;
        }

        private void skipSpace() {
            while (i < b.length && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) {
                i++;
            }
        }

        private JsonNode value(int depth) {
            skipSpace();
            if (i == b.length || depth > MAX_DEPTH) {
                return null;
            }
            byte c = b[i];
            if (c == '{') {
                i++;
                ObjectNode o = NODES.objectNode();
                skipSpace();
                if (i < b.length && b[i] == '}') {
                    i++;
                    return o;
                }
                while (true) {
                    skipSpace();
                    String name = string();
                    if (name == null || o.has(name)) {
                        return null;
                    }
                    skipSpace();
                    if (i == b.length || b[i++] != ':') {
                        return null;
                    }
                    JsonNode v = value(depth + 1);
                    if (v == null) {
                        return null;
                    }
                    o.set(name, v);
                    skipSpace();
                    if (i == b.length) {
                        return null;
                    }
                    c = b[i++];
                    if (c == '}') {
                        return o;
                    }
                    if (c != ',') {
                        return null;
                    }
                }
            }
            if (c == '[') {
                i++;
                ArrayNode a = NODES.arrayNode();
                skipSpace();
                if (i < b.length && b[i] == ']') {
                    i++;
                    return a;
                }
                while (true) {
                    JsonNode v = value(depth + 1);
                    if (v == null) {
                        return null;
                    }
                    a.add(v);
                    skipSpace();
                    if (i == b.length) {
                        return null;
                    }
                    c = b[i++];
                    if (c == ']') {
                        return a;
                    }
                    if (c != ',') {
                        return null;
                    }
                }
            }
            if (c == '"') {
                String s = string();
                return s == null ? null : NODES.textNode(s);
            }
            if (c == '-' || (c >= '0' && c <= '9')) {
                return integer();
            }
            if (word("true")) {
                return NODES.booleanNode(true);
            }
            if (word("false")) {
                return NODES.booleanNode(false);
            }
            if (word("null")) {
                return NODES.nullNode();
            }
            return null;
        }

        /** A string at {@code i} of printable ASCII other than '"' and '\\', or {@code null}. */
        private String string() {
            if (i == b.length || b[i] != '"') {
                return null;
            }
            int start = ++i;
            while (i < b.length && b[i] != '"') {
                if (b[i] < 0x20 || b[i] > 0x7e || b[i] == '\\' || i - start >= MAX_STRING) {
                    return null;
                }
                i++;
            }
            if (i == b.length) {
                return null;
            }
            return new String(b, start, i++ - start, java.nio.charset.StandardCharsets.US_ASCII);
        }

        /**
         * An integer at {@code i}: '-'? then 0 or a digit 1-9 and up to 17 more (so it fits a long), then the end of
         * the number (no fraction, no exponent); else {@code null}.
         */
        private JsonNode integer() {
            boolean negative = b[i] == '-';
            if (negative) {
                i++;
            }
            int first = i;
            long v = 0;
            while (i < b.length && b[i] >= '0' && b[i] <= '9') {
                v = 10 * v + (b[i++] - '0');
            }
            int n = i - first;
            if (n == 0 || n > 18 || (n > 1 && b[first] == '0')) {
                return null;
            }
            return ends(i) ? NODES.numberNode(negative ? -v : v) : null;
        }

        /** Whether a number or literal ending before {@code at} ends there: the text's end, space, ',', ']' or '}'. */
        private boolean ends(int at) {
            if (at == b.length) {
                return true;
            }
            byte c = b[at];
            return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == ']' || c == '}';
        }

        /** Whether the literal {@code w} is at {@code i}, ending there ({@link #ends}); moves past it if so. */
        private boolean word(String w) {
            int end = i + w.length();
            if (end > b.length) {
                return false;
            }
            for (int k = 0; k < w.length(); k++) {
                if (b[i + k] != w.charAt(k)) {
                    return false;
                }
            }
            if (!ends(end)) {
                return false;
            }
            i = end;
            return true;
        }
    }
}
