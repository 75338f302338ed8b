"""parse_urdf: inertial frames, body poses and masses against numpy and MuJoCo's own URDF
compiler (an independent reader of the same file), geometry, package:// paths, warnings."""
from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

import sim
from sim.importers.urdf import UrdfReader
from sim.importers.xmlsource import Report

ASSETS = os.path.join(os.path.dirname(__file__), "assets")
ARM = os.path.join(ASSETS, "arm.urdf")


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def quat_matrix(q):
    from sim.builder import quat_to_matrix

    return quat_to_matrix(q)


def import_quiet(fn, path, **kw):
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sim.ModelImportWarning)
        r = fn(path, b, **kw)
    return b, r


def write(tmp_path, text, name="robot.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


INERTIA_URDF = """<robot name="r">
  <link name="a">
    <inertial>
      <origin xyz="0.1 -0.2 0.3" rpy="{r} {p} {y}"/>
      <mass value="1.5"/>
      <inertia ixx="0.02" ixy="0.003" ixz="-0.001" iyy="0.05" iyz="0.002" izz="0.04"/>
    </inertial>
  </link>
</robot>"""


@pytest.mark.parametrize("rpy", [(0.0, 0.0, 0.0), (0.3, -0.7, 1.1), (math.pi / 2, 0.2, -2.5)])
def test_inertial_rpy_rotates_the_tensor(tmp_path, rpy):
    path = write(tmp_path, INERTIA_URDF.format(r=rpy[0], p=rpy[1], y=rpy[2]))
    b, r = import_quiet(sim.parse_urdf, path, floating=True)
    i_file = np.array([[0.02, 0.003, -0.001], [0.003, 0.05, 0.002], [-0.001, 0.002, 0.04]])
    rot = rot_z(rpy[2]) @ rot_y(rpy[1]) @ rot_x(rpy[0])  # URDF: roll about X, pitch about Y, yaw about Z (fixed axes)
    k = r.bodies["a"]
    np.testing.assert_allclose(b.body_inertia_given[k], rot @ i_file @ rot.T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(b.body_com_given[k], [0.1, -0.2, 0.3], atol=0)
    assert b.body_mass_given[k] == 1.5
    model = b.finalize()  # the model keeps it (float32)
    np.testing.assert_allclose(model.body_inertia.numpy()[k], rot @ i_file @ rot.T, rtol=1e-6, atol=1e-9)


def mujoco_or_skip():
    return pytest.importorskip("mujoco", reason="the mujoco package is the reference for URDF/MJCF imports")


def test_arm_matches_mujoco_urdf_compiler():
    """Body frames at the zero pose, masses, centres of mass and inertia tensors of every moving
    link agree with MuJoCo reading the same URDF."""
    mujoco = mujoco_or_skip()
    b, r = import_quiet(sim.parse_urdf, ARM)
    m = mujoco.MjModel.from_xml_path(ARM)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    checked = 0
    for name in ("shoulder", "upper", "fore"):
        i, k = r.bodies[name], mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        q = np.asarray(b.body_q[i])
        np.testing.assert_allclose(q[:3], d.xpos[k], atol=1e-12)
        qw = np.roll(q[3:], 1)
        assert min(np.abs(qw - d.xquat[k]).max(), np.abs(qw + d.xquat[k]).max()) < 1e-12
        assert b.body_mass_given[i] == pytest.approx(m.body_mass[k], rel=1e-12)
        np.testing.assert_allclose(b.body_com_given[i], m.body_ipos[k], atol=1e-12)
        rot = quat_matrix(np.roll(m.body_iquat[k], -1))
        np.testing.assert_allclose(b.body_inertia_given[i], rot @ np.diag(m.body_inertia[k]) @ rot.T, atol=1e-12)
        checked += 1
    assert checked == 3
    # base (welded to the world, with mass) stays a body; the massless tool frame is merged into 'fore'
    assert r.bodies["tool"] == r.bodies["fore"]
    assert b.body_count == 4


def test_arm_description_joints_match_mujoco():
    mujoco = mujoco_or_skip()
    desc = UrdfReader(ARM, Report("parse_urdf")).read()
    m = mujoco.MjModel.from_xml_path(ARM)
    joints = {j.name: j for body in desc.bodies for j in body.joints}
    for k in range(m.njnt):
        j = joints[m.joint(k).name]
        assert j.kind == "revolute"
        np.testing.assert_allclose(j.axis, m.jnt_axis[k], atol=1e-12)
        np.testing.assert_allclose(j.limit, m.jnt_range[k], atol=0)
        assert j.damping == pytest.approx(m.dof_damping[m.jnt_dofadr[k]])
    assert joints["tool_mount"].kind == "fixed"


def test_geometry_and_notes():
    b, r = import_quiet(sim.parse_urdf, ARM)
    types = [b.shape_type[s] for s in r.shapes]
    assert types[:2] == [sim.SHAPE_BOX, sim.SHAPE_SPHERE]
    cyl = r.shapes[2]  # the upper arm's cylinder, approximated by a capsule of the same length
    assert b.shape_type[cyl] == sim.SHAPE_CAPSULE
    assert b.shape_scale[cyl][:2] == pytest.approx((0.03, 0.15 - 0.03))
    # the capsule's axis (our local Y) lies along the cylinder's axis (URDF local Z, turned by pitch 90 deg: +X)
    axis = quat_matrix(b.shape_quat[cyl]) @ np.array([0.0, 1.0, 0.0])
    assert abs(abs(axis[0]) - 1.0) < 1e-12
    assert any("cylinder collision shapes are not supported" in w and "arm.urdf:34: <cylinder>" in w
               for w in r.warnings)
    assert any("'world'" in n or "merged into 'fore'" in n for n in r.notes)


def test_cylinder_warning_is_a_python_warning():
    with pytest.warns(sim.ModelImportWarning, match=r"arm.urdf:34: <cylinder>: cylinder collision shapes"):
        sim.parse_urdf(ARM, sim.ModelBuilder())


def test_mesh_mass_from_stl_and_obj(tmp_path):
    """A link without <inertial> gets density x volume of its collision mesh (binary STL and OBJ)."""
    mesh_dir = os.path.join(ASSETS, "meshes")
    for fn in ("cube.stl", "cube.obj"):
        path = write(tmp_path, f"""<robot name="r"><link name="a"><collision>
            <geometry><mesh filename="file://{os.path.join(mesh_dir, fn)}" scale="2 1 1"/></geometry>
            </collision></link></robot>""")
        b, r = import_quiet(sim.parse_urdf, path, floating=True, density=500.0)
        k = r.bodies["a"]
        hx, hy, hz = 0.1, 0.05, 0.05
        mass = 500.0 * 8 * hx * hy * hz
        assert b.body_mass_given[k] == pytest.approx(mass, rel=1e-6)
        np.testing.assert_allclose(np.diag(b.body_inertia_given[k]),
                                   [mass / 3 * (hy ** 2 + hz ** 2), mass / 3 * (hx ** 2 + hz ** 2),
                                    mass / 3 * (hx ** 2 + hy ** 2)], rtol=1e-6)


def test_package_paths_resolve_upwards(tmp_path):
    pkg = tmp_path / "my_robot"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    with open(os.path.join(ASSETS, "meshes", "cube.stl"), "rb") as f:
        (pkg / "meshes" / "cube.stl").write_bytes(f.read())
    path = write(pkg / "urdf", """<robot name="r"><link name="a"><collision>
        <geometry><mesh filename="package://my_robot/meshes/cube.stl"/></geometry></collision></link></robot>""")
    b, r = import_quiet(sim.parse_urdf, path, floating=True)
    assert b.body_mass_given[r.bodies["a"]] == pytest.approx(1000.0 * 0.1 ** 3, rel=1e-6)


def test_xform_places_the_robot():
    xf = (np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.0, math.sin(0.4), math.cos(0.4)]))
    b0, r0 = import_quiet(sim.parse_urdf, ARM)
    b1, r1 = import_quiet(sim.parse_urdf, ARM, xform=tuple(xf[0]) + tuple(xf[1]))
    rot = quat_matrix(xf[1])
    for name in ("base", "shoulder", "upper", "fore"):
        p0 = np.asarray(b0.body_q[r0.bodies[name]][:3])
        p1 = np.asarray(b1.body_q[r1.bodies[name]][:3])
        np.testing.assert_allclose(p1, xf[0] + rot @ p0, atol=1e-12)


def test_unsupported_elements_warn_with_file_and_line(tmp_path):
    path = write(tmp_path, """<robot name="r">
  <link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="a"/><child link="b"/><dynamics damping="0.1" friction="0.5"/></joint>
  <joint name="j2" type="continuous"><parent link="b"/><child link="c"/><mimic joint="j1"/></joint>
  <sensor name="s"/>
</robot>""")
    with pytest.warns(sim.ModelImportWarning) as rec:
        r = sim.parse_urdf(path, sim.ModelBuilder())
    texts = [str(w.message) for w in rec]
    assert f"parse_urdf: {path}:5: <dynamics>: joint friction (Coulomb) is not supported (ignored)" in texts
    assert (f"parse_urdf: {path}:6: <mimic>: mimic joints are not supported: joint 'j2' moves independently of "
            f"'j1'") in texts
    assert f"parse_urdf: {path}:7: <sensor name='s'>: element <sensor> is not supported (ignored)" in texts
    assert len(r.warnings) >= 3


def test_collapse_fixed_joints_combines_mass_properties(tmp_path):
    """Two point-like links welded 0.4 m apart (second one turned): one body whose mass, centre of
    mass and inertia follow the parallel-axis theorem."""
    path = write(tmp_path, """<robot name="r">
  <link name="a"><inertial><mass value="2"/><inertia ixx="0.01" iyy="0.02" izz="0.03"/></inertial></link>
  <link name="b"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
    <inertia ixx="0.004" iyy="0.005" izz="0.006"/></inertial></link>
  <joint name="weld" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0" rpy="0 0 1.5707963267948966"/>
  </joint>
</robot>""")
    b, r = import_quiet(sim.parse_urdf, path, floating=True, collapse_fixed_joints=True)
    assert b.body_count == 1 and r.bodies["a"] == r.bodies["b"] == 0
    com_b = np.array([0.3, 0.1, 0.0])  # b's COM: 0.1 along b's x, which is a's y after the 90-degree yaw
    com = (2 * np.zeros(3) + 1 * com_b) / 3
    rot = rot_z(math.pi / 2)
    inertia = np.diag([0.01, 0.02, 0.03]) + rot @ np.diag([0.004, 0.005, 0.006]) @ rot.T
    for m, c in ((2.0, np.zeros(3)), (1.0, com_b)):
        d = c - com
        inertia += m * (d @ d * np.eye(3) - np.outer(d, d))
    assert b.body_mass_given[0] == pytest.approx(3.0)
    np.testing.assert_allclose(b.body_com_given[0], com, atol=1e-12)
    np.testing.assert_allclose(b.body_inertia_given[0], inertia, atol=1e-12)
    b2, r2 = import_quiet(sim.parse_urdf, path, floating=True)  # without: two bodies, a fixed joint
    assert b2.body_count == 2 and b2.joint_type[r2.joints["weld"]] == sim.JOINT_FIXED
