"""Particle-particle contacts (DEM): hash grid against brute force, conservation, a settling column."""
import numpy as np
import pytest

pytest.importorskip("geometry.hash_grid")

import kernelcore as kc  # noqa: E402
import sim  # noqa: E402
from sim.collide_particles import eval_particle_contacts, eval_particle_contacts_brute, make_particle_grid  # noqa: E402


def _packed_model(n=(5, 4, 5), cohesion=0.0, gravity=(0, -9.81, 0), seed=3):
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=2e3, restitution=0.3, mu=0.5, cohesion=cohesion, cohesion_distance=0.002)
    soft = b.add_material(ke=1e3, restitution=0.6, mu=0.2)
    r = b.add_particle_grid((-0.05, 0.02, -0.04), (0, 0, 0), *n, spacing=0.019, mass=0.01, radius=0.01, jitter=0.002,
                            seed=seed)
    b.particle_material[r.start] = soft
    b.particle_mass[r.start + 1] = 0.0  # a kinematic one among them
    rng = np.random.default_rng(seed)
    b.particle_qd = [tuple(v) for v in rng.normal(0, 0.3, (len(r), 3))]
    b.particle_radius = list(rng.uniform(0.009, 0.011, len(r)))
    return b.finalize()


def test_hash_grid_contacts_match_brute_force():
    m = _packed_model()
    s = m.state()
    f_grid = kc.zeros(m.particle_count, dtype=kc.vec3)
    f_brute = kc.zeros(m.particle_count, dtype=kc.vec3)
    eval_particle_contacts(m, s, f_grid, 1e-3, make_particle_grid(m, 8))  # a small table: many collisions
    eval_particle_contacts_brute(m, s, f_brute, 1e-3)
    fb = f_brute.numpy()
    assert np.count_nonzero(np.linalg.norm(fb, axis=1) > 1e-3) > m.particle_count // 2  # really packed
    np.testing.assert_allclose(f_grid.numpy(), fb, rtol=1e-5, atol=1e-6)


def test_pair_forces_conserve_momentum_and_cohesion_pulls():
    m = _packed_model(cohesion=0.05)
    m.particle_inv_mass.numpy()[:] = 1.0 / 0.01  # no kinematic particle: every pair counts both ways
    s = m.state()
    f = kc.zeros(m.particle_count, dtype=kc.vec3)
    eval_particle_contacts_brute(m, s, f, 1e-3)
    total = f.numpy().sum(axis=0)
    assert np.abs(total).max() < 1e-4 * np.abs(f.numpy()).sum()
    # two particles just out of contact but within the cohesion distance attract
    b = sim.ModelBuilder()
    b.set_material(0, cohesion=0.05, cohesion_distance=0.002)
    b.add_particle((0, 0, 0), radius=0.01, mass=0.01)
    b.add_particle((0.021, 0, 0), radius=0.01, mass=0.01)
    m2 = b.finalize()
    f2 = kc.zeros(2, dtype=kc.vec3)
    eval_particle_contacts_brute(m2, m2.state(), f2, 1e-3)
    np.testing.assert_allclose(f2.numpy()[0], (0.025, 0, 0), rtol=1e-4)  # half of 0.05 N at half the range
    np.testing.assert_allclose(f2.numpy()[1], (-0.025, 0, 0), rtol=1e-4)


def test_dem_column_settles_without_tunnelling():
    b = sim.ModelBuilder()
    b.set_material(0, ke=5e3, restitution=0.2, mu=0.5)
    b.set_ground_plane()
    r = 0.01
    b.add_particle_grid((0, 2 * r, 0), (0, 0, 0), 4, 15, 4, 2.05 * r, 0.01, r, jitter=0.001, seed=1)
    m = b.finalize()
    solver = sim.SolverDEM(m)
    s0, s1 = m.state(), m.state()
    dt = 2.5e-4
    lowest = np.inf
    for k in range(3200):  # 0.8 s
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if k % 50 == 0:
            lowest = min(lowest, s0.particle_q.numpy()[:, 1].min())
    q, v = s0.particle_q.numpy(), s0.particle_qd.numpy()
    assert np.all(np.isfinite(q))
    lowest = min(lowest, q[:, 1].min())
    assert lowest > 0.5 * r, f"a particle sank to {lowest} (radius {r})"
    assert np.abs(v).max() < 0.2  # settled
    assert q[:, 1].max() < 15 * 2.05 * r  # the column slumped
    # no two particles overlap by more than a fraction of a radius
    d = np.linalg.norm(q[:, None] - q[None], axis=-1) + np.eye(len(q))
    assert d.min() > 1.5 * r


def test_dem_gradient_through_hash_grid_matches_finite_differences():
    # a ball rolls into two resting ones; d(final x of the last) / d(initial velocity of the first).
    # The neighbour search runs through the hash grid, rebuilt per step also in the reverse pass.
    def build():
        b = sim.ModelBuilder(gravity=(0, 0, 0))
        b.set_material(0, ke=2e3, restitution=0.5, mu=0.3)
        b.add_particle((0, 0, 0), (0, 0, 0), 0.01, 0.01)
        b.add_particle((0.05, 0.002, 0), (0, 0, 0), 0.01, 0.01)
        b.add_particle((0.075, -0.003, 0.001), (0, 0, 0), 0.01, 0.01)
        return b.finalize(requires_grad=True)

    m = build()
    solver = sim.SolverDEM(m)
    steps, dt = 1000, 1e-4  # contacts resolved by ~30 steps: the loss is smooth at the FD scale
    states = [m.state() for _ in range(steps + 1)]

    def run(v0):
        states[0].particle_qd.numpy()[0] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return states[-1].particle_q.numpy()[2].astype(np.float64).copy()

    v0 = np.array([0.6, 0.05, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    w = np.array([1.0, 0.5, 0.0], np.float32)
    tape.backward(grads={states[-1].particle_q: np.outer(np.eye(3)[2], w).astype(np.float32)})
    grad = states[0].particle_qd.grad.numpy()[0].astype(np.float64)
    fd = np.zeros(3)
    for k in range(2):
        e = np.zeros(3)
        e[k] = 1e-3
        fd[k] = (run(v0 + e) @ w - run(v0 - e) @ w) / 2e-3
    assert abs(fd[0]) > 0.03  # the collision chain transmits the push
    np.testing.assert_allclose(grad[:2], fd[:2], rtol=0.05, atol=1e-3)
