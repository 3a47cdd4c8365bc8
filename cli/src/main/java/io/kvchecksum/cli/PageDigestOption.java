package io.kvchecksum.cli;

import io.kvchecksum.KvChecksum;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.cli.dump.KvDump;
import io.kvchecksum.engine.auxiliary.SglangDigests;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.wire.ChecksumPayload;
import io.kvchecksum.engine.wire.PayloadSection;
import io.kvchecksum.engine.wire.SglangDigestSection;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import picocli.CommandLine.Option;

/**
 * SGLang's page digest in {@code sum}: on by default for {@code --layout sglang} (the {@code sglang-digest} section of
 * {@code --payload}, a {@code page digest:} line, {@code "sglang_digest"} in {@code --json}); {@code --no-page-digest}
 * leaves it out (then {@code --payload} writes what it writes for any layout); {@code --page-digest} on another layout
 * is refused: only SGLang's pool has the page layout the digest is defined over.
 */
final class PageDigestOption {
    @Option(names = "--page-digest", negatable = true,
            description = "SGLang's Adler-32 page digest and layout signature (default: on for --layout sglang; the payload then carries the sglang-digest section).")
    Boolean pageDigest;

    /** The digest entry {@code sum} reports for {@code d}, or {@code null} when it reports none. */
    SglangDigestSection.Entry entry(KvDump d, KvChecksum backend, int groupId) {
        if (d.sglang() == null && Boolean.TRUE.equals(pageDigest)) {
            throw new InvalidInputException("--page-digest needs --layout sglang: SGLang's page digest is defined over"
                    + " its pool's pages (this dump is " + d.layout() + ")");
        }
        return d.sglang() == null || Boolean.FALSE.equals(pageDigest) ? null
                : d.sglang().digest(backend, groupId, d.request().numTokens());
    }

    /**
     * The sections of the producer's payload that {@code verify} compares for group {@code groupId}: the page digest's
     * entries of that group (worker 0: one dump is one worker); other sections as they are.
     */
    static Map<String, PayloadSection> expectedSections(ChecksumPayload exp, int groupId) {
        Map<String, PayloadSection> out = new TreeMap<>(exp.sections());
        if (exp.section(SglangDigestSection.NAME) instanceof SglangDigestSection s) {
            out.put(SglangDigestSection.NAME, new SglangDigestSection(s.entries().stream()
                    .filter(e -> e.groupId() == groupId && e.worker() == 0).toList()));
        }
        return out;
    }

    /**
     * The consumer's payload with its page digest when the producer sent one (an SGLang dump; any other layout has
     * none, which the comparison reports as ONE_SIDE_ONLY). Without the producer's digest nothing is added: the CLI
     * compares what the producer sent.
     */
    static ChecksumPayload withConsumerDigest(ChecksumPayload actual, ChecksumPayload exp, KvDump d, KvChecksum backend,
            int groupId) {
        if (exp.section(SglangDigestSection.NAME) == null || d.sglang() == null) {
            return actual;
        }
        return SglangDigests.attach(actual, List.of(d.sglang().digest(backend, groupId, d.request().numTokens())));
    }

    /** {@code payload decode}'s lines for the payload's page digest entries, if it carries any. */
    static List<String> lines(ChecksumPayload p) {
        if (!(p.section(SglangDigestSection.NAME) instanceof SglangDigestSection s)) {
            return List.of();
        }
        return s.entries().stream().map(e -> "section sglang-digest: group " + e.groupId() + " worker " + e.worker() + ": "
                + line(e)).toList();
    }

    /** {@code payload decode --json}: {@code "sglang_digest"}, one object per entry, if the payload carries any. */
    static void putJson(Map<String, Object> o, ChecksumPayload p) {
        if (p.section(SglangDigestSection.NAME) instanceof SglangDigestSection s) {
            o.put("sglang_digest", s.entries().stream().map(e -> {
                Map<String, Object> j = Json.object("group_id", e.groupId(), "worker", e.worker());
                j.putAll(json(e));
                return j;
            }).toList());
        }
    }

    /** One line for text output. */
    static String line(SglangDigestSection.Entry e) {
        return String.format("adler32 %08x over %d page%s of %d tokens from position %d; layout signature %016x",
                e.digest(), e.numPages(), e.numPages() == 1 ? "" : "s", e.pageSize(), e.firstToken(), e.signature());
    }

    /** The entry as a JSON object (the signature as an unsigned decimal string, the digest as a number). */
    static Map<String, Object> json(SglangDigestSection.Entry e) {
        return Json.object("digest", e.digest(), "signature", Long.toUnsignedString(e.signature()), "page_size",
                e.pageSize(), "first_token", e.firstToken(), "num_pages", e.numPages());
    }

    /** A section's verdict as a JSON object. */
    static Map<String, Object> json(SectionVerdict v) {
        return Json.object("section", v.section(), "status", v.status().name(), "reason",
                v.reason() == null ? null : v.reason().name(), "detail", v.detail());
    }
}
