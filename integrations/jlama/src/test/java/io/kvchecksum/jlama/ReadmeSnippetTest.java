package io.kvchecksum.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's "Worked example: Jlama" code compiles as written, against this module's classpath. */
class ReadmeSnippetTest {
    @TempDir
    Path out;

    @Test
    void workedExampleCompiles() throws Exception {
        String readme = Files.readString(Path.of("../../README.md"));
        int start = readme.indexOf("### Worked example: Jlama");
        assertTrue(start >= 0, "README has no 'Worked example: Jlama' subsection");
        int end = readme.indexOf("\n## ", start);
        Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(readme.substring(start, end));
        List<String> blocks = new ArrayList<>();
        while (m.find()) {
            blocks.add(m.group(1));
        }
        assertEquals(2, blocks.size(), "code blocks in the subsection");
        String source = """
                import com.github.tjake.jlama.tensor.KvBufferCache;
                import io.kvchecksum.*;
                import io.kvchecksum.engine.verdict.*;
                import io.kvchecksum.engine.worker.*;
                import java.lang.foreign.MemorySegment;
                import java.util.ArrayList;
                import java.util.List;
                import java.util.Map;
                import java.util.Optional;

                class Snippet {
                    KvSegments adapter(KvBufferCache.KvBuffer kv, int numLayers, int kvHeads, int headDim, int jlamaPages,
                            int perPage, int page, int n) {
                %s
                        return session;
                    }

                    void verify(KvSegments session, long fingerprint, KvChecksum backend, int[] blockTable, long n, long numLocal,
                            PendingLoads pending, String requestId) {
                %s
                    }

                    void decode() {}
                    void prefillLocally() {}
                    void fail() {}
                }
                """.formatted(blocks.get(0), blocks.get(1));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///Snippet.java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return source;
            }
        };
        StringWriter diagnostics = new StringWriter();
        boolean ok = javac.getTask(diagnostics, null, null,
                List.of("-d", out.toString(), "-cp", System.getProperty("java.class.path"), "-proc:none"), null,
                List.of(file)).call();
        assertTrue(ok, "README snippet does not compile:\n" + diagnostics + "\n" + source);
    }
}
