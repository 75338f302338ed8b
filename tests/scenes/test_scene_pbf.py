"""kc:solver = "pbf" scenes: the library dam break and the errors of its kc:fluid settings."""
import numpy as np
import pytest

import scenes
import sim
from scenes.usd_loader import SceneError

SCENE = '''#usda 1.0
(
    upAxis = "Y"
)
def PhysicsScene "physics"
{
    token kc:solver = "pbf"
    %s
}
def Points "water"
{
    int3 kc:grid:dims = (4, 4, 2)
    float kc:grid:spacing = 0.04
    point3f kc:grid:lower = (0.02, 0.02, 0.02)
    float kc:radius = 0.02
    float kc:mass = 0.064
}
'''

GOOD = '''float kc:fluid:smoothingLength = 0.08
    point3f kc:fluid:lower = (0, 0, 0)
    point3f kc:fluid:upper = (1, 1, 0.2)'''


def load(tmp_path, settings):
    p = tmp_path / "fluid.usda"
    p.write_text(SCENE % settings)
    return scenes.load(str(p))


def test_library_dam_break_makes_a_pbf_solver():
    scene = scenes.load("dam_break")
    assert scene.solver == "pbf"
    model = scene.finalize()
    solver = scene.make_solver(model)
    assert isinstance(solver, sim.SolverPBF)
    assert solver.h == pytest.approx(0.08) and solver.rest_density == 1000.0 and solver.iterations == 4
    np.testing.assert_allclose(solver.upper, (2.4, 1.2, 0.24), rtol=1e-6)


def test_fluid_settings_are_read(tmp_path):
    scene = load(tmp_path, GOOD + "\n    float kc:fluid:xsph = 0.05\n    int kc:fluid:iterations = 2")
    assert scene.fluid["xsph"] == pytest.approx(0.05) and scene.fluid["iterations"] == 2
    res = scenes.run(scene, frames=2, out=str(tmp_path / "o.usda"), progress=False)
    assert np.all(np.isfinite(res.state.particle_q.numpy()))


@pytest.mark.parametrize("missing", ["kc:fluid:smoothingLength", "kc:fluid:lower", "kc:fluid:upper"])
def test_missing_fluid_setting_is_named(tmp_path, missing):
    settings = "\n".join(l for l in GOOD.splitlines() if missing not in l)
    with pytest.raises(SceneError, match=f"needs {missing}"):
        load(tmp_path, settings)


def test_particles_outside_the_fluid_box_are_a_scene_error(tmp_path):
    scene = load(tmp_path, GOOD.replace("(1, 1, 0.2)", "(0.1, 1, 0.2)"))
    with pytest.raises(SceneError, match="kc:fluid settings: SolverPBF: bounds="):
        scene.make_solver(scene.finalize())
