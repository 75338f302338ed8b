"""kc:solver = "mpm" scenes: kc:mpm:* settings reach SolverMPM and the builder, and a run
writes time-sampled Points with widths."""
import math
import textwrap

import numpy as np
import pytest

import scenes
import sim
from scenes import SceneError
from scenes import schema, usd_mpm
from scenes.runner import RunSetupError

pytest.importorskip("pxr")


def _write(tmp_path, body, name="mpm.usda"):
    p = tmp_path / name
    p.write_text('#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Y"\n)\n\n' + textwrap.dedent(body))
    return str(p)


SCENE = '''
def PhysicsScene "ps"
{{
    token kc:solver = "mpm"
    float kc:timeStep = 0.01
    int kc:substeps = {substeps}
    int kc:frames = 2
    float kc:mpm:dx = 0.05
    point3f kc:mpm:lower = (0, 0, 0)
    point3f kc:mpm:upper = (0.5, 0.6, 0.4)
    token kc:mpm:boundary = "slip"
    float kc:mpm:friction = 0.25
    float kc:mpm:cfl = 0.4
}}
def Points "sand"
{{
    int3 kc:grid:dims = (3, 4, 2)
    float kc:grid:spacing = 0.025
    point3f kc:grid:lower = (0.1, 0.1, 0.1)
    float kc:radius = 0.0125
    float kc:density = 1500
    token kc:mpm:material = "sand"
    float kc:mpm:youngsModulus = 20000
    float kc:mpm:poissonRatio = 0.25
    float kc:mpm:frictionAngle = 33
}}
def Points "drops"
{{
    point3f[] points = [(0.3, 0.3, 0.2), (0.32, 0.3, 0.2)]
    float kc:radius = 0.01
    float kc:mass = 0.002
    token kc:mpm:material = "fluid"
    float kc:mpm:viscosity = 0.01
}}
'''


def test_mpm_settings_reach_the_solver_and_builder(tmp_path):
    scene = scenes.load(_write(tmp_path, SCENE.format(substeps=10)))
    assert scene.solver == "mpm"
    model = scene.finalize()
    solver = scene.make_solver(model)
    assert isinstance(solver, sim.SolverMPM)
    assert solver.dx == pytest.approx(0.05) and solver.cfl == pytest.approx(0.4) and solver.friction == pytest.approx(0.25)
    np.testing.assert_allclose(solver.bounds[0], [0, 0, 0])
    np.testing.assert_allclose(solver.bounds[1], [0.5, 0.6, 0.4], rtol=1e-6)
    b = scene.builder
    vol = np.asarray(b.particle_volume)
    # grid points: one spacing^3 cube each; explicit points: the cube of their width
    np.testing.assert_allclose(vol[:24], 0.025 ** 3, rtol=1e-6)
    np.testing.assert_allclose(vol[24:], 0.02 ** 3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b.particle_mass[:24]), 1500 * 0.025 ** 3, rtol=1e-6)  # density * volume
    np.testing.assert_allclose(np.asarray(b.particle_mass[24:]), 0.002)
    sand, fluid = b.particle_material[0], b.particle_material[24]
    c = b.material_continuum
    assert c[sand]["model"] == "sand" and c[sand]["youngs_modulus"] == 20000 and c[sand]["friction_angle"] == pytest.approx(33)
    assert c[sand]["poisson_ratio"] == pytest.approx(0.25)
    assert c[fluid]["model"] == "fluid" and c[fluid]["viscosity"] == pytest.approx(0.01)


def test_mpm_scene_runs_and_writes_points_with_widths(tmp_path):
    from pxr import Usd, UsdGeom

    out = str(tmp_path / "out.usda")
    res = scenes.run(scenes.load(_write(tmp_path, SCENE.format(substeps=10))), out=out, progress=False)
    assert res.frames == 2
    q = res.state.particle_q.numpy()
    assert np.all(np.isfinite(q)) and q[:, 1].min() < 0.1  # fell under gravity
    np.testing.assert_allclose(res.state.particle_F.numpy().shape[1:], (3, 3))
    stage = Usd.Stage.Open(out)
    pts = [UsdGeom.Points(p) for p in stage.Traverse() if p.GetTypeName() == "Points"]
    assert len(pts) == 2
    for p in pts:
        assert len(p.GetPointsAttr().GetTimeSamples()) == 3
        w = np.asarray(p.GetWidthsAttr().Get(2))
        assert len(w) == len(p.GetPointsAttr().Get(2)) and np.all(w > 0)


def test_too_few_substeps_fail_before_simulating_and_say_how_many(tmp_path):
    scene = scenes.load(_write(tmp_path, SCENE.format(substeps=1)))
    solver = scene.make_solver(scene.finalize())
    need = math.ceil(scene.frame_dt / solver.max_dt)
    with pytest.raises(RunSetupError, match=f"use kc:substeps \\(or --substeps\\) >= {need}"):
        scenes.run(scene, progress=False)
    res = scenes.run(scene, frames=1, substeps=need, progress=False)  # the advice works
    assert res.frames == 1


def test_mpm_attributes_outside_an_mpm_scene_have_no_effect(tmp_path):
    text = SCENE.format(substeps=10).replace('token kc:solver = "mpm"', 'token kc:solver = "dem"')
    scene = scenes.load(_write(tmp_path, text))
    assert any("kc:mpm:dx" in w and "no effect" in w for w in scene.warnings)
    assert any("kc:mpm:material" in w and "no effect" in w for w in scene.warnings)
    assert sum(scene.builder.particle_volume) == 0.0
    with pytest.raises(SceneError, match="kc:mpm:.* has no effect here"):
        scenes.load(_write(tmp_path, text, "strict.usda"), strict=True)


def test_points_without_a_material_in_an_mpm_scene(tmp_path):
    text = SCENE.format(substeps=10).replace('    token kc:mpm:material = "fluid"\n', "")
    with pytest.raises(SceneError, match=r"prim /drops: Points of an MPM scene need kc:mpm:material"):
        scenes.load(_write(tmp_path, text))


def test_schema_lists_every_mpm_parameter_the_reader_reads():
    for usd_name in usd_mpm.MATERIAL_PARAMS:
        assert f"kc:mpm:{usd_name}" in schema.KC_ATTRIBUTES["Points"]
    assert schema.check_kc_attribute("kc:mpm:dx", "Points").startswith("attribute 'kc:mpm:dx' does not apply")
    assert "did you mean 'kc:mpm:frictionAngle'" in schema.check_kc_attribute("kc:mpm:frictionAngel", "Points")


def test_two_dimensional_mpm_scene(tmp_path):
    text = SCENE.format(substeps=10).replace('float kc:mpm:cfl = 0.4', 'float kc:mpm:cfl = 0.4\n    int kc:mpm:dim = 2')
    scene = scenes.load(_write(tmp_path, text))
    solver = scene.make_solver(scene.finalize())
    assert solver.dim == 2 and len(solver.grid_shape) == 2
    bad = text.replace("int kc:mpm:dim = 2", "int kc:mpm:dim = 4")
    with pytest.raises(SceneError, match=r"prim /ps: kc:mpm:dim must be 2 or 3, got 4"):
        scenes.load(_write(tmp_path, bad, "bad.usda"))


CUBE = '''
def PhysicsScene "ps"
{
    token kc:solver = "mpm"
    float kc:mpm:dx = 0.05
    point3f kc:mpm:lower = (0, 0, 0)
    point3f kc:mpm:upper = (1, 1, 1)
}
def Cube "block" (%s)
{
    double size = 0.2
    double3 xformOp:translate = (0.5, 0.4, 0.3)
    float3 xformOp:rotateXYZ = (0, 0, 45)
    float3 xformOp:scale = (1, 0.5, 1)
    uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ", "xformOp:scale"]
    float kc:density = 800
    vector3f kc:velocity = (1, 0, 0)
    token kc:mpm:material = "snow"
}
'''


def test_a_cube_prim_with_an_mpm_material_is_filled_with_particles(tmp_path):
    scene = scenes.load(_write(tmp_path, CUBE % ""))
    b = scene.builder
    q = np.asarray(b.particle_q)
    # default spacing dx / 2 = 0.025: 8 x 4 x 8 cells of the 0.2 x 0.1 x 0.2 box
    assert len(q) == 8 * 4 * 8 and scene.particle_groups[0][0] == "/block"
    np.testing.assert_allclose(q.mean(axis=0), [0.5, 0.4, 0.3], atol=1e-9)
    local = q - [0.5, 0.4, 0.3]
    c = math.sqrt(0.5)
    along = local @ np.array([[c, c, 0], [-c, c, 0], [0, 0, 1]]).T  # back into the cube's frame
    np.testing.assert_allclose(np.abs(along).max(axis=0), [0.0875, 0.0375, 0.0875], atol=1e-9)
    np.testing.assert_allclose(sum(b.particle_mass), 800 * 0.2 * 0.1 * 0.2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b.particle_qd), np.tile([1.0, 0, 0], (len(q), 1)))
    assert b.material_continuum[b.particle_material[0]]["model"] == "snow"


def test_an_mpm_cube_cannot_also_be_a_collider(tmp_path):
    with pytest.raises(SceneError, match="prim /block: a Cube with kc:mpm:material is MPM material, not a collider"):
        scenes.load(_write(tmp_path, CUBE % 'prepend apiSchemas = ["PhysicsCollisionAPI"]'))
