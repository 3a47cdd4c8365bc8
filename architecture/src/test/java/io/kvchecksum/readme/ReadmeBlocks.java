package io.kvchecksum.readme;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.FileObject;
import javax.tools.ForwardingJavaFileManager;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileManager;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * The Java blocks of a Markdown file, each compiled as written: its {@code import} lines go to the top of a
 * compilation unit, the rest becomes the body of a static method, after a preamble kept in the test that declares the
 * block's free variables ({@code int numPages = $arg("numPages");}). A block is known by its key, the heading it is
 * under and its ordinal there ({@code "Quick start #2"}), so a block added to the README has no preamble and fails
 * until one is written. Compiler messages name the README line.
 */
final class ReadmeBlocks {
    /** The imports every block gets; what else a block uses it imports itself, or its preamble does. */
    static final List<String> DEFAULT_IMPORTS = List.of("io.kvchecksum.*", "java.lang.foreign.*", "java.util.*");

    private static final Pattern IMPORT = Pattern.compile("import\\s+(static\\s+)?[\\w.]+(\\.\\*)?\\s*;\\s*(//.*)?");

    private ReadmeBlocks() {
    }

    /**
     * One fenced {@code java} block.
     *
     * @param heading the nearest heading above it, without its {@code #}s
     * @param ordinal 1 for the heading's first Java block, 2 for its second, ...
     * @param line the 1-based line of the block's first code line in the file
     * @param code the block's lines, without the fences
     */
    record Block(String heading, int ordinal, int line, List<String> code) {
        /** {@return how a preamble names this block} */
        String key() {
            return heading + " #" + ordinal;
        }

        /** {@return the Java class compiled for this block} */
        String className() {
            return "ReadmeBlockAtLine" + line;
        }
    }

    /**
     * What a block needs around it.
     *
     * @param imports extra imports, each {@code a.b.C} or {@code a.b.*}
     * @param declarations statements before the block: its free variables
     * @param result the expression the method returns after the block, a {@code Map<String, Object>}; null for none
     * @param members methods of the wrapping class the block calls (an engine's own, such as {@code decode()})
     */
    record Preamble(List<String> imports, String declarations, String result, String members) {
        /** {@return a preamble of declarations only, compiled and not run} */
        static Preamble declaring(String declarations) {
            return new Preamble(List.of(), declarations, null, "");
        }

        /** {@return this preamble with more imports} */
        Preamble importing(String... more) {
            List<String> all = new ArrayList<>(imports);
            all.addAll(List.of(more));
            return new Preamble(all, declarations, result, members);
        }

        /** {@return this preamble, its method returning {@code expression} after the block} */
        Preamble returning(String expression) {
            return new Preamble(imports, declarations, expression, members);
        }

        /** {@return this preamble with members in the wrapping class} */
        Preamble withMembers(String code) {
            return new Preamble(imports, declarations, result, code);
        }
    }

    /** {@return the repository's README.md: looked up from the working directory (a module's) to the project root} */
    static Path readme() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path pom = dir.resolve("pom.xml");
            try {
                if (Files.isRegularFile(dir.resolve("README.md")) && Files.isRegularFile(pom)
                        && Files.readString(pom).contains("<artifactId>kvchecksum-parent</artifactId>")) {
                    return dir.resolve("README.md");
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        throw new IllegalStateException("no README.md of kvchecksum-parent above " + Path.of("").toAbsolutePath());
    }

    /**
     * {@return every fenced block opened by {@code ```java}, in order}
     *
     * @param markdown the file's lines
     * @throws IllegalArgumentException when a Java block is not closed
     */
    static List<Block> extract(List<String> markdown) {
        List<Block> out = new ArrayList<>();
        Map<String, Integer> perHeading = new HashMap<>();
        String heading = "(before any heading)";
        boolean inOtherFence = false;
        for (int i = 0; i < markdown.size(); i++) {
            String line = markdown.get(i);
            String fence = line.strip();
            if (inOtherFence) {
                inOtherFence = !fence.equals("```");
                continue;
            }
            if (fence.equals("```java")) {
                int close = i + 1;
                while (close < markdown.size() && !markdown.get(close).strip().equals("```")) {
                    close++;
                }
                if (close == markdown.size()) {
                    throw new IllegalArgumentException("the java block opened at line " + (i + 1) + " is not closed");
                }
                int ordinal = perHeading.merge(heading, 1, Integer::sum);
                out.add(new Block(heading, ordinal, i + 2, List.copyOf(markdown.subList(i + 1, close))));
                i = close;
            } else if (fence.startsWith("```")) {
                inOtherFence = true;
            } else if (line.startsWith("#")) {
                heading = line.replaceFirst("^#+\\s*", "").strip();
            }
        }
        return out;
    }

    /** A block's compilation unit, and where the block's first line is in it. */
    record Unit(Block block, String source, int firstBlockLine) {
        /** {@return the README line of the unit's line {@code n}, or -1 when {@code n} is the preamble's} */
        int readmeLine(long n) {
            long i = n - firstBlockLine;
            return i >= 0 && i < block.code().size() ? (int) (block.line() + i) : -1;
        }
    }

    /**
     * {@return the compilation unit of {@code block}}: its import lines (and the defaults and the preamble's) at the
     * top, its other lines, in place, the body of {@code static Map<String, Object> run()}.
     *
     * @param block the block
     * @param p its preamble
     */
    static Unit unit(Block block, Preamble p) {
        List<String> imports = new ArrayList<>(DEFAULT_IMPORTS);
        imports.addAll(p.imports());
        StringBuilder head = new StringBuilder("package readme;\n");
        imports.forEach(i -> head.append("import ").append(i).append(";\n"));
        List<String> body = new ArrayList<>();
        for (String line : block.code()) {
            if (IMPORT.matcher(line.strip()).matches()) {
                head.append(line.strip()).append('\n');
                body.add("");   // keeps the block's lines where they are
            } else {
                body.add(line);
            }
        }
        StringBuilder src = new StringBuilder(head);
        src.append("@SuppressWarnings(\"unchecked\")\npublic final class ").append(block.className()).append(" {\n")
                .append("    private static Map<String, Object> $in = Map.of();\n")
                .append("    private static <T> T $arg(String name) {\n")
                .append("        if (!$in.containsKey(name)) throw new IllegalArgumentException(\"no value for \" + name);\n")
                .append("        return (T) $in.get(name);\n    }\n")
                .append(p.members()).append('\n')
                .append("    public static Map<String, Object> run(Map<String, Object> in) throws Throwable {\n")
                .append("        $in = in;\n")
                .append(p.declarations()).append('\n');
        int first = (int) src.chars().filter(c -> c == '\n').count() + 1;
        body.forEach(l -> src.append(l).append('\n'));
        src.append("        return ").append(p.result() == null ? "null" : p.result()).append(";\n    }\n}\n");
        return new Unit(block, src.toString(), first);
    }

    /**
     * The compiled blocks' classes, or the compiler's messages.
     *
     * @param errors one entry per failing block: "README line N (key): message", empty when all compiled
     * @param classes the class files by binary name
     */
    record Compiled(List<String> errors, Map<String, byte[]> classes) {
        /**
         * {@return the value {@code block}'s method returns, run with these arguments}
         *
         * @param block a compiled block
         * @param args the free variables' values by name
         * @throws Throwable what the block throws
         */
        Map<String, Object> run(Block block, Map<String, Object> args) throws Throwable {
            ClassLoader loader = new ClassLoader(ReadmeBlocks.class.getClassLoader()) {
                @Override
                protected Class<?> findClass(String name) throws ClassNotFoundException {
                    byte[] b = classes.get(name);
                    if (b == null) {
                        throw new ClassNotFoundException(name);
                    }
                    return defineClass(name, b, 0, b.length);
                }
            };
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> out = (Map<String, Object>) loader.loadClass("readme." + block.className())
                        .getMethod("run", Map.class).invoke(null, args);
                return out;
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }

    /**
     * Compiles every block with its preamble against {@code classpath}; a block without a preamble is an error.
     *
     * @param blocks the blocks
     * @param preambles by {@link Block#key()}
     * @param classpath what the blocks may use
     * @return the errors, by block, and the classes
     */
    static Compiled compile(List<Block> blocks, Map<String, Preamble> preambles, List<Path> classpath) {
        List<String> errors = new ArrayList<>();
        Map<String, Unit> units = new LinkedHashMap<>();
        for (Block b : blocks) {
            Preamble p = preambles.get(b.key());
            if (p == null) {
                errors.add("README line " + b.line() + " (" + b.key() + "): no preamble for this java block; add one keyed \""
                        + b.key() + "\" that declares its free variables");
                continue;
            }
            units.put("readme." + b.className(), unit(b, p));
        }
        Map<String, byte[]> classes = new HashMap<>();
        if (units.isEmpty()) {
            return new Compiled(errors, classes);
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        StandardJavaFileManager std = javac.getStandardFileManager(diagnostics, null, null);
        JavaFileManager files = new ForwardingJavaFileManager<>(std) {
            @Override
            public JavaFileObject getJavaFileForOutput(Location location, String className, JavaFileObject.Kind kind,
                    FileObject sibling) {
                return new SimpleJavaFileObject(URI.create("mem:///" + className.replace('.', '/') + kind.extension), kind) {
                    @Override
                    public OutputStream openOutputStream() {
                        return new ByteArrayOutputStream() {
                            @Override
                            public void close() {
                                classes.put(className, toByteArray());
                            }
                        };
                    }
                };
            }
        };
        List<JavaFileObject> sources = units.entrySet().stream().map(e -> (JavaFileObject) new SimpleJavaFileObject(
                URI.create("string:///" + e.getKey().replace('.', '/') + ".java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return e.getValue().source();
            }
        }).toList();
        String cp = classpath.stream().map(Path::toString).collect(Collectors.joining(File.pathSeparator));
        StringWriter other = new StringWriter();
        javac.getTask(other, files, diagnostics, List.of("-cp", cp, "-proc:none", "-Xlint:-options"), null, sources).call();
        for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
            if (d.getKind() != Diagnostic.Kind.ERROR) {
                continue;
            }
            Unit u = d.getSource() == null ? null
                    : units.get(d.getSource().toUri().getPath().substring(1).replace(".java", "").replace('/', '.'));
            if (u == null) {
                errors.add(d.getMessage(null));
                continue;
            }
            int line = u.readmeLine(d.getLineNumber());
            String where = line > 0 ? "README line " + line + " (" + u.block().key() + ")"
                    : "the preamble of the block at README line " + u.block().line() + " (" + u.block().key() + "), unit line "
                            + d.getLineNumber();
            errors.add(where + ": " + d.getMessage(null)
                    + (line > 0 ? "\n    " + u.block().code().get(line - u.block().line()).strip() : ""));
        }
        if (!other.toString().isBlank()) {
            errors.add(other.toString());
        }
        return new Compiled(errors, classes);
    }
}
