"""Cloth attached to rigid bodies (builder.add_cloth_attachment, SolverSemiImplicit): the cloth follows the
body, the pair exchanges momentum, gradients match finite differences, bad input is named."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def build(gravity=(0.0, -9.81, 0.0), body_mass=2.0, body_vel=(0.0, 0.0, 0.0), cloth_vel=(0.0, 0.0, 0.0),
          requires_grad=False, ang_vel=(0.0, 0.0, 0.0)):
    """A 4 x 4 cloth hanging in the x-y plane from a bar body along its top row (5 attachments)."""
    b = sim.ModelBuilder(gravity=gravity)
    bar = b.add_body(xform=(0.1, 0.2, 0.0, 0, 0, 0, 1), mass=body_mass, inertia=np.eye(3) * 0.01,
                     vel=body_vel, ang_vel=ang_vel)
    parts = b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), cloth_vel, 4, 4, 0.05, 0.05, 0.01,
                             tri_ke=200.0, tri_ka=200.0, tri_kd=0.2, edge_ke=0.01, edge_kd=0.001)
    top = [p for p in parts if abs(b.particle_q[p][1] - 0.2) < 1e-9]
    for p in top:
        b.add_cloth_attachment(p, bar, ke=2e3, kd=2.0)
    return b.finalize(requires_grad=requires_grad), top


def run(m, steps, dt, control=None):
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(steps):
        solver.step(m, s0, s1, control, dt)
        s0, s1 = s1, s0
    return s0


def test_cloth_hanging_from_a_moving_body_follows_it():
    m, top = build(body_mass=50.0, body_vel=(0.5, 0.0, 0.0), cloth_vel=(0.5, 0.0, 0.0))
    c = m.control()
    c.body_f.assign(kc.array(np.array([[0, 50.0 * 9.81, 0, 0, 0, 0]], np.float32), dtype=kc.spatial_vector))  # weight held
    steps, dt = 400, 1e-3
    s = run(m, steps, dt, c)
    q = s.particle_q.numpy().astype(np.float64)
    body = s.body_q.numpy()[0].astype(np.float64)
    assert np.all(np.isfinite(q))
    assert body[0] - 0.1 == pytest.approx(0.5 * steps * dt, rel=0.05)   # the body moved 0.2 m
    # the attached particles sit on their anchors (the particle's start shifted by the body's motion) ...
    start = m.particle_q.numpy()[top].astype(np.float64)
    np.testing.assert_allclose(q[top], start + (body[:3] - (0.1, 0.2, 0.0)), atol=2e-3)
    # ... and the rest of the cloth came along, hanging below them
    assert q[:, 0].mean() - m.particle_q.numpy()[:, 0].mean() == pytest.approx(body[0] - 0.1, abs=0.02)
    assert q[:, 1].min() < 0.0


def test_attachment_exchanges_momentum_with_the_body():
    # no gravity: a light body at rest, the cloth thrown sideways; the attachment forces are internal
    m, _ = build(gravity=(0, 0, 0), body_mass=0.1, cloth_vel=(0.0, 0.0, 1.0), ang_vel=(0.0, 0.0, 0.0))
    mass = m.particle_mass.numpy().astype(np.float64)

    def momentum(s):
        p = (mass[:, None] * s.particle_qd.numpy()).sum(0)
        return p + 0.1 * s.body_qd.numpy()[0, :3].astype(np.float64)

    p0 = momentum(m.state())
    s = run(m, 300, 1e-3)
    assert np.linalg.norm(s.body_qd.numpy()[0, :3]) > 0.3          # the cloth dragged the body
    np.testing.assert_allclose(momentum(s), p0, atol=1e-4 * np.linalg.norm(p0))


@kc.kernel
def weighted_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def test_gradient_through_the_attachment_matches_finite_differences():
    steps, dt = 40, 1e-3
    m, _ = build(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    rng = np.random.default_rng(1)
    w = kc.array(rng.normal(size=(m.particle_count, 3)).astype(np.float32), dtype=kc.vec3)

    def forward(v_body, tape=None):
        states = [m.state() for _ in range(steps + 1)]
        states[0].body_qd.assign(kc.array(np.array([list(v_body) + [0, 0, 0]], np.float32), dtype=kc.spatial_vector))
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        if tape is not None:
            with tape:
                for k in range(steps):
                    solver.step(m, states[k], states[k + 1], None, dt)
                kc.launch(weighted_loss, dim=m.particle_count, inputs=[states[-1].particle_q, w, loss])
            return loss, states
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].particle_q.numpy().astype(np.float64) * w.numpy()).sum()), states

    v0 = np.array([0.3, 0.1, -0.2])
    tape = kc.Tape()
    loss, states = forward(v0, tape)
    tape.backward(loss=loss)
    g = states[0].body_qd.grad.numpy()[0, :3].astype(np.float64)
    assert np.abs(g).max() > 1e-3     # the cloth's end state depends on how the body moved
    eps = 1e-2
    for k in range(3):
        d = np.zeros(3)
        d[k] = eps
        fd = (forward(v0 + d)[0] - forward(v0 - d)[0]) / (2 * eps)
        assert g[k] == pytest.approx(fd, rel=0.03, abs=2e-3)


def test_attachment_errors_name_the_call():
    b = sim.ModelBuilder()
    body = b.add_body(mass=1.0, inertia=np.eye(3))
    b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 1, 1, 0.1, 0.1, 0.01)
    with pytest.raises(ValueError, match="add_cloth_attachment: particle 7 does not exist"):
        b.add_cloth_attachment(7, body)
    with pytest.raises(ValueError, match="add_cloth_attachment: body 3 does not exist"):
        b.add_cloth_attachment(0, 3)
    with pytest.raises(ValueError, match="add_cloth_attachment: ke of attachment 0 must be finite and >= 0"):
        b.add_cloth_attachment(0, body, ke=-1.0)
