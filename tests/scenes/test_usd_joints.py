"""UsdPhysics joints in scene files: revolute / prismatic / spherical / fixed joints, limits,
PhysicsDriveAPI and PhysicsArticulationRootAPI read into builder joints; a driven pendulum
settles where the drive torque balances gravity (a root of k (target - q) = m g l sin q)."""
import math
import textwrap

import numpy as np
import pytest

import scenes
import sim
from scenes import SceneError

pytest.importorskip("pxr")

PENDULUM = '''
def PhysicsScene "physics"
{
    float kc:timeStep = 0.01
    int kc:substeps = 10
}
def Xform "link" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "PhysicsArticulationRootAPI"])
{
    double3 xformOp:translate = (0, 1.5, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    float physics:mass = 2
    def Cube "box" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double size = 0.1
    }
}
def Xform "slider" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
{
    double3 xformOp:translate = (0.3, 1.5, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    def Sphere "ball" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.05
    }
}
def PhysicsRevoluteJoint "hinge" (prepend apiSchemas = ["PhysicsDriveAPI:angular"])
{
    point3f physics:localPos0 = (0, 2, 0)
    point3f physics:localPos1 = (0, 0.5, 0)
    rel physics:body1 = </link>
    uniform token physics:axis = "Z"
    float physics:lowerLimit = -90
    float physics:upperLimit = 90
    float drive:angular:physics:stiffness = 2
    float drive:angular:physics:damping = 0.1
    float drive:angular:physics:targetPosition = 30
}
def PhysicsPrismaticJoint "rail"
{
    rel physics:body0 = </link>
    rel physics:body1 = </slider>
    point3f physics:localPos0 = (0.1, 0, 0)
    point3f physics:localPos1 = (-0.2, 0, 0)
    uniform token physics:axis = "X"
    float physics:lowerLimit = 0
    float physics:upperLimit = 0.5
}
'''


def _write(tmp_path, text, name="joints.usda"):
    p = tmp_path / name
    p.write_text('#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Y"\n)\n\n' + textwrap.dedent(text))
    return str(p)


def test_joints_limits_and_drive_are_read(tmp_path):
    sc = scenes.load(_write(tmp_path, PENDULUM), strict=True)  # every joint attribute is read: no warning
    b = sc.builder
    assert sc.warnings == [] and sc.solver == "featherstone"
    assert b.joint_count == 2
    hinge, rail = b.joint_name.index("hinge"), b.joint_name.index("rail")
    assert b.joint_type[hinge] == sim.JOINT_REVOLUTE and b.joint_parent[hinge] == -1
    assert b.joint_type[rail] == sim.JOINT_PRISMATIC and b.joint_parent[rail] == b.joint_child[hinge]
    dh, dr = b.joint_qd_start[hinge], b.joint_qd_start[rail]
    assert b.joint_limit_lower[dh] == pytest.approx(-math.pi / 2) and b.joint_limit_upper[dh] == pytest.approx(
        math.pi / 2)
    assert b.joint_target_ke[dh] == pytest.approx(2 * 180 / math.pi)  # per degree in USD
    assert b.joint_target_kd[dh] == pytest.approx(0.1 * 180 / math.pi)
    assert b.joint_target_pos[dh] == pytest.approx(math.pi / 6)
    assert (b.joint_limit_lower[dr], b.joint_limit_upper[dr]) == (0.0, 0.5)
    # the authored poses imply the coordinates: hinge at 0, slider 0.3 - 0.1 - 0.2 = 0 along x
    assert b.joint_q[b.joint_q_start[hinge]] == pytest.approx(0.0, abs=1e-6)  # float attributes
    assert b.joint_q[b.joint_q_start[rail]] == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(b.joint_X_p[hinge][:3], (0, 2, 0))
    np.testing.assert_allclose(b.joint_X_c[hinge][:3], (0, 0.5, 0))


def test_authored_pose_sets_the_joint_coordinate(tmp_path):
    """A link authored at 40 degrees about the hinge starts at q = 40 degrees (nothing jumps)."""
    a = math.radians(40.0)
    text = PENDULUM.replace("double3 xformOp:translate = (0, 1.5, 0)\n    uniform token[] xformOpOrder = "
                            "[\"xformOp:translate\"]\n    float physics:mass",
                            f"double3 xformOp:translate = ({0.5 * math.sin(a)}, {2 - 0.5 * math.cos(a)}, 0)\n"
                            f"    float3 xformOp:rotateXYZ = (0, 0, 40)\n"
                            f"    uniform token[] xformOpOrder = [\"xformOp:translate\", \"xformOp:rotateXYZ\"]\n"
                            f"    float physics:mass")
    text = text.replace('def Xform "slider"', 'def Xform "unused_slider"').split('def PhysicsPrismaticJoint')[0]
    text = text.replace('def Xform "unused_slider" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])',
                        'def Xform "unused_slider"')
    sc = scenes.load(_write(tmp_path, text))
    b = sc.builder
    h = b.joint_name.index("hinge")
    assert b.joint_q[b.joint_q_start[h]] == pytest.approx(a, abs=1e-6)


def test_driven_pendulum_settles_at_the_torque_balance(tmp_path):
    from scipy.optimize import brentq

    text = PENDULUM.split('def PhysicsPrismaticJoint')[0].replace(
        'def Xform "slider" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])', 'def Xform "slider"')
    text = text.replace("def Sphere \"ball\" (prepend apiSchemas = [\"PhysicsCollisionAPI\"])", "def Sphere \"ball\"")
    text = text.replace("float drive:angular:physics:damping = 0.1", "float drive:angular:physics:damping = 0.05")
    sc = scenes.load(_write(tmp_path, text))
    model = sc.finalize()
    solver = sc.make_solver(model)
    s0, s1 = model.state(), model.state()
    for _ in range(3000):  # 3 s
        solver.step(model, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    q = float(s0.joint_q.numpy()[0])
    ke, target, mgl = 2 * 180 / math.pi, math.pi / 6, 2 * 9.81 * 0.5
    expected = brentq(lambda x: ke * (target - x) - mgl * math.sin(x), 0.0, target)
    assert abs(q - expected) < 2e-3, (q, expected)
    assert abs(expected - target) > 0.03  # gravity matters: the drive alone would reach the target


def test_floating_tree_gets_a_free_root(tmp_path):
    text = PENDULUM.split('def PhysicsRevoluteJoint')[0] + PENDULUM.split('}\n', 0)[0][0:0] + \
        'def PhysicsPrismaticJoint' + PENDULUM.split('def PhysicsPrismaticJoint')[1]
    sc = scenes.load(_write(tmp_path, text))
    b = sc.builder
    assert b.joint_count == 2 and b.joint_type[0] == sim.JOINT_FREE and b.joint_type[1] == sim.JOINT_PRISMATIC
    assert b.joint_child[0] == b.joint_parent[1]


@pytest.mark.parametrize("edit,message", [
    (('uniform token physics:axis = "Z"', 'uniform token physics:axis = "W"'), "physics:axis must be X, Y or Z, got 'W'"),
    (('float physics:lowerLimit = -90', 'float physics:lowerLimit = 100'),
     "physics:lowerLimit 100.0 is above physics:upperLimit 90.0"),
    (('rel physics:body0 = </link>', 'rel physics:body0 = </slider>'), "physics:body0 and physics:body1 are the same body"),
    (('rel physics:body0 = </link>', 'rel physics:body0 = </nothing>'), "physics:body0 targets /nothing, which does not exist"),
])
def test_bad_joints_name_the_prim(tmp_path, edit, message):
    path = _write(tmp_path, PENDULUM.replace(*edit))
    with pytest.raises(SceneError) as e:
        scenes.load(path)
    assert message in str(e.value) and path in str(e.value) and "prim /" in str(e.value)


def test_unsupported_joint_features_warn(tmp_path):
    text = PENDULUM.replace('float physics:upperLimit = 0.5', 'float physics:upperLimit = 0.5\n    '
                            'float physics:breakForce = 100')
    sc = scenes.load(_write(tmp_path, text))
    assert any("prim /rail: physics:breakForce is not supported" in w for w in sc.warnings)
    with pytest.raises(SceneError, match="breakForce is not supported.*--strict"):
        scenes.load(_write(tmp_path, text), strict=True)


def test_scene_references_a_robot_file(tmp_path):
    """An Xform with kc:robot imports a URDF at the prim's transform (a Z-up robot turned into a
    Y-up stage); a loose rigid body beside it gets a free joint; the scene runs."""
    import os

    urdf = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples",
                        "assets", "cartpole.urdf")
    text = f'''
    def Xform "robot"
    {{
        asset kc:robot = @{urdf}@
        double3 xformOp:translate = (1, 0, 0)
        float3 xformOp:rotateXYZ = (-90, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ"]
    }}
    def Sphere "ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
    {{
        double radius = 0.1
        double3 xformOp:translate = (-1, 0.5, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }}
    def Plane "floor" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {{
        uniform token axis = "Y"
    }}
    '''
    sc = scenes.load(_write(tmp_path, text), strict=True)
    b = sc.builder
    assert sc.solver == "featherstone" and b.body_count == 3
    cart = b.body_name.index("cart")
    np.testing.assert_allclose(b.body_q[cart][:3], (1.0, 1.0, 0.0), atol=1e-6)  # the file's z = 1 is the stage's y
    ball = b.body_name.index("ball")
    assert b.joint_type[b.joint_child.index(ball)] == sim.JOINT_FREE
    assert len(sc.shape_paths) == b.shape_count
    from scenes import run

    result = run(sc, frames=3, progress=False)
    q = result.state.body_q.numpy()
    assert q[ball, 1] < 0.5  # the ball falls (along -y)
    np.testing.assert_allclose(q[cart, :3], (1.0, 1.0, 0.0), atol=1e-3)  # the cart stays on its rail


def test_robot_reference_errors_name_the_prim(tmp_path):
    path = _write(tmp_path, '''
    def Xform "robot"
    {
        asset kc:robot = @missing.urdf@
    }
    ''')
    with pytest.raises(SceneError) as e:
        scenes.load(path)
    assert f"prim /robot: kc:robot: parse_urdf: {tmp_path}/missing.urdf: file not found" in str(e.value)
