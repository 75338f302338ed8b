"""SolverFeatherstone(toi=True) with several impacts per articulation per step (sim/featherstone_toi.py):
a biped standing on two box feet holds both, a slider between two walls 6 cm apart meets both in one
step and ends at the analytic reflection, two feet landing together both rebound with e, and the Tape's
gradient through two impacts of one step against central differences."""
import numpy as np
import pytest

import kernelcore as kc
import sim

FOOT = (0.05, 0.02, 0.05)  # foot box half extents [m]
LEG = 0.3  # joint to foot centre [m]
HIP = 0.2  # hip joints at x = +-HIP [m]


def _rotate(q, v):
    """Rotate ``v`` by the quaternion ``q`` (x, y, z, w)."""
    u, w = np.asarray(q[:3], np.float64), float(q[3])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def _biped(e, y0, vy, gravity, leg_ke=2e3, requires_grad=False):
    """A box torso on a free joint with two legs on revolute hinges (about z, held vertical by PD drives),
    each ending in a box foot; the feet's soles at ``y0`` [m] above the ground, moving at ``vy`` [m/s]."""
    b = sim.ModelBuilder(gravity=(0.0, gravity, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=1e4, mu=0.8, restitution=e)
    hip_y = y0 + LEG + FOOT[1]
    torso = b.add_body(xform=(0.0, hip_y, 0.0, 0, 0, 0, 1), vel=(0.0, vy, 0.0))
    b.add_shape_box(half_extents=(HIP + 0.05, 0.05, 0.1), body=torso, density=500.0)
    b.add_joint_free(torso)
    feet = []
    for side in (-1.0, 1.0):
        leg = b.add_body(xform=(side * HIP, hip_y, 0.0, 0, 0, 0, 1))
        b.add_shape_box(pos=(0.0, -LEG, 0.0), half_extents=FOOT, body=leg, density=1000.0)
        b.add_joint_revolute(torso, leg, parent_xform=(side * HIP, 0.0, 0.0, 0, 0, 0, 1), axis=(0, 0, 1),
                             target_ke=leg_ke, target_kd=leg_ke * 0.05)
        feet.append(leg)
    return b.finalize(requires_grad=requires_grad), feet


def _sole_points(state, body):
    """World positions of the foot's four sole corners and its sole centre, (5, 3) [m]."""
    tf = state.body_q.numpy()[body].astype(np.float64)
    corners = [(sx * FOOT[0], -LEG - FOOT[1], sz * FOOT[2]) for sx in (-1, 1) for sz in (-1, 1)]
    corners.append((0.0, -LEG - FOOT[1], 0.0))
    return np.array([tf[:3] + _rotate(tf[3:], np.array(c)) for c in corners])


def _point_velocity(model, state, body, x):
    """World velocity [m/s] of the world point ``x`` fixed to ``body`` (body_qd: COM velocity, angular)."""
    tf = state.body_q.numpy()[body].astype(np.float64)
    qd = state.body_qd.numpy()[body].astype(np.float64)
    com = tf[:3] + _rotate(tf[3:], model.body_com.numpy()[body].astype(np.float64))
    return qd[:3] + np.cross(qd[3:], x - com)


def _run(model, solver, steps, dt, each=None):
    s0, s1 = model.state(), model.state()
    for k in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        if each is not None:
            each(k, s0)
    return s0


def test_biped_standing_on_two_box_feet_holds_both():
    """Box links have no penalty pairs with toi=True: every foot must be held by its impacts, each step."""
    model, feet = _biped(0.5, 0.0, 0.0, -9.81)
    lowest = []
    state = _run(model, sim.SolverFeatherstone(model, toi=True), 1000, 1e-3,
                 lambda k, s: lowest.append(min(_sole_points(s, f)[:, 1].min() for f in feet)))
    assert min(lowest) > -2e-3
    for f in feet:
        for x in _sole_points(state, f):
            assert np.linalg.norm(_point_velocity(model, state, f, x)) < 1e-2
    assert np.abs(state.joint_qd.numpy()).max() < 1e-2


def test_two_feet_landing_together_both_rebound_with_e():
    """No gravity: the biped comes down flat at 2 m/s; both soles touch in the same step and must both
    leave at e * 2 m/s, the torso without spin (one foot's impulse alone would tip it)."""
    e, v = 0.5, 2.0
    model, feet = _biped(e, 0.003, -v, 0.0)
    state = _run(model, sim.SolverFeatherstone(model, toi=True), 4, 1e-3)
    for f in feet:
        centre = _sole_points(state, f)[4]
        assert _point_velocity(model, state, f, centre)[1] == pytest.approx(e * v, rel=2e-2)
    assert np.abs(state.body_qd.numpy()[0][3:]).max() < 1e-2 * v / HIP


GAP = 0.06  # distance between the wall faces [m]
R = 0.01  # slider sphere radius [m]


def _slider(e, x0, v0, requires_grad=False):
    """A sphere on a prismatic joint along x between two 1 cm static walls whose faces are at
    x = +-GAP / 2; no gravity, no friction."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.0, restitution=e)
    for side in (-1.0, 1.0):
        b.add_shape_box(pos=(side * (GAP / 2 + 0.005), 0.0, 0.0), half_extents=(0.005, 0.2, 0.2))
    body = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-4)
    b.add_shape_sphere(radius=R, body=body, density=1.0)
    b.add_joint_prismatic(-1, body, axis=(1, 0, 0), q0=x0, qd0=v0)
    return b.finalize(requires_grad=requires_grad)


def _reflect(x0, v0, t, e, half):
    """Exact motion of a point in [-half, half] bouncing with restitution e: (x, v) at time t [s]."""
    x, v = x0, v0
    while True:
        wall = half if v > 0 else -half
        t_hit = (wall - x) / v
        if t_hit >= t:
            return x + v * t, v
        t -= t_hit
        x, v = wall, -e * v


@pytest.mark.parametrize("e", [1.0, 0.8])
def test_slider_between_close_walls_meets_both_in_one_step(e):
    """At 85 m/s the sphere crosses the 4 cm it can move about twice per 1 ms step: two or three impacts per step;
    the state after each step is the analytic reflection (no wall is passed)."""
    x0, v0, dt, steps = 0.0, 85.0, 1e-3, 3
    model = _slider(e, x0, v0)
    half = GAP / 2 - R
    positions, rates = [], []

    def record(k, s):
        positions.append(float(s.joint_q.numpy()[0]))
        rates.append(float(s.joint_qd.numpy()[0]))

    _run(model, sim.SolverFeatherstone(model, toi=True), steps, dt, record)
    for k in range(steps):
        x, v = _reflect(x0, v0, (k + 1) * dt, e, half)
        assert positions[k] == pytest.approx(x, abs=2e-4)
        assert rates[k] == pytest.approx(v, rel=1e-3)
    assert max(abs(p) for p in positions) <= half + 1e-4


@kc.kernel
def _weighted_sum_kernel(x: kc.array(dtype=float), w: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i] * w[i])


def _loss(model, q0, qd0, steps, dt, wq, wqd, tape=None):
    """Roll out from (q0, qd0) (numpy); loss = wq . joint_q + wqd . joint_qd at the end (recorded on ``tape``)."""
    states = [model.state() for _ in range(steps + 1)]
    states[0].joint_q.assign(np.asarray(q0, np.float32))
    states[0].joint_qd.assign(np.asarray(qd0, np.float32))
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    solver = sim.SolverFeatherstone(model, toi=True)
    if tape is not None:
        tape.__enter__()
    for k in range(steps):
        solver.step(model, states[k], states[k + 1], None, dt)
    for x, w in ((states[-1].joint_q, wq), (states[-1].joint_qd, wqd)):
        kc.launch(_weighted_sum_kernel, dim=x.shape[0], inputs=[x, kc.array(np.asarray(w, np.float32), dtype=float)],
                  outputs=[loss])
    if tape is not None:
        tape.__exit__(None, None, None)
    return states, loss


def _slider_loss(model, x0, v0, steps, dt, wq, wqd, tape=None):
    return _loss(model, [x0], [v0], steps, dt, [wq], [wqd], tape)


def test_gradient_through_two_impacts_in_one_step():
    """One step with two impacts (right wall, then left): x1 = -half + e^2 v (dt - t1 - t2) ... a linear
    function of (x0, v0) between the kinks; the Tape's gradient against the analytic derivative and
    central differences of the same simulation."""
    e, x0, v0, dt = 0.8, 0.005, 90.0, 1e-3
    half = GAP / 2 - R
    model = _slider(e, x0, v0, requires_grad=True)
    wq, wqd = 1.0, 0.01
    tape = kc.Tape()
    states, loss = _slider_loss(model, x0, v0, 1, dt, wq, wqd, tape)
    x1, v1 = _reflect(x0, v0, dt, e, half)
    assert v1 == pytest.approx(e * e * v0)  # two impacts in the step
    assert float(loss.numpy()[0]) == pytest.approx(wq * x1 + wqd * v1, abs=2e-4)
    tape.backward(loss)
    gx = float(states[0].joint_q.grad.numpy()[0])
    gv = float(states[0].joint_qd.grad.numpy()[0])

    def exact(x, v):
        xx, vv = _reflect(x, v, dt, e, half)
        return wq * xx + wqd * vv

    hx, hv = 1e-4, 1e-1
    fd_x = (exact(x0 + hx, v0) - exact(x0 - hx, v0)) / (2 * hx)
    fd_v = (exact(x0, v0 + hv) - exact(x0, v0 - hv)) / (2 * hv)
    assert gx == pytest.approx(fd_x, rel=1e-2)
    assert gv == pytest.approx(fd_v, rel=1e-2)

    def sim_loss(x, v):
        return float(_slider_loss(model, x, v, 1, dt, wq, wqd)[1].numpy()[0])

    num_x = (sim_loss(x0 + 1e-3, v0) - sim_loss(x0 - 1e-3, v0)) / 2e-3
    num_v = (sim_loss(x0, v0 + 1.0) - sim_loss(x0, v0 - 1.0)) / 2.0
    assert gx == pytest.approx(num_x, rel=3e-2)
    assert gv == pytest.approx(num_v, rel=3e-2)


def test_gradient_of_a_biped_landing_under_gravity_matches_finite_differences():
    """Both feet land together (one impact, two contacts) under gravity and it flies up again: the Tape's
    derivatives of the torso's final height and speed by its initial height and speed against central
    differences 1 mm / 1 cm/s wide (across steps: a landing one step later gives the same state)."""
    model, feet = _biped(0.5, 0.01, -1.0, -9.81, requires_grad=True)
    steps, dt = 40, 1e-3
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    wq, wqd = np.zeros(model.joint_coord_count), np.zeros(model.joint_dof_count)
    wq[1], wqd[1] = 1.0, 0.01
    tape = kc.Tape()
    states, loss = _loss(model, q0, qd0, steps, dt, wq, wqd, tape)
    tape.backward(loss)
    grads = (float(states[0].joint_q.grad.numpy()[1]), float(states[0].joint_qd.grad.numpy()[1]))
    for grad, (q_dir, qd_dir) in zip(grads, ((1e-3, 0.0), (0.0, 1e-2))):
        dq, dqd = np.zeros_like(q0), np.zeros_like(qd0)
        dq[1], dqd[1] = q_dir, qd_dir
        h = q_dir + qd_dir
        up = float(_loss(model, q0 + dq, qd0 + dqd, steps, dt, wq, wqd)[1].numpy()[0])
        down = float(_loss(model, q0 - dq, qd0 - dqd, steps, dt, wq, wqd)[1].numpy()[0])
        numeric = (up - down) / (2.0 * h)
        assert abs(numeric) > 1e-2
        assert grad == pytest.approx(numeric, rel=3e-2, abs=1e-3)
