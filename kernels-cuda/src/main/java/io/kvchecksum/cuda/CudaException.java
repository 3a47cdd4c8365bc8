package io.kvchecksum.cuda;

/** A CUDA driver call that failed: the message names the call and the CUDA error (e.g. {@code CUDA_ERROR_ILLEGAL_ADDRESS}). */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String call;
    private final int code;
    private final String errorName;

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
