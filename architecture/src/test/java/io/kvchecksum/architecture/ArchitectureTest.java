package io.kvchecksum.architecture;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every rule of {@link Rules} on the main classes of every module (tests, test jars, the shaded jars' copies of other
 * modules and the fixture are not imported). {@link RulesCanFailTest} shows each rule failing on a violation.
 */
class ArchitectureTest {

    /** Test jars (the kernel modules' ones reach this classpath through jmh) hold tests, not the modules' code. */
    private static final class NoTestJars implements ImportOption {
        private static final Pattern TEST_JAR = Pattern.compile(".*-tests\\.jar!/.*");

        @Override
        public boolean includes(Location location) {
            return !location.matches(TEST_JAR);
        }
    }

    /**
     * The cli's kvchecksum.jar and jmh's benchmarks.jar are shaded: they also hold copies of the modules (and test jars)
     * they bundle. From them only their own module's classes are taken; the others come from their own artifacts.
     */
    private static final class NoShadedCopies implements ImportOption {
        private static final Map<Pattern, String> OWN = Map.of(
                Pattern.compile(".*/(kvchecksum|kvchecksum-cli-[^/]*)\\.jar!/.*"), "/io/kvchecksum/cli/",
                Pattern.compile(".*/(benchmarks|kvchecksum-jmh-[^/]*)\\.jar!/.*"), "/io/kvchecksum/jmh/");

        @Override
        public boolean includes(Location location) {
            for (Map.Entry<Pattern, String> e : OWN.entrySet()) {
                if (location.matches(e.getKey())) {
                    return location.contains(e.getValue());
                }
            }
            return true;
        }
    }

    /** The deliberately violating fixture of {@link RulesCanFailTest} is not part of the architecture. */
    private static final class NotTheFixture implements ImportOption {
        @Override
        public boolean includes(Location location) {
            return !location.contains("/" + RulesCanFailTest.FIXTURE.replace('.', '/') + "/");
        }
    }

    private static JavaClasses classes;

    @BeforeAll
    static void importEveryModule() {
        classes = new ClassFileImporter()
                .withImportOption(new ImportOption.DoNotIncludeTests())
                .withImportOption(new NoTestJars())
                .withImportOption(new NoShadedCopies())
                .withImportOption(new NotTheFixture())
                .importPackages(Rules.ROOT);
    }

    static Stream<String> rules() {
        return Rules.all(Rules.ROOT).keySet().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rules")
    void holds(String rule) {
        Rules.all(Rules.ROOT).get(rule).check(classes);
    }

    /**
     * The rules saw every module's main classes and no test or fixture class: a rule that passes because its classes
     * were not imported proves nothing.
     */
    @Test
    void everyModuleIsImportedWithoutTests() {
        for (String name : List.of("io.kvchecksum.KvChecksums", "io.kvchecksum.internal.FastCpuBackend",
                "io.kvchecksum.spi.BackendProvider", "io.kvchecksum.engine.worker.WorkerChecksummer",
                "io.kvchecksum.engine.verdict.LoadVerdict", "io.kvchecksum.cuda.CudaBackend",
                "io.kvchecksum.opencl.OpenClBackend", "io.kvchecksum.cli.Main", "io.kvchecksum.jlama.PdChecks",
                "io.kvchecksum.bench.MemoryBound")) {
            assertTrue(classes.contain(name), name + " was not imported");
        }
        for (String prefix : List.of("io.kvchecksum.golden.", "io.kvchecksum.jmh.")) {
            assertTrue(classes.stream().anyMatch(c -> c.getName().startsWith(prefix)), "no class of " + prefix + " was imported");
        }
        // Tests of a module (the CUDA one's reaches this classpath in a test jar, and in jmh's shaded jar) and the fixture.
        for (String name : List.of("io.kvchecksum.cuda.WorkerPathSyncTest", "io.kvchecksum.engine.worker.CacheGateTest",
                "io.kvchecksum.architecture.ArchitectureTest")) {
            assertFalse(classes.contain(name), name + " is a test class");
        }
        assertFalse(classes.stream().anyMatch(c -> c.getPackageName().startsWith(RulesCanFailTest.FIXTURE)),
                "the fixture was imported");
    }
}
