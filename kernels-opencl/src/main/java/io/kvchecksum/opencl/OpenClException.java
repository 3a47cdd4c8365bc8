package io.kvchecksum.opencl;

import org.jocl.CL;

/** An OpenCL call that failed; the message names the call and the OpenCL error. */
public class OpenClException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The OpenCL error code, or 0 when the failure was not one call's return value. */
    private final int errorCode;

    /**
     * A failed call: {@code call} names it, {@code errorCode} is what OpenCL returned.
     *
     * @param call the OpenCL function that failed, with what it was called on
     * @param errorCode the (negative) error code it returned
     */
    public OpenClException(String call, int errorCode) {
        super(call + " failed: " + CL.stringFor_errorCode(errorCode) + " (" + errorCode + ")");
        this.errorCode = errorCode;
    }

    /**
     * A failure that is not one call's error code.
     *
     * @param message what failed, in words; {@link #errorCode()} is 0
     */
    public OpenClException(String message) {
        this(message, 0, true);
    }

    /**
     * A failure with its own message and the OpenCL error code behind it.
     *
     * @param message the whole message, used as given
     * @param errorCode the OpenCL error code behind the failure
     * @param ignored unused; it only tells this constructor apart from {@link #OpenClException(String, int)}
     */
    protected OpenClException(String message, int errorCode, boolean ignored) {
        super(message);
        this.errorCode = errorCode;
    }

    /** {@return the OpenCL error code, or 0 when the failure was not one call's return value} */
    public int errorCode() {
        return errorCode;
    }
}
