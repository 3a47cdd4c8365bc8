"""An independent read-bandwidth reference for device-check.sh: a plain sum over a uint64 view and a
device-to-device copy, with torch (or cupy), on the same GPU. Prints one line per size."""
import sys

def run_torch():
    import torch
    print(f"\n# read bound by torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    for mib in (256, 1024, 4096):
        n = mib * (1 << 20) // 8
        x = torch.randint(-2**62, 2**62, (n,), dtype=torch.int64, device="cuda")
        y = torch.empty_like(x)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            x.sum(); y.copy_(x)
        torch.cuda.synchronize()
        reps = 20
        s.record()
        for _ in range(reps):
            x.sum()
        e.record(); e.synchronize()
        sum_gbs = mib * (1 << 20) / (s.elapsed_time(e) / reps / 1e3) / 1e9
        s.record()
        for _ in range(reps):
            y.copy_(x)
        e.record(); e.synchronize()
        copy_gbs = 2 * mib * (1 << 20) / (s.elapsed_time(e) / reps / 1e3) / 1e9
        print(f"{mib:6d} MiB: torch sum {sum_gbs:8.1f} GB/s, torch copy {copy_gbs:8.1f} GB/s (read+write)")
        del x, y

def run_cupy():
    import cupy as cp
    print(f"\n# read bound by cupy {cp.__version__}")
    for mib in (256, 1024, 4096):
        n = mib * (1 << 20) // 8
        x = cp.arange(n, dtype=cp.uint64)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(3):
            x.sum()
        reps = 20
        s.record()
        for _ in range(reps):
            x.sum()
        e.record(); e.synchronize()
        gbs = mib * (1 << 20) / (cp.cuda.get_elapsed_time(s, e) / reps / 1e3) / 1e9
        print(f"{mib:6d} MiB: cupy sum {gbs:8.1f} GB/s")
        del x

try:
    run_torch()
except Exception as ex:  # noqa: BLE001 - any failure means: try the other library
    print(f"(torch read bound unavailable: {ex})")
    try:
        run_cupy()
    except Exception as ex2:  # noqa: BLE001
        print(f"(cupy read bound unavailable: {ex2})")
        sys.exit(1)
