package io.kvchecksum;

/** A backend asked for by name that cannot run here; the message says why (no library, no device, not on the class path). */
public class BackendUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A backend that cannot run here.
     *
     * @param message why, in words a user can act on (the missing library, device or artifact)
     */
    public BackendUnavailableException(String message) {
        super(message);
    }
}
