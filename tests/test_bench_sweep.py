"""benchmarks/bench_sweep.py runs (serial cases, tiny sizes; the Ray cases are exercised by
tests/scenes/test_sweep_ray.py) and reports what its docstring promises."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_sweep_serial_smoke(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import bench_sweep
    finally:
        sys.path.pop(0)
    out = tmp_path / "sweep.json"
    res = bench_sweep.main(["--points", "2", "--frames", "1", "--no-ray", "--out", str(out)])
    assert set(res["seconds"]) == {"serial_1thread", "serial_1thread_batched", "serial_default"}
    assert all(v["median"] > 0 for v in res["seconds"].values())
    # the batched rows (both points packed into one model) agree with the unbatched ones
    assert res["batch"] == 8 and res["batched_notices"] == []
    assert res["batched_max_rel_diff"] <= 1e-6
    assert json.loads(out.read_text())["points"] == 2
