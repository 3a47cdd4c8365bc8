package io.kvchecksum.cli.dump;

/**
 * Input the command cannot use: a malformed dump or payload, or options that do not fit the dump. The message is
 * one line naming the file and what is wrong; the CLI prints it and exits with 65, without a stack trace.
 */
public class InvalidInputException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public InvalidInputException(String message) {
        super(message);
    }

    public InvalidInputException(String message, Throwable cause) {
        super(message, cause);
    }
}
