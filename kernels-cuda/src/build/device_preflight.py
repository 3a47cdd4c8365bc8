"""The device check's preflight: can this machine's CUDA driver run the fatbin at all? Standard library only (ctypes),
so it answers in a second or two, before the runtime is unpacked or a JVM started.

Usage: python3 device_preflight.py MIN_DRIVER_VERSION
Env:   KVCHECKSUM_LIBCUDA  the driver library to load (default libcuda.so.1; CI points it at a stub to test the
                           failure lines)
Prints one line, tab-separated: "ok", the driver version (e.g. 13000) and a description of device 0; or "fail" and
the reason, a sentence naming what is wrong. Exit 0 when the check can run, 2 when it cannot.
"""
import ctypes
import os
import sys

# Machine code for sm_80 and sm_90 and compute_90 PTX (kernels-cuda/pom.xml): 8.x runs the sm_80 code, 9.0 and newer
# the sm_90 code or the PTX.
MIN_CC = (8, 0)
ATTR_SM_COUNT = 16
ATTR_CC_MAJOR = 75
ATTR_CC_MINOR = 76


def fail(reason):
    print("fail\t" + reason)
    sys.exit(2)


def main():
    need = int(sys.argv[1])
    name = os.environ.get("KVCHECKSUM_LIBCUDA", "libcuda.so.1")
    try:
        cu = ctypes.CDLL(name)
    except OSError as e:
        fail(f"no NVIDIA driver: {name} cannot be loaded ({e}); this machine has no usable GPU")

    def error(rc):
        s = ctypes.c_char_p()
        try:
            if cu.cuGetErrorName(rc, ctypes.byref(s)) == 0 and s.value:
                return f"{s.value.decode()} ({rc})"
        except AttributeError:
            pass
        return f"CUDA error {rc}"

    v = ctypes.c_int()
    # before cuInit, which an old driver may refuse with a less clear error
    rc = cu.cuDriverGetVersion(ctypes.byref(v))
    if rc != 0:
        fail(f"cuDriverGetVersion failed: {error(rc)}")
    have = v.value
    ver = f"{have // 1000}.{have % 1000 // 10}"
    if have < need:
        fail(f"driver too old: it supports CUDA {ver} (cuDriverGetVersion {have}); the kernels are built with CUDA 13 "
             f"and need {need} or newer (a 580-series driver)")
    rc = cu.cuInit(0)
    if rc != 0:
        fail(f"no GPU: cuInit(0) failed with {error(rc)} (driver CUDA {ver})")
    n = ctypes.c_int()
    rc = cu.cuDeviceGetCount(ctypes.byref(n))
    if rc != 0 or n.value == 0:
        fail(f"no GPU: the driver (CUDA {ver}) sees no CUDA device"
             + (f" (cuDeviceGetCount: {error(rc)})" if rc != 0 else ""))
    dev = ctypes.c_int()
    rc = cu.cuDeviceGet(ctypes.byref(dev), 0)
    if rc != 0:
        fail(f"cuDeviceGet(0) failed: {error(rc)}")

    def attr(a):
        x = ctypes.c_int()
        rc = cu.cuDeviceGetAttribute(ctypes.byref(x), a, dev)
        if rc != 0:
            fail(f"cuDeviceGetAttribute({a}) failed: {error(rc)}")
        return x.value

    buf = ctypes.create_string_buffer(256)
    rc = cu.cuDeviceGetName(buf, 256, dev)
    gpu = buf.value.decode(errors="replace") if rc == 0 else "(unnamed)"
    cc = (attr(ATTR_CC_MAJOR), attr(ATTR_CC_MINOR))
    if cc < MIN_CC:
        fail(f"GPU {gpu} has compute capability {cc[0]}.{cc[1]}; the fatbin holds sm_80, sm_90 and compute_90 code "
             f"and needs {MIN_CC[0]}.{MIN_CC[1]} or newer")
    mem = ctypes.c_size_t()
    total = ""
    if cu.cuDeviceTotalMem_v2(ctypes.byref(mem), dev) == 0:
        total = f", {mem.value / 2**30:.0f} GiB"
    print(f"ok\t{have}\t{n.value} device(s); device 0: {gpu}, compute capability {cc[0]}.{cc[1]}, "
          f"{attr(ATTR_SM_COUNT)} SMs{total}; driver CUDA {ver}")


if __name__ == "__main__":
    main()
