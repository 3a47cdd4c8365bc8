package io.kvchecksum.cuda;

/** A CUDA driver call that failed: the message names the call and the CUDA error (e.g. {@code CUDA_ERROR_ILLEGAL_ADDRESS}). */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The driver function that failed, with what it was called on. */
    private final String call;
    /** The {@code CUresult} it returned. */
    private final int code;
    /** The {@code CUresult}'s name, e.g. {@code CUDA_ERROR_ILLEGAL_ADDRESS}. */
    private final String errorName;

    /**
     * A failed driver call; the message is {@code "<call> failed: <errorName> (<code>)"}.
     *
     * @param call the driver function that failed, e.g. {@code cuLaunchKernel(kvc_block_checksums_16b)}
     * @param code the {@code CUresult} it returned, not 0
     * @param errorName the result's name as {@code cuGetErrorName} gives it
     */
    public CudaException(String call, int code, String errorName) {
        super(call + " failed: " + errorName + " (" + code + ")");
        this.call = call;
        this.code = code;
        this.errorName = errorName;
    }

    /** {@return the driver function that failed, e.g. {@code cuLaunchKernel(kvc_block_checksums_16b)}} */
    public String call() {
        return call;
    }

    /** {@return the {@code CUresult}} */
    public int code() {
        return code;
    }

    /** {@return the CUDA error's name as {@code cuGetErrorName} gives it} */
    public String errorName() {
        return errorName;
    }
}
