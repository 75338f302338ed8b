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


def test_threads_under_load_benchmark_reports_ratios(tmp_path):
    """Runs at a tiny size; the competing busy process is started and stopped by the script."""
    import bench_threads_under_load

    out = tmp_path / "load.json"
    bench_threads_under_load.main(["--n", "4096", "--steps", "3", "--repeats", "1", "--policies", "default",
                                   "--out", str(out)])
    d = json.loads(out.read_text())["results"]["default"]
    assert d["omp_wait_policy"] in ("PASSIVE", None)  # None: libgomp was loaded first, the user's setting stands
    for key in ("loaded_over_unloaded_fwd", "loaded_default_over_one_thread_fwd", "unloaded_default_over_one_thread_bwd"):
        assert d["ratios"][key] > 0
