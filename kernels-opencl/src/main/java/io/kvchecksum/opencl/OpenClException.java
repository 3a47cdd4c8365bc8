package io.kvchecksum.opencl;

import org.jocl.CL;

/** An OpenCL call that failed; the message names the call and the OpenCL error. */
public class OpenClException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int errorCode;

    /** A failed call: {@code call} names it, {@code errorCode} is what OpenCL returned. */
    public OpenClException(String call, int errorCode) {
        super(call + " failed: " + CL.stringFor_errorCode(errorCode) + " (" + errorCode + ")");
        this.errorCode = errorCode;
    }

    /** A failure that is not one call's error code. */
    public OpenClException(String message) {
        this(message, 0, true);
    }

    /** A failure with its own message and the OpenCL error code behind it. */
    protected OpenClException(String message, int errorCode, boolean ignored) {
        super(message);
        this.errorCode = errorCode;
    }

    /** {@return the OpenCL error code, or 0 when the failure was not one call's return value} */
    public int errorCode() {
        return errorCode;
    }
}
