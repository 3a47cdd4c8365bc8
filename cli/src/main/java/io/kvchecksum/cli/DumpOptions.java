package io.kvchecksum.cli;

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

    KvDump.Options options(int blockSize) {
        return new KvDump.Options(layout, blockSize, numTokens, firstBlock, headOffset);
    }
}
