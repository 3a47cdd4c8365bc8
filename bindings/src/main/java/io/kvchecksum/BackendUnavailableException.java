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

    /**
     * A backend that cannot run here because of an underlying failure (a library that did not load, a driver call that
     * failed).
     *
     * @param message why, in words a user can act on
     * @param cause the failure that made it unavailable
     */
    public BackendUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
