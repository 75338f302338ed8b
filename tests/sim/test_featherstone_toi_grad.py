"""Gradients through a head-on impact with Coulomb friction, SolverFeatherstone(toi=True) (issue 16).

A link that hits the ground straight down has no tangential velocity at the contact, v_t = 0.  The
friction impulse used to be ``-t min(mu j_n, |v_t| / w_t)`` with ``t = v_t / |v_t|``: skipped at v_t = 0,
so the Tape gave the frictionless gradient while finite differences saw the friction.  The impulse is
now ``-K_t^-1 v_t`` (``K_t`` the tangent-plane contact mass in generalised coordinates) capped by the
cone: linear in v_t where it sticks.  The values are analytic (a sticking ball keeps 5/7 of its sideways
speed; a slider on prismatic joints stops) and match central differences.  SI units.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim
from featherstone_scenes import free_link_model, rollout, run

R = 0.05  # sphere radius [m]
Y0, VY = 0.3, -2.0  # drop height [m] and speed [m/s]: hit at t = (Y0 - R) / 2 = 0.125 s
STEPS, DT = 10, 0.02


def _add_ball(b, body):
    b.add_shape_sphere(radius=R, body=body)


def _final_coordinate_gradient(model, coord, dof):
    """(Tape d joint_q[coord](T) / d joint_qd[dof](0), central differences of it at eps 1e-2 and 1e-3)."""
    q0 = model.joint_q.numpy().astype(np.float64)
    qd0 = model.joint_qd.numpy().astype(np.float64)
    wq, wqd = np.zeros(model.joint_coord_count), np.zeros(model.joint_dof_count)
    wq[coord] = 1.0
    tape = kc.Tape()
    states, loss = rollout(model, q0, qd0, STEPS, DT, wq, wqd, tape)
    tape.backward(loss)
    grad = float(states[0].joint_qd.grad.numpy()[dof])
    fds = []
    for eps in (1e-2, 1e-3):
        kick = np.zeros(model.joint_dof_count)
        kick[dof] = eps
        hi = float(rollout(model, q0, qd0 + kick, STEPS, DT, wq, wqd)[1].numpy()[0])
        lo = float(rollout(model, q0, qd0 - kick, STEPS, DT, wq, wqd)[1].numpy()[0])
        fds.append((hi - lo) / (2.0 * eps))
    return grad, fds


def test_head_on_ball_link_with_friction_gradient_is_analytic():
    """A free-jointed ball falls straight onto the ground (mu 0.5, e 0.8, no gravity): it sticks, so a
    small sideways velocity keeps 5/7 of itself (solid sphere: w_t = 1/m + R^2/I = 3.5/m) and
    d x(T)/d vx(0) = t_hit + (5/7)(T - t_hit) (T without friction), the same along z (the other tangent)."""
    model = free_link_model(_add_ball, 0.8, Y0, (0.0, VY, 0.0), 0.0, mu=0.5, requires_grad=True)
    t_hit, T = (Y0 - R) / -VY, STEPS * DT
    expected = t_hit + 5.0 / 7.0 * (T - t_hit)
    for coord, dof in ((0, 0), (2, 2)):  # x and z: both tangent directions
        grad, fds = _final_coordinate_gradient(model, coord, dof)
        for fd in fds:
            assert fd == pytest.approx(expected, rel=2e-3)
        assert grad == pytest.approx(expected, rel=2e-3), (coord, grad, expected)  # was T = 0.2


def _slider(mu):
    """A ball on two prismatic joints (x, then y) dropped head-on: it cannot turn, so friction can only
    stop its sideways motion (the tangent-plane contact mass has rank 1: z is no dof)."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=1e4, mu=mu, restitution=0.8)
    cart = b.add_body(xform=(0.0, Y0, 0.0, 0, 0, 0, 1), mass=1.0, inertia=np.eye(3) * 1e-2)
    ball = b.add_body(xform=(0.0, Y0, 0.0, 0, 0, 0, 1))
    _add_ball(b, ball)
    b.add_joint_prismatic(-1, cart, parent_xform=(0.0, Y0, 0.0, 0, 0, 0, 1), axis=(1.0, 0.0, 0.0))
    b.add_joint_prismatic(cart, ball, axis=(0.0, 1.0, 0.0), qd0=VY)
    return b.finalize(requires_grad=True)


def test_head_on_slider_with_friction_stops_sideways_and_its_gradient_is_t_hit():
    """The slider sticks at the hit (mu (1 + e) |vy| m_ball > (m_cart + m_ball) |vx| for a small vx), so
    x(T) = x0 + vx t_hit: d x(T)/d vx(0) = t_hit; without friction it is T."""
    t_hit, T = (Y0 - R) / -VY, STEPS * DT
    for mu, expected in ((0.5, t_hit), (0.0, T)):
        grad, fds = _final_coordinate_gradient(_slider(mu), 0, 0)
        for fd in fds:
            assert fd == pytest.approx(expected, rel=2e-3)
        assert grad == pytest.approx(expected, rel=2e-3), (mu, grad, expected)


def test_box_link_sliding_on_the_ground_stops_at_the_coulomb_distance():
    """A box link slides on the ground at 0.5 m/s under gravity (mu 0.5): the toi impacts' friction
    stops it after v^2 / (2 mu g) (Coulomb), and then it does not creep off: its kinetic energy over
    the last 0.1 s stays below 1e-4 of the initial (a one-point impulse at the face centre leaves a
    rocking of ~0.03 rad/s, 0.05 before the tangent-plane friction)."""
    h, v0, mu, g = 0.1, 0.5, 0.5, 9.81

    def add_box(b, body):
        b.add_shape_box(half_extents=(h, h, h), body=body, density=1000.0)

    model = free_link_model(add_box, 0.0, h, (v0, 0.0, 0.0), -g, mu=mu)
    _, qds, state = run(model, sim.SolverFeatherstone(model, toi=True), 300, 1e-3)
    x = float(state.joint_q.numpy()[0])
    assert x == pytest.approx(v0 * v0 / (2.0 * mu * g), rel=0.05)
    m = float(model.body_mass.numpy()[0])
    inertia = model.body_inertia.numpy()[0]
    energy = [0.5 * m * qd[:3] @ qd[:3] + 0.5 * qd[3:] @ inertia @ qd[3:] for qd in qds[-100:].astype(np.float64)]
    assert max(energy) < 1e-4 * 0.5 * m * v0 * v0
    assert abs(float(state.joint_q.numpy()[1]) - h) < 1e-3
