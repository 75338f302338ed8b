"""Memory bandwidth of simple kernels: saxpy and vec3 integrate.

Effective bandwidth = bytes each launch must move / time.  On a GPU it is reported as a
fraction of the card's theoretical peak (memory clock x bus width, from CuPy's device
attributes); on the CPU as a ratio against numpy doing the same arithmetic in the same
run (numpy's saxpy makes two passes, so the kernel can beat it).

Run: python benchmarks/bench_bandwidth.py --device cuda   (or cpu; default: cuda when available)
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelcore as kc  # noqa: E402
from common import environment, interleaved, ratio, write_json  # noqa: E402


@kc.kernel(enable_backward=False)
def saxpy(x: kc.array(dtype=float), y: kc.array(dtype=float), a: float):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


@kc.kernel(enable_backward=False)
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), gravity: kc.vec3, dt: float):
    i = kc.tid()
    vi = v[i] + gravity * dt
    v[i] = vi
    x[i] = x[i] + vi * dt


def peak_bandwidth(device):
    """Theoretical peak of a CUDA device in bytes/s (None on the CPU)."""
    if not device.is_cuda:
        return None
    import cupy  # only here: this benchmark's GPU path

    attrs = cupy.cuda.runtime.getDeviceProperties(device.ordinal)
    clock_khz = attrs.get("memoryClockRate", 0)
    bus_bits = attrs.get("memoryBusWidth", 0)
    return 2.0 * clock_khz * 1e3 * bus_bits / 8.0 if clock_khz and bus_bits else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if kc.is_cuda_available() else "cpu")
    ap.add_argument("--n", type=int, default=1 << 24, help="elements (floats for saxpy, vec3 for integrate)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dev = kc.get_device(args.device)
    n = args.n
    sync = kc.synchronize if dev.is_cuda else None
    rng = np.random.default_rng(0)
    x = kc.array(rng.random(n, dtype=np.float32), device=dev)
    y = kc.array(rng.random(n, dtype=np.float32), device=dev)
    p = kc.array(rng.random((n, 3), dtype=np.float32), dtype=kc.vec3, device=dev)
    v = kc.zeros(n, dtype=kc.vec3, device=dev)
    g = kc.vec3(0.0, -9.8, 0.0)
    cases = {
        "saxpy": lambda: kc.launch(saxpy, dim=n, inputs=[x, y, 2.0]),
        "integrate": lambda: kc.launch(integrate, dim=n, inputs=[p, v, g, 0.01]),
    }
    if not dev.is_cuda:
        xn, yn, pn, vn = x.numpy(), y.numpy(), p.numpy(), v.numpy()
        gn = np.array([0.0, -9.8, 0.0], np.float32)

        def np_saxpy():
            yn[:] = 2.0 * xn + yn

        def np_integrate():
            vn[:] = vn + gn * np.float32(0.01)
            pn[:] = pn + vn * np.float32(0.01)

        cases.update({"numpy_saxpy": np_saxpy, "numpy_integrate": np_integrate})
    t = interleaved(cases, repeats=args.repeats, warmup=2, sync=sync)
    bytes_moved = {"saxpy": 3 * 4 * n, "integrate": 4 * 12 * n}  # reads + writes of each element
    peak = peak_bandwidth(dev)
    results = {}
    for name in ("saxpy", "integrate"):
        bw = bytes_moved[name] / t[name]["median"]
        r = {"median_s": t[name]["median"], "bandwidth_GBps": float(f"{bw / 1e9:.3g}")}  # 3 significant digits: tiny sizes stay > 0
        if peak:
            r["fraction_of_peak"] = round(bw / peak, 3)
        if f"numpy_{name}" in t:
            r["numpy_median_s"] = t[f"numpy_{name}"]["median"]
            r["speedup_vs_numpy"] = ratio(t[f"numpy_{name}"]["median"], t[name]["median"])
        results[name] = r
    return write_json({"benchmark": "bandwidth", "device": str(dev), "n": n,
                       "peak_GBps": round(peak / 1e9, 1) if peak else None,
                       "results": results, "environment": environment()}, args.out)


if __name__ == "__main__":
    main()
