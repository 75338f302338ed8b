"""Scenes and step loops shared by the rigid time-of-impact tests (tests/sim/test_rigid_toi*.py).

Plain functions, no fixtures: each test builds its own model, so the tests stay independent.
Units are SI (m, m/s, kg/m^3, s).
"""
import numpy as np

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix


def impact_builder(e=1.0, mu=0.0, gravity=(0, 0, 0), ke=1e4):
    """A ModelBuilder for impact tests: no gravity by default, material 0 with restitution ``e`` and
    friction ``mu`` (e = 1, mu = 0: elastic, frictionless)."""
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=ke, restitution=e, mu=mu)
    return b


def add_free_body(b, pos, vel=(0, 0, 0), rot=(0, 0, 0, 1), ang_vel=(0, 0, 0)):
    """A body at ``pos`` with rotation ``rot`` (x, y, z, w), linear and angular velocity; returns its index."""
    return b.add_body(kc.transform(kc.vec3(*pos), kc.quat(*rot)), vel=vel, ang_vel=ang_vel)


def add_thin_static_wall(b, x=0.5, y=0.0, half_thickness=0.005, half_size=0.5):
    """A static box wall normal to x centred at (x, y, 0), ``2 half_thickness`` thick (1 cm by default)."""
    b.add_shape_box((x, y, 0.0), half_extents=(half_thickness, half_size, half_size))


def run_steps(m, solver, steps, dt):
    """``steps`` steps of ``dt`` from the model's initial state; returns the final state."""
    s0, s1 = m.state(), m.state()
    for _ in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


def run_recording(m, solver, steps, dt, record=None):
    """As :func:`run_steps`, also returning ``[record(state) for each step's end state]`` (empty without ``record``)."""
    s0, s1 = m.state(), m.state()
    out = []
    for _ in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if record:
            out.append(record(s0))
    return s0, out


def momentum_energy(m, s):
    """(linear momentum (3,), angular momentum about the origin (3,), kinetic energy), float64."""
    mass = m.body_mass.numpy().astype(np.float64)
    inertia = m.body_inertia.numpy().astype(np.float64)
    com = m.body_com.numpy().astype(np.float64)
    q = s.body_q.numpy().astype(np.float64)
    qd = s.body_qd.numpy().astype(np.float64)
    p, L, ke = np.zeros(3), np.zeros(3), 0.0
    for i in range(m.body_count):
        r = quat_to_matrix(q[i, 3:])
        x = q[i, :3] + r @ com[i]
        v, w = qd[i, :3], qd[i, 3:]
        iw = r @ inertia[i] @ r.T @ w
        p += mass[i] * v
        L += mass[i] * np.cross(x, v) + iw
        ke += 0.5 * mass[i] * v @ v + 0.5 * w @ iw
    return p, L, ke


def pose_gradient_and_fd(m, solver, qd0, w, steps, dt, eps=1e-3):
    """Gradient of ``sum(w * body_q)`` after ``steps`` steps w.r.t. body 0's initial velocity ``qd0`` (6,):
    the Tape's, float64 central finite differences of step ``eps``, and the largest upward velocity
    body 0 reached in the taped run (to check it bounced).  ``m`` needs ``requires_grad=True``."""
    states = [m.state() for _ in range(steps + 1)]

    def final_loss(qd):
        states[0].body_qd.numpy()[0, :] = qd
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    tape = kc.Tape()
    with tape:
        final_loss(qd0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[0].astype(np.float64)
    vy_max = max(float(s.body_qd.numpy()[0, 1]) for s in states)
    fd = np.array([(final_loss(qd0 + e) - final_loss(qd0 - e)) / (2 * eps) for e in np.eye(6) * eps])
    return grad, fd, vy_max
