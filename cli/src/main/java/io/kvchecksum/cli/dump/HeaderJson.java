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
 */
final class HeaderJson {
    private static final JsonFactory FACTORY = new JsonFactory();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private HeaderJson() {
    }

    /** The JSON value in {@code text}, which must hold exactly one. */
    static JsonNode read(byte[] text) throws IOException {
        try (JsonParser p = FACTORY.createParser(text)) {
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
}
