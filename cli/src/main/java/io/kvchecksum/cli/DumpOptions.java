package io.kvchecksum.cli;

import io.kvchecksum.CellPadding;
import io.kvchecksum.cli.dump.KvDump;
import picocli.CommandLine.Option;

/** How to read a dump: the options {@code sum}, {@code verify} and {@code diff} share. */
final class DumpOptions {
    @Option(names = "--layout", paramLabel = "L", defaultValue = "gathered",
            description = "gathered (default), vllm-flash, vllm-flashinfer-nhd, vllm-flashinfer-hnd, vllm-mla, sglang")
    String layout;

    @Option(names = "--num-tokens", paramLabel = "N",
            description = "The request's token count. Default: the dump's num_tokens tensor, else F*B + the tokens the dump holds.")
    Long numTokens;

    @Option(names = "--first-block", paramLabel = "F", defaultValue = "0",
            description = "The first block position: the dump's first token is request position F*B (default 0).")
    long firstBlock;

    @Option(names = "--head-offset", paramLabel = "H0", defaultValue = "0",
            description = "The global head number of the dump's head 0 (TP rank r holding k heads: r*k; default 0).")
    int headOffset;

    @Option(names = "--pad-cells", description = "Checksum cells that are not whole 8-byte pieces (a 132-byte fp8 index-K)"
            + " zero-padded at their end: an opt-in extension with checksums of its own (docs/definition.md). Without it"
            + " such a group is skipped with the reason (exit 2).")
    boolean padCells;

    @Option(names = "--index-k-head", paramLabel = "H",
            description = "Global head number of each layer's index-K cache (layers.<L>.index_k). Default: right after the"
                    + " layer's KV heads in the dump (H0 + its KV heads); under TP give the layer's KV heads across TP.")
    Integer indexKHead;

    KvDump.Options options(int blockSize) {
        return new KvDump.Options(layout, blockSize, numTokens, firstBlock, headOffset,
                padCells ? CellPadding.ZEROS : CellPadding.NONE, indexKHead);
    }
}
