"""parse_mjcf: default classes, <include>, angle units and Euler sequences, geoms and
actuators, checked against the mujoco package compiling the same files."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import sim
from sim.importers.mjcf import MjcfReader
from sim.importers.xmlsource import Report

ASSETS = os.path.join(os.path.dirname(__file__), "assets")
WALKER = os.path.join(ASSETS, "walker_parts.xml")
CHAIN = os.path.join(ASSETS, "chain3.xml")


def import_quiet(path, **kw):
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sim.ModelImportWarning)
        r = sim.parse_mjcf(path, b, **kw)
    return b, r


def mujoco_or_skip():
    return pytest.importorskip("mujoco", reason="the mujoco package is the reference for MJCF imports")


def assert_bodies_match_mujoco(path, b, r):
    """Zero-pose frames, masses, centres of mass and inertias of every body vs mujoco."""
    mujoco = mujoco_or_skip()
    from sim.builder import quat_to_matrix

    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    assert len(set(r.bodies.values()) - {-1}) == m.nbody - 1
    for name, i in r.bodies.items():
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        q = np.asarray(b.body_q[i])
        np.testing.assert_allclose(q[:3], d.xpos[k], atol=1e-12, err_msg=name)
        qw = np.roll(q[3:], 1)
        assert min(np.abs(qw - d.xquat[k]).max(), np.abs(qw + d.xquat[k]).max()) < 1e-12, name
        assert b.body_mass_given[i] == pytest.approx(m.body_mass[k], rel=1e-12), name
        np.testing.assert_allclose(b.body_com_given[i], m.body_ipos[k], atol=1e-12, err_msg=name)
        rot = quat_to_matrix(np.roll(m.body_iquat[k], -1))
        np.testing.assert_allclose(b.body_inertia_given[i], rot @ np.diag(m.body_inertia[k]) @ rot.T, atol=1e-12,
                                   err_msg=name)
    return m


def joints_of(path):
    desc = MjcfReader(path, Report("parse_mjcf")).read()
    return desc, {j.name: j for body in desc.bodies for j in body.joints}


@pytest.mark.parametrize("path", [CHAIN, WALKER])
def test_bodies_match_mujoco(path):
    b, r = import_quiet(path)
    assert_bodies_match_mujoco(path, b, r)


def test_joints_defaults_and_units_match_mujoco():
    """Nested default classes, childclass and class="main" give mujoco's joint ranges (degrees
    converted), damping, armature and limited flags."""
    mujoco = mujoco_or_skip()
    for path in (CHAIN, WALKER):
        m = mujoco.MjModel.from_xml_path(path)
        desc, joints = joints_of(path)
        for k in range(m.njnt):
            j = joints[m.joint(k).name]
            kind = {0: "free", 1: "ball", 2: "prismatic", 3: "revolute"}[int(m.jnt_type[k])]
            assert j.kind == kind, j.name
            if kind == "free":
                continue
            if m.jnt_limited[k]:
                np.testing.assert_allclose(j.limit, m.jnt_range[k], atol=1e-12, err_msg=j.name)
            else:
                assert j.limit is None, j.name
            assert j.damping == pytest.approx(m.dof_damping[m.jnt_dofadr[k]]), j.name
            assert j.armature == pytest.approx(m.dof_armature[m.jnt_dofadr[k]]), j.name
            body = next(bb for bb in desc.bodies if j in bb.joints)
            np.testing.assert_allclose(j.axis, m.jnt_axis[k], atol=1e-12, err_msg=j.name)
            np.testing.assert_allclose(j.pos, m.jnt_pos[k], atol=1e-12, err_msg=j.name)
            assert body.name == m.body(m.jnt_bodyid[k]).name
    _, joints = joints_of(WALKER)
    assert joints["hip_l"].damping == 0.5 and joints["hip_r"].damping == 0.2  # class leg vs class="main"


@pytest.mark.parametrize("seq", ["xyz", "zyx", "XYZ", "zxz", "ZYX", "xYz"])
@pytest.mark.parametrize("angle", ["degree", "radian"])
def test_euler_sequences_and_angle_units(tmp_path, seq, angle):
    mujoco = mujoco_or_skip()
    e = np.array([20.0, -35.0, 50.0]) if angle == "degree" else np.array([0.4, -0.6, 1.2])
    rng = "-90 45" if angle == "degree" else "-1.5 0.8"
    path = tmp_path / "euler.xml"
    path.write_text(f"""<mujoco><compiler angle="{angle}" eulerseq="{seq}"/><worldbody>
      <body name="a" pos="0.1 0.2 0.3" euler="{e[0]} {e[1]} {e[2]}">
        <joint name="j" range="{rng}"/><geom size="0.1"/>
        <body name="b" pos="0 0 0.5" axisangle="1 1 0 {e[2]}"><joint/><geom type="box" size="0.1 0.2 0.3"/></body>
      </body></worldbody></mujoco>""")
    b, r = import_quiet(str(path))
    m = assert_bodies_match_mujoco(str(path), b, r)
    _, joints = joints_of(str(path))
    np.testing.assert_allclose(joints["j"].limit, m.jnt_range[0], atol=1e-12)


def test_include_and_actuators():
    b, r = import_quiet(WALKER)
    assert r.gravity == (0.0, 0.0, -9.81) and r.timestep == 0.002
    acts = {a.name: a for a in r.actuators}
    assert acts["m_hip_l"].kind == "motor" and acts["m_hip_l"].gear == 20.0 and acts["m_hip_l"].ctrlrange == (-1, 1)
    assert acts["p_knee_l"].kind == "position" and acts["p_knee_l"].kp == 30.0
    assert acts["v_hip_r"].kind == "velocity" and acts["v_hip_r"].kv == 2.0
    _, joints = joints_of(WALKER)
    assert joints["knee_l"].target_ke == 30.0 and joints["hip_r"].target_kd == 2.0
    # the floor plane of the world body is a static plane whose normal is the file's +Z
    from sim.builder import quat_to_matrix

    planes = [s for s in r.shapes if b.shape_type[s] == sim.SHAPE_PLANE]
    assert len(planes) == 1 and b.shape_body[planes[0]] == -1
    np.testing.assert_allclose(quat_to_matrix(b.shape_quat[planes[0]]) @ [0, 1, 0], [0, 0, 1], atol=1e-12)
    # fromto capsules: radius from the class, half length from the segment, axis along it
    caps = [s for s in r.shapes if b.shape_type[s] == sim.SHAPE_CAPSULE]
    assert sorted(round(b.shape_scale[s][0], 6) for s in caps) == [0.03, 0.05]
    for s in caps:
        assert b.shape_scale[s][1] == pytest.approx(0.125)


def test_geom_kinds_masses_match_mujoco(tmp_path):
    """Mass properties from geoms of every kind (cylinder and ellipsoid exact, mesh by volume,
    an explicit geom mass) and explicit inertials with a rotated frame."""
    mesh = os.path.join(ASSETS, "meshes", "cube.stl")
    path = tmp_path / "geoms.xml"
    path.write_text(f"""<mujoco><compiler angle="radian"/>
      <asset><mesh name="cube" file="{mesh}" scale="1 2 3"/></asset>
      <worldbody>
        <body name="a" pos="0 0 1"><freejoint/>
          <geom type="cylinder" size="0.1 0.3" pos="0.1 0 0" euler="0.3 0.2 0.1"/>
          <geom type="ellipsoid" size="0.1 0.2 0.15" pos="0 0.3 0" density="300"/>
          <geom type="mesh" mesh="cube" pos="0 0 -0.2" quat="0.9 0.1 0.3 0.2"/>
          <geom type="sphere" size="0.05" mass="2" pos="0.3 0.1 0"/>
          <body name="b" pos="0.5 0 0"><joint type="ball"/>
            <inertial pos="0.1 0.02 0" quat="0.8 0.2 0.1 0.3" mass="1.5" diaginertia="0.01 0.02 0.025"/>
            <geom type="box" size="0.1 0.1 0.1"/>
          </body>
          <body name="c" pos="0 0.5 0"><joint type="slide" axis="1 1 0"/>
            <inertial pos="0 0 0" mass="0.5" fullinertia="0.01 0.02 0.025 0.001 -0.002 0.0005"/>
          </body>
        </body></worldbody></mujoco>""")
    b, r = import_quiet(str(path))
    assert_bodies_match_mujoco(str(path), b, r)


def test_frames_and_childclass_on_frames(tmp_path):
    """<frame> elements move the bodies, geoms and joints inside them (and pass a childclass on)."""
    path = tmp_path / "frames.xml"
    path.write_text("""<mujoco><default><default class="k"><geom density="3000"/><joint axis="1 0 0"/></default>
      </default><worldbody>
      <frame pos="0.5 0 0.2" euler="0 30 0">
        <body name="a" pos="0 0 1">
          <frame pos="0.1 0.2 0" axisangle="0 0 1 40" childclass="k">
            <geom type="box" size="0.1 0.05 0.02" pos="0.1 0 0"/>
            <joint name="jb" type="slide"/>
            <body name="b" pos="0.3 0 0"><joint name="jc"/><geom size="0.05"/></body>
          </frame>
        </body>
      </frame></worldbody></mujoco>""")
    b, r = import_quiet(str(path))
    m = assert_bodies_match_mujoco(str(path), b, r)
    _, joints = joints_of(str(path))
    for k in range(m.njnt):
        j = joints[m.joint(k).name]
        np.testing.assert_allclose(j.axis, m.jnt_axis[k], atol=1e-12, err_msg=j.name)
        np.testing.assert_allclose(j.pos, m.jnt_pos[k], atol=1e-12, err_msg=j.name)


def test_gravity_of_the_file(tmp_path):
    path = tmp_path / "g.xml"
    path.write_text('<mujoco><option gravity="0 0 -3"/><worldbody><body><freejoint/><geom size="1"/></body>'
                    '</worldbody></mujoco>')
    b = sim.ModelBuilder()  # Y up, -9.81
    with pytest.warns(sim.ModelImportWarning, match=r"the file's gravity \(0.0, 0.0, -3.0\) differs from the "
                                                    r"builder's \(0.0, -9.81, 0.0\)"):
        sim.parse_mjcf(str(path), b)
    assert b.gravity == (0.0, -9.81, 0.0)
    b = sim.ModelBuilder()
    r = sim.parse_mjcf(str(path), b, use_file_gravity=True)
    assert b.gravity == r.gravity == (0.0, 0.0, -3.0)


def test_actuator_forces_match_mujoco(tmp_path):
    """Motor, position (with kv) and velocity actuators with gears and a control range: the joint
    torques ke (target - q) + kd (target_vel - qd) + joint_f that sim.importers.Actuators sets up
    equal MuJoCo's qfrc_actuator at a random state and control."""
    mujoco = mujoco_or_skip()
    import kernelcore as kc
    from sim.importers import Actuators

    path = tmp_path / "act.xml"
    path.write_text("""<mujoco><worldbody><body name="a" pos="0 0 1"><joint name="j0" axis="0 1 0"/>
        <geom size="0.1"/><body name="b" pos="0.3 0 0"><joint name="j1" axis="0 1 0"/><geom size="0.1"/>
        <body name="c" pos="0.3 0 0"><joint name="j2" type="slide" axis="1 0 0"/><geom size="0.1"/>
        </body></body></body></worldbody>
      <actuator><motor joint="j0" gear="3" ctrlrange="-1 1"/><position joint="j1" kp="40" kv="2" gear="2"/>
        <velocity joint="j2" kv="5" gear="0.5"/></actuator></mujoco>""")
    b, r = import_quiet(str(path))
    model = b.finalize()
    acts = Actuators(r, model)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    for ctrl in ([0.4, 0.3, -0.7], [2.5, -0.2, 1.1]):  # the second motor control is clamped to 1
        q, qd = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        mujoco.mj_forward(m, d)
        control = model.control()
        acts.apply(kc.array(np.asarray(ctrl, np.float32), dtype=float), control)
        dofs = [r.joint_dof[n] for n in ("j0", "j1", "j2")]
        ke, kd = model.joint_target_ke.numpy()[dofs], model.joint_target_kd.numpy()[dofs]
        tp, tv = control.joint_target_pos.numpy()[dofs], control.joint_target_vel.numpy()[dofs]
        tau = control.joint_f.numpy()[dofs] + ke * (tp - q) + kd * (tv - qd)
        np.testing.assert_allclose(tau, d.qfrc_actuator, rtol=1e-5, atol=1e-5)


def test_joint_stiffness_is_a_drive_towards_springref(tmp_path):
    """MJCF joint springs k (springref - q) (degrees converted) equal mujoco's qfrc_spring."""
    mujoco = mujoco_or_skip()
    path = tmp_path / "spring.xml"
    path.write_text("""<mujoco><worldbody><body name="a" pos="0 0 1">
        <joint name="h" axis="0 1 0" stiffness="7" springref="20"/><geom size="0.1"/>
        <body name="b" pos="0.3 0 0"><joint name="s" type="slide" axis="1 0 0" stiffness="40" springref="0.1"/>
        <geom size="0.1"/></body></body></worldbody></mujoco>""")
    b, r = import_quiet(str(path))
    model = b.finalize()
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    q = np.array([0.3, -0.05])
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    dofs = [r.joint_dof["h"], r.joint_dof["s"]]
    ke, tp = model.joint_target_ke.numpy()[dofs], model.joint_target_pos.numpy()[dofs]
    np.testing.assert_allclose(ke * (tp - q), d.qfrc_spring, rtol=1e-5)
