package io.kvchecksum.engine.wire;

import io.kvchecksum.engine.verdict.SectionVerdict;

import org.msgpack.value.Value;

import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The payload sections this library knows: how each is decoded and how the producer's and the consumer's are
 * compared. Sections travel beside the checksums ({@link PayloadCodec#encodeSections}; inline in version 3 from earlier
 * releases). A section not listed here is skipped when read (checked only to be well-formed msgpack) and left out when
 * the payload is written again.
 *
 * <p>Adding a section: an immutable {@link PayloadSection} value, a decoder and a comparison, and one entry in
 * {@link #KNOWN}. Decoders receive the section's value already checked to be well-formed msgpack of bounded size and
 * depth; they check types and ranges and throw {@link MalformedPayloadException} naming the field
 * ({@code sections.<name>.<field>}).
 */
public final class PayloadSections {

    /**
     * How one known section is read and compared.
     *
     * @param name the section's key in the sections map, as {@link PayloadSection#name()} gives it
     * @param decoder reads the section's value into a {@link PayloadSection} filed under {@code name}: the value is
     *     already checked to be well-formed msgpack of bounded size and depth, untrusted otherwise; a wrong type or
     *     range throws {@link MalformedPayloadException} naming the field ({@code sections.<name>.<field>})
     * @param comparison compares the producer's section with the consumer's by the section's own rule: either may be
     *     {@code null} (absent on that side), not both; returns the section's verdict, or {@code null} when there is
     *     nothing to report
     */
    public record Known(String name, Function<Value, PayloadSection> decoder,
            BiFunction<PayloadSection, PayloadSection, SectionVerdict> comparison) {
    }

    /** Every known section, by name: one line per section, {@code new Known(name, decoder, comparison)}. */
    static final Map<String, Known> KNOWN = Stream.of(
            new Known(SglangDigestSection.NAME, SglangDigestSection::decode, SglangDigestSection::compare),
            new Known(StateDigestsSection.NAME, StateDigestsSection::decode, StateDigestsSection::compare),
            new Known(PageProbeSection.NAME, PageProbeSection::decode, PageProbeSection::compare))
            .collect(Collectors.toUnmodifiableMap(Known::name, k -> k)); // a name registered twice fails here

    private PayloadSections() {
    }

    /**
     * {@return the known section called {@code name}, or {@code null}}
     *
     * @param name the section's key
     */
    public static Known known(String name) {
        return KNOWN.get(name);
    }
}
