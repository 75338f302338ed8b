"""Fluid benchmarks: the particle fluid (sim.SolverPBF) against Taichi's CPU backend.

PBF: a 64,000-particle dam break (see benchmarks/fluids_pbf.py for the scene, the Taichi
version written from the same formulas, and why Taichi runs in a subprocess); reported as
seconds per step and steps per second, ratio ``taichi_over_kernelcore`` (> 1: kernelcore
is faster).

Run: python benchmarks/bench_fluids.py --out benchmarks/results/fluids.json
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common import environment, load_average, write_json  # noqa: E402
from fluids_pbf import pbf_case  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pbf-side", type=int, default=40, help="PBF block side (40^3 = 64,000 particles)")
    parser.add_argument("--steps", type=int, default=5, help="steps per timing sample")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    res = {"benchmark": "fluids", "environment": environment(), "settings": vars(args), "cases": {},
           "load_average_1min": [load_average()]}
    res["cases"]["pbf"] = pbf_case(args.pbf_side, args.steps, args.repeats, taichi=not args.no_taichi)
    res["load_average_1min"].append(load_average())
    write_json(res, args.out)
    return res


if __name__ == "__main__":
    main()
