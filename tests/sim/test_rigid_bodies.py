"""Rigid bodies: builder, mass properties, Newton–Euler integration against analytic solutions."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix


def _voxel_mass_properties(inside, lo, hi, n=64):
    """Mass, centre and inertia of the unit-density region ``inside(points) -> bool`` by voxel counting."""
    axes = [np.linspace(lo[k], hi[k], n, endpoint=False) + (hi[k] - lo[k]) / (2 * n) for k in range(3)]
    p = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    p = p[inside(p)]
    dv = np.prod((np.asarray(hi) - np.asarray(lo)) / n)
    mass = len(p) * dv
    com = p.mean(0)
    d = p - com
    inertia = (np.sum(d * d, 1)[:, None, None] * np.eye(3) - d[:, :, None] * d[:, None, :]).sum(0) * dv
    return mass, com, inertia


def test_mass_properties_of_shapes_match_voxel_integration():
    b = sim.ModelBuilder()
    q = (0.0, np.sin(0.3), 0.0, np.cos(0.3))  # 0.6 rad about y
    body = b.add_body(kc.transform(kc.vec3(1, 2, 3), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(pos=(0.1, 0, 0), rot=q, half_extents=(0.2, 0.1, 0.05), body=body, density=1.0)
    b.add_shape_sphere(pos=(-0.3, 0.1, 0), radius=0.1, body=body, density=1.0)
    b.add_shape_capsule(pos=(0, -0.2, 0.1), rot=(np.sin(0.4), 0, 0, np.cos(0.4)), radius=0.06, half_height=0.12,
                        body=body, density=1.0)
    m = b.finalize()
    rot_box = quat_to_matrix(q)
    rot_cap = quat_to_matrix((np.sin(0.4), 0, 0, np.cos(0.4)))

    def inside(p):
        lb = (p - (0.1, 0, 0)) @ rot_box
        in_box = np.all(np.abs(lb) <= (0.2, 0.1, 0.05), axis=1)
        in_sphere = np.linalg.norm(p - (-0.3, 0.1, 0), axis=1) <= 0.1
        lc = (p - (0, -0.2, 0.1)) @ rot_cap
        seg = np.stack([lc[:, 0], lc[:, 1] - np.clip(lc[:, 1], -0.12, 0.12), lc[:, 2]], 1)
        in_cap = np.linalg.norm(seg, axis=1) <= 0.06
        return in_box | in_sphere | in_cap  # the shapes do not overlap

    mass, com, inertia = _voxel_mass_properties(inside, (-0.45, -0.4, -0.25), (0.35, 0.25, 0.25), n=120)
    assert m.body_count == 1
    np.testing.assert_allclose(m.body_mass.numpy()[0], mass, rtol=5e-3)
    np.testing.assert_allclose(m.body_inv_mass.numpy()[0], 1 / mass, rtol=5e-3)
    np.testing.assert_allclose(m.body_com.numpy()[0], com, atol=2e-3)
    np.testing.assert_allclose(m.body_inertia.numpy()[0], inertia, atol=1e-2 * np.abs(inertia).max())
    np.testing.assert_allclose(m.body_inv_inertia.numpy()[0] @ m.body_inertia.numpy()[0], np.eye(3), atol=1e-5)
    s = m.state()
    np.testing.assert_allclose(s.body_q.numpy()[0], (1, 2, 3, 0, 0, 0, 1))
    assert s.body_qd.dtype is kc.spatial_vector and s.body_f.shape == (1,)
    assert m.control().body_f.shape == (1,)


def test_given_mass_inertia_and_com_override_the_shapes():
    b = sim.ModelBuilder()
    b0 = b.add_body(mass=2.0)
    b.add_shape_sphere(radius=0.5, body=b0)                    # shapes scaled to the given mass
    b1 = b.add_body(mass=3.0, inertia=(0.1, 0.2, 0.25), com=(0, 0.5, 0))  # no shapes at all
    m = b.finalize()
    np.testing.assert_allclose(m.body_mass.numpy(), [2.0, 3.0])
    np.testing.assert_allclose(m.body_inertia.numpy()[b0], np.eye(3) * 0.4 * 2.0 * 0.25, rtol=1e-6)
    np.testing.assert_allclose(m.body_inertia.numpy()[b1], np.diag([0.1, 0.2, 0.25]), rtol=1e-6)
    np.testing.assert_allclose(m.body_com.numpy()[b1], (0, 0.5, 0))


@pytest.mark.parametrize("call, match", [
    (lambda b: b.add_body(mass=-1.0), "add_body: mass"),
    (lambda b: b.add_body(mass=0.0), "add_body: mass"),
    (lambda b: b.add_body(xform=(0, 0, 0, 0, 0, 0, 0)), "add_body: the rotation of xform must be a non-zero"),
    (lambda b: b.add_body(mass=1.0, inertia=(1.0, 1.0, 0.0)), "add_body: inertia is degenerate"),
    (lambda b: b.add_body(mass=1.0, inertia=(1.0, 1.0, 3.0)), "add_body: inertia is degenerate"),
    (lambda b: b.add_shape_box(body=5), "add_shape_box: body 5 does not exist"),
    (lambda b: b.add_shape_sphere(radius=0.1, body=0, density=0.0), "add_shape_sphere: density"),
    (lambda b: b.add_shape_capsule(radius=0.1, half_height=-1.0), "add_shape_capsule: half_height"),
    (lambda b: b.add_shape_box(rot=(0, 0, 0, 0), body=0), "add_shape_box: rot must be a non-zero"),
])
def test_builder_rejects_bad_bodies(call, match):
    b = sim.ModelBuilder()
    b.add_body(mass=1.0, inertia=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match=match):
        call(b)


def test_body_without_mass_is_an_error_at_finalize():
    b = sim.ModelBuilder()
    b.add_body(name="ghost")
    with pytest.raises(ValueError, match="finalize: body 0 \\('ghost'\\) has no mass"):
        b.finalize()
    b = sim.ModelBuilder()
    b.add_body(mass=1.0, name="point")  # a mass but nothing to give it an inertia
    with pytest.raises(ValueError, match="degenerate inertia"):
        b.finalize()


def _run_bodies(m, steps, dt, control=None, every=1):
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    out = []
    for k in range(steps):
        solver.step(m, s0, s1, control, dt)
        s0, s1 = s1, s0
        if (k + 1) % every == 0:
            out.append((s0.body_q.numpy().copy(), s0.body_qd.numpy().copy()))
    return out


def test_free_flight_of_a_spinning_body_follows_the_parabola():
    g = np.array([0.0, -9.81, 0.0])
    b = sim.ModelBuilder(gravity=g)
    body = b.add_body(kc.transform(kc.vec3(0.5, 2.0, 0.0), kc.quat(0, 0, 0, 1)), vel=(1.0, 3.0, -0.5),
                      ang_vel=(0.0, 2.0, 5.0))
    b.add_shape_box(pos=(0.2, 0, 0), half_extents=(0.1, 0.2, 0.3), body=body)  # COM off the body origin
    m = b.finalize()
    com = m.body_com.numpy()[0].astype(np.float64)
    np.testing.assert_allclose(com, (0.2, 0, 0), atol=1e-7)
    dt, steps = 1e-3, 400
    traj = _run_bodies(m, steps, dt)
    x0 = np.array([0.7, 2.0, 0.0])
    v0 = np.array([1.0, 3.0, -0.5])
    for n in (1, 100, 400):
        q, qd = traj[n - 1]
        x_com = q[0, :3] + quat_to_matrix(q[0, 3:]) @ com
        np.testing.assert_allclose(qd[0, :3], v0 + n * g * dt, atol=1e-4)
        np.testing.assert_allclose(x_com, x0 + n * dt * v0 + g * dt * dt * n * (n + 1) / 2, atol=1e-4)
    assert np.linalg.norm(traj[-1][0][0, 3:] - (0, 0, 0, 1)) > 0.5  # and it turned


def test_control_wrench_accelerates_and_spins():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    body = b.add_body(mass=2.0, inertia=(0.5, 0.5, 0.5))
    m = b.finalize()
    ctrl = m.control()
    ctrl.body_f.numpy()[0] = (4.0, 0.0, 0.0, 0.0, 0.0, 1.0)  # 2 m/s^2 along x, 2 rad/s^2 about z
    q, qd = _run_bodies(m, 500, 1e-3, control=ctrl)[-1]
    np.testing.assert_allclose(qd[body], (1.0, 0, 0, 0, 0, 1.0), atol=1e-4)
    angle = 2 * np.arctan2(q[body, 5], q[body, 6])
    assert abs(angle - 0.5 * 2.0 * 0.5 ** 2) < 2e-3


def test_torque_free_body_keeps_momentum_and_energy_and_flips():
    # a box spun about its intermediate principal axis (y) with a small perturbation
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    body = b.add_body(ang_vel=(0.01, 3.0, 0.01))
    b.add_shape_box(half_extents=(0.1, 0.2, 0.4), body=body)
    m = b.finalize()
    inertia = m.body_inertia.numpy()[0].astype(np.float64)
    ev = np.diag(inertia)
    assert ev[0] > ev[1] > ev[2]

    def invariants(q, qd):
        rot = quat_to_matrix(q[3:].astype(np.float64))
        w = qd[3:].astype(np.float64)
        i_world = rot @ inertia @ rot.T
        return i_world @ w, 0.5 * w @ i_world @ w, rot.T @ w

    l0, e0, _ = invariants(m.body_q.numpy()[0], m.body_qd.numpy()[0])
    traj = _run_bodies(m, 10000, 1e-3, every=50)
    w_body_y = []
    for q, qd in traj:
        l, e, wb = invariants(q[0], qd[0])
        assert np.linalg.norm(l - l0) < 1e-3 * np.linalg.norm(l0)
        assert abs(e - e0) < 1e-3 * e0
        w_body_y.append(wb[1])
    w_body_y = np.array(w_body_y)
    # the intermediate-axis flip: the spin about body y turns over (the first one at ~3.4 s)
    assert w_body_y[:20].min() > 2.9 and w_body_y.min() < -2.9


def test_body_gradient_matches_finite_differences():
    b = sim.ModelBuilder(gravity=(0, -9.81, 0))
    body = b.add_body(ang_vel=(0.5, 2.0, -1.0), vel=(0.3, 1.0, 0.0))
    b.add_shape_box(pos=(0.1, 0, 0), half_extents=(0.1, 0.2, 0.3), body=body)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt = 200, 5e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.array([[0.3, -1.0, 0.7, 0.5, 0.2, -0.4, 0.1]], np.float32)

    def run(qd0):
        states[0].body_qd.numpy()[0] = qd0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    qd0 = np.array([0.3, 1.0, 0.0, 0.5, 2.0, -1.0])
    tape = kc.Tape()
    with tape:
        run(qd0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[0].astype(np.float64)
    eps = 1e-3
    fd = np.array([(run(qd0 + e) - run(qd0 - e)) / (2 * eps) for e in np.eye(6) * eps])
    assert np.abs(fd[3:]).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=2e-2, atol=5e-3)


@pytest.mark.parametrize("spin, dt", [(50.0, 1e-2), (100.0, 1e-2)])
def test_fast_spin_of_a_thin_body_stays_on_the_energy_ellipsoid_at_large_steps(spin, dt):
    # |w| dt up to 1 rad per step about a non-principal axis of a thin plate: an explicit
    # gyroscopic update gains energy and blows up; the implicit midpoint keeps E and L
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    body = b.add_body(ang_vel=(0.6 * spin, 0.3 * spin, 0.74 * spin))
    b.add_shape_box(half_extents=(0.02, 0.05, 0.4), body=body)
    m = b.finalize()
    inertia = m.body_inertia.numpy()[0].astype(np.float64)

    def invariants(q, qd):
        rot = quat_to_matrix(q[3:].astype(np.float64))
        w = qd[3:].astype(np.float64)
        i_world = rot @ inertia @ rot.T
        return i_world @ w, 0.5 * w @ i_world @ w

    l0, e0 = invariants(m.body_q.numpy()[0], m.body_qd.numpy()[0])
    for q, qd in _run_bodies(m, 1000, dt, every=20):
        l, e = invariants(q[0], qd[0])
        assert abs(e - e0) < 1e-4 * e0
        assert np.linalg.norm(l - l0) < 1e-4 * np.linalg.norm(l0)
