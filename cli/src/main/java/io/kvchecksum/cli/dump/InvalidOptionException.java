package io.kvchecksum.cli.dump;

/**
 * An option value that is wrong in itself, whatever the dump holds (a block size of 0, an unknown layout, a layer
 * name format without {@code {L}}): a usage error, exit 64. Options that do not fit a particular dump are
 * {@link InvalidInputException}s instead (exit 65).
 */
public final class InvalidOptionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message one line naming the option, the value as given, and what is expected */
    public InvalidOptionException(String message) {
        super(message);
    }
}
