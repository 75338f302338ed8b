"""Joints in SolverSemiImplicit (maximal coordinates, penalty joint forces, sim/joint_forces.py).

References: the exact large-amplitude period of a physical pendulum (complete elliptic
integral), SolverFeatherstone (generalised coordinates, so joints hold exactly) on the same
chain, static equilibria of drives and limits, momentum conservation, float64 central finite
differences of a rollout.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder.joints import quat_mul, quat_conj, quat_rotate

G = 9.81


def _run(model, solver, steps, dt, control=None, every=0):
    s0, s1 = model.state(), model.state()
    samples = []
    for k in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
        if every and (k + 1) % every == 0:
            samples.append(s0.body_q.numpy().astype(np.float64))
    return s0, samples


def _pendulum_period_error():
    """Relative error of the period of a physical pendulum released at 2 rad (115 degrees)."""
    from scipy.special import ellipk

    d, inertia, theta0, dt, every = 1.0, 0.1, 2.0, 1e-3, 5
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -G))
    body = b.add_body(mass=1.0, inertia=np.eye(3) * inertia, com=(0, 0, -d))
    b.add_joint_revolute(-1, body, axis=(0, 1, 0), q0=theta0)
    model = b.finalize()
    _, samples = _run(model, sim.SolverSemiImplicit(model), 3600, dt, every=every)
    com = np.array([x[0, :3] + quat_rotate(x[0, 3:], (0, 0, -d)) for x in samples])
    angle = np.arctan2(com[:, 0], -com[:, 2])
    t = (np.arange(len(angle)) + 1) * dt * every
    k = np.nonzero(np.sign(angle[:-1]) != np.sign(angle[1:]))[0]
    crossings = t[k] - angle[k] * (t[k + 1] - t[k]) / (angle[k + 1] - angle[k])
    assert len(crossings) >= 3, crossings
    period = crossings[2] - crossings[0]
    l_eff = (inertia + d * d) / d  # I_pivot / (m d)
    exact = 4.0 * np.sqrt(l_eff / G) * ellipk(np.sin(theta0 / 2) ** 2)
    return abs(period - exact) / exact, np.abs(angle).max()


def test_pendulum_period_matches_the_elliptic_integral():
    # penalty joint (stretch m g / ke ~ 1 mm) and explicit forces: 0.5% (measured 0.12%)
    error, amplitude = _pendulum_period_error()
    assert error < 5e-3, error
    assert abs(amplitude - 2.0) < 2e-2, amplitude  # no energy lost or gained


def _chain(limits=False):
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    l1 = b.add_body(mass=1.0, inertia=np.diag([0.05, 0.06, 0.04]), com=(0.1, -0.2, 0))
    l2 = b.add_body(mass=0.8, inertia=np.diag([0.04, 0.05, 0.045]), com=(0, -0.2, 0.05))
    l3 = b.add_body(mass=0.6, inertia=np.diag([0.04, 0.03, 0.035]), com=(0, -0.15, 0))
    l4 = b.add_body(mass=0.5, inertia=np.diag([0.03, 0.03, 0.03]), com=(0.1, 0, 0))
    b.add_joint_revolute(-1, l1, axis=(0, 0, 1), q0=0.5, damping=0.05)
    b.add_joint_prismatic(l1, l2, parent_xform=(0.1, -0.4, 0, 0, 0, 0, 1), axis=(0.6, 0.8, 0), q0=0.05,
                          target_ke=200.0, target_kd=5.0, target_pos=0.1)
    b.add_joint_ball(l2, l3, parent_xform=(0, -0.4, 0, 0, 0, 0, 1), q0=(0.1, 0.2, -0.1, 0.97),
                     qd0=(0.3, -0.5, 0.2), damping=0.02)
    b.add_joint_fixed(l3, l4, parent_xform=(0, -0.3, 0, 0, 0.3827, 0, 0.9239))
    return b


def _joint_errors(model, body_q):
    """Per joint: distance [m] between the origins of the two joint frames (across the axis for the
    prismatic joint) and the angle [rad] between them that the joint does not allow."""
    types, parents, children = (a.numpy() for a in (model.joint_type, model.joint_parent, model.joint_child))
    xp, xc = model.joint_X_p.numpy().astype(np.float64), model.joint_X_c.numpy().astype(np.float64)
    axes = model.joint_axis.numpy().astype(np.float64)
    starts = model.joint_qd_start.numpy()
    lin, ang = [], []
    for j in range(model.joint_count):
        wp = xp[j] if parents[j] < 0 else sim.builder.joints.tf_mul(body_q[parents[j]], xp[j])
        wc = sim.builder.joints.tf_mul(body_q[children[j]], xc[j])
        err = wc[:3] - wp[:3]
        rel = quat_mul(quat_conj(wp[3:]), wc[3:])
        rot = 2.0 * np.arcsin(min(1.0, np.linalg.norm(rel[:3])))
        if types[j] == sim.builder.joints.JOINT_PRISMATIC:
            a = quat_rotate(wp[3:], axes[starts[j]])
            err = err - a * (err @ a)
        if types[j] == sim.builder.joints.JOINT_REVOLUTE:
            a = axes[starts[j]]
            rot = np.arccos(np.clip(quat_rotate(rel, a) @ a, -1, 1))  # swing of the axis
        if types[j] == sim.builder.joints.JOINT_BALL:
            rot = 0.0
        lin.append(np.linalg.norm(err))
        ang.append(rot)
    return np.array(lin), np.array(ang)


def test_chain_stays_connected_and_follows_featherstone():
    """All four joint types on one swinging chain: the joints hold (separation < 5 mm, disallowed
    rotation < 0.01 rad at every sampled step) and the coordinates after 0.5 s agree with the
    generalised-coordinate solver to 0.01 rad / 0.01 m (measured 3.5e-3; they converge as the
    attach stiffness grows)."""
    model = _chain().finalize()
    dt, steps = 5e-4, 1000
    state, samples = _run(model, sim.SolverSemiImplicit(model, joint_attach_kd=20.0), steps, dt, every=50)
    for body_q in samples:
        lin, ang = _joint_errors(model, body_q)
        assert lin.max() < 5e-3 and ang.max() < 1e-2, (lin, ang)
    ref, _ = _run(model, sim.SolverFeatherstone(model, contacts=False), steps, dt)
    q = kc.zeros(model.joint_coord_count, dtype=float)
    qd = kc.zeros(model.joint_dof_count, dtype=float)
    sim.eval_ik(model, state, q, qd)
    q, q_ref = q.numpy(), ref.joint_q.numpy()
    if np.dot(q[2:6], q_ref[2:6]) < 0:
        q[2:6] *= -1.0  # the ball's quaternion has no fixed sign
    np.testing.assert_allclose(q, q_ref, atol=1e-2)
    assert abs(q_ref[0] - 0.5) > 0.3  # it really swung


def test_revolute_limit_and_prismatic_drive_reach_their_static_equilibria():
    """A horizontal arm falling onto its lower limit rests at lower - m g d / limit_ke; a slider
    with a PD drive along gravity rests at target - m g / target_ke."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -G))
    arm = b.add_body(mass=1.0, inertia=np.eye(3) * 0.1, com=(0.5, 0, 0))
    # turning about -y lifts the arm: q < 0 is downwards
    b.add_joint_revolute(-1, arm, axis=(0, -1, 0), limit_lower=-0.3, limit_upper=1.0, limit_ke=500.0,
                         limit_kd=5.0, damping=0.5)
    slider = b.add_body(xform=(2.0, 0, 0, 0, 0, 0, 1), mass=2.0, inertia=np.eye(3) * 0.1)
    b.add_joint_prismatic(-1, slider, parent_xform=(2.0, 0, 0, 0, 0, 0, 1), axis=(0, 0, 1), target_ke=400.0,
                          target_kd=20.0, target_pos=0.25)
    model = b.finalize()
    state, _ = _run(model, sim.SolverSemiImplicit(model, joint_attach_kd=20.0), 3000, 1e-3)
    q = kc.zeros(model.joint_coord_count, dtype=float)
    qd = kc.zeros(model.joint_dof_count, dtype=float)
    sim.eval_ik(model, state, q, qd)
    q = q.numpy()
    arm_rest = -0.3 - G * 0.5 * np.cos(0.3) / 500.0  # gravity torque m g d cos(q) at the limit
    slider_rest = 0.25 - 2.0 * G / 400.0
    assert abs(q[0] - arm_rest) < 3e-3, (q[0], arm_rest)
    assert abs(q[1] - slider_rest) < 3e-3, (q[1], slider_rest)
    assert np.abs(qd.numpy()).max() < 1e-2


def test_joint_forces_conserve_momentum():
    """Without gravity or the world, joint forces are internal: linear and angular momentum keep."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    base = b.add_body(mass=1.5, inertia=np.diag([0.06, 0.05, 0.04]), vel=(0.2, 0, 0), ang_vel=(0, 0, 1.0))
    l1 = b.add_body(mass=1.0, inertia=np.diag([0.05, 0.06, 0.04]), com=(0.1, -0.2, 0))
    l2 = b.add_body(mass=0.8, inertia=np.diag([0.04, 0.05, 0.045]), com=(0, -0.2, 0.05))
    b.add_joint_free(base)
    b.add_joint_revolute(base, l1, axis=(0, 0, 1), q0=0.5, qd0=2.0, target_ke=50.0, target_pos=-0.3)
    b.add_joint_ball(l1, l2, parent_xform=(0.1, -0.4, 0, 0, 0, 0, 1), qd0=(1.0, -2.0, 0.5))
    model = b.finalize()

    def momentum(state):
        q, qd = state.body_q.numpy().astype(np.float64), state.body_qd.numpy().astype(np.float64)
        mass, com, inertia = (model.body_mass.numpy(), model.body_com.numpy(), model.body_inertia.numpy())
        p, h = np.zeros(3), np.zeros(3)
        for i in range(model.body_count):
            c = q[i, :3] + quat_rotate(q[i, 3:], com[i])
            r = np.stack([quat_rotate(q[i, 3:], e) for e in np.eye(3)], axis=1)  # body rotation matrix
            p += mass[i] * qd[i, :3]
            h += mass[i] * np.cross(c, qd[i, :3]) + r @ inertia[i] @ r.T @ qd[i, 3:]
        return p, h

    s0 = model.state()
    p0, h0 = momentum(s0)
    state, _ = _run(model, sim.SolverSemiImplicit(model, joint_attach_kd=20.0), 400, 5e-4)
    p1, h1 = momentum(state)
    assert np.linalg.norm(h0) > 0.5
    np.testing.assert_allclose(p1, p0, atol=1e-3 * np.linalg.norm(p0) + 1e-4)
    np.testing.assert_allclose(h1, h0, atol=1e-3 * np.linalg.norm(h0) + 1e-4)


@kc.kernel
def body_loss_kernel(body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                     wx: kc.array(dtype=kc.vec3), wv: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(kc.transform_get_translation(body_q[i]), wx[i])
                  + kc.dot(kc.spatial_top(body_qd[i]), wv[i]))


GRAD_STEPS = 100


def _grad_rollout(model, qd0, joint_f, target_pos, wx, wv, dt, tape=None):
    states = [model.state() for _ in range(GRAD_STEPS + 1)]
    states[0].body_qd.assign(qd0.astype(np.float32))
    control = model.control()
    control.joint_f.assign(joint_f.astype(np.float32))
    control.joint_target_pos.assign(target_pos.astype(np.float32))
    solver = sim.SolverSemiImplicit(model, joint_attach_kd=20.0)
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def steps():
        for k in range(GRAD_STEPS):
            solver.step(model, states[k], states[k + 1], control, dt)
        kc.launch(body_loss_kernel, dim=model.body_count,
                  inputs=[states[-1].body_q, states[-1].body_qd, kc.array(wx.astype(np.float32), dtype=kc.vec3),
                          kc.array(wv.astype(np.float32), dtype=kc.vec3)], outputs=[loss])

    if tape is None:
        steps()
    else:
        with tape:
            steps()
    return loss, states, control


def test_gradients_through_joint_forces_match_finite_differences():
    model = _chain().finalize(requires_grad=True)
    rng = np.random.default_rng(3)
    dt, eps = 5e-4, 1e-2
    qd0 = model.state().body_qd.numpy().astype(np.float64)
    joint_f = rng.normal(size=model.joint_dof_count) * 2.0
    target = model.joint_target_pos.numpy().astype(np.float64)
    wx = rng.normal(size=(model.body_count, 3))
    wv = rng.normal(size=(model.body_count, 3)) * 0.1
    tape = kc.Tape()
    loss, states, control = _grad_rollout(model, qd0, joint_f, target, wx, wv, dt, tape)
    tape.backward(loss)
    grads = {"body_qd": states[0].body_qd.grad.numpy().astype(np.float64),
             "joint_f": control.joint_f.grad.numpy().astype(np.float64),
             "joint_target_pos": control.joint_target_pos.grad.numpy().astype(np.float64)}

    def host_loss(name, e, delta):
        args = dict(body_qd=qd0, joint_f=joint_f, joint_target_pos=target)
        args[name] = args[name] + e * delta
        loss, _, _ = _grad_rollout(model, args["body_qd"], args["joint_f"], args["joint_target_pos"], wx, wv, dt)
        return float(loss.numpy()[0])

    for name, grad in grads.items():
        delta = rng.normal(size=grad.shape)
        if name != "body_qd":
            delta = delta * 10.0  # forces act for 50 ms only: a larger step keeps float32 noise out of the FD
        numeric = (host_loss(name, eps, delta) - host_loss(name, -eps, delta)) / (2 * eps)
        analytic = float((grad * delta).sum())
        assert abs(numeric) > 1e-3, (name, numeric)
        assert abs(analytic - numeric) <= 2e-2 * abs(numeric), (name, analytic, numeric)


def test_d6_joints_and_bad_gains_raise_and_armature_warns():
    b = sim.ModelBuilder()
    body = b.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_joint_d6(-1, body, linear_axes=[(1, 0, 0)], angular_axes=[(0, 0, 1)], name="slide_turn")
    model = b.finalize()
    with pytest.raises(ValueError, match="SolverSemiImplicit: joint 0 \\('slide_turn'\\) is a d6 joint"):
        sim.SolverSemiImplicit(model)
    b = sim.ModelBuilder()
    body = b.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_joint_revolute(-1, body, armature=0.01, name="motor")
    model = b.finalize()
    with pytest.warns(UserWarning, match="armature is not modelled .*joint 0 'motor' has 0.01"):
        sim.SolverSemiImplicit(model)
    with pytest.raises(ValueError, match="joint_attach_ke must be a finite number >= 0, got -1.0"):
        sim.SolverSemiImplicit(model, joint_attach_ke=-1.0)
