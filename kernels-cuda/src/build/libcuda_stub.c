/* A stand-in for libcuda.so.1 with which ci-device-dry-run.sh checks the device check's preflight lines on a machine
 * without a GPU: KVC_STUB_DRIVER is the version cuDriverGetVersion reports (e.g. 12080), KVC_STUB_DEVICES the device
 * count (0: no GPU). Nothing else is implemented; the preflight stops before it would need more. */
#include <stdlib.h>

static int env(const char *name, int dflt) {
    const char *v = getenv(name);
    return v ? atoi(v) : dflt;
}

int cuDriverGetVersion(int *v) { *v = env("KVC_STUB_DRIVER", 13000); return 0; }
int cuInit(unsigned flags) { (void) flags; return env("KVC_STUB_DEVICES", 0) == 0 ? 100 : 0; } /* CUDA_ERROR_NO_DEVICE */
int cuGetErrorName(int rc, const char **s) { *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }
int cuDeviceGetCount(int *n) { *n = env("KVC_STUB_DEVICES", 0); return 0; }
