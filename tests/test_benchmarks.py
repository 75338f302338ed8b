"""The benchmark scripts run at tiny sizes and report the fields the notes quote."""
import json
import os
import sys

import pytest

import kernelcore as kc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not kc.is_cuda_available(), reason="no CUDA GPU here")])])
def test_bandwidth_benchmark_reports_ratios(tmp_path, device):
    import bench_bandwidth

    out = tmp_path / "bw.json"
    bench_bandwidth.main(["--device", device, "--n", "4096", "--repeats", "2", "--out", str(out)])
    d = json.loads(out.read_text())
    for name in ("saxpy", "integrate"):
        r = d["results"][name]
        assert r["bandwidth_GBps"] > 0 and r["speedup_vs_numpy"] > 0


def test_mpm_benchmark_runs_and_its_gradient_matches_taichi(tmp_path):
    """bench_mpm at tiny sizes; with taichi installed the 2-D gradient (taichi recomputes grids in its
    backward, kernelcore replays stored ones) must agree with kernelcore's."""
    import bench_mpm

    try:
        import taichi  # noqa: F401
        have_taichi = True
    except ImportError:
        have_taichi = False
    out = tmp_path / "mpm.json"
    argv = ["--particles3d-side", "6", "--grid3d", "12", "--side2d", "8", "--grid2d", "24", "--steps", "6",
            "--repeats", "1", "--memory-steps", "4", "--out", str(out)] + ([] if have_taichi else ["--no-taichi"])
    bench_mpm.main(argv)
    d = json.loads(out.read_text())
    assert d["cases"]["step3d"]["kernelcore_step_s"] > 0
    assert d["cases"]["diffmpm2d"]["kernelcore_forward_backward_s"] > 0
    assert d["cases"]["memory"]["gradient_finite"]
    if have_taichi:
        assert d["cases"]["diffmpm2d"]["gradient_rel_diff_vs_taichi"] < 1e-4
    else:
        pytest.skip("taichi is not installed: the peer comparison was skipped")
