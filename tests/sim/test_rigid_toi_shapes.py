"""Time-of-impact contacts of box and capsule bodies (sim/toi_shapes.py): bounces, tunnelling,
energy, gradients."""
import numpy as np
import pytest

import kernelcore as kc
import sim

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
    body = b.add_body(kc.transform(kc.vec3(*pos), kc.quat(*rot)), vel=vel, ang_vel=ang_vel)
    if kind == "box":
        b.add_shape_box(half_extents=HALF, body=body)
    else:
        b.add_shape_capsule(radius=0.05, half_height=0.1, body=body)
    m = b.finalize(requires_grad=requires_grad)
    return m, sim.SolverSemiImplicit(m, toi=True)


def _run(m, solver, steps, dt, record=None):
    s0, s1 = m.state(), m.state()
    out = []
    for _ in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if record:
            out.append(record(s0))
    return s0, out


def test_box_bounce_heights_follow_e_squared():
    e = 0.6
    m, solver = _box_model(e=e)
    _, rec = _run(m, solver, 1800, 1e-3,
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
    s, _ = _run(m, solver, 1500, 1e-3)
    q, qd = s.body_q.numpy()[0], s.body_qd.numpy()[0]
    assert abs(q[1] - HALF[1]) < 2e-3
    assert np.abs(qd).max() < 1e-2
