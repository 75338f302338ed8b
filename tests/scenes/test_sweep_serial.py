"""Sweeps without Ray: parameter parsing, bad input, and the serial fallback (issue #21).

Ray is hidden (sys.modules entry None, or a fake package that fails to import in a
subprocess), so these run whether or not ray is installed.
"""
import csv
import os
import subprocess
import sys

import numpy as np
import pytest

import sim
from scenes import cli
from scenes.sweep import SweepParam, parse_param, points_of

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENE = os.path.join(HERE, "data", "sweep_tiny.usda")


def test_parse_param_forms():
    p = parse_param("/World/grains.kc:material:mu=0.1:0.9:5")
    assert (p.prim, p.attr) == ("/World/grains", "kc:material:mu")
    np.testing.assert_allclose(p.values, np.linspace(0.1, 0.9, 5))
    assert parse_param("/World/a.b/c.kc:radius=0.1,0.2").values == [0.1, 0.2]
    assert parse_param("/World/a.b/c.kc:radius=0.1").prim == "/World/a.b/c"  # dots in prim names are fine
    assert parse_param("/W/p.x=2:3:1").values == [2.0]
    pts = points_of(["/W/a.x=1,2", "/W/b.y=10,20,30"])
    assert pts == [{"/W/a.x": a, "/W/b.y": b} for a in (1.0, 2.0) for b in (10.0, 20.0, 30.0)]  # first slowest


@pytest.mark.parametrize("spec, message", [
    ("/World/grains.kc:material:mu", "no '='"),
    ("World/grains.kc:material:mu=1", "is not PRIM.ATTR"),
    ("/World/grains=1", "is not PRIM.ATTR"),
    ("/World/grains.mu=0:1", "a range is lo:hi:n"),
    ("/World/grains.mu=0:1:0", "must be >= 1"),
    ("/World/grains.mu=0:1:2.5", "must be a whole number"),
    ("/World/grains.mu=a,b", "'a' is not a number"),
    ("/World/grains.mu=nan", "not a finite number"),
    ("/World/grains.mu=", "no values"),
])
def test_parse_param_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_param(spec)


@pytest.mark.parametrize("param, message", [
    ("/World/grains.kc:material:muu=0.1", "no attribute 'kc:material:muu'; did you mean 'kc:material:mu'?"),
    ("/World/grainz.kc:radius=0.1", "no prim /World/grainz"),
    ("/World/grains.kc:grid:lower=1", "only scalar number attributes can be swept, this one is 'point3f'"),
    ("/World/physicsScene.kc:substeps=1:4:3", "kc:substeps is an integer attribute, got 2.5"),
])
def test_kcsim_sweep_bad_parameters_one_line_exit_2(param, message, tmp_path, capsys):
    code = cli.main(["sweep", SCENE, "--param", param, "--out", str(tmp_path / "o"), "--serial"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_parallel_map_serial_without_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # "import ray" now raises ImportError
    assert "Ray is not installed" in sim.parallel.serial_reason()
    assert sim.parallel_map(lambda x: x * x, range(5)) == [0, 1, 4, 9, 16]
    res = sim.parallel_map(lambda x: 1 // x, [1, 0, 2], return_exceptions=True)
    assert res[0] == 1 and res[2] == 0 and "ZeroDivisionError" in res[1].error and res[1].index == 1
    with pytest.raises(RuntimeError, match="Ray is not installed"):
        sim.parallel_map(abs, [1], serial=False)


def _hidden_ray_env(tmp_path):
    fake = tmp_path / "no_ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('ray is hidden for this test')\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent), ROOT, os.environ.get("PYTHONPATH", "")]),
                KERNELCORE_NUM_THREADS="1")


def test_kcsim_sweep_runs_serially_without_ray_and_says_so(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "scenes.cli", "sweep", SCENE, "--param", "/World/grains.kc:material:mu=0.1,0.9",
           "--param", "/World/grains.kc:radius=0.04,-1", "--frames", "2", "--out", str(out), "--no-progress"]
    p = subprocess.run(cmd, env=_hidden_ray_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert p.returncode == 3, p.stderr
    assert "Ray is not installed" in p.stderr and "running the 4 points serially" in p.stderr
    assert "Traceback" not in p.stderr
    assert "point 1 (/World/grains.kc:material:mu=0.1, /World/grains.kc:radius=-1) failed" in p.stderr
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["ok", "failed", "ok", "failed"]
    assert float(rows[0]["p_com_x"]) > float(rows[2]["p_com_x"])  # more friction, less sliding
    assert sorted(os.listdir(out / "points")) == ["point_0000.usd", "point_0002.usd"]


def test_kcsim_sweep_address_without_ray_is_an_error(tmp_path):
    cmd = [sys.executable, "-m", "scenes.cli", "sweep", SCENE, "--param", "/World/grains.kc:material:mu=0.1",
           "--out", str(tmp_path / "o"), "--address", "auto"]
    p = subprocess.run(cmd, env=_hidden_ray_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().startswith("kcsim: error: --address auto: Ray is not installed")
    assert len(p.stderr.strip().splitlines()) == 1


def test_sweep_param_objects_and_dict():
    from scenes.sweep import _as_params

    ps = _as_params({"/World/grains.kc:material:mu": [0.2, 0.3]})
    assert ps[0].name == "/World/grains.kc:material:mu" and ps[0].values == [0.2, 0.3]
    assert _as_params([SweepParam("/W/a", "x", [1])])[0].values == [1]
    with pytest.raises(ValueError, match="given more than once"):
        _as_params(["/W/a.x=1", "/W/a.x=2"])


def test_kcsim_sweep_reports_scene_warnings_once_and_strict_fails_points(tmp_path, capsys):
    scene = os.path.join(HERE, "bad", "animated_collider_transform.usda")
    param = "/p.kc:radius=0.04,0.05"
    code = cli.main(["sweep", scene, "--param", param, "--frames", "1", "--out", str(tmp_path / "a"), "--serial",
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count("kcsim: warning: prim /paddle: animated transform") == 1, err
    code = cli.main(["sweep", scene, "--param", param, "--frames", "1", "--out", str(tmp_path / "b"), "--serial",
                     "--no-progress", "--strict"])
    err = capsys.readouterr().err
    assert code == 3 and err.count("failed: SceneError") == 2 and "animated transform" in err
