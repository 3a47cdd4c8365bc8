package io.kvchecksum.cli;

import io.kvchecksum.cli.dump.InvalidOptionException;
import io.kvchecksum.cli.dump.KvDump;
import io.kvchecksum.engine.worker.Fingerprints;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.Map;

import static java.util.Map.entry;

/**
 * The group fingerprint a payload carries: the sum of one hash per layer of (layer name, spec type, dtype), as the
 * engine names them. A dump does not record those names, so they are options with vLLM's defaults.
 */
final class FingerprintOptions {
    @Option(names = "--layer-name", paramLabel = "FORMAT", defaultValue = "model.layers.{L}.self_attn.attn",
            description = "The engine's layer name, {L} standing for the layer number (default: ${DEFAULT-VALUE}).")
    String layerName;

    @Option(names = "--spec-type", paramLabel = "TYPE",
            description = "The KV cache spec type (default FullAttentionSpec; MLAAttentionSpec for vllm-mla).")
    String specType;

    @Option(names = "--kv-dtype", paramLabel = "DTYPE",
            description = "The cache dtype as the engine names it (default from the dump: torch.bfloat16, torch.uint8, ...).")
    String kvDtype;

    @Option(names = "--fingerprint", paramLabel = "U64",
            description = "Use this group fingerprint (unsigned decimal) instead of computing one.")
    String fingerprint;

    /** Refuses option values that are wrong whatever the dump (exit 64); commands call it before reading anything. */
    void validate() {
        if (!layerName.contains("{L}")) {
            throw new InvalidOptionException("--layer-name '" + layerName + "': must contain {L}, which stands for the layer"
                    + " number (e.g. model.layers.{L}.self_attn.attn)");
        }
        if (specType != null && specType.isBlank()) {
            throw new InvalidOptionException("--spec-type is empty: give the engine's spec type, e.g. FullAttentionSpec");
        }
        if (kvDtype != null && kvDtype.isBlank()) {
            throw new InvalidOptionException("--kv-dtype is empty: give the dtype as the engine names it, e.g. torch.bfloat16");
        }
        if (fingerprint != null) {
            try {
                Long.parseUnsignedLong(fingerprint.strip());
            } catch (NumberFormatException e) {
                throw new InvalidOptionException("--fingerprint '" + fingerprint + "': not an unsigned 64-bit decimal");
            }
        }
    }

    long of(KvDump dump) {
        validate();
        if (fingerprint != null) {
            return Long.parseUnsignedLong(fingerprint.strip());
        }
        String spec = specType != null ? specType : dump.layout().equals("vllm-mla") ? "MLAAttentionSpec" : "FullAttentionSpec";
        return Fingerprints.ofGroup(dump.layers().stream().map(l -> {
            String name = layerName.replace("{L}", Integer.toString(l.layer()));
            String dtype = torchName(l.kTensor().dtype().name());
            // an indexer's K cache: a layer of its own to the engine; a dump records no name, so one is made up
            return l.indexK() ? Fingerprints.ofLayer(name + ".index_k", "IndexKSpec", dtype)
                    : Fingerprints.ofLayer(name, spec, kvDtype != null ? kvDtype : dtype);
        }).toList());
    }

    /** The dtype as the engine names it: BF16 is torch.bfloat16; one torch has no other name for is in lower case. */
    static String torchName(String dtype) {
        return "torch." + TORCH.getOrDefault(dtype, dtype.toLowerCase(Locale.ROOT));
    }

    private static final Map<String, String> TORCH = Map.ofEntries(entry("BF16", "bfloat16"), entry("F16", "float16"),
            entry("F32", "float32"), entry("F64", "float64"), entry("F8_E4M3", "float8_e4m3fn"),
            entry("F8_E5M2", "float8_e5m2"), entry("U8", "uint8"), entry("I8", "int8"), entry("I16", "int16"),
            entry("I32", "int32"), entry("I64", "int64"), entry("BOOL", "bool"));
}
