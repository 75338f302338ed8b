"""Every example runs headless at small size (DESIGN: examples are tests).

A new example must be added to SMALL_ARGS; the completeness test fails otherwise.
"""
import importlib
import os

import pytest

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

SMALL_ARGS = {
    "geometry_mesh_queries": lambda tmp: ["--res", "24", "--particles", "500"],
    "geometry_neighbours": lambda tmp: ["--count", "2000", "--frames", "2"],
    "integrate_particles": lambda tmp: ["--count", "64", "--steps", "5"],
    "long_horizon": lambda tmp: ["--steps", "40", "--iters", "2", "--compare"],
    "mass_spring_triangle": lambda tmp: ["--iters", "3", "--steps", "50", "--out", str(tmp / "loss.png")],
    "mpm_diffmpm": lambda tmp: ["--iterations", "2", "--steps", "60", "--out", str(tmp / "loss.png")],
    "render_demo": lambda tmp: ["--frames", "3", "--out-dir", str(tmp / "render"), "--width", "96", "--height", "64", "--balls", "2"],
    "sim_ball_target": lambda tmp: ["--iterations", "2", "--duration", "0.2", "--out-dir", str(tmp / "ball")],
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
