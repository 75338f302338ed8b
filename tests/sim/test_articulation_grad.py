"""SolverFeatherstone gradients through 50 steps (kc.Tape) against central finite differences.

The loss is a fixed random weighting of the final coordinates and velocities, reduced in
float64 on the host for the finite differences; each check compares the directional
derivative grad . delta with (L(p + eps delta) - L(p - eps delta)) / (2 eps) for a random
direction delta, eps large enough to dwarf float32 round-off.
"""
import numpy as np

import kernelcore as kc
import sim

STEPS = 50


@kc.kernel
def weighted_sum_kernel(x: kc.array(dtype=float), w: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i] * w[i])


def _chain():
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    l1 = b.add_body(mass=1.0, inertia=np.diag([0.02, 0.03, 0.01]), com=(0.1, -0.2, 0))
    l2 = b.add_body(mass=0.7, inertia=np.diag([0.01, 0.015, 0.005]), com=(0, -0.2, 0.05))
    l3 = b.add_body(mass=0.4, inertia=np.diag([0.004, 0.005, 0.003]), com=(0, -0.15, 0))
    b.add_joint_revolute(-1, l1, axis=(0, 0, 1), q0=0.5, damping=0.05)
    b.add_joint_revolute(l1, l2, parent_xform=(0.1, -0.4, 0, 0, 0, 0, 1), axis=(1, 0, 0), q0=-0.3, target_ke=5.0,
                         target_kd=0.5, target_pos=0.2)
    b.add_joint_ball(l2, l3, parent_xform=(0, -0.4, 0, 0, 0, 0, 1), q0=(0.1, 0.2, -0.1, 0.97), qd0=(0.3, -0.5, 0.2))
    return b


def _contact_scene():
    """A pendulum whose bob slides on the ground and a free ball sliding and spinning on it, both in
    contact for all 50 steps (contact onsets and stick/slip switches are kinks of the loss, so finite
    differences across one would not measure a derivative)."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=5e3, mu=0.5, restitution=0.5)
    bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.5, 0, 0))
    b.add_shape_sphere(pos=(0.5, 0, 0), radius=0.1, body=bob, density=1.0)
    b.add_joint_revolute(-1, bob, parent_xform=(0, 0.35, 0, 0, 0, 0, 1), axis=(0, 0, 1), q0=-0.528, qd0=-3.0)
    ball = b.add_body(xform=(2.0, 0.097, 0.0, 0.0, 0.0, 0.0, 1.0), vel=(2.0, -0.1, 0.8), ang_vel=(1.0, 2.0, 3.0))
    b.add_shape_sphere(radius=0.1, body=ball, density=500.0)
    b.add_joint_free(ball)
    return b


def _setup(model, q0, qd0, forces):
    """States (STEPS + 1) starting at coordinates q0/qd0 (numpy) and controls with per-step joint
    forces (STEPS, D); made outside any Tape (an assign on a Tape is a recorded copy)."""
    states = [model.state() for _ in range(STEPS + 1)]
    states[0].joint_q.assign(q0.astype(np.float32))
    states[0].joint_qd.assign(qd0.astype(np.float32))
    controls = []
    for k in range(STEPS):
        c = model.control()
        c.joint_f.assign(forces[k].astype(np.float32))
        controls.append(c)
    return states, controls


def _rollout(model, q0, qd0, forces, dt, tape=None):
    states, controls = _setup(model, q0, qd0, forces)
    _steps(model, states, controls, dt)
    return states, controls


def _steps(model, states, controls, dt):
    solver = sim.SolverFeatherstone(model)
    for k in range(STEPS):
        solver.step(model, states[k], states[k + 1], controls[k], dt)


def _loss_host(model, q0, qd0, forces, wq, wqd, dt):
    states, _ = _rollout(model, q0, qd0, forces, dt)
    s = states[-1]
    return float(s.joint_q.numpy().astype(np.float64) @ wq + s.joint_qd.numpy().astype(np.float64) @ wqd)


def _gradients(model, q0, qd0, forces, wq, wqd, dt):
    tape = kc.Tape()
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    states, controls = _setup(model, q0, qd0, forces)
    with tape:
        _steps(model, states, controls, dt)
        s = states[-1]
        kc.launch(weighted_sum_kernel, dim=model.joint_coord_count,
                  inputs=[s.joint_q, kc.array(wq.astype(np.float32), dtype=float)], outputs=[loss])
        kc.launch(weighted_sum_kernel, dim=model.joint_dof_count,
                  inputs=[s.joint_qd, kc.array(wqd.astype(np.float32), dtype=float)], outputs=[loss])
    tape.backward(loss)
    gq = states[0].joint_q.grad.numpy().astype(np.float64)
    gqd = states[0].joint_qd.grad.numpy().astype(np.float64)
    gf = np.stack([c.joint_f.grad.numpy().astype(np.float64) for c in controls])
    return gq, gqd, gf


def _check(builder, dt, eps, rtol, seed=0):
    model = builder.finalize(requires_grad=True)
    rng = np.random.default_rng(seed)
    q0 = model.joint_q.numpy().astype(np.float64)
    qd0 = model.joint_qd.numpy().astype(np.float64)
    forces = rng.normal(size=(STEPS, model.joint_dof_count)) * 0.5
    wq = rng.normal(size=model.joint_coord_count)
    wqd = rng.normal(size=model.joint_dof_count) * 0.1
    gq, gqd, gf = _gradients(model, q0, qd0, forces, wq, wqd, dt)

    def fd(fn):
        return (fn(eps) - fn(-eps)) / (2 * eps)

    checks = []
    for name, grad, make in (
            ("joint_q", gq, lambda d, e: (q0 + e * d, qd0, forces)),
            ("joint_qd", gqd, lambda d, e: (q0, qd0 + e * d, forces)),
            ("joint_f", gf, lambda d, e: (q0, qd0, forces + e * d))):
        delta = rng.normal(size=grad.shape)
        numeric = fd(lambda e: _loss_host(model, *make(delta, e), wq, wqd, dt))
        analytic = float((grad * delta).sum())
        checks.append((name, analytic, numeric))
    for name, analytic, numeric in checks:
        assert abs(analytic - numeric) <= rtol * max(abs(numeric), 1e-3), (name, analytic, numeric, checks)
    return checks


def test_gradients_of_a_chain_with_drives_match_finite_differences():
    checks = _check(_chain(), dt=2e-3, eps=2e-3, rtol=2e-2)
    assert all(abs(n) > 1e-2 for _, _, n in checks)  # the loss really depends on every input


def test_gradients_through_ground_contact_match_finite_differences():
    checks = _check(_contact_scene(), dt=2e-3, eps=1e-3, rtol=5e-2, seed=1)
    assert all(abs(n) > 1e-2 for _, _, n in checks)


def test_contact_scene_really_touches_the_ground():
    model = _contact_scene().finalize()
    states, _ = _rollout(model, model.joint_q.numpy(), model.joint_qd.numpy(), np.zeros((STEPS, 7)), 2e-3)
    touched = [float(np.abs(s.body_f.numpy()[:, :3]).max()) for s in states[1:]]
    assert max(touched) > 1.0
