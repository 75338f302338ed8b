"""benchmarks/bench_fluids.py (PBF part) runs at a tiny size and reports its fields."""
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def test_bench_fluids_pbf_reports_steps_per_second(tmp_path):
    import bench_fluids

    out = tmp_path / "fluids.json"
    bench_fluids.main(["--pbf-side", "6", "--steps", "1", "--repeats", "1", "--no-taichi", "--out", str(out)])
    r = json.loads(out.read_text())["cases"]["pbf"]
    assert r["particles"] == 216 and r["kernelcore_steps_per_s"] > 0 and r["kernelcore_finite"]
    assert len(r["kernelcore_samples"]) == 3 and "taichi_step_s" not in r
    assert 0 < r["kernelcore_cpu_step_s"] < 60
    assert 0 < r["kernelcore_fast_math_cpu_step_s"] < 60 and r["fast_math_speedup"] > 0   # SolverPBF(fast_math=True)


def test_taichi_pbf_matches_kernelcore_on_a_small_block():
    """The Taichi peer implements the same algorithm: after a few steps both agree closely."""
    import pytest

    pytest.importorskip("taichi")
    import fluids_pbf

    res = fluids_pbf.run_taichi(side=6, steps=3, repeats=1)
    kc_pbf = fluids_pbf.KcPBF(6)
    kc_pbf.steps(2 + 3)                       # the worker's warm-up plus one sample
    assert res["finite"] and len(res["cpu_samples"]) == 1 and res["cpu_samples"][0] > 0
    assert abs(res["mean_y"] - float(np.mean(kc_pbf.positions()[:, 1]))) < 1e-4


def test_same_problem_both_runs_agree_step_for_step():
    """The benchmark's two solvers solve the same problem: same neighbour counts, same positions."""
    import pytest

    pytest.importorskip("taichi")
    import fluids_pbf

    res = fluids_pbf.same_problem(8, (1, 3), lanes=True)
    for m in ("step_1", "step_3"):
        r = res[m]
        assert r["kernelcore_mean_y"] == pytest.approx(r["taichi_mean_y"], rel=1e-3)
        assert r["max_position_difference_m"] < 1e-5    # float32 rounding of a 1/64 m lattice
        assert r["kernelcore_neighbors_mean_max"] == r["taichi_neighbors_mean_max"]
        assert r["kernelcore_compression_max"] == pytest.approx(r["taichi_compression_max"], abs=1e-4)
