"""bench_smoke.py's like-for-like Warp case runs and reports each row with the divergence it leaves."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def test_warp_like_for_like_rows_carry_their_divergence():
    pytest.importorskip("warp", reason="warp-lang (the oracle of this case) is not installed")
    import bench_smoke

    r = bench_smoke.warp_like_for_like(1, jacobi_iterations=(), fixed_iterations=(1,), equal_work=2)["rows"]
    warp = r["warp_100"]
    # a collocated 100-sweep projection leaves a divergence of the order of the velocity scale
    assert warp["relative_divergence_forward"] > 1e-2 and 0 < warp["relative_divergence_rms"]
    assert r["kc_default"]["relative_divergence"] < 1e-5    # multigrid PCG to 1e-7
    eq = r["kc_equal_accuracy"]
    assert eq["cg_iterations"] == 1 and eq["relative_divergence"] <= warp["relative_divergence_forward"]
    for name in ("warp_100", "kc_default", "kc_equal_accuracy", "kc_equal_work"):
        assert r[name]["step_s"] > 0 and np.isfinite(r[name]["warp_100_over_this"])


def test_warp_divergence_probe_measures_a_known_field():
    """relative_divergence's formulas on a field with a known net outflow (no warp needed)."""
    import bench_smoke

    probe = bench_smoke.WarpExampleFluid.__new__(bench_smoke.WarpExampleFluid)
    x, y = np.meshgrid(np.arange(6.0), np.arange(5.0), indexing="ij")
    u = np.stack([0.5 * x, np.zeros_like(y)], axis=-1).astype(np.float32)   # du/dx = 0.5 everywhere
    probe.step = lambda: None
    probe.projected = u
    probe.probe = False
    fwd, cen = probe.relative_divergence(steps=1)
    scale = 2.5   # max|u|
    assert fwd == pytest.approx(0.5 / scale) and cen == pytest.approx(0.5 / scale)
    assert probe.last_rms == pytest.approx(0.5 / scale)
