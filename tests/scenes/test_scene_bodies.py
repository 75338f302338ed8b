"""Rigid bodies in scene files: PhysicsRigidBodyAPI / MassAPI / CollisionAPI / materials, USD output."""
import math
import textwrap

import numpy as np
import pytest

import scenes
from scenes import SceneError

pytest.importorskip("pxr")

BODIES = '''
def PhysicsScene "physics"
{
    float kc:timeStep = 0.02
    int kc:substeps = 10
    int kc:frames = 5
    bool kc:toi = true
}
def Material "bouncy" (prepend apiSchemas = ["PhysicsMaterialAPI"])
{
    float physics:restitution = 0.7
    float physics:dynamicFriction = 0.2
}
def Plane "floor" (prepend apiSchemas = ["PhysicsCollisionAPI"])
{
    uniform token axis = "Y"
}
def Xform "crate" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
{
    double3 xformOp:translate = (0, 1, 0)
    float3 xformOp:rotateXYZ = (0, 90, 0)
    uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ"]
    float physics:density = 500
    vector3f physics:velocity = (1, 0, 0)
    vector3f physics:angularVelocity = (0, 180, 0)
    def Cube "box" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double size = 0.2
        double3 xformOp:translate = (0.1, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
}
def Sphere "ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMassAPI"])
{
    double radius = 0.1
    double3 xformOp:translate = (2, 0.5, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    float physics:mass = 3
    rel material:binding:physics = </bouncy>
}
def Capsule "rod" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
{
    double radius = 0.05
    double height = 0.4
    uniform token axis = "X"
    double3 xformOp:translate = (-2, 0.3, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
}
'''


def _write(tmp_path, body):
    p = tmp_path / "bodies.usda"
    p.write_text('#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Y"\n)\n\n' + textwrap.dedent(body))
    return str(p)


def test_rigid_bodies_masses_frames_and_materials_are_read(tmp_path):
    sc = scenes.load(_write(tmp_path, BODIES), strict=True)  # every body attribute is read: no warning
    b = sc.builder
    assert b.body_count == 3 and sc.toi and sc.warnings == []
    m = sc.finalize()
    crate, ball, rod = 0, 1, 2
    np.testing.assert_allclose(m.body_mass.numpy(), [500 * 0.2 ** 3, 3.0, 1000 * (math.pi * 0.05 ** 2 * 0.4
                                                                                   + 4 / 3 * math.pi * 0.05 ** 3)],
                               rtol=1e-5)
    q = m.body_q.numpy()
    np.testing.assert_allclose(q[crate, :3], (0, 1, 0), atol=1e-6)
    np.testing.assert_allclose(np.abs(q[crate, 3:]), (0, math.sin(math.pi / 4), 0, math.cos(math.pi / 4)), atol=1e-6)
    np.testing.assert_allclose(m.body_com.numpy()[crate], (0.1, 0, 0), atol=1e-6)  # the cube, in the body frame
    np.testing.assert_allclose(m.body_qd.numpy()[crate], (1, 0, 0, 0, math.pi, 0), atol=1e-6)
    np.testing.assert_allclose(q[ball, :3], (2, 0.5, 0), atol=1e-6)
    ball_shape = [s for s in range(b.shape_count) if b.shape_body[s] == ball][0]
    mat = b.shape_material[ball_shape]
    assert b.material_restitution[mat] == pytest.approx(0.7) and b.material_mu[mat] == pytest.approx(0.2)
    rod_shape = [s for s in range(b.shape_count) if b.shape_body[s] == rod][0]
    axis = m.shape_rot.numpy()[rod_shape] @ (0, 1, 0)
    np.testing.assert_allclose(np.abs(axis), (1, 0, 0), atol=1e-6)  # the capsule lies along x
    assert m.shape_scale.numpy()[rod_shape][1] == pytest.approx(0.2)
    assert "rigid body" in sc.describe()


def test_bodies_run_and_are_written_as_time_sampled_xforms(tmp_path):
    out = tmp_path / "bodies_out.usda"
    res = scenes.run(scenes.load(_write(tmp_path, BODIES)), frames=5, out=str(out), progress=False)
    q = res.state.body_q.numpy()
    assert q[1, 1] < 0.5 - 0.05  # the ball fell
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(out))
    ball = stage.GetPrimAtPath("/root/ball")
    assert ball
    translate = UsdGeom.Xformable(ball).GetOrderedXformOps()[0].GetAttr()
    samples = translate.GetTimeSamples()
    assert len(samples) == 6
    np.testing.assert_allclose(translate.Get(samples[-1]), q[1, :3], atol=1e-5)
    # a shape below its body's Xform keeps its path; its world pose is the body's pose times its own
    box = stage.GetPrimAtPath("/root/crate/box")
    assert box
    world = np.array(UsdGeom.Xformable(box).ComputeLocalToWorldTransform(samples[-1])).T
    from sim.builder import quat_to_matrix

    np.testing.assert_allclose(world[:3, 3], q[0, :3] + quat_to_matrix(q[0, 3:]) @ (0.1, 0, 0), atol=1e-5)


def test_second_shape_of_a_body_that_is_a_cube_is_not_transformed_twice(tmp_path):
    out = tmp_path / "nested_out.usda"
    path = _write(tmp_path, '''
    def Cube "crate" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
    {
        double size = 0.2
        double3 xformOp:translate = (0, 1, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Sphere "knob" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double radius = 0.05
            double3 xformOp:translate = (0.15, 0, 0)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
    ''')
    res = scenes.run(scenes.load(path, strict=True), frames=2, out=str(out), progress=False)
    q = res.state.body_q.numpy()[0]
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(out))
    knobs = [p for p in stage.Traverse() if p.GetName().startswith("crate_knob") or p.GetName() == "knob"]
    assert len(knobs) == 1
    world = np.array(UsdGeom.Xformable(knobs[0]).ComputeLocalToWorldTransform(2)).T
    from sim.builder import quat_to_matrix

    np.testing.assert_allclose(world[:3, 3], q[:3] + quat_to_matrix(q[3:]) @ (0.15, 0, 0), atol=1e-5)


@pytest.mark.parametrize("body, words", [
    (BODIES.replace("float physics:mass = 3", "float physics:mass = -3"), "/ball: physics:mass must be > 0"),
    (BODIES.replace("float physics:density = 500", "float physics:density = -1"), "/crate: physics:density"),
    (BODIES.replace("</bouncy>", "</nothing>"), "/ball: material:binding:physics targets /nothing, which does not exist"),
])
def test_bad_bodies_name_file_and_prim(tmp_path, body, words):
    path = _write(tmp_path, body)
    with pytest.raises(SceneError, match=words.replace("/", ".")):
        scenes.load(path).finalize()
