"""SolverFeatherstone(toi=True) with box and capsule links (sim/featherstone_toi_shapes.py): a free box at
100 m/s on a thin static box (rebound e v; penalty contacts tunnel), a capsule pendulum bob at 200 rad/s
rebounding from a thin wall through the articulated inertia, and Tape gradients through a box's bounce
against the analytic -e and against central differences."""
import numpy as np
import pytest

import kernelcore as kc
import sim

H = 0.1  # box half extent [m]


def _box(e, y0, vel, gravity, mu=0.5, wall=False, ang_vel=(0.0, 0.0, 0.0), requires_grad=False):
    b = sim.ModelBuilder(gravity=(0.0, gravity, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=1e4, mu=mu, restitution=e)
    if wall:  # 2 cm thick, top face at y = 0.51
        b.add_shape_box(pos=(0.0, 0.5, 0.0), half_extents=(1.0, 0.01, 1.0))
    body = b.add_body(xform=(0.0, y0, 0.0, 0, 0, 0, 1), vel=vel, ang_vel=ang_vel)
    b.add_shape_box(half_extents=(H, H, H), body=body, density=1000.0)
    b.add_joint_free(body)
    return b.finalize(requires_grad=requires_grad)


def _run(model, solver, steps, dt):
    s0, s1 = model.state(), model.state()
    heights, qds = [], []
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        heights.append(float(s0.joint_q.numpy()[1]))
        qds.append(s0.joint_qd.numpy().copy())
    return np.array(heights), np.array(qds), s0


def test_box_at_100_m_per_s_rebounds_from_a_thin_box_at_e_v():
    e, dt, steps = 0.5, 1e-3, 30
    model = _box(e, 2.0, (0.0, -100.0, 0.0), 0.0, wall=True)
    heights, qds, s = _run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = 0.51 + H
    t_hit = (2.0 - top) / 100.0
    assert float(s.joint_q.numpy()[1]) == pytest.approx(top + e * 100.0 * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * 100.0, rel=1e-4)
    assert np.abs(qds[-1][3:]).max() < 1e-3  # landing flat: the impulse goes through the face centre, no spin
    assert heights.min() > top - 1e-3
    # penalty contacts alone pass through it (what the sweep is for)
    model = _box(e, 2.0, (0.0, -100.0, 0.0), 0.0, wall=True)
    heights, _, _ = _run(model, sim.SolverFeatherstone(model, toi=False), steps, dt)
    assert heights.min() < 0.49


@pytest.mark.parametrize("link", ["box", "capsule"])
@pytest.mark.parametrize("collider", ["sphere", "capsule", "plane"])
def test_fast_link_rebounds_from_each_static_kind(link, collider):
    """A free box or capsule (axis vertical) at 50 m/s, no gravity, lands on the top (y = 0.5) of a
    static sphere, a horizontal capsule or a plane, right under its centre of mass: it rebounds at
    e v without spin (dt = 1 ms, 20 cm per step: penalty contacts would tunnel)."""
    e, dt, steps, v, y0 = 0.5, 1e-3, 30, 50.0, 1.5
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.5, restitution=e)
    if collider == "sphere":
        b.add_shape_sphere(pos=(0.0, 0.4, 0.0), radius=0.1)
    elif collider == "capsule":  # along x
        b.add_shape_capsule(pos=(0.0, 0.45, 0.0), radius=0.05, half_height=0.3,
                            rot=(0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)))
    else:
        b.add_shape_plane(pos=(0.0, 0.5, 0.0))
    body = b.add_body(xform=(0.0, y0, 0.0, 0, 0, 0, 1), vel=(0.0, -v, 0.0))
    if link == "box":
        b.add_shape_box(half_extents=(H, H, H), body=body, density=1000.0)
        below = H
    else:
        b.add_shape_capsule(radius=0.05, half_height=0.1, body=body, density=1000.0)
        below = 0.15
    b.add_joint_free(body)
    model = b.finalize()
    heights, qds, s = _run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = 0.5 + below
    t_hit = (y0 - top) / v
    assert heights[-1] == pytest.approx(top + e * v * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * v, rel=1e-4)
    assert np.abs(qds[-1][3:]).max() < 1e-3
    assert heights.min() > top - 1e-3


def test_resting_box_stays_on_the_ground():
    model = _box(0.8, H, (0.0, 0.0, 0.0), -9.81)
    heights, qds, _ = _run(model, sim.SolverFeatherstone(model, toi=True), 200, 1e-3)
    assert np.abs(heights - H).max() < 1e-4
    assert np.abs(qds[-1]).max() < 1e-3


def _capsule_pendulum(e, radius, half_height):
    """A capsule bob (axis along the rod, centre 0.5 m below a pivot at y = 1 turning about z) at 200 rad/s
    towards a 2 cm wall whose face is at x = 0.3; no gravity, no friction."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.0, restitution=e)
    b.add_shape_box(pos=(0.31, 0.8, 0.0), half_extents=(0.01, 0.5, 0.5))
    bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.0, -0.5, 0.0))
    b.add_shape_capsule(pos=(0.0, -0.5, 0.0), radius=radius, half_height=half_height, body=bob, density=1.0)
    b.add_joint_revolute(-1, bob, parent_xform=(0.0, 1.0, 0.0, 0, 0, 0, 1), axis=(0, 0, 1), q0=0.0, qd0=200.0)
    return b.finalize()


@pytest.mark.parametrize("toi", [True, False])
def test_capsule_pendulum_bob_rebounds_from_a_thin_wall(toi):
    e, radius, half = 0.5, 0.05, 0.05
    model = _capsule_pendulum(e, radius, half)
    s0, s1 = model.state(), model.state()
    solver = sim.SolverFeatherstone(model, toi=toi)
    angles, rates = [], []
    for _ in range(15):
        solver.step(model, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        angles.append(float(s0.joint_q.numpy()[0]))
        rates.append(float(s0.joint_qd.numpy()[0]))
    touch = np.arcsin((0.3 - radius) / (0.5 + half))  # the capsule's lower end touches the wall
    if toi:
        assert max(angles) < touch + 0.01
        # the angle of the impact, from the step that reversed: after it, theta_hit - e w (1 - s) dt
        k = int(np.argmax(np.array(rates) < 0.0))
        w, dt = 200.0, 1e-3
        s = (angles[k] - angles[k - 1] + e * w * dt) / ((1.0 + e) * w * dt)
        assert angles[k - 1] + w * s * dt == pytest.approx(touch, abs=3e-3)  # at the wall, not early
        # one dof, frictionless: the normal velocity reverses with e, so does the joint rate
        assert rates[-1] == pytest.approx(-e * 200.0, rel=1e-3)
    else:
        assert max(angles) > touch + 0.3  # penalty contacts: through the wall


@kc.kernel
def _weighted_sum_kernel(x: kc.array(dtype=float), w: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i] * w[i])


def _rollout(model, q0, qd0, steps, dt, wq, wqd, tape=None):
    states = [model.state() for _ in range(steps + 1)]
    states[0].joint_q.assign(q0.astype(np.float32))
    states[0].joint_qd.assign(qd0.astype(np.float32))
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    solver = sim.SolverFeatherstone(model, toi=True)
    if tape is None:
        tape = kc.Tape()
    with tape:
        for k in range(steps):
            solver.step(model, states[k], states[k + 1], None, dt)
        kc.launch(_weighted_sum_kernel, dim=model.joint_coord_count,
                  inputs=[states[-1].joint_q, kc.array(wq.astype(np.float32), dtype=float)], outputs=[loss])
        kc.launch(_weighted_sum_kernel, dim=model.joint_dof_count,
                  inputs=[states[-1].joint_qd, kc.array(wqd.astype(np.float32), dtype=float)], outputs=[loss])
    return states, loss


def test_gradient_through_a_box_bounce_is_the_bounce_s():
    """No gravity, no friction: a box at 2 m/s from y0 lands flat once; y(T) = H + e (2 T - (y0 - H)), so
    dy(T)/dy0 = -e and dy(T)/dvy0 = -e T."""
    e, dt, steps = 0.5, 1e-2, 40
    model = _box(e, 0.5, (0.0, -2.0, 0.0), 0.0, mu=0.0, requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    wq = np.zeros(model.joint_coord_count)
    wq[1] = 1.0
    tape = kc.Tape()
    states, loss = _rollout(model, q0, qd0, steps, dt, wq, np.zeros(model.joint_dof_count), tape)
    assert float(loss.numpy()[0]) == pytest.approx(H + e * (2.0 * steps * dt - 0.4), abs=1e-4)
    tape.backward(loss)
    assert float(states[0].joint_q.grad.numpy()[1]) == pytest.approx(-e, rel=1e-3)
    assert float(states[0].joint_qd.grad.numpy()[1]) == pytest.approx(-e * steps * dt, rel=1e-3)


def test_box_gradients_with_friction_and_spin_match_finite_differences():
    """A tilted, spinning box thrown at the ground with friction under gravity (it lands on one corner):
    the Tape's directional derivatives of a random weighting of the final state against central
    differences of the same simulation (accumulated in float64)."""
    dt, steps = 5e-3, 30
    model = _box(0.6, 0.4, (0.3, -2.0, 0.1), -9.81, mu=0.8, ang_vel=(1.0, 2.0, 3.0), requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    tilt = np.array([np.sin(0.2), 0.0, np.sin(0.15), 1.0])
    q0[3:] = tilt / np.linalg.norm(tilt)  # a corner lands first
    rng = np.random.default_rng(3)
    wq, wqd = rng.normal(size=model.joint_coord_count), rng.normal(size=model.joint_dof_count) * 0.1
    wq[3:] = 0.0  # not the quaternion (its sign and norm are gauge)
    tape = kc.Tape()
    states, loss = _rollout(model, q0, qd0, steps, dt, wq, wqd, tape)
    tape.backward(loss)
    gq = states[0].joint_q.grad.numpy().astype(np.float64)
    gqd = states[0].joint_qd.grad.numpy().astype(np.float64)

    def host_loss(q, qd):
        s = _rollout(model, q, qd, steps, dt, wq, wqd)[0][-1]
        return float(s.joint_q.numpy().astype(np.float64) @ wq + s.joint_qd.numpy().astype(np.float64) @ wqd)

    eps = 1e-3
    for grad, make in ((gq, lambda d, h: (q0 + h * d, qd0)), (gqd, lambda d, h: (q0, qd0 + h * d))):
        delta = rng.normal(size=grad.shape)
        if grad is gq:
            delta[3:] = 0.0
        numeric = (host_loss(*make(delta, eps)) - host_loss(*make(delta, -eps))) / (2 * eps)
        analytic = float(grad @ delta)
        assert abs(numeric) > 1e-2
        assert analytic == pytest.approx(numeric, rel=3e-2, abs=1e-3)
