"""Contacts with the ground and static shapes: energy, restitution, friction, resting heights."""
import numpy as np
import pytest

import sim
from sim.builder import damping_ratio_from_restitution, restitution_of_damping_ratio


def _drop(restitution, ke=1e5, dt=2e-4, height=0.5, steps=5000, mu=0.0, vx=0.0):
    b = sim.ModelBuilder()
    b.set_material(0, ke=ke, restitution=restitution, mu=mu)
    b.set_ground_plane()
    b.add_particle((0, 0.1 + height, 0), (vx, 0, 0), 1.0, 0.1)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    q, v = [], []
    for _ in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        q.append(s0.particle_q.numpy()[0].copy())
        v.append(s0.particle_qd.numpy()[0].copy())
    return np.array(q), np.array(v)


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_ground_contact_creates_no_energy(e):
    q, v = _drop(e)
    y = q[:, 1]
    free = y > 0.1 + 1e-3  # out of contact: the energy is kinetic + potential only
    energy = 0.5 * (v ** 2).sum(axis=1) + 9.81 * (y - 0.1)
    e0 = 9.81 * 0.5
    assert free[-1] or e < 1.0
    assert energy[free].max() <= e0 * (1 + 5e-3)
    touched = np.nonzero(~free)[0]
    assert len(touched), "the particle never reached the ground"
    after = energy[touched[0]:][free[touched[0]:]]
    if e < 1.0:
        assert after.size == 0 or after.max() < e0 * (e * e + 0.05)
    else:
        assert after.max() > 0.99 * e0  # elastic: the energy comes back


@pytest.mark.parametrize("e", [0.3, 0.5, 0.8])
def test_restitution_coefficient(e):
    q, v = _drop(e)
    vy = v[:, 1]
    impact = np.argmax(q[:, 1] < 0.1)
    rebound = impact + np.argmax(vy[impact:] > 0)
    left = rebound + np.argmax(q[rebound:, 1] > 0.1)
    v_in = np.sqrt(2 * 9.81 * 0.5)
    assert abs(vy[left] / v_in - e) < 0.03  # gravity during the short contact costs ~1%


def test_restitution_model_inverts():
    for e in (0.1, 0.3, 0.6, 0.9, 1.0):
        assert abs(restitution_of_damping_ratio(damping_ratio_from_restitution(e)) - e) < 1e-9
    assert damping_ratio_from_restitution(1.0) == 0.0
    zs = np.linspace(0, 2, 50)
    es = [restitution_of_damping_ratio(z) for z in zs]
    assert np.all(np.diff(es) < 0)  # monotone: more damping, less bounce


def test_coulomb_friction_decelerates_at_mu_g():
    mu, vx = 0.4, 2.0
    q, v = _drop(0.0, height=0.0, steps=6000, mu=mu, vx=vx)  # starts resting on the ground, sliding
    t = np.arange(1, len(v) + 1) * 2e-4
    sliding = v[:, 0] > 0.1
    slope = np.polyfit(t[sliding][100:], v[sliding, 0][100:], 1)[0]
    assert abs(slope + mu * 9.81) < 0.02 * mu * 9.81
    stop = vx * vx / (2 * mu * 9.81)
    assert abs(q[-1, 0] - stop) < 0.02 * stop
    assert abs(v[-1, 0]) < 1e-3  # static friction holds it


def _rest_on(add_shape, start, steps=3000, dt=5e-4):
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e4, restitution=0.0, mu=0.5)
    add_shape(b)
    b.add_particle(start, (0, 0, 0), 1.0, 0.1)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0.particle_q.numpy()[0], s0.particle_qd.numpy()[0]


SAG = 9.81 / 1e4  # resting overlap m g / ke


def test_particle_rests_on_sphere_box_and_plane():
    x, v = _rest_on(lambda b: b.add_shape_sphere((0, 0, 0), 0.5), (0, 0.8, 0))
    np.testing.assert_allclose(x, (0, 0.6 - SAG, 0), atol=2e-4)
    s = np.sqrt(0.5)
    # box rotated 45 degrees about y: its top face stays at y = 0.3
    x, v = _rest_on(lambda b: b.add_shape_box((1, 0, 0), (0, np.sin(np.pi / 8), 0, np.cos(np.pi / 8)), (0.3, 0.3, 0.3)),
                    (1.1, 0.7, 0.05))
    np.testing.assert_allclose(x, (1.1, 0.4 - SAG, 0.05), atol=2e-4)
    # plane tilted by 90 degrees about z: a wall whose normal is -x, at x = 2
    x, v = _rest_on(lambda b: b.add_shape_plane((2, 0, 0), (0, 0, s, s)), (1.5, 0.0, 0.0), steps=200)
    assert x[0] < 1.9 and x[1] < 0  # falls freely beside the wall, never pushed
    b = sim.ModelBuilder(gravity=(9.81, 0, 0))  # now pushed against the wall
    b.set_material(0, ke=1e4, restitution=0.0)
    b.add_shape_plane((2, 0, 0), (0, 0, s, s))
    b.add_particle((1.8, 0, 0), (0, 0, 0), 1.0, 0.1)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(3000):
        solver.step(m, s0, s1, None, 5e-4)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.particle_q.numpy()[0][0], 1.9 + SAG, atol=2e-4)


def test_ground_plane_with_any_normal():
    b = sim.ModelBuilder(gravity=(0, 0, -9.81))
    b.set_material(0, ke=1e4, restitution=0.0)
    b.set_ground_plane(normal=(0, 0, 1), offset=1.0)
    b.add_particle((0.3, 0.2, 1.5), (0, 0, 0), 1.0, 0.1)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(3000):
        solver.step(m, s0, s1, None, 5e-4)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.particle_q.numpy()[0], (0.3, 0.2, 1.1 - SAG), atol=2e-4)


def test_mesh_collider():
    pytest.importorskip("geometry.mesh")
    quad = [(-1, 0, -1), (1, 0, -1), (1, 0, 1), (-1, 0, 1)]
    tris = [0, 2, 1, 0, 3, 2]  # counter-clockwise seen from +y: the free side is up

    def add(b):
        b.add_shape_mesh(quad, tris, pos=(0, 0.5, 0))

    b = sim.ModelBuilder()
    b.set_material(0, ke=1e4, restitution=0.0, mu=0.5)
    add(b)
    b.add_particle((0.2, 1.0, 0.1), (0.3, 0, 0), 1.0, 0.1)
    b.add_particle((1.5, 1.0, 0.1), (0, 0, 0), 1.0, 0.1)  # beside the mesh: falls past it
    m = b.finalize()
    assert m.shape_types() == ["mesh"]
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(3000):
        solver.step(m, s0, s1, None, 5e-4)
        s0, s1 = s1, s0
    q = s0.particle_q.numpy()
    assert abs(q[0][1] - (0.6 - SAG)) < 2e-4 and q[0][0] > 0.2
    assert q[1][1] < -5.0


def test_gradient_through_springs_and_mesh_contact_matches_finite_differences():
    pytest.importorskip("geometry.mesh")
    import kernelcore as kc

    quad = [(-1, 0, -1), (1, 0, -1), (1, 0, 1), (-1, 0, 1)]
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e3, restitution=0.5, mu=0.3)
    b.add_shape_mesh(quad, [0, 2, 1, 0, 3, 2], pos=(0, 0, 0))
    b.add_particle((0.0, 0.3, 0.0), (0, 0, 0), 0.1, 0.05)
    b.add_particle((0.2, 0.35, 0.05), (0, 0, 0), 0.1, 0.05)
    b.add_spring(0, 1, 50.0, 0.2)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt = 500, 5e-4
    states = [m.state() for _ in range(steps + 1)]
    w = np.array([[0.3, 1.0, 0.2], [1.0, 0.5, -0.4]], np.float32)

    def run(v0):
        states[0].particle_qd.numpy()[0] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].particle_q.numpy() * w).sum())

    v0 = np.array([0.4, -1.0, 0.2])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].particle_q: w})
    grad = states[0].particle_qd.grad.numpy()[0].astype(np.float64)
    fd = np.array([(run(v0 + e) - run(v0 - e)) / 2e-3 for e in np.eye(3) * 1e-3])
    assert min(states[k].particle_q.numpy()[0][1] for k in range(steps)) < 0.05  # it hit the mesh
    assert np.abs(fd).max() > 0.05
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=3e-3)
