package io.kvchecksum;

/**
 * A layout, block table or argument that cannot be checksummed as given. Thrown before any byte is read, with
 * a message naming the offending field and value.
 */
public class InvalidLayoutException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /**
     * A layout or argument that cannot be checksummed.
     *
     * @param message what is wrong: the offending field and its value
     */
    public InvalidLayoutException(String message) {
        super(message);
    }
}
