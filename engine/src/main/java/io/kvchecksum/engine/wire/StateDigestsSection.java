package io.kvchecksum.engine.wire;

import io.kvchecksum.ChecksumMode;
import io.kvchecksum.KvChecksum;
import io.kvchecksum.StateRow;
import io.kvchecksum.engine.verdict.SectionVerdict;
import io.kvchecksum.engine.verdict.UnverifiedReason;
import org.msgpack.core.MessagePacker;
import org.msgpack.value.Value;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * The {@code "state-digests"} section: one digest per state buffer of the request (Mamba/SSM state rows), as
 * {@link KvChecksum#stateDigests} defines it, in the payload's checksum mode. State is per request, not per token, so
 * block checksums do not cover it; this section does.
 *
 * <p>Wire value ({@code docs/wire-format.md}): {@code [mode, [[name, digest], ...]]}, {@code mode} the wire name the
 * digests were computed in, {@code name} 1..64 bytes of printable ASCII (distinct), {@code digest} an unsigned 64-bit
 * integer. Under TP each rank's rows are separate buffers: name them per rank (e.g. {@code "l3.ssm.r1"}) and
 * {@link #merge} the ranks' sections.
 *
 * <p>Comparison ({@link #compare}): a buffer whose digests differ is a MISMATCH naming it; otherwise a side without
 * the section, a buffer on one side only ({@link UnverifiedReason#ONE_SIDE_ONLY}) or other modes
 * ({@link UnverifiedReason#MODE_DIFFERS}) is UNVERIFIED, which leaves the load's status to its groups.
 *
 * @param mode the checksum mode's wire name
 * @param digests digest per buffer name, in the producer's order
 */
public record StateDigestsSection(String mode, Map<String, Long> digests) implements PayloadSection {
    /** The section's key in the payload. */
    public static final String NAME = "state-digests";
    /** The most buffers one section carries (a reader refuses more). */
    public static final int MAX_BUFFERS = 1 << 16;

    /**
     * Validates the mode and the buffer names and copies the digests, keeping their order.
     *
     * @throws NullPointerException when {@code mode} or {@code digests} is null
     * @throws IllegalArgumentException when the mode is not 1..32 of a-z, 0-9 and '-', a name is not 1..64 printable
     *     ASCII characters, or there are more than {@link #MAX_BUFFERS} buffers
     */
    public StateDigestsSection {
        Objects.requireNonNull(mode, "mode");
        if (!WireValues.MODE.matcher(mode).matches()) {
            throw new IllegalArgumentException("mode '" + mode + "' is not 1..32 of a-z, 0-9 and '-'");
        }
        digests = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(digests));
        if (digests.size() > MAX_BUFFERS) {
            throw new IllegalArgumentException(digests.size() + " buffers, at most " + MAX_BUFFERS);
        }
        for (String n : digests.keySet()) {
            if (n.isEmpty() || n.length() > 64 || !n.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
                throw new IllegalArgumentException("buffer name '" + n + "' is not 1..64 printable ASCII characters");
            }
        }
    }

    /**
     * The digests of {@code rows}, computed by {@code backend} in {@code mode} (what a producer attaches when it sends
     * and a consumer when it consumes: {@code payload.withSection(StateDigestsSection.compute(...))}).
     *
     * @param backend the backend that computes the digests ({@link KvChecksum#stateDigests})
     * @param rows the request's state rows, named 1..64 printable ASCII characters each, distinct
     * @param mode the checksum mode, not null
     * @return the section, one digest per row in the rows' order, in {@code mode}
     * @throws IllegalArgumentException when two rows share a name, or a name is not 1..64 printable ASCII characters
     * @throws io.kvchecksum.InvalidLayoutException when the backend cannot read a row's memory or lacks the mode
     */
    public static StateDigestsSection compute(KvChecksum backend, List<StateRow> rows, ChecksumMode mode) {
        long[] d = backend.stateDigests(rows, mode);
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < d.length; i++) {
            if (m.put(rows.get(i).name(), d[i]) != null) {
                throw new IllegalArgumentException("two state rows are named " + rows.get(i).name());
            }
        }
        return new StateDigestsSection(mode.wireName(), m);
    }

    /**
     * The sections of several workers (TP ranks, PP stages) as one: their buffers, which must have distinct names.
     *
     * @param parts the workers' sections, at least one, all in the same mode
     * @return one section with every part's buffers, in the parts' order
     * @throws IllegalArgumentException when {@code parts} is empty, two parts have different modes or two buffers the
     *     same name
     */
    public static StateDigestsSection merge(List<StateDigestsSection> parts) {
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("nothing to merge");
        }
        Map<String, Long> m = new LinkedHashMap<>();
        for (StateDigestsSection s : parts) {
            if (!s.mode().equals(parts.get(0).mode())) {
                throw new IllegalArgumentException("workers computed state digests in modes " + parts.get(0).mode()
                        + " and " + s.mode());
            }
            s.digests().forEach((k, v) -> {
                if (m.put(k, v) != null) {
                    throw new IllegalArgumentException("two workers sent state buffer " + k);
                }
            });
        }
        return new StateDigestsSection(parts.get(0).mode(), m);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void pack(MessagePacker p) throws IOException {
        p.packArrayHeader(2);
        p.packString(mode);
        p.packArrayHeader(digests.size());
        for (Map.Entry<String, Long> e : digests.entrySet()) {
            p.packArrayHeader(2);
            p.packString(e.getKey());
            WireValues.packUnsigned(p, e.getValue());
        }
    }

    /** Reads the section's value (registered in {@link PayloadSections}). */
    static PayloadSection decode(Value v) {
        String f = "sections." + NAME;
        List<Value> top = WireValues.array(v, f, 2, 2);
        String mode = WireValues.mode(top.get(0), f + ".mode");
        List<Value> entries = WireValues.array(top.get(1), f + ".digests", 0, MAX_BUFFERS);
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < entries.size(); i++) {
            String at = f + ".digests[" + i + "]";
            List<Value> e = WireValues.array(entries.get(i), at, 2, 2);
            String name = WireValues.name(e.get(0), at + ".name", 64);
            if (m.put(name, WireValues.unsigned64(e.get(1), at + ".digest")) != null) {
                throw new MalformedPayloadException(at + ".name: '" + name + "' appears twice");
            }
        }
        return new StateDigestsSection(mode, m);
    }

    /**
     * The buffers both sides digested with different values, in the producer's order: what a MISMATCH names. Empty when
     * either side lacks the section or the modes differ (nothing was compared).
     *
     * @param producer the producer's section of this name, or {@code null} when it has none
     * @param consumer the consumer's section of this name, or {@code null} when it has none
     * @return a new list of the names of the buffers with different digests
     */
    public static List<String> differingBuffers(PayloadSection producer, PayloadSection consumer) {
        if (!(producer instanceof StateDigestsSection p && consumer instanceof StateDigestsSection c
                && p.mode().equals(c.mode()))) {
            return new ArrayList<>();
        }
        return p.digests().keySet().stream()
                .filter(k -> c.digests().containsKey(k) && !c.digests().get(k).equals(p.digests().get(k)))
                .collect(Collectors.toCollection(ArrayList::new));
    }

    /** The comparison registered in {@link PayloadSections} (see the class comment). */
    static SectionVerdict compare(PayloadSection producer, PayloadSection consumer) {
        if (producer == null || consumer == null) {
            return WireValues.oneSideOnly(NAME, "state digests", producer);
        }
        StateDigestsSection p = (StateDigestsSection) producer;
        StateDigestsSection c = (StateDigestsSection) consumer;
        if (!p.mode().equals(c.mode())) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.MODE_DIFFERS, "state digests in mode " + p.mode()
                    + " (producer) and " + c.mode() + " (consumer)");
        }
        List<String> differ = differingBuffers(p, c);
        List<String> oneSide = new ArrayList<>();
        p.digests().keySet().stream().filter(k -> !c.digests().containsKey(k)).forEach(k -> oneSide.add(k + " (producer)"));
        c.digests().keySet().stream().filter(k -> !p.digests().containsKey(k)).forEach(k -> oneSide.add(k + " (consumer)"));
        String also = oneSide.isEmpty() ? "" : "; on one side only: " + String.join(", ", oneSide);
        if (!differ.isEmpty()) {
            return SectionVerdict.mismatch(NAME, "state buffers differ: " + String.join(", ", differ) + also);
        }
        if (!oneSide.isEmpty()) {
            return SectionVerdict.unverified(NAME, UnverifiedReason.ONE_SIDE_ONLY, "state buffers on one side only: "
                    + String.join(", ", oneSide));
        }
        return SectionVerdict.match(NAME, p.digests().size() + " state buffers");
    }
}
