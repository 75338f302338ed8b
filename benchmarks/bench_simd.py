"""Per-kernel effect of kc.kernel(simd=True) on the CPU: forward and adjoint, simd=True vs simd=False.

Each kernel is built twice from the same Python function (simd=False: the generic entry points;
simd=True: the vectorised ones, emit_cpp.emit_streaming_entry / emit_lane_entry) and launched
on the same arrays, interleaved, medians of ``--repeats`` samples of ``--calls`` launches each.
The adjoint runs as ``kc.launch(..., adjoint=True)`` on the arrays' ``.grad``. Before timing,
the outputs and gradients of both builds are compared (identical bits, or the largest
relative difference where atomics on several threads add in another order).

Kernels: bench_autodiff's mass-spring force (atomic scatter into f) and integrator, its 2-D
MLS-MPM P2G (atomic scatter into the grid) and G2P (gather), and sim's MPM G2P 2-D and 3-D.
(sim/springs.py's spring kernel branches around its loads and atomics, so it cannot run
several threads per SIMD lane; bench_autodiff's is the same force without the branch.)

Run: python benchmarks/bench_simd.py [--threads 1] [--repeats 15] [--only p2g,g2p] [--out results/simd.json]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelcore as kc  # noqa: E402
import bench_autodiff as B  # noqa: E402
from common import environment, interleaved, load_average, write_json  # noqa: E402


def _arr(rng, shape, dtype, scale=1.0, grad=True):
    n = int(np.prod(shape[:1]))
    comps = {kc.vec2: (2,), kc.vec3: (3,), kc.mat22: (2, 2), kc.mat33: (3, 3), float: ()}[dtype]
    a = (rng.standard_normal(tuple(shape) + comps) * scale).astype(np.float32)
    return kc.array(a, dtype=dtype, requires_grad=grad) if n else None


def case_springs(rng):
    pos, _, springs, rest = B.mass_spring_setup()
    n = len(pos)
    x = kc.array(pos, dtype=kc.vec2, requires_grad=True)
    v = _arr(rng, (n,), kc.vec2, 0.1)
    f = kc.zeros(n, dtype=kc.vec2, requires_grad=True)
    return B.kc_ms_springs.func, len(springs), [x, v, kc.array(springs, dtype=kc.int32),
                                               kc.array(rest, dtype=float, requires_grad=True), B.MS_KE, B.MS_KD, f]


def case_integrate(rng):
    n = 1 << 16
    inv_mass = kc.array(rng.uniform(0.5, 2.0, n).astype(np.float32), requires_grad=True)
    return B.kc_ms_integrate.func, n, [_arr(rng, (n,), kc.vec2), _arr(rng, (n,), kc.vec2), _arr(rng, (n,), kc.vec2),
                                       inv_mass, kc.vec2(0.0, -9.8), 1e-3, _arr(rng, (n,), kc.vec2), _arr(rng, (n,), kc.vec2)]


def case_p2g(rng):
    x, v, c = B.mpm_setup()
    P, G = len(x), B.MPM_GRID
    F = np.tile(np.eye(2, dtype=np.float32), (P, 1, 1)) + 0.01 * rng.standard_normal((P, 2, 2)).astype(np.float32)
    return B.kc_p2g.func, P, [kc.array(x, dtype=kc.vec2, requires_grad=True), kc.array(v, dtype=kc.vec2, requires_grad=True),
                              _arr(rng, (P,), kc.mat22, 0.1), kc.array(F, dtype=kc.mat22, requires_grad=True),
                              B.MPM_DT, c["inv_dx"], c["p_mass"], c["p_vol"], c["mu"], c["la"],
                              _arr(rng, (P,), kc.mat22), kc.zeros((G, G), dtype=kc.vec2, requires_grad=True),
                              kc.zeros((G, G), dtype=float, requires_grad=True)]


def case_g2p(rng):
    x, v, c = B.mpm_setup()
    P, G = len(x), B.MPM_GRID
    return B.kc_g2p.func, P, [kc.array(x, dtype=kc.vec2, requires_grad=True), _arr(rng, (G, G), kc.vec2), B.MPM_DT,
                              c["inv_dx"], _arr(rng, (P,), kc.vec2), _arr(rng, (P,), kc.vec2), _arr(rng, (P,), kc.mat22)]


def case_sim_g2p_2d(rng, P=65536, G=128):
    from sim import mpm_transfer as MT
    q = kc.array(np.c_[rng.uniform(0.05, 0.95, (P, 2)), np.zeros(P)].astype(np.float32), dtype=kc.vec3, requires_grad=True)
    return MT.g2p_2d_kernel.func, P, [q, _arr(rng, (G, G), kc.vec2), kc.vec3(0.0, 0.0, 0.0), 1.0 / G, G, G, 1e-3,
                                      _arr(rng, (P,), kc.vec3), _arr(rng, (P,), kc.vec3), _arr(rng, (P,), kc.mat33)]


def case_sim_g2p_3d(rng, P=32768, G=32):
    from sim import mpm_transfer as MT
    q = kc.array(rng.uniform(0.05, 0.95, (P, 3)).astype(np.float32), dtype=kc.vec3, requires_grad=True)
    grid_v = _arr(rng, (G, G, G), kc.vec3)
    return MT.g2p_3d_kernel.func, P, [q, grid_v, grid_v.grad, kc.vec3(0.0, 0.0, 0.0), 1.0 / G, G, G, G, 1e-3,
                                      _arr(rng, (P,), kc.vec3), _arr(rng, (P,), kc.vec3), _arr(rng, (P,), kc.mat33)]


CASES = {"ms_springs": case_springs, "ms_integrate": case_integrate, "p2g": case_p2g, "g2p": case_g2p,
         "sim_g2p_2d": case_sim_g2p_2d, "sim_g2p_3d": case_sim_g2p_3d}


def _snapshot(inputs):
    out = []
    for a in inputs:
        if isinstance(a, kc.array):
            out.append(a.numpy().copy())
            out.append(a.grad.numpy().copy() if a.grad is not None else None)
    return out


def _difference(a, b):
    """0.0 when every array is bit-identical, else the largest relative difference."""
    worst = 0.0
    for x, y in zip(a, b):
        if x is None or np.array_equal(x, y):
            continue
        worst = max(worst, float(np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-30)))
    return worst


def run_case(name, make, repeats, calls):
    builds, inputs, results = {}, {}, {}
    for mode in ("scalar", "simd"):
        rng = np.random.default_rng(11)   # the same values for both builds
        func, dim, inputs[mode] = make(rng)
        for a in inputs[mode]:   # gradients to start from (those of outputs seed the adjoint)
            if isinstance(a, kc.array) and a.grad is not None:
                a.grad.assign(kc.array(rng.standard_normal(a.grad.numpy().shape).astype(np.float32), dtype=a.dtype))
        builds[mode] = k = kc.kernel(func, simd=(mode == "simd"), module=f"bench_simd_{name}_{mode}")
        kc.launch(k, dim=dim, inputs=inputs[mode])
        kc.launch(k, dim=dim, inputs=inputs[mode], adjoint=True)   # the gradients the arrays hold are its seeds
        results[mode] = _snapshot(inputs[mode])
    diff = _difference(results["simd"], results["scalar"])
    cases = {}
    for mode, k in builds.items():
        cases[f"{mode}_fwd"] = lambda k=k, a=inputs[mode]: kc.launch(k, dim=dim, inputs=a)
        cases[f"{mode}_bwd"] = lambda k=k, a=inputs[mode]: kc.launch(k, dim=dim, inputs=a, adjoint=True)
    t = interleaved(cases, repeats=repeats, warmup=1, calls=calls)
    row = {"dim": dim, "difference": diff}
    for d in ("fwd", "bwd"):
        row[f"scalar_{d}_us"] = t[f"scalar_{d}"]["median"] * 1e6
        row[f"simd_{d}_us"] = t[f"simd_{d}"]["median"] * 1e6
        row[f"speedup_{d}"] = t[f"scalar_{d}"]["median"] / t[f"simd_{d}"]["median"]
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1", help="KERNELCORE_NUM_THREADS for the launches")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    os.environ["KERNELCORE_NUM_THREADS"] = args.threads
    names = [n for n in args.only.split(",") if n] or list(CASES)
    rows = {}
    print(f"threads={args.threads} load={load_average()}")
    print(f"{'kernel':14s} {'dim':>7s} {'fwd off us':>10s} {'fwd on us':>10s} {'x':>5s} {'bwd off us':>10s} {'bwd on us':>10s} {'x':>5s}  results")
    for name in names:
        r = rows[name] = run_case(name, CASES[name], args.repeats, args.calls)
        same = "identical" if r["difference"] == 0.0 else f"rel diff {r['difference']:.1e}"
        print(f"{name:14s} {r['dim']:7d} {r['scalar_fwd_us']:10.1f} {r['simd_fwd_us']:10.1f} {r['speedup_fwd']:5.2f} "
              f"{r['scalar_bwd_us']:10.1f} {r['simd_bwd_us']:10.1f} {r['speedup_bwd']:5.2f}  {same}", flush=True)
    if args.out:
        write_json({"environment": environment(), "load_average": load_average(), "threads": args.threads,
                    "kernels": rows}, args.out)
    return rows


if __name__ == "__main__":
    main()
