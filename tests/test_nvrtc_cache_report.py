"""scripts/nvrtc_cache_report.py: NVRTC seconds per module read back from a kernel cache."""
import importlib.util
import os

import pytest

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "nvrtc_cache_report.py")
_spec = importlib.util.spec_from_file_location("nvrtc_cache_report", _PATH)
ncr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ncr)


def _unit(d, key, module, seconds, body="x" * 100):
    src, cubin = d / f"cuda_{key}.cpp", d / f"cuda_{key}.cubin"
    src.write_text(f"// kernelcore module '{module}' (cuda), generated code\n{body}")
    t0 = 1.0e9
    os.utime(src, (t0, t0))
    if seconds is not None:
        cubin.write_bytes(b"\x7fELF")
        os.utime(cubin, (t0 + seconds, t0 + seconds))
    return src.stat().st_size


def test_seconds_per_module_and_the_cost_of_variants(tmp_path):
    size = _unit(tmp_path, "a1", "sim.a", 2.0)
    _unit(tmp_path, "a2", "sim.a", 3.0)
    _unit(tmp_path, "b1", "sim.b", 4.5)
    _unit(tmp_path, "c1", "sim.c", None)  # no CUBIN (failed): not counted
    costs = ncr.nvrtc_costs(str(tmp_path))
    assert sorted(costs) == ["sim.a", "sim.b"]
    assert sorted(costs["sim.a"]) == [(2.0, size), (3.0, size)]
    text = ncr.report(costs)
    # 9.5 s in all; the cheaper variant of sim.a (2 s) is the work done again
    assert text.splitlines()[0] == "NVRTC: 3 units of 2 modules, 10 s; 2 s on modules compiled again in another variant"
    assert text.splitlines()[1].split()[-3:] == ["<-", "2", "variants"] and "sim.a" in text.splitlines()[1]


def test_a_missing_cache_dir_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="cache_dir="):
        ncr.nvrtc_costs(str(tmp_path / "nope"))
