package io.kvchecksum;

/** A backend asked for by name that cannot run here; the message says why (no library, no device, not on the class path). */
public class BackendUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BackendUnavailableException(String message) {
        super(message);
    }

    public BackendUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
