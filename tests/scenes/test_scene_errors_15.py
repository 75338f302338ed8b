"""Smoke (grid-fluid) scenes with bad values: one ``kcsim: error:`` line naming the file and the
prim, never an "internal error"; Ctrl-C and a blow-up keep the frames written so far."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pxr")

import sim  # noqa: E402
from scenes.cli import main as kcsim  # noqa: E402

SMOKE = (Path(__file__).resolve().parents[2] / "scenes" / "library" / "smoke_sphere.usda").read_text()
SMALL = SMOKE.replace("int[] kc:fluid:res = [48, 80]", "int[] kc:fluid:res = [8, 12]").replace(
    "float kc:fluid:dx = 0.0125", "float kc:fluid:dx = 0.05")


def _scene(tmp_path, old=None, new=None):
    text = SMALL if old is None else SMALL.replace(old, new)
    assert old is None or text != SMALL
    p = tmp_path / "smoke.usda"
    p.write_text(text)
    return p


@pytest.mark.parametrize("old,new,prim,expect", [
    ("float kc:fluid:dx = 0.05", "float kc:fluid:dx = nan", "/World/physicsScene", "dx must be finite > 0"),
    ("float kc:fluid:heatLift = 4", 'float kc:fluid:heatLift = 4\n        token kc:fluid:advection = "bogus"',
     "/World/physicsScene", "advection must be one of"),
    ("int[] kc:fluid:res = [8, 12]", "int[] kc:fluid:res = [0, 12]", "/World/physicsScene", "every entry >= 1"),
    ("int[] kc:fluid:res = [8, 12]", "float[] kc:fluid:res = [8.5, 12]", "/World/physicsScene",
     "kc:fluid:res must be whole numbers, got 8.5"),
    ("int kc:substeps = 2", "int kc:substeps = -2", "/World/physicsScene", "kc:substeps must be >= 1"),
    ("float kc:timeStep = 0.033333335", "float kc:timeStep = 0", "/World/physicsScene", "kc:timeStep must be a number > 0"),
    ("double radius = 0.09", "double radius = -0.09", "/World/obstacle", "radius must be finite > 0, got -0.09"),
    ("float3 kc:fluid:sourceHalfExtents = (0.08, 0.03, 1)", "float3 kc:fluid:sourceHalfExtents = (-0.08, 0.03, 1)",
     "/World/physicsScene", "half_extents must be 2 finite numbers > 0"),
])
def test_a_bad_smoke_value_is_one_error_line_naming_file_and_prim(tmp_path, capsys, old, new, prim, expect):
    p = _scene(tmp_path, old, new)
    rc = kcsim(["run", str(p), "--frames", "1", "--no-progress", "--out", str(tmp_path / "o.usda")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert err[-1].startswith(f"kcsim: error: {p}: prim {prim}: ") and expect in err[-1], err
    assert not any("internal error" in e or "Traceback" in e for e in err)


def _end_time(path):
    from pxr import Usd

    return Usd.Stage.Open(str(path)).GetEndTimeCode()


def test_ctrl_c_in_a_smoke_run_keeps_the_frames_written(tmp_path, capsys, monkeypatch):
    p, out = _scene(tmp_path), tmp_path / "kept.usda"
    step, calls = sim.SolverGridFluid.step, []

    def interrupted_step(self, *a, **kw):
        calls.append(1)
        if len(calls) > 2 * 2:  # 2 substeps a frame: Ctrl-C during frame 3
            raise KeyboardInterrupt
        return step(self, *a, **kw)

    monkeypatch.setattr(sim.SolverGridFluid, "step", interrupted_step)
    rc = kcsim(["run", str(p), "--frames", "5", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 130 and "Traceback" not in err
    assert out.exists() and _end_time(out) == 2.0, err


def test_a_smoke_blow_up_keeps_the_frames_written(tmp_path, capsys, monkeypatch):
    p, out = _scene(tmp_path), tmp_path / "nan.usda"
    step, calls = sim.SolverGridFluid.step, []

    def blowing_step(self, s0, s1, dt):
        calls.append(1)
        step(self, s0, s1, dt)
        if len(calls) > 2 * 1:  # frame 2 ends with a NaN density
            s1.density.fill_(float("nan"))

    monkeypatch.setattr(sim.SolverGridFluid, "step", blowing_step)
    rc = kcsim(["run", str(p), "--frames", "4", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "frame 2: density has 96 non-finite value(s)" in err and f"frames 0-1 were saved to {out}" in err, err
    assert _end_time(out) == 1.0


@pytest.mark.parametrize("name,expect", [("o.txt", "must end in one of"), ("missing/o.usda", "output directory does not exist"),
                                         (".", "output path is a directory")])
def test_a_bad_smoke_output_path_is_an_error_before_simulating(tmp_path, capsys, name, expect):
    p = _scene(tmp_path)
    rc = kcsim(["run", str(p), "--frames", "1", "--no-progress", "--out", str(tmp_path / name)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("kcsim: error: --out ") and expect in err[-1], err
