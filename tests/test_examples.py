"""Every example runs headless at small size (DESIGN: examples are tests).

A new example must be added to SMALL_ARGS; the completeness test fails otherwise.
"""
import importlib
import os

import pytest

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

SMALL_ARGS = {
    "fluid_dam_break": lambda tmp: ["--nx", "8", "--ny", "4", "--nz", "3", "--spacing", "0.02", "--frames", "3",
                                    "--out", str(tmp / "dam.usda")],
    "cloth_drape": lambda tmp: ["--size", "6", "--seconds", "0.05", "--out", str(tmp / "drape.usda")],
    "cloth_throw": lambda tmp: ["--iterations", "2", "--size", "3", "--duration", "0.1", "--out", str(tmp / "throw.png")],
    "geometry_mesh_queries": lambda tmp: ["--res", "24", "--particles", "500"],
    "geometry_neighbours": lambda tmp: ["--count", "2000", "--frames", "2"],
    "integrate_particles": lambda tmp: ["--count", "64", "--steps", "5"],
    "long_horizon": lambda tmp: ["--steps", "40", "--iters", "2", "--compare"],
    "mass_spring_triangle": lambda tmp: ["--iters", "3", "--steps", "50", "--out", str(tmp / "loss.png")],
    "mpm_diffmpm": lambda tmp: ["--iterations", "2", "--steps", "60", "--out", str(tmp / "loss.png")],
    "mpm_column_collapse": lambda tmp: ["--small"],
    "render_demo": lambda tmp: ["--frames", "3", "--out-dir", str(tmp / "render"), "--width", "96", "--height", "64", "--balls", "2"],
    "robot_batch": lambda tmp: ["--count", "2", "--steps", "20", "--out", str(tmp / "torso.npz")],
    "robot_cartpole": lambda tmp: ["--iterations", "2", "--duration", "0.2", "--out-dir", str(tmp / "cartpole")],
    "robot_walker": lambda tmp: ["--iterations", "2", "--steps", "40", "--out-dir", str(tmp / "walker")],
    "sim_ball_target": lambda tmp: ["--iterations", "2", "--duration", "0.2", "--out-dir", str(tmp / "ball")],
    "smoke_optimize": lambda tmp: ["--res", "12", "--steps", "4", "--iterations", "2", "--out-dir", str(tmp / "smoke")],
    "sim_dem": lambda tmp: ["--count", "500", "--steps", "5"],
    "sim_rigid_pile": lambda tmp: ["--count", "30", "--steps", "300", "--out", str(tmp / "pile.usda")],
    "sim_rigid_toi": lambda tmp: ["--ke", "1e4", "--out", str(tmp / "toi.png")],
    "torch_adam_points": lambda tmp: ["--n", "10", "--iters", "5"],
    "torch_rosenbrock": lambda tmp: ["--points", "16", "--iters", "5"],
}
NEEDS = {"torch_adam_points": "torch", "torch_rosenbrock": "torch"}


def test_every_example_is_listed():
    found = {f[:-3] for f in os.listdir(EXAMPLES_DIR) if f.endswith(".py") and not f.startswith("_")}
    assert found == set(SMALL_ARGS), f"examples without a small-size entry: {sorted(found - set(SMALL_ARGS))}"


@pytest.mark.parametrize("name", sorted(SMALL_ARGS))
def test_example_runs(name, tmp_path, monkeypatch):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(f"examples.{name}")
    mod.main(SMALL_ARGS[name](tmp_path))
