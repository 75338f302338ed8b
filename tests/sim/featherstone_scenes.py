"""Scenes, step loops and gradient checks shared by the SolverFeatherstone(toi=True) tests
(tests/sim/test_featherstone_toi*.py).

Plain functions, no fixtures: each test builds its own model, so the tests stay independent.
Units are SI (m, m/s, kg/m^3, s, rad).  A scene's link shape comes from an ``add_shape(builder,
body)`` callable, so one scene serves spheres, boxes, capsules and meshes.
"""
import contextlib

import numpy as np
import pytest

import kernelcore as kc
import sim

#: top face [m] of the 2 cm thick static box of :func:`free_link_model` (``wall=True``)
WALL_TOP = 0.51
#: face [m] (x) of the 2 cm static wall of :func:`pendulum_model`
PENDULUM_WALL = 0.3
#: pendulum rod length [m] (pivot to the bob's centre) and initial rate [rad/s] of :func:`pendulum_model`
ROD = 0.5
PENDULUM_RATE = 200.0


def free_link_model(add_shape, e, y0, vel, gravity, mu=0.5, wall=False, ang_vel=(0.0, 0.0, 0.0),
                    requires_grad=False):
    """One free-jointed link at height ``y0`` with velocity ``vel`` and angular velocity ``ang_vel`` above
    the ground (gravity ``gravity`` along y), material 0 with restitution ``e`` and friction ``mu``;
    ``wall``: a static box 2 cm thick whose top face is at ``WALL_TOP``.  ``add_shape(b, body)`` adds the
    link's shape."""
    b = sim.ModelBuilder(gravity=(0.0, gravity, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=1e4, mu=mu, restitution=e)
    if wall:
        b.add_shape_box(pos=(0.0, 0.5, 0.0), half_extents=(1.0, 0.01, 1.0))  # top face at WALL_TOP
    body = b.add_body(xform=(0.0, y0, 0.0, 0, 0, 0, 1), vel=vel, ang_vel=ang_vel)
    add_shape(b, body)
    b.add_joint_free(body)
    return b.finalize(requires_grad=requires_grad)


def run(model, solver, steps, dt):
    """``steps`` steps of ``dt`` from the model's state: (joint_q[1] (the free link's height) after each
    step, joint_qd after each step (steps, dofs), the final state)."""
    s0, s1 = model.state(), model.state()
    heights, qds = [], []
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        heights.append(float(s0.joint_q.numpy()[1]))
        qds.append(s0.joint_qd.numpy().copy())
    return np.array(heights), np.array(qds), s0


def box_mesh(centre, half):
    """(vertices (8, 3), triangle indices (36,)) of a closed box mesh, outward-wound."""
    c, h = np.asarray(centre, float), np.asarray(half, float)
    verts = np.array([c + h * (x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = []
    for a, b, c2, d in quads:
        tris += [a, b, c2, a, c2, d]
    return verts, np.array(tris)


def pendulum_model(add_bob, e, wall="box"):
    """A bob (mass 1 kg, inertia 1e-3 kg m^2, centre ``ROD`` below a pivot at y = 1 turning about z) at
    ``PENDULUM_RATE`` towards a 2 cm static wall whose face is at x = ``PENDULUM_WALL``; no gravity, no
    friction.  ``add_bob(b, body)`` adds the bob's shape at (0, -ROD, 0) in the body frame; ``wall``:
    "box" (a static box) or "mesh" (the same box as a static triangle mesh)."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.0, restitution=e)
    if wall == "mesh":
        verts, tris = box_mesh((0.31, 0.8, 0.0), (0.01, 0.5, 0.5))
        b.add_shape_mesh(verts, tris)
    else:
        b.add_shape_box(pos=(0.31, 0.8, 0.0), half_extents=(0.01, 0.5, 0.5))  # face at PENDULUM_WALL
    bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.0, -ROD, 0.0))
    add_bob(b, bob)
    b.add_joint_revolute(-1, bob, parent_xform=(0.0, 1.0, 0.0, 0, 0, 0, 1), axis=(0, 0, 1), q0=0.0,
                         qd0=PENDULUM_RATE)
    return b.finalize()


def run_pendulum(model, toi, steps=15, dt=1e-3):
    """The pendulum's angle [rad] and rate [rad/s] after each of ``steps`` steps (numpy (steps,) each)."""
    s0, s1 = model.state(), model.state()
    solver = sim.SolverFeatherstone(model, toi=toi)
    angles, rates = [], []
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        angles.append(float(s0.joint_q.numpy()[0]))
        rates.append(float(s0.joint_qd.numpy()[0]))
    return np.array(angles), np.array(rates)


def impact_angle(angles, rates, e, dt=1e-3, w=PENDULUM_RATE):
    """The pendulum's angle [rad] at its impact, from the step that reversed: after that step the angle
    is ``theta_hit - e w (1 - s) dt``, so the fraction ``s`` follows from the angles before and after it."""
    k = int(np.argmax(np.asarray(rates) < 0.0))
    s = (angles[k] - angles[k - 1] + e * w * dt) / ((1.0 + e) * w * dt)
    return angles[k - 1] + w * s * dt


@kc.kernel
def weighted_sum_kernel(x: kc.array(dtype=float), w: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i] * w[i])


def rollout(model, q0, qd0, steps, dt, wq, wqd, tape=None, toi=True, self_collision=False, control=None):
    """``steps`` steps (``toi``, ``self_collision``: SolverFeatherstone's; every step under ``control``) from
    joint_q ``q0`` / joint_qd ``qd0`` (numpy) through distinct states:
    (the states, loss = wq . joint_q_T + wqd . joint_qd_T (kc (1,))), recorded on ``tape`` when given."""
    states = [model.state() for _ in range(steps + 1)]
    states[0].joint_q.assign(q0.astype(np.float32))
    states[0].joint_qd.assign(qd0.astype(np.float32))
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    solver = sim.SolverFeatherstone(model, toi=toi, self_collision=self_collision)
    with (tape if tape is not None else contextlib.nullcontext()):
        for k in range(steps):
            solver.step(model, states[k], states[k + 1], control, dt)
        kc.launch(weighted_sum_kernel, dim=model.joint_coord_count,
                  inputs=[states[-1].joint_q, kc.array(wq.astype(np.float32), dtype=float)], outputs=[loss])
        kc.launch(weighted_sum_kernel, dim=model.joint_dof_count,
                  inputs=[states[-1].joint_qd, kc.array(wqd.astype(np.float32), dtype=float)], outputs=[loss])
    return states, loss


def assert_bounce_gradient_is_minus_e(model, e, steps, dt, expected_height):
    """No gravity, no friction, one flat landing at 2 m/s: the height after ``steps`` steps is
    ``expected_height`` and the Tape's d y_T / d y_0 = -e, d y_T / d vy_0 = -e T."""
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    wq = np.zeros(model.joint_coord_count)
    wq[1] = 1.0
    tape = kc.Tape()
    states, loss = rollout(model, q0, qd0, steps, dt, wq, np.zeros(model.joint_dof_count), tape)
    assert float(loss.numpy()[0]) == pytest.approx(expected_height, abs=1e-4)
    tape.backward(loss)
    assert float(states[0].joint_q.grad.numpy()[1]) == pytest.approx(-e, rel=1e-3)
    assert float(states[0].joint_qd.grad.numpy()[1]) == pytest.approx(-e * steps * dt, rel=1e-3)


def assert_gradients_match_fd(model, q0, qd0, steps, dt, seed=3, eps=1e-3, toi=True):
    """The Tape's directional derivatives of a random weighting of a free link's final state (not its
    quaternion: its sign and norm are gauge) along random directions of q0 and qd0, against float64
    central differences of the same simulation (SolverFeatherstone(toi=toi)).  Returns the taped run's states."""
    rng = np.random.default_rng(seed)
    wq, wqd = rng.normal(size=model.joint_coord_count), rng.normal(size=model.joint_dof_count) * 0.1
    wq[3:] = 0.0
    tape = kc.Tape()
    states, loss = rollout(model, q0, qd0, steps, dt, wq, wqd, tape, toi)
    tape.backward(loss)
    gq = states[0].joint_q.grad.numpy().astype(np.float64)
    gqd = states[0].joint_qd.grad.numpy().astype(np.float64)

    def host_loss(q, qd):
        s = rollout(model, q, qd, steps, dt, wq, wqd, toi=toi)[0][-1]
        return float(s.joint_q.numpy().astype(np.float64) @ wq + s.joint_qd.numpy().astype(np.float64) @ wqd)

    for grad, make in ((gq, lambda d, h: (q0 + h * d, qd0)), (gqd, lambda d, h: (q0, qd0 + h * d))):
        delta = rng.normal(size=grad.shape)
        if grad is gq:
            delta[3:] = 0.0
        numeric = (host_loss(*make(delta, eps)) - host_loss(*make(delta, -eps))) / (2 * eps)
        analytic = float(grad @ delta)
        assert abs(numeric) > 1e-2
        assert analytic == pytest.approx(numeric, rel=3e-2, abs=1e-3)
    return states
