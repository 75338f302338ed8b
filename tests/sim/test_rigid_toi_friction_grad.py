"""Gradients through time-of-impact impacts with Coulomb friction (issue 15).

A head-on hit has no tangential velocity at the contact, u_t = 0.  The friction impulse used to be
``-t min(mu j_n, |u_t| / w_t)`` with ``t = u_t / |u_t|``: skipped at u_t = 0, so the Tape gave the
frictionless gradient there while the finite differences (stable from eps = 1e-2 to 1e-4, so not a
step crossing a kink) saw the friction.  With a body-body pair (sphere on a free box) ``w_t``
depends on the direction, so that impulse was not even differentiable at u_t = 0.  Impacts with static
shapes and body-body impacts now take ``-K_t^-1 u_t`` capped by the cone (sim/toi.py
``friction_impulse``): linear in u_t where it sticks.  For a body pair, u_t is the tangential
velocity the normal impulse leaves (sim/toi_body_pairs.py ``pair_impulse``): taken from before it, the
friction impulse could gain energy through the normal-tangent coupling of the contact mass, and a
3-stack of hull cubes pushed sideways with toi kept rocking (test_rigid_toi_stack_push.py).
No gravity, SI units.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

from rigid_scenes import add_free_body, impact_builder, pose_gradient_and_fd


def test_head_on_bounce_with_friction_gradient_is_analytic():
    """A sphere body falls straight onto the ground (mu = 0.5, e = 0.8): it sticks, so a small sideways
    velocity vx keeps 5/7 of itself (solid sphere: w_t = 1/m + r^2 / I = 3.5 / m) and
    d(final x)/d(vx0) = t_hit + (5/7)(T - t_hit), not T as without friction."""
    b = impact_builder(e=0.8, mu=0.5)
    b.set_ground_plane(offset=0.0)
    body = add_free_body(b, (0.0, 0.3, 0.0), vel=(0.0, -2.0, 0.0))
    b.add_shape_sphere(radius=0.05, body=body)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True)
    steps, dt = 10, 0.02
    w = np.zeros((1, 7), np.float32)
    w[0, 0] = 1.0
    grad, fd, vy_max = pose_gradient_and_fd(m, solver, np.array([0.0, -2.0, 0.0, 0.0, 0.0, 0.0]), w, steps, dt)
    assert vy_max > 1.0  # it bounced
    t_hit, T = (0.3 - 0.05) / 2.0, steps * dt
    expected = t_hit + 5.0 / 7.0 * (T - t_hit)
    assert abs(fd[0] - expected) < 1e-3 * expected
    assert abs(grad[0] - expected) < 1e-3 * expected, (grad[0], expected)  # was T = 0.2


def _sphere_on_box(mu):
    b = impact_builder(e=0.8, mu=mu)
    a = add_free_body(b, (-0.15, 0.0, 0.0), vel=(4.0, 0.0, 0.0))
    b.add_shape_sphere(radius=0.05, body=a)
    box = add_free_body(b, (0.0, 0.02, 0.01))
    b.add_shape_box(half_extents=(0.04, 0.05, 0.05), body=box)
    return b.finalize(requires_grad=True)


def test_sphere_on_free_box_with_friction_gradient_matches_finite_differences():
    """A sphere hits a free box off its centre (sim/toi_body_pairs.py, max_impacts = 4 as in the
    multi-impact scenes): the Tape gradient of a weighted sum of both final poses w.r.t. the sphere's
    initial linear and angular velocity matches float64 central differences, head-on (sticking,
    u_t = 0: was 13% off in y) and oblique (sliding)."""
    m = _sphere_on_box(mu=0.2)
    solver = sim.SolverSemiImplicit(m, toi=True, max_impacts=4)
    w = np.zeros((2, 7), np.float32)
    w[0, :3] = (1.0, 0.5, 0.3)
    w[1, :3] = (0.4, -0.6, 0.2)
    w[1, 3:6] = (0.3, 0.2, -0.4)  # the box's turn, which friction drives
    for qd0 in ([4.0, 0.0, 0.0, 0.0, 0.0, 0.0], [4.0, 1.5, -1.0, 0.0, 5.0, 0.0]):
        grad, fd, _ = pose_gradient_and_fd(m, solver, np.array(qd0), w, steps=1, dt=0.02)
        assert np.abs(fd).max() > 1e-3
        assert np.abs(grad - fd).max() < 0.03 * np.abs(fd).max() + 2e-5, (qd0, grad, fd)
