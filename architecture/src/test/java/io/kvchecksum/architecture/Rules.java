package io.kvchecksum.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.lang.ArchRule;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The architecture's rules, each built for a root package: {@link #ROOT} for the real code, the fixture's root for
 * {@link RulesCanFailTest}, so that the very rule objects the build checks are shown to fail on violations. Package
 * patterns are ArchUnit's ({@code ..} for any subpackages). docs/architecture.md describes the layering.
 */
final class Rules {

    /** The real code's root package. */
    static final String ROOT = "io.kvchecksum";

    /** The engine's layers, bottom first; a layer may use those before it, never those after it. */
    static final List<String> ENGINE_LAYERS = List.of("verdict", "wire", "worker", "auxiliary", "faults");

    private Rules() {
    }

    /**
     * Each module's packages below {@code root}, the core module ({@code bindings}) first. The root package itself is
     * the core's API; a package without {@code ..} is that package only.
     */
    static Map<String, List<String>> modules(String root) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        m.put("bindings", List.of(root, root + ".spi..", root + ".internal.."));
        m.put("bench", List.of(root + ".bench.."));
        m.put("golden", List.of(root + ".golden.."));
        m.put("engine", List.of(root + ".engine.."));
        m.put("kernels-cuda", List.of(root + ".cuda.."));
        m.put("kernels-opencl", List.of(root + ".opencl.."));
        m.put("cli", List.of(root + ".cli.."));
        m.put("jmh", List.of(root + ".jmh.."));
        m.put("jlama-example", List.of(root + ".jlama.."));
        return m;
    }

    /** The packages of every module but {@code except}. */
    private static String[] packagesOfModulesOtherThan(String root, String... except) {
        List<String> out = new ArrayList<>();
        modules(root).forEach((module, packages) -> {
            if (!List.of(except).contains(module)) {
                out.addAll(packages);
            }
        });
        return out.toArray(String[]::new);
    }

    private static String[] packagesOf(String root, String module) {
        return modules(root).get(module).toArray(String[]::new);
    }

    /** No dependency cycle between the engine's packages. */
    static ArchRule enginePackagesAreFreeOfCycles(String root) {
        return slices().matching(root + ".engine.(*)..").namingSlices("engine package $1")
                .should().beFreeOfCycles()
                .because("the engine is split by concern into layers (docs/architecture.md)");
    }

    /** Every engine class is in one of the layers (none in the engine's root package or an unlayered package). */
    static ArchRule engineClassesAreInALayer(String root) {
        return classes().that().resideInAPackage(root + ".engine..")
                .should().resideInAnyPackage(ENGINE_LAYERS.stream().map(l -> root + ".engine." + l + "..")
                        .toArray(String[]::new))
                .because("a new engine package takes its place in the layering (docs/architecture.md)");
    }

    /** verdict, then wire, then worker, then auxiliary and faults: each uses only the layers below it. */
    static ArchRule engineLayersAreRespected(String root) {
        String e = root + ".engine.";
        return layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("verdict").definedBy(e + "verdict..")
                .layer("wire").definedBy(e + "wire..")
                .layer("worker").definedBy(e + "worker..")
                .layer("auxiliary").definedBy(e + "auxiliary..")
                .layer("faults").definedBy(e + "faults..")
                .whereLayer("faults").mayNotBeAccessedByAnyLayer()
                .whereLayer("auxiliary").mayNotBeAccessedByAnyLayer()
                .whereLayer("worker").mayOnlyBeAccessedByLayers("auxiliary", "faults")
                .whereLayer("wire").mayOnlyBeAccessedByLayers("worker", "auxiliary", "faults")
                .whereLayer("verdict").mayOnlyBeAccessedByLayers("wire", "worker", "auxiliary", "faults")
                .because("the engine's layers are verdict < wire < worker < auxiliary, faults (docs/architecture.md)");
    }

    /** The worker is built from a gated layout and does not know the gate that produced it. */
    static ArchRule workerChecksummerDoesNotKnowTheCacheGate(String root) {
        String worker = root + ".engine.worker.";
        return noClasses().that().haveNameMatching(Pattern.quote(worker + "WorkerChecksummer") + "(\\$.*)?")
                .should().dependOnClassesThat().haveFullyQualifiedName(worker + "CacheGate")
                .because("CacheGate produces the WorkerChecksummer.GatedLayout the worker consumes, not the reverse");
    }

    /** {@code internal} (the core's implementation) is used by no other module. */
    static ArchRule internalIsNotUsedByOtherModules(String root) {
        return noClasses().that().resideInAnyPackage(packagesOfModulesOtherThan(root, "bindings"))
                .should().dependOnClassesThat().resideInAPackage(root + ".internal..")
                .because("other modules use the core through its API and the SPI; internal may change at any time");
    }

    /** The SPI that backends implement does not expose the core's implementation. */
    static ArchRule spiDoesNotUseInternal(String root) {
        return noClasses().that().resideInAPackage(root + ".spi..")
                .should().dependOnClassesThat().resideInAPackage(root + ".internal..")
                .because("a backend of another module implements the SPI without internal classes");
    }

    /** The core depends on no other module (backends are found through ServiceLoader). */
    static ArchRule coreUsesNoOtherModule(String root) {
        return noClasses().that().resideInAnyPackage(packagesOf(root, "bindings"))
                .should().dependOnClassesThat().resideInAnyPackage(packagesOfModulesOtherThan(root, "bindings"))
                .because("every module depends on the core, never the reverse (docs/architecture.md)");
    }

    /** The engine uses only the core: no kernel module, no application (cli, jmh, the Jlama example), no golden. */
    static ArchRule engineUsesOnlyTheCore(String root) {
        return noClasses().that().resideInAPackage(root + ".engine..")
                .should().dependOnClassesThat().resideInAnyPackage(packagesOfModulesOtherThan(root, "bindings", "engine"))
                .because("the engine works with any backend through the core's KvChecksum");
    }

    /** The CUDA module uses neither the engine nor the OpenCL module. */
    static ArchRule cudaUsesNeitherEngineNorOpenCl(String root) {
        return noClasses().that().resideInAnyPackage(packagesOf(root, "kernels-cuda"))
                .should().dependOnClassesThat().resideInAnyPackage(
                        concat(packagesOf(root, "engine"), packagesOf(root, "kernels-opencl")))
                .because("a kernel module implements the core's SPI and nothing else");
    }

    /** The OpenCL module uses neither the engine nor the CUDA module. */
    static ArchRule openClUsesNeitherEngineNorCuda(String root) {
        return noClasses().that().resideInAnyPackage(packagesOf(root, "kernels-opencl"))
                .should().dependOnClassesThat().resideInAnyPackage(
                        concat(packagesOf(root, "engine"), packagesOf(root, "kernels-cuda")))
                .because("a kernel module implements the core's SPI and nothing else");
    }

    /** Every rule, by name, for {@code root}. */
    static Map<String, ArchRule> all(String root) {
        Map<String, ArchRule> m = new LinkedHashMap<>();
        m.put("enginePackagesAreFreeOfCycles", enginePackagesAreFreeOfCycles(root));
        m.put("engineClassesAreInALayer", engineClassesAreInALayer(root));
        m.put("engineLayersAreRespected", engineLayersAreRespected(root));
        m.put("workerChecksummerDoesNotKnowTheCacheGate", workerChecksummerDoesNotKnowTheCacheGate(root));
        m.put("internalIsNotUsedByOtherModules", internalIsNotUsedByOtherModules(root));
        m.put("spiDoesNotUseInternal", spiDoesNotUseInternal(root));
        m.put("coreUsesNoOtherModule", coreUsesNoOtherModule(root));
        m.put("engineUsesOnlyTheCore", engineUsesOnlyTheCore(root));
        m.put("cudaUsesNeitherEngineNorOpenCl", cudaUsesNeitherEngineNorOpenCl(root));
        m.put("openClUsesNeitherEngineNorCuda", openClUsesNeitherEngineNorCuda(root));
        return m;
    }

    private static String[] concat(String[] a, String[] b) {
        List<String> out = new ArrayList<>(List.of(a));
        out.addAll(List.of(b));
        return out.toArray(String[]::new);
    }
}
