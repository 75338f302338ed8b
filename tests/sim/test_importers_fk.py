"""Imported articulations against MuJoCo on the same files: body poses from ``sim.eval_fk``
at random joint configurations vs ``mujoco.mj_kinematics`` (every joint kind, compound
joints, a URDF arm through MuJoCo's URDF compiler), and a 3-link chain stepped by
SolverFeatherstone vs ``mujoco.mj_step`` over 0.5 s."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim

mujoco = pytest.importorskip("mujoco", reason="the mujoco package is the reference for imported robots")

ASSETS = os.path.join(os.path.dirname(__file__), "assets")
FILES = ["chain3.xml", "multi_joint.xml", "walker_parts.xml", "arm.urdf"]


def load(path):
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sim.ModelImportWarning)
        r = (sim.parse_urdf if path.endswith(".urdf") else sim.parse_mjcf)(path, b)
    return b, r


def random_configuration(m, r, q_default, rng):
    """The same random configuration as (our joint_q, mujoco qpos)."""
    q = q_default.copy()
    qpos = np.zeros(m.nq)
    for k in range(m.njnt):
        a, c = m.jnt_qposadr[k], r.joint_coord[m.joint(k).name]
        t = m.jnt_type[k]
        if t == mujoco.mjtJoint.mjJNT_FREE:
            p = rng.uniform(-1, 1, 3)
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)  # x, y, z, w
            q[c:c + 7] = np.concatenate([p, quat])
            qpos[a:a + 7] = np.concatenate([p, np.roll(quat, 1)])
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)
            q[c:c + 4] = quat
            qpos[a:a + 4] = np.roll(quat, 1)
        else:
            v = rng.uniform(-1.2, 1.2) if t == mujoco.mjtJoint.mjJNT_HINGE else rng.uniform(-0.1, 0.1)
            q[c] = qpos[a] = v
    return q, qpos


@pytest.mark.parametrize("name", FILES)
def test_eval_fk_matches_mj_kinematics(name):
    path = os.path.join(ASSETS, name)
    b, r = load(path)
    model = b.finalize()
    state = model.state()
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    assert model.joint_dof_count == m.nv
    rng = np.random.default_rng(7)
    for _ in range(4):
        q, qpos = random_configuration(m, r, state.joint_q.numpy(), rng)
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        sim.eval_fk(model, kc.array(q.astype(np.float32), dtype=float), state.joint_qd, state)
        body_q = state.body_q.numpy().astype(np.float64)
        compared = 0
        for body, i in r.bodies.items():
            k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body)
            if i < 0 or k < 0:
                continue  # merged into the world (MuJoCo fuses it too)
            np.testing.assert_allclose(body_q[i, :3], d.xpos[k], atol=1e-6, err_msg=body)
            ours = np.roll(body_q[i, 3:], 1)
            assert min(np.abs(ours - d.xquat[k]).max(), np.abs(ours + d.xquat[k]).max()) < 1e-6, body
            compared += 1
        assert compared == m.nbody - 1


def test_compound_joints_become_one_d6():
    b, r = load(os.path.join(ASSETS, "multi_joint.xml"))
    hip = r.joints["hip_x"]
    assert r.joints["hip_y"] == r.joints["hip_z"] == hip
    assert b.joint_type[hip] == sim.JOINT_D6
    assert [r.joint_dof[n] for n in ("hip_x", "hip_y", "hip_z")] == [6, 7, 8]
    assert b.joint_type[r.joints["ankle"]] == sim.JOINT_BALL
    assert b.joint_type[r.joints["root"]] == sim.JOINT_FREE
    model = b.finalize()
    lo = model.joint_limit_lower.numpy()
    assert lo[r.joint_dof["hip_x"]] == pytest.approx(-1.0) and lo[r.joint_dof["knee_slide"]] == pytest.approx(-0.05)
    assert model.joint_damping.numpy()[r.joint_dof["hip_z"]] == pytest.approx(0.1)


def test_chain_stepped_matches_mujoco():
    """The 3-link chain (damping, armature, a tilted second axis) released from a bent pose and
    stepped by SolverFeatherstone for 0.5 s: joint angles within 1e-2 rad of mj_step's."""
    path = os.path.join(ASSETS, "chain3.xml")
    b, r = load(path)
    model = b.finalize()
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    dt = m.opt.timestep
    q0 = {"j1": 0.6, "j2": -0.4, "j3": 0.9}
    s0, s1 = model.state(), model.state()
    q = s0.joint_q.numpy()
    for n, v in q0.items():
        q[r.joint_coord[n]] = v
        d.qpos[m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)]] = v
    s0.joint_q.assign(q.astype(np.float32))
    solver = sim.SolverFeatherstone(model)
    steps = int(round(0.5 / dt))
    worst = 0.0
    for step in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        mujoco.mj_step(m, d)
        if step % 50 == 49:
            ours = s0.joint_q.numpy()
            for n in q0:
                k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)
                worst = max(worst, abs(float(ours[r.joint_coord[n]]) - d.qpos[m.jnt_qposadr[k]]))
    assert worst < 1e-3  # the issue asks for 1e-2; measured 8e-7 (dropping the armature gives 3e-3)
    # it moved: the comparison is not of a chain at rest
    assert abs(d.qpos[0] - 0.6) > 0.1
