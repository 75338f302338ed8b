"""Time-of-impact contacts of box and capsule bodies (sim/toi_shapes.py): bounces, tunnelling,
energy, gradients."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import add_free_body, add_thin_static_wall, impact_builder, pose_gradient_and_fd, run_recording

pytest.importorskip("geometry")

HALF = (0.1, 0.05, 0.08)


def _box_model(e=0.6, mu=0.0, gravity=(0, -9.81, 0), pos=(0, 0.55, 0), vel=(0, 0, 0), rot=(0, 0, 0, 1),
               ang_vel=(0, 0, 0), ground=True, ground_offset=0.0, requires_grad=False, kind="box", extra=None):
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=1e4, restitution=e, mu=mu)
    if ground:
        b.set_ground_plane(offset=ground_offset)
    if extra:
        extra(b)
    body = add_free_body(b, pos, vel, rot, ang_vel)
    if kind == "box":
        b.add_shape_box(half_extents=HALF, body=body)
    else:
        b.add_shape_capsule(radius=0.05, half_height=0.1, body=body)
    m = b.finalize(requires_grad=requires_grad)
    return m, sim.SolverSemiImplicit(m, toi=True)


def test_box_bounce_heights_follow_e_squared():
    e = 0.6
    m, solver = _box_model(e=e)
    _, rec = run_recording(m, solver, 1800, 1e-3,
                  lambda s: (s.body_q.numpy()[0].copy(), s.body_qd.numpy()[0].copy()))
    y = np.array([q[1] for q, _ in rec]) - HALF[1]
    vy = np.array([qd[1] for _, qd in rec])
    apex = np.nonzero((vy[:-1] > 0) & (vy[1:] <= 0))[0]
    assert len(apex) >= 2
    np.testing.assert_allclose(y[apex[0]] / 0.5, e ** 2, rtol=0.02)
    np.testing.assert_allclose(y[apex[1]] / 0.5, e ** 4, rtol=0.03)
    assert y.min() > -1e-4                      # never below the ground
    spin = np.abs(np.array([qd[3:] for _, qd in rec])).max()
    assert spin < 1e-3                          # a flat landing on four corners does not tip it


def test_box_comes_to_rest_on_the_ground():
    m, solver = _box_model(e=0.5, mu=0.5, pos=(0, 0.3, 0), vel=(0.5, 0, 0))
    s, _ = run_recording(m, solver, 1500, 1e-3)
    q, qd = s.body_q.numpy()[0], s.body_qd.numpy()[0]
    assert abs(q[1] - HALF[1]) < 2e-3
    assert np.abs(qd).max() < 1e-2


@pytest.mark.parametrize("kind", ["box", "capsule"])
def test_fast_thin_body_does_not_tunnel_through_a_thin_wall(kind):
    # a 1 cm thin box (or a 1 cm capsule) at 100 m/s, a 1 cm static box wall, dt = 0.01
    b = impact_builder()
    add_thin_static_wall(b, y=0.5)
    body = b.add_body(kc.transform(kc.vec3(0, 0.5, 0), kc.quat(0, 0, 0, 1)), vel=(100.0, 0, 0))
    if kind == "box":
        b.add_shape_box(half_extents=(0.005, 0.05, 0.05), body=body)
    else:  # lying across the path: its side hits the wall
        b.add_shape_capsule(radius=0.005, half_height=0.05, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 3, 0.01, lambda s: s.body_q.numpy()[0, 0])
    vx = float(s.body_qd.numpy()[0, 0])
    assert max(rec) < 0.495 - 0.005 + 1e-4
    np.testing.assert_allclose(vx, -100.0, rtol=1e-4)
    np.testing.assert_allclose(rec[0], 0.49 - (1.0 - 0.49), atol=1e-4)  # bounced at the wall, not before


def test_tumbling_box_landing_on_a_corner_gains_no_energy():
    # e = 1, frictionless: impacts may only keep (or, when several corners touch, lose) energy
    g = 9.81
    rot = np.array([0.3, 0.2, 0.1, 1.0])
    rot /= np.linalg.norm(rot)
    m, solver = _box_model(e=1.0, mu=0.0, pos=(0, 0.4, 0), rot=tuple(rot), ang_vel=(2.0, -3.0, 1.0))
    mass = float(m.body_mass.numpy()[0])
    inertia = m.body_inertia.numpy()[0].astype(np.float64)

    def energy(s):
        q, qd = s.body_q.numpy()[0].astype(np.float64), s.body_qd.numpy()[0].astype(np.float64)
        x, y, z, w = q[3:]
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        om = r.T @ qd[3:]
        return 0.5 * mass * qd[:3] @ qd[:3] + 0.5 * om @ inertia @ om + mass * g * q[1]

    s0 = m.state()
    e0 = energy(s0)
    s, rec = run_recording(m, solver, 1500, 1e-3, lambda s: (energy(s), s.body_q.numpy()[0, 1], s.body_qd.numpy()[0, 1]))
    es = np.array([r[0] for r in rec])
    vy = np.array([r[2] for r in rec])
    assert (np.diff(np.sign(vy)) > 0).sum() >= 2   # it bounced (at least twice)
    assert es.max() < e0 * (1 + 2e-3)               # and never gained energy
    assert es[-1] > 0.3 * e0                         # nor lost most of it (mostly elastic)


def _drop_box_rollout(steps=203, dt=0.002, e=0.8):
    # DiffTaichi's bouncing ball set-up with a box landing flat: no gravity, ground at y = 0.1
    m, solver = _box_model(e=e, gravity=(0, 0, 0), pos=(0, 0.5, 0), vel=(-1.0, -2.0, 0.0), ground_offset=0.1,
                           requires_grad=True)
    states = [m.state() for _ in range(steps + 1)]

    def run(h0=0.5, vy0=-2.0):
        states[0].body_q.numpy()[0, 1] = h0
        states[0].body_qd.numpy()[0, 1] = vy0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float(states[-1].body_q.numpy()[0, 1])

    return m, states, run


def test_box_bounce_gradients_are_those_of_the_real_bounce():
    e, steps, dt = 0.8, 203, 0.002
    m, states, run = _drop_box_rollout(steps, dt, e)
    tape = kc.Tape()
    with tape:
        h = run()
    seed = np.zeros((1, 7), np.float32)
    seed[0, 1] = 1.0
    tape.backward(grads={states[-1].body_q: seed})
    d_h0 = float(states[0].body_q.grad.numpy()[0, 1])
    d_vy0 = float(states[0].body_qd.grad.numpy()[0, 1])
    t = steps * dt
    floor = 0.1 + HALF[1]
    t_hit = (0.5 - floor) / 2.0
    np.testing.assert_allclose(h, floor + e * 2.0 * (t - t_hit), atol=1e-4)
    np.testing.assert_allclose(d_h0, -e, rtol=0.02)
    np.testing.assert_allclose(d_vy0, -e * t, rtol=0.02)
    eps = 1e-3
    fd = (run(0.5 + eps) - run(0.5 - eps)) / (2 * eps)
    np.testing.assert_allclose(d_h0, fd, rtol=0.02)


def test_gradient_of_a_tumbling_box_corner_impact_matches_finite_differences():
    # a spinning, tilted box hits the ground with one corner: the time of impact depends on the
    # rotation during the step; Tape gradients of the final pose equal float64 finite differences
    rot = np.array([0.25, 0.1, -0.15, 1.0])
    rot /= np.linalg.norm(rot)
    m, solver = _box_model(e=0.7, mu=0.3, gravity=(0, -2.0, 0), pos=(0, 0.25, 0), vel=(0.3, -1.5, 0.0),
                           rot=tuple(rot), ang_vel=(3.0, 1.0, -2.0), requires_grad=True)
    w = np.zeros((1, 7), np.float32)
    w[0, :3] = (1.0, 0.7, -0.4)
    grad, fd, vy_max = pose_gradient_and_fd(m, solver, np.array([0.3, -1.5, 0.0, 3.0, 1.0, -2.0]), w, 150, 2e-3)
    assert vy_max > 0.2  # it bounced
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)
