package io.kvchecksum.cli.dump;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@link HeaderJson.Plain} against Jackson: every text it reads gives the same tree, node class for node class and in
 * the same key order; every text it declines is left to Jackson (which words the error).
 */
class HeaderJsonTest {
    private static final List<String> PLAIN = List.of(
            "{}", "[]", " { } ", "{\"a\":1}", "{\"a\": -0}", "{\"a\": 0, \"b\": -7}", "[1,2,3]", "[true,false,null]",
            "{\"__metadata__\":{\"format\":\"pt\"},\"layers.0.k\":{\"dtype\":\"BF16\",\"shape\":[16,8,128],"
                    + "\"data_offsets\":[0,32768]}}",
            "{\"n\":999999999999999999,\"m\":-999999999999999999,\"i\":2147483648,\"j\":2147483647}",
            "\t{\r\n\"a\" :\t[ [ [ ] ] , { } ]\n}\n", "\"text\"", "12", "true", "null", "{\"\":\"\"}",
            "{\"a\":\"x y~!#$%&'()*+,-./:;<=>?@[]^_`{|}\"}");
    private static final List<String> DECLINED = List.of(
            "", " ", "{", "}", "{\"a\":1,}", "[1,]", "[,1]", "{,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{\"a\":1}x",
            "{\"a\":1}{}", "{\"a\":01}", "{\"a\":1.5}", "{\"a\":1e3}", "{\"a\":1E3}", "{\"a\":-}", "{\"a\":+1}",
            "{\"a\":1234567890123456789}", "{\"a\":\"\\n\"}", "{\"a\":\"\\u0041\"}", "{\"a\":\"é\"}", "{\"é\":1}",
            "{\"a\":\"\t\"}", "{\"a\":1,\"a\":2}", "{\"a\":truex}", "{\"a\":nul}", "{\"a\":True}", "\uFEFF{}", "{'a':1}",
            "{a:1}", "[1 2]", "{\"a\":[1}", "{\"a\":NaN}", "\"" + "x".repeat(HeaderJson.Plain.MAX_STRING + 1) + "\"",
            "[".repeat(HeaderJson.Plain.MAX_DEPTH + 2) + "]".repeat(HeaderJson.Plain.MAX_DEPTH + 2), "{\"a\":1}\u0000");

    @Test
    void plainTextsGiveJacksonsTree() throws Exception {
        List<String> texts = new ArrayList<>(PLAIN);
        // every safetensors test dump's real header
        try (Stream<Path> s = Files.list(Path.of("src/test/resources/dumps"))) {
            for (Path p : s.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList()) {
                byte[] b = Files.readAllBytes(p);
                long n = 0;
                for (int i = 7; i >= 0; i--) {
                    n = (n << 8) | (b[i] & 0xff);
                }
                if (n > 0 && n <= b.length - 8) {
                    String h = new String(b, 8, (int) n, StandardCharsets.UTF_8);
                    if (new HeaderJson.Plain(h.getBytes(StandardCharsets.UTF_8)).document() != null) {
                        texts.add(h);
                    }
                }
            }
        }
        for (String t : texts) {
            byte[] b = t.getBytes(StandardCharsets.UTF_8);
            JsonNode plain = new HeaderJson.Plain(b).document();
            assertNotNull(plain, "Plain should read " + t);
            JsonNode jackson = HeaderJson.jackson(b);
            assertSameTree(jackson, plain, t);
            assertEquals(jackson.toString(), HeaderJson.read(b).toString(), t);
        }
        assertEquals(true, texts.size() > PLAIN.size(), "the test dumps' headers are plain");
    }

    @Test
    void otherTextsAreLeftToJackson() {
        for (String t : DECLINED) {
            assertNull(new HeaderJson.Plain(t.getBytes(StandardCharsets.UTF_8)).document(), "Plain should decline " + t);
        }
    }

    private static void assertSameTree(JsonNode expected, JsonNode actual, String text) {
        assertEquals(expected.getClass(), actual.getClass(), text);
        assertEquals(expected, actual, text);
        assertEquals(expected.toString(), actual.toString(), text);
        if (expected.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> e = expected.fields();
            Iterator<Map.Entry<String, JsonNode>> a = actual.fields();
            while (e.hasNext()) {
                Map.Entry<String, JsonNode> x = e.next();
                Map.Entry<String, JsonNode> y = a.next();
                assertEquals(x.getKey(), y.getKey(), text);
                assertSameTree(x.getValue(), y.getValue(), text);
            }
        } else if (expected.isArray()) {
            for (int i = 0; i < expected.size(); i++) {
                assertSameTree(expected.get(i), actual.get(i), text);
            }
        }
    }
}
