package io.kvchecksum.opencl;

/** The kernel source did not build for the device; the message and {@link #buildLog()} carry the compiler's log. */
public class OpenClBuildException extends OpenClException {
    private static final long serialVersionUID = 1L;

    /** The device compiler's log, as OpenCL returned it. */
    private final String buildLog;

    /**
     * A failed build; the message names the device and the error and carries the log.
     *
     * @param device the device's description, for the message
     * @param errorCode what {@code clBuildProgram} returned (e.g. {@code CL_BUILD_PROGRAM_FAILURE})
     * @param buildLog the device compiler's log ({@code CL_PROGRAM_BUILD_LOG})
     */
    public OpenClBuildException(String device, int errorCode, String buildLog) {
        super("building the OpenCL kernels for " + device + " failed with "
                + org.jocl.CL.stringFor_errorCode(errorCode) + "; build log:\n" + buildLog, errorCode, true);
        this.buildLog = buildLog;
    }

    /** {@return the device compiler's log ({@code CL_PROGRAM_BUILD_LOG})} */
    public String buildLog() {
        return buildLog;
    }
}
