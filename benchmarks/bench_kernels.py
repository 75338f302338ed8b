"""CPU kernels against the machine's ceiling: streaming bandwidth, launch overhead, a 2-D stencil.

Reports, in one run (cases interleaved, medians):
- saxpy and vec3 integrate as a fraction of a plain C/OpenMP loop (``kernels_ref.c``, compiled
  here with kernelcore's own g++ flags: static schedule, restrict pointers, ``omp simd``);
- launch overhead: median of ``--launches`` launches of an empty kernel and of a 4-argument one;
- a 2-D 5-point stencil (``i, j = kc.tid()``) against the C loop nest;
- ratios against warp-lang (CPU) and Taichi (CPU, in a child process: ``ti.init`` turns on
  flush-to-zero for the whole process) where they are installed.

Run: python benchmarks/bench_kernels.py [--n 16777216] [--grid 2048] [--repeats 15]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import kernelcore as kc  # noqa: E402
from common import environment, interleaved, ratio, write_json  # noqa: E402
from kernelcore import toolchain  # noqa: E402
from kernelcore.device import num_threads  # noqa: E402
from kernelcore.threads import prefer_passive_waiting  # noqa: E402


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


@kc.kernel(enable_backward=False)
def stencil(u: kc.array(dtype=float, ndim=2), out: kc.array(dtype=float, ndim=2)):
    i, j = kc.tid()
    i += 1
    j += 1
    out[i, j] = 0.25 * (u[i, j - 1] + u[i, j + 1] + u[i - 1, j] + u[i + 1, j]) - u[i, j]


@kc.kernel(enable_backward=False)
def empty():
    pass


@kc.kernel(enable_backward=False)
def four_args(a: kc.array(dtype=float), b: kc.array(dtype=float), s: float, k: int):
    pass


def build_reference():
    """The C reference library, compiled with kernelcore's flags (no -fno-tree-loop-vectorize:
    the reference loops are vectorised as a hand-written loop would be)."""
    out = os.path.join(tempfile.mkdtemp(prefix="kc_ref_"), "kernels_ref.so")
    cmd = ["gcc", *[f for f in toolchain.COMMON_FLAGS if f not in ("-std=c++17", "-fvisibility=hidden")], "-std=c11",
           os.path.join(HERE, "kernels_ref.c"), "-o", out]
    subprocess.run(cmd, check=True)
    prefer_passive_waiting()
    lib = ctypes.CDLL(out)
    fp, i64, i32, f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float
    lib.ref_saxpy.argtypes = [i64, fp, fp, f32, i32]
    lib.ref_integrate.argtypes = [i64, fp, fp, f32, f32, f32, f32, i32]
    lib.ref_stencil.argtypes = [i32, i32, fp, fp, i32]
    return lib


def launch_overhead(fn, count):
    """Median seconds of one call of ``fn`` over ``count`` calls (timed one by one)."""
    times = []
    clock = time.perf_counter
    for _ in range(count):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def warp_cases(n, grid, xn, yn, pn, vn, un):
    global wp  # module level: warp evaluates the (string) annotations in the module's globals
    try:
        import warp as wp
    except ImportError:
        return {}, None
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def w_saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def w_integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), g: wp.vec3, dt: float):
        i = wp.tid()
        vi = v[i] + g * dt
        v[i] = vi
        x[i] = x[i] + vi * dt

    @wp.kernel
    def w_stencil(u: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        i += 1
        j += 1
        out[i, j] = 0.25 * (u[i, j - 1] + u[i, j + 1] + u[i - 1, j] + u[i + 1, j]) - u[i, j]

    @wp.kernel
    def w_empty():
        pass

    @wp.kernel
    def w_four(a: wp.array(dtype=float), b: wp.array(dtype=float), s: float, k: int):
        pass

    d = "cpu"
    x, y = wp.array(xn, dtype=float, device=d), wp.array(yn, dtype=float, device=d)
    p, v = wp.array(pn, dtype=wp.vec3, device=d), wp.array(vn, dtype=wp.vec3, device=d)
    u, o = wp.array(un, dtype=float, device=d), wp.zeros(un.shape, dtype=float, device=d)
    g = wp.vec3(0.0, -9.8, 0.0)
    cases = {
        "warp_saxpy": lambda: wp.launch(w_saxpy, dim=n, inputs=[x, y, 2.0], device=d),
        "warp_integrate": lambda: wp.launch(w_integrate, dim=n, inputs=[p, v, g, 0.01], device=d),
        "warp_stencil": lambda: wp.launch(w_stencil, dim=(grid - 2, grid - 2), inputs=[u, o], device=d),
    }
    launches = {
        "warp_empty": lambda: wp.launch(w_empty, dim=1, inputs=[], device=d),
        "warp_four_args": lambda: wp.launch(w_four, dim=1, inputs=[x, y, 1.0, 3], device=d),
    }
    return cases, launches


wp = None

TAICHI_SCRIPT = r"""
import json, sys, time, statistics
import numpy as np
import taichi as ti
n, grid, repeats = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ti.init(arch=ti.cpu, cpu_max_num_threads=int(sys.argv[4]), log_level=ti.ERROR)
x = ti.field(ti.f32, n); y = ti.field(ti.f32, n)
p = ti.Vector.field(3, ti.f32, n); v = ti.Vector.field(3, ti.f32, n)
u = ti.field(ti.f32, (grid, grid)); o = ti.field(ti.f32, (grid, grid))
x.from_numpy(np.random.default_rng(0).random(n, dtype=np.float32)); y.from_numpy(np.random.default_rng(1).random(n, dtype=np.float32))
@ti.kernel
def saxpy(a: ti.f32):
    for i in x:
        y[i] = a * x[i] + y[i]
@ti.kernel
def integrate(dt: ti.f32):
    for i in p:
        vi = v[i] + ti.Vector([0.0, -9.8, 0.0]) * dt
        v[i] = vi
        p[i] = p[i] + vi * dt
@ti.kernel
def stencil():
    for i, j in ti.ndrange((1, grid - 1), (1, grid - 1)):
        o[i, j] = 0.25 * (u[i, j - 1] + u[i, j + 1] + u[i - 1, j] + u[i + 1, j]) - u[i, j]
cases = {"saxpy": lambda: saxpy(2.0), "integrate": lambda: integrate(0.01), "stencil": stencil}
out = {}
for name, fn in cases.items():
    fn(); ti.sync()
    s = []
    for _ in range(repeats):
        t0 = time.perf_counter(); fn(); ti.sync(); s.append(time.perf_counter() - t0)
    out[name] = statistics.median(s)
print("TAICHI_JSON " + json.dumps(out))
"""


def taichi_times(n, grid, repeats, threads):
    """Median seconds per case from Taichi (CPU) in a child process; None when not installed."""
    script = os.path.join(tempfile.mkdtemp(prefix="kc_taichi_"), "taichi_kernels.py")  # Taichi reads kernel source
    with open(script, "w") as f:
        f.write(TAICHI_SCRIPT)
    try:
        proc = subprocess.run([sys.executable, script, str(n), str(grid), str(repeats), str(threads)],
                              capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in proc.stdout.splitlines():
        if line.startswith("TAICHI_JSON "):
            return json.loads(line[len("TAICHI_JSON "):])
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 24, help="elements (floats for saxpy, vec3 for integrate)")
    ap.add_argument("--grid", type=int, default=2048, help="stencil grid side")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--launches", type=int, default=10000)
    ap.add_argument("--no-warp", action="store_true")
    ap.add_argument("--no-taichi", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    n, grid, nt = args.n, args.grid, num_threads()
    rng = np.random.default_rng(0)
    xn, yn = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    pn, vn = rng.random((n, 3), dtype=np.float32), np.zeros((n, 3), np.float32)
    un = rng.random((grid, grid), dtype=np.float32)
    x, y = kc.array(xn), kc.array(yn)
    p, v = kc.array(pn, dtype=kc.vec3), kc.array(vn, dtype=kc.vec3)
    u, o = kc.array(un), kc.zeros((grid, grid), dtype=float)
    g = kc.vec3(0.0, -9.8, 0.0)
    kc.launch(empty, dim=1)  # builds the module before the reference loads libgomp (wait policy)
    lib = build_reference()
    rx, ry, rp, rv = xn.copy(), yn.copy(), pn.copy(), vn.copy()
    ro = np.zeros_like(un)
    ptr = lambda a: a.ctypes.data  # noqa: E731
    cases = {
        "saxpy": lambda: kc.launch(saxpy, dim=n, inputs=[x, y, 2.0]),
        "c_saxpy": lambda: lib.ref_saxpy(n, ptr(rx), ptr(ry), 2.0, nt),
        "integrate": lambda: kc.launch(integrate, dim=n, inputs=[p, v, g, 0.01]),
        "c_integrate": lambda: lib.ref_integrate(n, ptr(rp), ptr(rv), 0.0, -9.8, 0.0, 0.01, nt),
        "stencil": lambda: kc.launch(stencil, dim=(grid - 2, grid - 2), inputs=[u, o]),
        "c_stencil": lambda: lib.ref_stencil(grid, grid, ptr(un), ptr(ro), nt),
    }
    launches = {
        "empty": lambda: kc.launch(empty, dim=1),
        "four_args": lambda: kc.launch(four_args, dim=1, inputs=[x, y, 1.0, 3]),
    }
    if not args.no_warp:
        wc, wl = warp_cases(n, grid, xn, yn, pn, vn, un)
        cases.update(wc)
        launches.update(wl or {})
    t = interleaved(cases, repeats=args.repeats, warmup=2)
    med = {k: r["median"] for k, r in t.items()}
    lo = {k: [] for k in launches}
    for fn in launches.values():
        fn()
    for _ in range(3):  # interleaved thirds of the launch count
        for k, fn in launches.items():
            lo[k].append(launch_overhead(fn, max(1, args.launches // 3)))
    lo = {k: statistics.median(s) for k, s in lo.items()}
    bytes_moved = {"saxpy": 3 * 4 * n, "integrate": 4 * 12 * n, "stencil": 2 * 4 * (grid - 2) ** 2}
    results = {}
    tai = None if args.no_taichi else taichi_times(n, grid, args.repeats, nt)
    for name in ("saxpy", "integrate", "stencil"):
        r = {"median_s": med[name], "GBps": round(bytes_moved[name] / med[name] / 1e9, 2),
             "c_median_s": med["c_" + name], "fraction_of_c": ratio(med["c_" + name], med[name])}
        if "warp_" + name in med:
            r["speedup_vs_warp"] = ratio(med["warp_" + name], med[name])
        if tai and name in tai:
            r["speedup_vs_taichi"] = ratio(tai[name], med[name])
        results[name] = r
    results["launch_us"] = {k: round(s * 1e6, 2) for k, s in lo.items()}
    return write_json({"benchmark": "kernels", "n": n, "grid": grid, "threads": nt, "load_average": os.getloadavg()[0],
                       "results": results, "environment": environment()}, args.out)


if __name__ == "__main__":
    main()
