package io.kvchecksum.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;

import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Each rule of {@link Rules}, built for the fixture's root, fails on the fixture's violation of it (and names the
 * violating class): the rules {@link ArchitectureTest} checks can fail.
 */
class RulesCanFailTest {

    /** The fixture's root package, laid out like {@link Rules#ROOT}. */
    static final String FIXTURE = "io.kvchecksum.archfixture";

    private static JavaClasses fixture;

    @BeforeAll
    static void importTheFixtureOnly() {
        fixture = new ClassFileImporter().importPackages(FIXTURE);
        assertTrue(fixture.stream().allMatch(c -> c.getPackageName().startsWith(FIXTURE)), "only the fixture");
    }

    /** Each rule and a class its failure must name. */
    private static final Map<String, String> VIOLATOR = Map.of(
            "enginePackagesAreFreeOfCycles", "CycleA",
            "engineClassesAreInALayer", "CycleB",
            "engineLayersAreRespected", "VerdictUsesWorker",
            "workerChecksummerDoesNotKnowTheCacheGate", "WorkerChecksummer$Nested",
            "internalIsNotUsedByOtherModules", "UsesInternal",
            "spiDoesNotUseInternal", "ProviderUsesInternal",
            "coreUsesNoOtherModule", "CoreUsesEngine",
            "engineUsesOnlyTheCore", "EngineUsesCli",
            "cudaUsesNeitherEngineNorOpenCl", "CudaUsesEngineAndOpenCl",
            "openClUsesNeitherEngineNorCuda", "OpenClUsesEngine");

    @Test
    void everyRuleFailsOnItsViolation() {
        Map<String, ArchRule> rules = Rules.all(FIXTURE);
        assertEquals(VIOLATOR.keySet(), rules.keySet(), "a fixture violation for every rule");
        rules.forEach((name, rule) -> {
            AssertionError e = assertThrows(AssertionError.class, () -> rule.check(fixture), name + " did not fail");
            assertTrue(e.getMessage().contains(VIOLATOR.get(name)), name + " failed without naming "
                    + VIOLATOR.get(name) + ":\n" + e.getMessage());
        });
    }

    /** The fixture is not one violation of everything: the layers it uses as allowed pass the layering rule. */
    @Test
    void allowedDependenciesAreNotReported() {
        AssertionError e = assertThrows(AssertionError.class, () -> Rules.engineLayersAreRespected(FIXTURE).check(fixture));
        String violations = e.getMessage().substring(e.getMessage().indexOf("was violated"));
        assertTrue(violations.startsWith("was violated (1 times)"), violations);
        for (String allowed : new String[] {FIXTURE + ".engine.auxiliary.", FIXTURE + ".engine.faults.", "Worker.payload"}) {
            assertFalse(violations.contains(allowed), allowed + " was reported:\n" + violations);
        }
    }
}
