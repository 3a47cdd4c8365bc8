package io.kvchecksum.opencl;

/**
 * One OpenCL device as discovery saw it.
 *
 * @param platformIndex the platform's index in {@code clGetPlatformIDs}
 * @param deviceIndex the device's index within its platform
 * @param platformName {@code CL_PLATFORM_NAME}
 * @param deviceName {@code CL_DEVICE_NAME}
 * @param type {@code GPU}, {@code CPU}, {@code ACCELERATOR} or {@code OTHER}
 * @param version {@code CL_DEVICE_VERSION}
 * @param problem why the backend cannot use this device (big-endian, embedded profile), or {@code null}
 */
public record OpenClDevice(int platformIndex, int deviceIndex, String platformName, String deviceName, String type,
                           String version, String problem) {

    /** {@return {@code "platformIndex:deviceIndex"}, the form {@value OpenClDevices#DEVICE_PROPERTY} accepts} */
    public String index() {
        return platformIndex + ":" + deviceIndex;
    }

    @Override
    public String toString() {
        return index() + " " + type + " '" + deviceName + "' on '" + platformName + "' (" + version + ")"
                + (problem == null ? "" : " [unusable: " + problem + "]");
    }
}
