"""Time-of-impact contacts (SolverSemiImplicit(toi=True)): bounces, tunnelling, gradients."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import add_thin_static_wall, impact_builder

# DiffTaichi's bouncing ball (seed 003, section 4.3): no gravity, ground at y = 0.1, radius 0.05
E, DT, STEPS, H0, V0 = 0.8, 0.002, 203, 0.5, (-1.0, -2.0, 0.0)


def _ball(kind, toi, e=E, mu=0.0, gravity=(0, 0, 0), pos=(0, H0, 0), vel=V0, ke=1e4, requires_grad=True,
          extra=None):
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=ke, restitution=e, mu=mu)
    b.set_ground_plane(offset=0.1)
    if extra:
        extra(b)
    if kind == "particle":
        b.add_particle(pos, vel, 1.0, 0.05)
    else:
        body = b.add_body(kc.transform(kc.vec3(*pos), kc.quat(0, 0, 0, 1)), vel=vel)
        b.add_shape_sphere(radius=0.05, body=body)
    m = b.finalize(requires_grad=requires_grad)
    return m, sim.SolverSemiImplicit(m, toi=toi)


def _q(kind, state):
    return state.particle_q if kind == "particle" else state.body_q


def _qd(kind, state):
    return state.particle_qd if kind == "particle" else state.body_qd


class Rollout:
    """One preallocated state per step; ``loss`` and ``grad`` of the final height."""

    def __init__(self, kind, toi, steps=STEPS, dt=DT, **kw):
        self.kind, self.steps, self.dt = kind, steps, dt
        self.m, self.solver = _ball(kind, toi, **kw)
        self.states = [self.m.state() for _ in range(steps + 1)]

    def run(self, h0=H0, vy0=V0[1]):
        s0 = self.states[0]
        _q(self.kind, s0).numpy()[0, 1] = h0
        _qd(self.kind, s0).numpy()[0, 1] = vy0
        for k in range(self.steps):
            self.solver.step(self.m, self.states[k], self.states[k + 1], None, self.dt)
        return float(_q(self.kind, self.states[-1]).numpy()[0, 1])

    def grad(self, h0=H0, vy0=V0[1]):
        tape = kc.Tape()
        with tape:
            loss = self.run(h0, vy0)
        seed = np.zeros(_q(self.kind, self.states[-1]).numpy().shape, np.float32)
        seed[0, 1] = 1.0
        tape.backward(grads={_q(self.kind, self.states[-1]): seed})
        s0 = self.states[0]
        g = (float(_q(self.kind, s0).grad.numpy()[0, 1]), float(_qd(self.kind, s0).grad.numpy()[0, 1]))
        self.d_restitution = float(self.m.material_restitution.grad.numpy()[0])
        tape.zero()
        return loss, g


@pytest.mark.parametrize("kind", ["particle", "body"])
def test_bouncing_ball_gradients_are_those_of_the_real_bounce(kind):
    t = STEPS * DT
    roll = Rollout(kind, toi=True)
    loss, (d_h0, d_vy0) = roll.grad()
    # forward: the analytic bounce (contact when the centre is one radius above the ground)
    u = -V0[1]
    t_hit = (H0 - 0.15) / u
    np.testing.assert_allclose(loss, 0.15 + E * u * (t - t_hit), atol=1e-5)
    np.testing.assert_allclose(d_h0, -E, rtol=0.02)
    np.testing.assert_allclose(d_vy0, -E * t, rtol=0.02)
    # the material is differentiable too: d h_T / d e = u T - (h0 - 0.15)
    np.testing.assert_allclose(roll.d_restitution, u * t - (H0 - 0.15), rtol=0.02)
    # and float64 central finite differences of the simulation agree
    eps = 1e-3
    fd_h0 = (roll.run(H0 + eps) - roll.run(H0 - eps)) / (2 * eps)
    fd_vy0 = (roll.run(vy0=V0[1] + eps) - roll.run(vy0=V0[1] - eps)) / (2 * eps)
    np.testing.assert_allclose([d_h0, d_vy0], [fd_h0, fd_vy0], rtol=0.02)


def test_penalty_contact_gets_the_bouncing_ball_gradient_wrong():
    # the problem TOI solves (issue #15): with step-sampled penalty contacts the gradient
    # depends on the stiffness and is far from -e
    _, (d_h0, _) = Rollout("particle", toi=False, ke=1e4).grad()
    assert abs(d_h0 + E) > 0.3
    np.testing.assert_allclose(d_h0, -0.35, atol=0.02)


@pytest.mark.parametrize("kind", ["particle", "body"])
@pytest.mark.parametrize("toi", [True, False])
def test_fast_small_sphere_does_not_tunnel_through_a_thin_wall(kind, toi):
    def wall(b):
        add_thin_static_wall(b, y=0.5)  # 1 cm thick

    b = impact_builder()
    wall(b)
    if kind == "particle":
        b.add_particle((0, 0.5, 0), (100.0, 0, 0), 0.01, 0.01)
    else:
        body = b.add_body(kc.transform(kc.vec3(0, 0.5, 0), kc.quat(0, 0, 0, 1)), vel=(100.0, 0, 0))
        b.add_shape_sphere(radius=0.01, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=toi)
    s0, s1 = m.state(), m.state()
    xs = []
    for _ in range(3):
        solver.step(m, s0, s1, None, 0.01)
        s0, s1 = s1, s0
        xs.append(float(_q(kind, s0).numpy()[0, 0]))
    vx = float(_qd(kind, s0).numpy()[0, 0])
    if toi:
        assert max(xs) < 0.495 - 0.01 + 1e-4 and vx == pytest.approx(-100.0, rel=1e-5)
        # the bounce happened at the wall: 0.485 reached after 0.485 cm of 1 m, back 0.515 m in step 1
        np.testing.assert_allclose(xs[0], 0.485 - (1.0 - 0.485), atol=1e-4)
    else:
        assert xs[-1] > 1.0 and vx > 99.0  # the penalty contact never saw the wall


@pytest.mark.parametrize("kind", ["particle", "body"])
def test_bounce_heights_follow_e_squared_at_any_step(kind):
    e = 0.6
    m, solver = _ball(kind, True, e=e, gravity=(0, -9.81, 0), pos=(0, 0.65, 0), vel=(0, 0, 0),
                      requires_grad=False)
    s0, s1 = m.state(), m.state()
    y, vy = [], []
    for _ in range(1800):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        y.append(float(_q(kind, s0).numpy()[0, 1]) - 0.15)
        vy.append(float(_qd(kind, s0).numpy()[0, 1]))
    y, vy = np.array(y), np.array(vy)
    apex = np.nonzero((vy[:-1] > 0) & (vy[1:] <= 0))[0]
    assert len(apex) >= 2
    np.testing.assert_allclose(y[apex[0]] / 0.5, e ** 2, rtol=0.02)
    np.testing.assert_allclose(y[apex[1]] / 0.5, e ** 4, rtol=0.03)
    assert y.min() > -1e-5  # never below the ground


@pytest.mark.parametrize("kind", ["particle", "body"])
def test_resting_and_sliding_with_time_of_impact_contacts(kind):
    mu, v0 = 0.4, 2.0
    m, solver = _ball(kind, True, e=0.5, mu=mu, gravity=(0, -9.81, 0), pos=(0, 0.15, 0), vel=(v0, 0, 0),
                      requires_grad=False)
    s0, s1 = m.state(), m.state()
    for _ in range(1000):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    x, v = _q(kind, s0).numpy()[0], _qd(kind, s0).numpy()[0]
    assert abs(x[1] - 0.15) < 1e-4 and abs(v[1]) < 1e-2  # rests on the ground
    if kind == "particle":  # slides to a stop at v^2 / (2 mu g)
        np.testing.assert_allclose(x[0], v0 * v0 / (2 * mu * 9.81), rtol=0.02)
    else:  # a sphere starts rolling: it slides until v = 5/7 v0, then rolls on
        np.testing.assert_allclose(v[0], 5.0 / 7.0 * v0, rtol=0.02)
        np.testing.assert_allclose(-v[5] * 0.05, v[0], rtol=0.02)


def test_sphere_body_picks_up_spin_at_an_oblique_impact():
    # sticking impact (mu large): the contact point stops, vx -> 5/7 vx, spin -vx / r about z
    m, solver = _ball("body", True, e=0.5, mu=1.0, pos=(0, 0.2, 0), vel=(1.0, -2.0, 0.0), requires_grad=False)
    s0, s1 = m.state(), m.state()
    for _ in range(50):
        solver.step(m, s0, s1, None, 2e-3)
        s0, s1 = s1, s0
    v = s0.body_qd.numpy()[0]
    np.testing.assert_allclose(v[:3], (5.0 / 7.0, 1.0, 0.0), atol=1e-4)
    np.testing.assert_allclose(v[3:], (0.0, 0.0, -5.0 / 7.0 / 0.05), rtol=1e-4)


@pytest.mark.parametrize("kind", ["particle", "body"])
def test_gradient_of_an_oblique_bounce_off_static_shapes_matches_finite_differences(kind):
    def colliders(b):
        b.add_shape_sphere((0.6, 0.55, 0.0), 0.15)
        b.add_shape_box((-0.4, 0.4, 0.05), rot=(0, 0, np.sin(0.2), np.cos(0.2)), half_extents=(0.05, 0.3, 0.3))

    m, solver = _ball(kind, True, e=0.7, mu=0.3, gravity=(0, -2.0, 0), pos=(0.0, 0.5, 0.0), extra=colliders)
    steps, dt = 400, 2e-3
    states = [m.state() for _ in range(steps + 1)]
    n = _q(kind, states[0]).numpy().shape[1]
    w = np.zeros((1, n), np.float32)
    w[0, :3] = (1.0, 0.7, -0.4)

    def run(v0):
        _qd(kind, states[0]).numpy()[0, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((_q(kind, states[-1]).numpy().astype(np.float64) * w).sum())

    v0 = np.array([2.0, 0.5, 0.1])  # glances off the sphere's lower left, back onto the tilted box
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={_q(kind, states[-1]): w})
    grad = _qd(kind, states[0]).grad.numpy()[0, :3].astype(np.float64)
    xs = np.array([_q(kind, s).numpy()[0, 0] for s in states])
    assert xs.max() > 0.3 and xs[-1] < xs.max() - 0.1  # it bounced off the sphere ...
    assert xs.min() < -0.2                              # ... and then off the box
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=3e-3)
