package io.kvchecksum.engine.wire;

import io.kvchecksum.Rechunked;
import io.kvchecksum.engine.verdict.FailurePolicy;
import io.kvchecksum.engine.verdict.GroupVerdict;
import io.kvchecksum.engine.verdict.LoadVerdict;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.Status;
import io.kvchecksum.engine.verdict.UnverifiedReason;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import java.util.stream.Stream;

/**
 * Compares a producer's checksums with the consumer's checksums of the same load. Stateless and thread-safe; it
 * logs nothing (see {@link FailurePolicy} for what to do with the verdict).
 *
 * <p><b>Per load</b>: a version-1 payload on either side is {@link UnverifiedReason#UNSUPPORTED_PAYLOAD_VERSION}; two
 * sides in different checksum modes are {@link UnverifiedReason#MODE_DIFFERS}, never a mismatch.
 *
 * <p><b>Per group</b> (groups are matched by id):
 * <ul>
 *   <li>a group on one side only is {@link UnverifiedReason#ONE_SIDE_ONLY}; a group on neither side (skipped by both)
 *       is left out of the verdict;</li>
 *   <li>different fingerprints: {@link UnverifiedReason#FINGERPRINT_DIFFERS};</li>
 *   <li>equal block sizes compare block by block. Block sizes that are multiples compare chunks of the larger size,
 *       each side summing its smaller blocks (exact, because pieces are numbered from the request's first token);
 *       block sizes that are not multiples are {@link UnverifiedReason#BLOCK_SIZES_NOT_MULTIPLES};</li>
 *   <li><b>only positions both sides checksummed are compared</b>, and a chunk only where both sides cover it whole
 *       and hold the same number of tokens in it. Loaded blocks the producer sent no checksum for (a sliding window
 *       clipped at another token count, a consumer holding more tokens) and a last chunk holding other token counts
 *       (an engine that recomputes the prompt's last token loads one token less) are not compared: they are listed
 *       in {@link GroupVerdict#notComparedBlocks()} and the detail, and the group can still match. An operator tool
 *       that wants every loaded block checked treats a non-empty list as unverified. Nothing compared at all is
 *       {@link UnverifiedReason#NO_COMMON_POSITION};</li>
 *   <li>a consumer that wrote no block of the group (0 tokens loaded, a full local prefix hit) is
 *       {@link UnverifiedReason#NOTHING_LOADED}, whatever else differs: nothing crossed, so nothing can be wrong, and
 *       the load's other groups decide its status ({@link LoadVerdict#of});</li>
 *   <li>the <b>unaligned-prefix rule</b>: a consumer whose first loaded block starts inside a larger producer block
 *       is {@link UnverifiedReason#UNALIGNED_CHUNK}, never skipped: that chunk also holds tokens the consumer did not
 *       load, and skipping it would leave loaded KV unchecked while reporting a match;</li>
 *   <li>any compared chunk that differs makes the group {@link Status#MISMATCH}, whatever else is unverified.</li>
 * </ul>
 *
 * <p><b>Replicas.</b> The consumer's payload may list a group several times, one entry per replica check (see
 * {@link io.kvchecksum.engine.worker.Aggregator#consumer}); every check is compared with the producer's single entry
 * and must match, so a corrupted copy is a mismatch even if another copy is intact. The producer's payload must list
 * each group once.
 */
public final class Verifier {

    private Verifier() {
    }

    /**
     * Decodes the producer's payload as it arrived (base64 text from the request's parameters, or {@code null} if
     * there was none) and compares it with the consumer's checksums. Never throws for what the producer sent: no text
     * is {@link UnverifiedReason#MISSING_PAYLOAD}, undecodable text {@link UnverifiedReason#MALFORMED_PAYLOAD}.
     *
     * @param producerBase64 the producer's payload as it arrived, untrusted; {@code null} or blank when none did
     * @param actual the consumer's checksums of the blocks its load wrote; not null
     * @return the load's verdict
     */
    public static LoadVerdict verify(String producerBase64, ChecksumPayload actual) {
        return verify(producerBase64, null, actual);
    }

    /**
     * As {@link #verify(String, ChecksumPayload)} for raw bytes from a connector carrier.
     *
     * @param producerBytes the producer's payload as it arrived, untrusted; {@code null} when none did
     * @param actual the consumer's checksums of the blocks its load wrote; not null
     * @return the load's verdict
     */
    public static LoadVerdict verify(byte[] producerBytes, ChecksumPayload actual) {
        return verify(producerBytes, null, actual);
    }

    /**
     * As {@link #verify(String, ChecksumPayload)} for the two texts of {@code kv_transfer_params}: the checksums
     * ({@code kv_checksums}) and the sections beside them ({@code kv_checksum_sections}).
     *
     * @param checksumsBase64 the producer's checksums as they arrived, untrusted; {@code null} or blank when none did
     * @param sectionsBase64 the producer's sections as they arrived, untrusted; {@code null} or blank when none did
     * @param actual the consumer's checksums (and sections) of the blocks its load wrote; not null
     * @return the load's verdict
     */
    public static LoadVerdict verify(String checksumsBase64, String sectionsBase64, ChecksumPayload actual) {
        boolean missing = checksumsBase64 == null || checksumsBase64.isBlank();
        String sections = sectionsBase64 == null || sectionsBase64.isBlank() ? null : sectionsBase64;
        return decodeAndCompare(missing, () -> PayloadCodec.decodeBase64(checksumsBase64, sections), actual);
    }

    /**
     * As {@link #verify(byte[], ChecksumPayload)} for a connector carrier's two byte strings.
     *
     * @param checksums the producer's checksums as they arrived, untrusted; {@code null} when none did
     * @param sections the producer's sections as they arrived, untrusted; {@code null} when none did
     * @param actual the consumer's checksums (and sections) of the blocks its load wrote; not null
     * @return the load's verdict
     */
    public static LoadVerdict verify(byte[] checksums, byte[] sections, ChecksumPayload actual) {
        return decodeAndCompare(checksums == null, () -> PayloadCodec.decode(checksums, sections), actual);
    }

    /** {@link #compare}s what {@code decode} makes of the producer's payload; {@code missing}: there was none. */
    private static LoadVerdict decodeAndCompare(boolean missing, Supplier<ChecksumPayload> decode, ChecksumPayload actual) {
        if (missing) {
            return LoadVerdict.unverified(UnverifiedReason.MISSING_PAYLOAD, "the producer sent no checksums");
        }
        ChecksumPayload expected;
        try {
            expected = decode.get();
        } catch (MalformedPayloadException e) {
            return LoadVerdict.unverified(UnverifiedReason.MALFORMED_PAYLOAD, e.getMessage());
        }
        return compare(expected, actual);
    }

    /**
     * Compares the producer's checksums with the consumer's.
     *
     * @param expected what the producer sent (block positions in its numbering, one entry per group)
     * @param actual the consumer's checksums of the blocks its load wrote, in its own block numbering, one entry per
     *     replica check of each group
     * @return the load's verdict: {@link UnverifiedReason#UNSUPPORTED_PAYLOAD_VERSION} when either side is version 1,
     *     {@link UnverifiedReason#MODE_DIFFERS} when the modes differ, else the groups' verdicts combined by
     *     {@link LoadVerdict#of} (with the sections' verdicts added)
     */
    public static LoadVerdict compare(ChecksumPayload expected, ChecksumPayload actual) {
        if (expected.version() == 1 || actual.version() == 1) {
            return LoadVerdict.unverified(UnverifiedReason.UNSUPPORTED_PAYLOAD_VERSION, "producer payload version "
                    + expected.version() + ", consumer " + actual.version() + "; version-1 values are not comparable with "
                    + "this definition's (versions 2 and 3 are)");
        }
        if (!expected.mode().equals(actual.mode())) {
            return LoadVerdict.unverified(UnverifiedReason.MODE_DIFFERS, "the producer checksummed in the " + expected.mode()
                    + " mode, the consumer in the " + actual.mode() + " mode: the values are not comparable");
        }
        Map<Integer, List<GroupChecksums>> producer = byGroup(expected.groups());
        Map<Integer, List<GroupChecksums>> consumer = byGroup(actual.groups());
        TreeSet<Integer> ids = new TreeSet<>(producer.keySet());
        ids.addAll(consumer.keySet());
        List<GroupVerdict> verdicts = new ArrayList<>();
        for (int id : ids) {
            List<GroupChecksums> p = producer.get(id);
            List<GroupChecksums> c = consumer.get(id);
            if (p == null) {
                verdicts.add(GroupVerdict.unverified(id, UnverifiedReason.ONE_SIDE_ONLY,
                        "checksummed by the consumer only: the producer skipped or does not have it"));
            } else if (c == null) {
                verdicts.add(GroupVerdict.unverified(id, UnverifiedReason.ONE_SIDE_ONLY,
                        "checksummed by the producer only: the consumer skipped it"));
            } else if (p.size() != 1) {
                verdicts.add(GroupVerdict.unverified(id, UnverifiedReason.MALFORMED_PAYLOAD,
                        "the producer's payload lists the group " + p.size() + " times"));
            } else {
                verdicts.add(compareGroup(id, p.get(0), expected.numTokens(), c, actual.numTokens()));
            }
        }
        return LoadVerdict.of(verdicts).withSections(compareSections(expected, actual, PayloadSections.KNOWN));
    }

    /** Each known section either side carries, compared by its own rule ({@link PayloadSections.Known#comparison()}). */
    static List<SectionVerdict> compareSections(ChecksumPayload expected, ChecksumPayload actual,
            Map<String, PayloadSections.Known> known) {
        TreeSet<String> names = new TreeSet<>(expected.sections().keySet());
        names.addAll(actual.sections().keySet());
        return names.stream().filter(known::containsKey)
                .map(name -> known.get(name).comparison().apply(expected.section(name), actual.section(name)))
                .filter(Objects::nonNull).toList();
    }

    private static Map<Integer, List<GroupChecksums>> byGroup(List<GroupChecksums> groups) {
        return groups.stream().collect(Collectors.groupingBy(GroupChecksums::groupId, TreeMap::new, Collectors.toList()));
    }

    private static GroupVerdict compareGroup(int id, GroupChecksums e, long nE, List<GroupChecksums> checks, long nA) {
        List<Check> results = checks.stream().map(a -> compareCheck(e, nE, a, nA)).toList();
        long[] mismatched = results.stream().flatMap(r -> r.mismatched.stream()).mapToLong(Long::longValue).sorted()
                .distinct().toArray();
        long[] left = results.stream().flatMap(r -> r.notCompared.stream()).mapToLong(Long::longValue).sorted().distinct()
                .toArray();
        String of = checks.size() > 1 ? " of " + checks.size() + " replica checks" : "";
        if (mismatched.length > 0) {
            String d = IntStream.range(0, results.size()).filter(k -> !results.get(k).mismatched.isEmpty())
                    .mapToObj(k -> (checks.size() > 1 ? "check " + k + ": " : "") + results.get(k).detail)
                    .collect(Collectors.joining("; "));
            return new GroupVerdict(id, Status.MISMATCH, mismatched, left, null, d);
        }
        for (int k = 0; k < results.size(); k++) {
            if (results.get(k).reason != null) {
                return new GroupVerdict(id, Status.UNVERIFIED, null, left, results.get(k).reason,
                        (checks.size() > 1 ? "check " + k + of + ": " : "") + results.get(k).detail);
            }
        }
        return new GroupVerdict(id, Status.MATCH, null, left, null,
                results.get(0).detail + (checks.size() > 1 ? ", each" + of : ""));
    }

    /** One consumer check against the producer's values. */
    private record Check(List<Long> mismatched, List<Long> notCompared, UnverifiedReason reason, String detail) {
        static Check unverified(UnverifiedReason reason, String detail) {
            return new Check(List.of(), List.of(), reason, detail);
        }
    }

    private static Check compareCheck(GroupChecksums e, long nE, GroupChecksums a, long nA) {
        // First: a load that wrote no block of the group moved no KV, so no other difference can make it wrong.
        if (a.numBlocks() == 0) {
            return Check.unverified(UnverifiedReason.NOTHING_LOADED, "the load wrote no block of this group");
        }
        if (e.fingerprint() != a.fingerprint()) {
            return Check.unverified(UnverifiedReason.FINGERPRINT_DIFFERS, "fingerprint " + Long.toUnsignedString(e.fingerprint())
                    + " (producer) vs " + Long.toUnsignedString(a.fingerprint()) + " (consumer): other layers or dtypes");
        }
        int be = e.blockSize();
        int ba = a.blockSize();
        int large = Math.max(be, ba);
        if (large % Math.min(be, ba) != 0) {
            return Check.unverified(UnverifiedReason.BLOCK_SIZES_NOT_MULTIPLES, "block sizes " + be + " (producer) and " + ba
                    + " (consumer) are not multiples of each other");
        }
        int fe = large / be;
        int fa = large / ba;
        if (a.start() % fa != 0) {
            return Check.unverified(UnverifiedReason.UNALIGNED_CHUNK, "the first loaded block " + a.start() + " (size " + ba
                    + ") starts inside producer block " + a.start() / fa + " (size " + be + ")");
        }
        long qFirst = a.start() / fa;
        long qEnd = Math.ceilDiv(a.end(), (long) fa);
        List<Long> mismatched = new ArrayList<>();
        List<Long> notCovered = new ArrayList<>();
        List<Long> otherCount = new ArrayList<>();
        long compared = 0;
        Rechunked ra = Rechunked.of(a.values(), a.start(), fa);
        Rechunked re = Rechunked.of(e.values(), e.start(), fe);
        for (long q = qFirst; q < qEnd; q++) {
            Long sa = ra.covers(q) ? ra.valueAt(q) : null;
            Long se = re.covers(q) ? re.valueAt(q) : null;
            long lo = q * fa;
            long hi = Math.min(lo + fa, a.end());
            if (sa == null || se == null) {
                // Only positions both sides checksummed are compared: a window clip or a prefix the producer left out.
                addRange(notCovered, lo, hi);
            } else if (tokensIn(q, large, nA) != tokensIn(q, large, nE)) {
                // A last block holding other token counts on the two sides (a recomputed last token, a longer consumer).
                addRange(otherCount, lo, hi);
            } else {
                compared++;
                if (sa.longValue() != se.longValue()) {
                    addRange(mismatched, lo, hi);
                }
            }
        }
        String sizes = be == ba ? "block size " + be : "chunks of " + large + " tokens (producer blocks " + be
                + ", consumer blocks " + ba + ")";
        String leftOut = (notCovered.isEmpty() ? "" : "; not compared: consumer blocks " + notCovered
                + " (the producer sent no checksum for them)") + (otherCount.isEmpty() ? "" : "; not compared: consumer blocks "
                + otherCount + " (" + nA + " tokens on the consumer, " + nE + " on the producer)");
        List<Long> notCompared = Stream.concat(notCovered.stream(), otherCount.stream()).toList();
        if (!mismatched.isEmpty()) {
            return new Check(mismatched, notCompared, null, "blocks " + mismatched + " differ (" + sizes + ")" + leftOut);
        }
        if (compared == 0) {
            return new Check(List.of(), notCompared, UnverifiedReason.NO_COMMON_POSITION,
                    "no position checksummed whole by both sides" + leftOut);
        }
        return new Check(List.of(), notCompared, null, compared + " positions compared, " + sizes + leftOut);
    }

    private static void addRange(List<Long> out, long lo, long hi) {
        LongStream.range(lo, hi).forEach(out::add);
    }

    /** Tokens of a request of {@code n} tokens in chunk {@code q} of {@code size} tokens, without overflowing. */
    static long tokensIn(long q, int size, long n) {
        long chunks = Math.ceilDiv(n, (long) size);
        if (q >= chunks) {
            return 0;
        }
        return q == chunks - 1 ? n - q * size : size;
    }
}
