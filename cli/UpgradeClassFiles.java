import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassModel;
import java.lang.classfile.ClassTransform;
import java.lang.classfile.CodeTransform;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Rewrites the class files under a package of a jar that are older than Java 6 (version 49, picocli's) as version 52
 * class files with stack maps, in place. Run by cli/aot-cache.sh at package time:
 * {@code java cli/UpgradeClassFiles.java JAR PREFIX}.
 *
 * <p>Why: JDK 25's AOT cache leaves such "old" classes out (they are verified by the old inference verifier, whose
 * results it cannot store), and picocli's are most of a one-shot command's start-up. The code is unchanged; the
 * JDK's own class-file API computes the stack maps. Each rewritten class is then loaded, verified and initialized
 * from the rewritten jar by a fresh class loader; a class that fails is put back as it was (the old verifier runs it
 * as before), so the jar never holds a class the JVM refuses.
 */
public final class UpgradeClassFiles {
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]).toAbsolutePath();
        String prefix = args[1];
        Map<Path, byte[]> original = new LinkedHashMap<>();
        Map<String, Path> byName = new LinkedHashMap<>();
        int failed = 0;
        try (URLClassLoader parse = new URLClassLoader(new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader());
                FileSystem fs = FileSystems.newFileSystem(URI.create("jar:" + jar.toUri()), Map.of())) {
            ClassFile cf = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(
                    ClassHierarchyResolver.defaultResolver().orElse(ClassHierarchyResolver.ofResourceParsing(parse))));
            List<Path> classes;
            try (Stream<Path> s = Files.walk(fs.getPath(prefix))) {
                classes = s.filter(p -> p.toString().endsWith(".class")).toList();
            }
            for (Path p : classes) {
                byte[] b = Files.readAllBytes(p);
                ClassModel m = cf.parse(b);
                if (m.majorVersion() >= 50) {
                    continue;
                }
                try {
                    // rebuilding every method body is what makes the API compute the stack maps
                    byte[] upgraded = cf.transformClass(m, ClassTransform.transformingMethodBodies(CodeTransform.ACCEPT_ALL)
                            .andThen(ClassTransform.endHandler(c -> c.withVersion(ClassFile.JAVA_8_VERSION, 0))));
                    original.put(p, b);
                    byName.put(m.thisClass().asInternalName().replace('/', '.'), p);
                    Files.write(p, upgraded);
                } catch (RuntimeException e) {
                    failed++;
                    System.out.println("UpgradeClassFiles: kept " + p + " as it was: " + e);
                }
            }
        }
        // load, verify and initialize each rewritten class from the rewritten jar
        Map<Path, byte[]> restore = new LinkedHashMap<>();
        try (URLClassLoader check = new URLClassLoader(new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader())) {
            for (Map.Entry<String, Path> e : byName.entrySet()) {
                try {
                    Class.forName(e.getKey(), true, check);
                } catch (VerifyError | ClassFormatError err) {
                    restore.put(e.getValue(), original.get(e.getValue()));
                    System.out.println("UpgradeClassFiles: put back " + e.getKey() + ": " + err);
                } catch (Throwable t) {
                    // not a verification failure (a static initializer that needs more than the jar): the class was
                    // verified before it ran
                }
            }
        }
        if (!restore.isEmpty()) {
            try (FileSystem fs = FileSystems.newFileSystem(URI.create("jar:" + jar.toUri()), Map.of())) {
                for (Map.Entry<Path, byte[]> e : restore.entrySet()) {
                    Files.write(fs.getPath(e.getKey().toString()), e.getValue());
                }
            }
        }
        System.out.println("UpgradeClassFiles: " + (byName.size() - restore.size()) + " classes under " + prefix
                + " rewritten as version 52, " + (failed + restore.size()) + " left as they were");
    }
}
