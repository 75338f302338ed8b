"""``kcsim run`` / ``kcsim info`` on URDF and MJCF robot files: a ground plane, Z up, the
file's gravity and time step, importer warnings, one-line errors (exit status 2)."""
from __future__ import annotations

import os

import pytest

import scenes
import sim
from scenes.cli import main as kcsim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CARTPOLE = os.path.join(ROOT, "examples", "assets", "cartpole.urdf")
WALKER = os.path.join(ROOT, "tests", "sim", "assets", "walker_parts.xml")
ARM = os.path.join(ROOT, "tests", "sim", "assets", "arm.urdf")


def test_urdf_scene_has_ground_and_z_up():
    scene = scenes.load(CARTPOLE)
    b = scene.builder
    assert scene.up_axis == "Z" and b.gravity == (0.0, 0.0, -9.81)
    assert b.ground and b.ground_normal == (0.0, 0.0, 1.0)
    assert b.body_count == 2
    assert scene.frame_dt == pytest.approx(1 / 60) and scene.substeps == 17  # steps of at most 1 ms


def test_mjcf_scene_keeps_its_plane_gravity_and_timestep():
    scene = scenes.load(WALKER)
    assert not scene.builder.ground  # the file's own floor plane
    assert scene.dt == pytest.approx(0.002, rel=1e-12)
    assert scene.builder.gravity == (0.0, 0.0, -9.81)


def test_run_writes_usd(tmp_path, capsys):
    out = tmp_path / "cartpole.usda"
    assert kcsim(["run", CARTPOLE, "--frames", "2", "--no-progress", "--out", str(out)]) == 0
    assert out.exists()
    assert "simulated 2 frames of 2 bodies" in capsys.readouterr().out


def test_strict_turns_warnings_into_errors(capsys):
    assert kcsim(["info", ARM, "--strict"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"kcsim: error: {ARM}:34: <cylinder>: cylinder collision shapes are not supported")


@pytest.mark.parametrize("text,expected", [
    ('<robot name="r">\n<link name="a">\n</robot>', "{p}:3: malformed XML: mismatched tag (column 3)"),
    ('<robot name="r">\n<link name="a"><collision><geometry>\n<mesh filename="m.stl"/></geometry></collision>'
     '</link>\n</robot>', "{p}:3: <mesh>: mesh file 'm.stl' not found (looked for {d}/m.stl)"),
])
def test_bad_robot_file_is_one_line(tmp_path, capsys, text, expected):
    p = tmp_path / "bad.urdf"
    p.write_text(text)
    assert kcsim(["run", str(p), "--frames", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kcsim: error: parse_urdf: " + expected.format(p=p, d=tmp_path)]


def test_missing_robot_file(tmp_path, capsys):
    assert kcsim(["run", str(tmp_path / "none.urdf")]) == 2
    assert capsys.readouterr().err.strip() == f"kcsim: error: {tmp_path / 'none.urdf'}: file not found"


def test_solver_choice():
    scene = scenes.load(CARTPOLE)
    has_joints = getattr(scene.builder, "joint_count", 0) > 0
    assert scene.solver == ("featherstone" if hasattr(sim, "SolverFeatherstone") and has_joints else "semi_implicit")
