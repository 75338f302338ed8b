"""Particles, builder, integration and springs against analytic solutions."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def _run(model, solver, steps, dt, control=None, keep=False):
    s0, s1 = model.state(), model.state()
    traj = []
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
        if keep:
            traj.append((s0.particle_q.numpy().copy(), s0.particle_qd.numpy().copy()))
    return s0, traj


def test_free_fall_matches_discrete_solution():
    # semi-implicit Euler: v_n = v0 + n g dt, x_n = x0 + n dt v0 + g dt^2 n (n + 1) / 2
    g = np.array([0.0, -9.81, 0.0])
    b = sim.ModelBuilder(gravity=g)
    x0, v0 = np.array([0.5, 10.0, -1.0]), np.array([1.0, 2.0, -0.5])
    b.add_particle(x0, v0, mass=2.0, radius=0.1)
    m = b.finalize()
    dt, steps = 1.0 / 240.0, 240
    _, traj = _run(m, sim.SolverSemiImplicit(m), steps, dt, keep=True)
    for n in (1, 10, 120, 240):
        q, qd = traj[n - 1]
        np.testing.assert_allclose(qd[0], v0 + n * g * dt, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(q[0], x0 + n * dt * v0 + g * dt * dt * n * (n + 1) / 2, rtol=1e-5, atol=1e-5)
    # and it is not the explicit-Euler or exact-parabola answer (the test can tell them apart)
    q, _ = traj[-1]
    t = steps * dt
    assert abs(q[0][1] - (x0[1] + v0[1] * t + 0.5 * g[1] * t * t)) > 1e-3


def test_kinematic_particle_keeps_velocity_and_control_force_accelerates():
    b = sim.ModelBuilder()
    b.add_particle((0, 0, 0), (1, 0, 0), mass=0.0)          # kinematic
    b.add_particle((0, 5, 0), (0, 0, 0), mass=2.0)
    m = b.finalize()
    ctrl = m.control()
    ctrl.particle_f_ext.numpy()[1] = (4.0, 19.62, 0.0)      # cancels gravity in y, 2 m/s^2 in x
    s, _ = _run(m, sim.SolverSemiImplicit(m), 100, 0.01, control=ctrl)
    np.testing.assert_allclose(s.particle_q.numpy()[0], (1.0, 0.0, 0.0), atol=1e-5)
    np.testing.assert_allclose(s.particle_qd.numpy()[1], (2.0, 0.0, 0.0), atol=1e-4)


def test_step_does_not_touch_state_in():
    b = sim.ModelBuilder()
    b.set_ground_plane()
    b.add_particle_grid((0, 0.05, 0), (0.3, -1, 0), 3, 2, 2, 0.25, 1.0, 0.1)
    b.add_spring(0, 1, 100.0, 1.0)
    b.add_shape_sphere((0.2, -0.1, 0.1), 0.2)
    m = b.finalize()
    s0, s1 = m.state(), m.state()
    before = [a.numpy().copy() for _, a in s0.arrays()]
    sim.SolverSemiImplicit(m).step(m, s0, s1, None, 1e-3)
    for (name, a), ref in zip(s0.arrays(), before):
        np.testing.assert_array_equal(a.numpy(), ref, err_msg=name)
    assert not np.array_equal(s1.particle_q.numpy(), s0.particle_q.numpy())


def test_spring_static_extension_and_period():
    # a 1 kg mass hanging from a fixed particle: rest at L + m g / k; small oscillation period 2 pi sqrt(m / k)
    k, mass, L = 400.0, 1.0, 0.5
    b = sim.ModelBuilder()
    b.add_particle((0, 2, 0), mass=0.0)
    b.add_particle((0, 2 - L, 0), mass=mass)
    b.add_spring(0, 1, k, 0.0)
    m = b.finalize()
    dt = 1e-3
    _, traj = _run(m, sim.SolverSemiImplicit(m), 2000, dt, keep=True)
    y = np.array([q[1][1] for q, _ in traj])
    eq = 2 - L - mass * 9.81 / k
    assert abs(0.5 * (y.max() + y.min()) - eq) < 2e-3
    # period from downward zero crossings of y - eq
    s = y - eq
    cross = np.nonzero((s[:-1] > 0) & (s[1:] <= 0))[0]
    period = np.diff(cross).mean() * dt
    assert abs(period - 2 * np.pi * np.sqrt(mass / k)) < 0.01 * period
    # damping removes energy
    b.spring_damping[0] = 5.0
    m2 = b.finalize()
    _, traj = _run(m2, sim.SolverSemiImplicit(m2), 2000, dt, keep=True)
    y2 = np.array([q[1][1] for q, _ in traj])
    assert np.ptp(y2[-300:]) < 0.1 * np.ptp(y[-300:])


def test_model_arrays_names_and_shapes():
    b = sim.ModelBuilder()
    r = b.add_particle_grid((0, 0, 0), (0, 0, 0), 4, 3, 2, 0.1, 0.5, radius=0.02)
    assert list(r) == list(range(24))
    b.add_spring_grid(0, 4, 3, 2, 10.0, shear=False)
    m = b.finalize(requires_grad=True)
    assert m.particle_count == 24 and m.particle_q.shape == (24,) and m.particle_q.dtype is kc.vec3
    np.testing.assert_allclose(m.particle_q.numpy()[5], (0.1, 0.1, 0.0), atol=1e-7)  # x fastest, then y
    np.testing.assert_allclose(m.particle_inv_mass.numpy(), 2.0)
    assert m.spring_count == 3 * 3 * 2 + 4 * 2 * 2 + 4 * 3 * 1
    assert m.spring_indices.shape == (2 * m.spring_count,)
    np.testing.assert_allclose(m.spring_rest_length.numpy(), 0.1, rtol=1e-6)
    s = m.state()
    assert s.particle_q.requires_grad and s.particle_f.shape == (24,)
    assert "particles: 24" in m.summary()


@pytest.mark.parametrize("call, match", [
    (lambda b: b.add_particle((0, 0, 0), mass=-1.0), "mass"),
    (lambda b: b.add_particle((0, 0, 0), radius=0.0), "radius"),
    (lambda b: b.add_particle((0, float("nan"), 0)), "pos"),
    (lambda b: b.add_spring(0, 0, 1.0), "distinct"),
    (lambda b: b.add_material(restitution=1.5), "restitution"),
    (lambda b: b.add_shape_box((0, 0, 0), half_extents=(1, -1, 1)), "half_extents"),
    (lambda b: b.add_shape_mesh([(0, 0, 0), (1, 0, 0)], [0, 1, 2]), "indices"),
    (lambda b: b.add_particle((0, 0, 0), material=7), "material"),
])
def test_builder_rejects_bad_input(call, match):
    b = sim.ModelBuilder()
    b.add_particle((0, 0, 0))
    with pytest.raises(ValueError, match=match):
        call(b)
