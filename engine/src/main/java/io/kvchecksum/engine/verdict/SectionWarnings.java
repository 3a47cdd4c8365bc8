package io.kvchecksum.engine.verdict;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Warns once per (peer, section, reason) about payload sections that could not be verified, e.g. a peer whose
 * {@link UnverifiedReason#LAYOUT_DIFFERS layout signature differs}: that is the peer's configuration, true of every
 * request, so one warning says it and the rest go to debug level. A section's UNVERIFIED never changes the load's
 * status (the groups decide), so {@link FailurePolicy}'s once-per-reason warning does not cover it. Thread-safe.
 */
public final class SectionWarnings {
    private final Logger log;
    private final Set<String> warned = ConcurrentHashMap.newKeySet();

    /**
     * Warnings to {@code log}.
     *
     * @param log where the warnings and debug lines go, not null
     * @throws NullPointerException when {@code log} is null
     */
    public SectionWarnings(Logger log) {
        this.log = Objects.requireNonNull(log, "log");
    }

    /**
     * Logs each UNVERIFIED section of {@code verdict}: a warning the first time for this peer, section and reason,
     * debug level after that. A MISMATCH of a section is the load's mismatch and is logged with it.
     *
     * @param peer the other engine (its address or id); {@code null} counts as one unnamed peer
     * @param requestId the request the verdict is about, only quoted in the messages
     * @param verdict the load's verdict, not null; its sections other than UNVERIFIED are not logged here
     * @return how many warnings this call logged
     */
    public int log(String peer, String requestId, LoadVerdict verdict) {
        int n = 0;
        for (SectionVerdict s : verdict.sections()) {
            if (s.status() != Status.UNVERIFIED) {
                continue;
            }
            String key = (peer == null ? "" : peer) + "\u0000" + s.section() + "\u0000" + s.reason();
            if (warned.add(key)) {
                n++;
                log.log(Level.WARNING, "payload section " + s.section() + " from peer " + (peer == null ? "(unnamed)" : peer)
                        + " unverified (" + s.reason() + ", request " + requestId + "): " + s.detail()
                        + ". Further " + s.reason() + " of this section from this peer are logged at debug level.");
            } else {
                log.log(Level.DEBUG, () -> "payload section of request " + requestId + " unverified: " + s);
            }
        }
        return n;
    }
}
