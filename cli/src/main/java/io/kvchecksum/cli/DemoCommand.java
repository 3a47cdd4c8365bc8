package io.kvchecksum.cli;

import io.kvchecksum.KvChecksum;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code demo}: the default command. See {@link Demo}. */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The demo: a transfer verified, and four transport faults each detected at its block.",
                "A synthetic Llama-3-8B KV cache (32 layers x 8 KV heads x 128, bf16, 2011 tokens) checksummed in"
                        + " vLLM's flash layout, copied into a FlashInfer HND cache with another page size and block"
                        + " table, verified; then a flipped bit, a stale block, two swapped blocks and a block never"
                        + " written, one at a time, each of which must be detected at its block. Exit 0 when all is as"
                        + " expected, else 1."})
final class DemoCommand implements Callable<Integer> {
    /** The seed printed with every run; change it with --seed. */
    static final long DEFAULT_SEED = 20250604L;

    /** More layers than any model has; each layer is one allocation. */
    static final int MAX_LAYERS = 1024;

    /** The fewest tokens: each of the four faults goes into a whole block of its own. */
    static final int MIN_TOKENS = 4 * 16;

    @Spec
    CommandSpec spec;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "" + DEFAULT_SEED, description = "Random seed (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "2011", description = "Request tokens (default ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--layers", paramLabel = "L", defaultValue = "32", description = "Layers (default ${DEFAULT-VALUE}).")
    int layers;

    @Mixin
    BackendOption backend;

    @Option(names = "--json", description = "Print the result as one JSON object instead of the table.")
    boolean json;

    @Option(names = {"-q", "--quiet"}, description = "Accepted for symmetry; the demo prints no progress bar.")
    boolean quiet;

    @Override
    public Integer call() {
        if (tokens < MIN_TOKENS) {
            // four faults in four different whole blocks of 16
            throw new ParameterException(spec.commandLine(), "--tokens " + tokens + ": the demo needs at least "
                    + MIN_TOKENS + " (four whole blocks of 16, one per fault)");
        }
        if (layers < 1 || layers > MAX_LAYERS) {
            throw new ParameterException(spec.commandLine(), "--layers " + layers + ": must be 1.." + MAX_LAYERS);
        }
        Demo.Config c = Demo.Config.llama3_8b(seed, layers, tokens);
        long need = c.memoryEstimate();
        long limit = memoryLimit();
        if (need > limit) {
            throw new ParameterException(spec.commandLine(), "--tokens " + tokens + " --layers " + layers + " need about "
                    + Units.bytes(need) + " of memory; the demo's limit here is " + Units.bytes(limit)
                    + " (half of physical memory)");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter log = json ? new PrintWriter(OutputStream.nullOutputStream()) : out;
        Demo.Result r;
        String name;
        try (KvChecksum b = backend.open(spec.commandLine())) {
            name = b.name();
            r = Demo.run(c, b, log);
        }
        if (json) {
            Json.print(out, toJson(r, name));
        }
        return r.allAsExpected() ? Main.OK : Main.MISMATCH;
    }

    /** What the demo may allocate: half of physical memory (the caches are off-heap), or all of it when unknown. */
    static long memoryLimit() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            long total = os.getTotalMemorySize();
            if (total > 0) {
                return total / 2;
            }
        }
        return Long.MAX_VALUE;
    }

    static Map<String, Object> toJson(Demo.Result r, String backendName) {
        Demo.Config c = r.config();
        return Json.object("seed", c.seed(), "layers", c.layers(), "kv_heads", c.heads(), "head_dim", c.headDim(),
                "tokens", c.tokens(), "block_size", c.blockSize(), "backend", backendName, "backend_description",
                r.backend(), "clean", r.clean().name(), "faults", r.faults().stream().map(o -> Json.object("fault", o.name(),
                        "where", o.where(), "injected_blocks", o.injectedBlocks(), "status", o.status().name(),
                        "reported_blocks", o.reportedBlocks(), "localized", o.localized())).toList(),
                "kv_bytes", r.kvBytes(), "producer_gbps", r.kvBytes() / (double) r.producerNanos(), "consumer_gbps",
                r.kvBytes() / (double) r.consumerNanos(), "payload_chars", r.payloadChars(), "all_as_expected",
                r.allAsExpected());
    }
}
