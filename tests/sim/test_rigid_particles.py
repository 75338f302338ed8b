"""Particles against shapes carried by rigid bodies: two-way penalty contacts."""
import numpy as np

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix


def test_particles_rest_on_a_box_body_resting_on_the_ground():
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.5)
    b.set_ground_plane()
    box = b.add_body(kc.transform(kc.vec3(0, 0.1, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.2, 0.1, 0.2), body=box)
    b.add_particles([(-0.1, 0.3, 0.0), (0.1, 0.3, 0.05)], mass=0.5, radius=0.05)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(2000):
        solver.step(m, s0, s1, None, 5e-4)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.particle_q.numpy()[:, 1], 0.25, atol=1e-3)   # on the box's top face
    q = s0.body_q.numpy()[0]
    # the box carries their weight: it sinks by (m_box + 1 kg) g / (4 ke) on its four corners
    sag = (m.body_mass.numpy()[0] + 1.0) * 9.81 / 4e5
    np.testing.assert_allclose(q[1], 0.1 - sag, atol=2e-4)
    assert np.abs(s0.body_qd.numpy()).max() < 1e-2


def test_particle_hitting_a_free_body_conserves_momentum():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.3)
    body = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, np.sin(0.3), 0, np.cos(0.3))))
    b.add_shape_capsule(radius=0.1, half_height=0.2, body=body)
    b.add_particle((-0.5, 0.12, 0.05), (3.0, 0.0, 0.2), mass=0.5, radius=0.05)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    mass = float(m.body_mass.numpy()[0])
    inertia = m.body_inertia.numpy()[0].astype(np.float64)

    def momenta(s):
        xp, vp = s.particle_q.numpy()[0].astype(np.float64), s.particle_qd.numpy()[0].astype(np.float64)
        q, qd = s.body_q.numpy()[0].astype(np.float64), s.body_qd.numpy()[0].astype(np.float64)
        rot = quat_to_matrix(q[3:])
        lin = 0.5 * vp + mass * qd[:3]
        ang = np.cross(xp, 0.5 * vp) + np.cross(q[:3], mass * qd[:3]) + rot @ inertia @ rot.T @ qd[3:]
        return lin, ang

    p0, l0 = momenta(s0)
    for _ in range(400):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    p1, l1 = momenta(s0)
    assert np.linalg.norm(s0.body_qd.numpy()[0, :3]) > 0.1 and np.linalg.norm(s0.body_qd.numpy()[0, 3:]) > 0.1
    np.testing.assert_allclose(p1, p0, atol=1e-4)
    np.testing.assert_allclose(l1, l0, atol=1e-4)


def test_gradient_through_particle_body_contact_matches_finite_differences():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.3)
    body = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.1, 0.15, 0.1), body=body)
    b.add_particle((-0.5, 0.05, 0.02), (2.0, 0.0, 0.0), mass=0.5, radius=0.05)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt = 300, 1e-3
    states = [m.state() for _ in range(steps + 1)]
    wq = np.array([[0.4, -0.6, 0.2, 0.3, 0.1, 0.5, 0.0]], np.float32)
    wp = np.array([[1.0, 0.5, 0.3]], np.float32)

    def run(v0):
        states[0].particle_qd.numpy()[0] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * wq).sum()
                     + (states[-1].particle_q.numpy().astype(np.float64) * wp).sum())

    v0 = np.array([2.0, 0.0, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: wq, states[-1].particle_q: wp})
    grad = states[0].particle_qd.grad.numpy()[0].astype(np.float64)
    assert np.linalg.norm(states[-1].body_qd.numpy()[0, 3:]) > 0.1  # the off-centre hit spun the box
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=3e-3)
