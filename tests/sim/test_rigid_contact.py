"""Penalty contacts of body shapes with the ground and static shapes, against analytic mechanics."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix


def _simulate(b, steps, dt, every=1, solver_kw=None, requires_grad=False):
    m = b.finalize(requires_grad=requires_grad)
    solver = sim.SolverSemiImplicit(m, **(solver_kw or {}))
    s0, s1 = m.state(), m.state()
    out = []
    for k in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if (k + 1) % every == 0:
            out.append((s0.body_q.numpy().copy(), s0.body_qd.numpy().copy()))
    return m, out


def _box_on_ground(vel=(0, 0, 0), mu=0.5, y=0.1, rot=(0, 0, 0, 1)):
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=mu)
    b.set_ground_plane()
    body = b.add_body(kc.transform(kc.vec3(0, y, 0), kc.quat(*rot)), vel=vel)
    b.add_shape_box(body=body, half_extents=(0.1, 0.1, 0.1))
    return b


def test_box_rests_on_the_ground():
    # dropped from 5 cm, slightly tilted: it settles flat
    tilt = (np.sin(0.05), 0.0, 0.0, np.cos(0.05))
    m, traj = _simulate(_box_on_ground(y=0.15, rot=tilt), 2000, 1e-3, every=100)
    q, qd = traj[-1]
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * 0.1
    world = corners @ quat_to_matrix(q[0, 3:]).T + q[0, :3]
    assert world[:, 1].min() > -2e-3                     # penetration under 2 mm
    assert np.linalg.norm(qd[0, :3]) < 1e-2 and np.linalg.norm(qd[0, 3:]) < 1e-1
    np.testing.assert_allclose(np.sort(world[:, 1])[:4], 0.0, atol=2e-3)  # flat on four corners


@pytest.mark.parametrize("mu", [0.5, 0.3])
def test_sliding_box_stops_at_v2_over_2_mu_g(mu):
    v0, dt = 2.0, 1e-3
    m, traj = _simulate(_box_on_ground(vel=(v0, 0, 0), mu=mu, y=0.1 - 8 * 9.81 / 4e5), 1200, dt, every=10)
    q, qd = traj[-1]
    stop = v0 * v0 / (2 * mu * 9.81)
    assert abs(q[0, 0] - stop) < 0.05 * stop
    assert np.linalg.norm(qd[0, :3]) < 1e-2
    # it slid without tipping over
    assert abs(q[0, 1] - 0.1) < 3e-3 and np.linalg.norm(q[0, 3:6]) < 0.02


@pytest.mark.parametrize("slope_kind", ["plane", "box"])
def test_sphere_rolls_down_an_incline_at_five_sevenths_g_sin(slope_kind):
    theta = 0.3
    r = 0.1
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    rot = (0.0, 0.0, -np.sin(theta / 2), np.cos(theta / 2))  # the slope falls towards +x
    normal = quat_to_matrix(rot) @ (0, 1, 0)
    if slope_kind == "plane":
        b.add_shape_plane(rot=rot)
    else:
        b.add_shape_box(pos=-normal * 0.5, rot=rot, half_extents=(5.0, 0.5, 1.0))
    start = normal * (r - 9.81 * np.cos(theta) * 4.19 / 1e5)  # resting on the slope (sag m g cos / ke)
    body = b.add_body(kc.transform(kc.vec3(*start), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=r, body=body)
    dt = 1e-3
    m, traj = _simulate(b, 800, dt, every=1)
    down = np.array([np.cos(theta), -np.sin(theta), 0.0])
    s = np.array([q[0, :3] @ down for q, _ in traj])
    t = np.arange(1, len(s) + 1) * dt
    accel = 2 * np.polyfit(t[100:], s[100:], 2)[0]
    expected = 5.0 / 7.0 * 9.81 * np.sin(theta)
    assert abs(accel - expected) < 0.03 * expected, (accel, expected)
    # rolling: the angular velocity matches v / r about -z
    q, qd = traj[-1]
    np.testing.assert_allclose(-qd[0, 5] * r, qd[0, :3] @ down, rtol=0.02)


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_sphere_bounce_heights_follow_e_squared(e):
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e5, restitution=e, mu=0.0)
    b.set_ground_plane()
    h0, r = 0.5, 0.05
    body = b.add_body(kc.transform(kc.vec3(0, h0 + r, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=r, body=body)
    m, traj = _simulate(b, 3000, 2e-4, every=1)
    y = np.array([q[0, 1] for q, _ in traj]) - r
    vy = np.array([qd[0, 1] for _, qd in traj])
    apex = np.nonzero((vy[:-1] > 0) & (vy[1:] <= 0))[0]
    assert len(apex) >= 1
    np.testing.assert_allclose(y[apex[0]] / h0, e * e, rtol=0.05)


def test_shapes_on_bodies_rest_on_static_sphere_box_and_capsule():
    b = sim.ModelBuilder(gravity=(0, -9.81, 0))
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    lying = (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))  # local Y turned onto X
    b.add_shape_sphere((0, 0, 0), 0.5)
    b.add_shape_box((2, 0, 0), half_extents=(0.3, 0.3, 0.3))
    b.add_shape_capsule((4, 0, 0), rot=lying, radius=0.2, half_height=0.5)
    b.add_shape_sphere((6, 0, 0), 0.5)

    def body(x, y, rot=(0, 0, 0, 1)):
        return b.add_body(kc.transform(kc.vec3(x, y, 0), kc.quat(*rot)))

    sphere_on_sphere = body(0, 0.6)
    b.add_shape_sphere(radius=0.1, body=sphere_on_sphere)
    capsule_on_box = body(2, 0.4, lying)
    b.add_shape_capsule(radius=0.1, half_height=0.2, body=capsule_on_box)
    sphere_on_capsule = body(4, 0.3)
    b.add_shape_sphere(radius=0.1, body=sphere_on_capsule)
    box_on_sphere = body(6, 0.55)  # its face centre, not a corner, touches the sphere
    b.add_shape_box(half_extents=(0.2, 0.05, 0.2), body=box_on_sphere)
    m, traj = _simulate(b, 1000, 1e-3, every=1000)
    q, qd = traj[-1]
    rest = {sphere_on_sphere: (0, 0.6, 0), capsule_on_box: (2, 0.4, 0), sphere_on_capsule: (4, 0.3, 0),
            box_on_sphere: (6, 0.55, 0)}
    for i, pos in rest.items():
        np.testing.assert_allclose(q[i, :3], pos, atol=2e-3, err_msg=m.body_name[i])
        assert np.abs(qd[i]).max() < 1e-2, m.body_name[i]


@pytest.mark.parametrize("shape", ["sphere", "box"])
def test_gradient_through_body_ground_contact_matches_finite_differences(shape):
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.5, mu=0.4)
    b.set_ground_plane()
    body = b.add_body(kc.transform(kc.vec3(0, 0.3, 0), kc.quat(0, 0, 0, 1)))
    if shape == "sphere":
        b.add_shape_sphere(radius=0.1, body=body)
    else:
        b.add_shape_box(half_extents=(0.1, 0.05, 0.08), body=body)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt = 300, 1e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.array([[1.0, 0.6, -0.5, 0.0, 0.3, 0.0, 0.0]], np.float32)

    def run(qd0):
        states[0].body_qd.numpy()[0] = qd0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    qd0 = np.array([0.8, -1.0, 0.3, 1.0, 0.5, -2.0])
    tape = kc.Tape()
    with tape:
        run(qd0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[0].astype(np.float64)
    # small steps: the corners switch between sticking and sliding, so the loss has kinks ~1e-3 apart
    eps = 2e-4
    fd = np.array([(run(qd0 + e) - run(qd0 - e)) / (2 * eps) for e in np.eye(6) * eps])
    assert min(s.body_q.numpy()[0, 1] for s in states) < 0.11  # it hit the ground
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)
