"""A/B of the 3-D SolverMPM step: the fast forward P2G (sim/mpm_fast_3d.py) against the old kernels
(``solver._fast_3d = False``) and Taichi's CPU backend, bench_mpm.py's 3-D case, interleaved in one process.

Both kernelcore solvers run all threads and one thread; ``cpu_ms`` is process CPU time (steadier than
wall time on a shared machine).  Ratios > 1: kernelcore faster.

``--baseline FILE``: also run the fast path of another sim/mpm_fast_3d.py (e.g. main's), loaded
under another module name (``kc_base``, ``kc_base_1thread``).

Run: python benchmarks/bench_mpm_fast3d.py --repeats 9 [--baseline /path/to/main/sim/mpm_fast_3d.py]
     [--out benchmarks/results/mpm_fast3d.json]
"""
import argparse
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import bench_mpm as M  # noqa: E402
from common import environment, interleaved, load_average, ratio, write_json  # noqa: E402


def baseline_module(path):
    """Another version of sim/mpm_fast_3d.py (its relative imports resolve in this checkout's sim)."""
    spec = importlib.util.spec_from_file_location("sim.mpm_fast_3d_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def with_fast_path(mod, fn, threads):
    """fn run with ``mod``'s fast P2G and G2P in place of this checkout's (restored after)."""
    import sim.solvers.mpm as S

    inner = M.with_threads(fn, threads)

    def run():
        saved = S.particle_to_grid_fast, S.grid_to_particle_fast
        S.particle_to_grid_fast, S.grid_to_particle_fast = mod.particle_to_grid_fast, mod.grid_to_particle_fast
        try:
            inner()
        finally:
            S.particle_to_grid_fast, S.grid_to_particle_fast = saved
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles3d-side", type=int, default=47, help="3-D block side (47^3 = 103,823 particles)")
    parser.add_argument("--grid3d", type=int, default=64, help="3-D cells per axis")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--baseline", default=None, help="another sim/mpm_fast_3d.py to compare with")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    new = M.KcMpm(3, args.particles3d_side, args.grid3d, steps=1, loss=False)
    old = M.KcMpm(3, args.particles3d_side, args.grid3d, steps=1, loss=False)
    old.solver._fast_3d = False
    cases = {"kc_fast": M.with_threads(new.forward, None), "kc_old": M.with_threads(old.forward, None),
             "kc_fast_1thread": M.with_threads(new.forward, 1), "kc_old_1thread": M.with_threads(old.forward, 1)}
    if args.baseline:
        base = M.KcMpm(3, args.particles3d_side, args.grid3d, steps=1, loss=False)
        cases["kc_base"] = with_fast_path(baseline_module(args.baseline), base.forward, None)
        cases["kc_base_1thread"] = with_fast_path(baseline_module(args.baseline), base.forward, 1)
    ti = None if args.no_taichi else M.taichi()
    if ti:
        cases["taichi"] = M.TiStep3d(args.particles3d_side, args.grid3d).forward
    loads = [load_average()]
    t = interleaved(cases, repeats=args.repeats, warmup=1)
    loads.append(load_average())
    res = {"benchmark": "mpm_fast3d", "environment": environment(), "settings": vars(args),
           "load_average_1min": loads,
           "step_ms": {n: {"wall": round(1e3 * v["median"], 2), "cpu": round(1e3 * v["cpu_median"], 2)}
                       for n, v in t.items()},
           "fast_over_old": ratio(t["kc_old"]["median"], t["kc_fast"]["median"]),
           "fast_over_old_1thread_cpu": ratio(t["kc_old_1thread"]["cpu_median"], t["kc_fast_1thread"]["cpu_median"]),
           "particle_q_max_abs_diff_fast_vs_old": float(np.abs(new.states[1].particle_q.numpy()
                                                               - old.states[1].particle_q.numpy()).max())}
    if args.baseline:
        res["fast_over_base"] = ratio(t["kc_base"]["median"], t["kc_fast"]["median"])
        res["fast_over_base_cpu"] = ratio(t["kc_base"]["cpu_median"], t["kc_fast"]["cpu_median"])
        res["fast_over_base_1thread_cpu"] = ratio(t["kc_base_1thread"]["cpu_median"],
                                                  t["kc_fast_1thread"]["cpu_median"])
    if ti:
        for n in ("kc_fast", "kc_old", "kc_fast_1thread", "kc_old_1thread"):
            res[f"taichi_over_{n}"] = ratio(t["taichi"]["median"], t[n]["median"])
    write_json(res, args.out)
    return res


if __name__ == "__main__":
    main()
