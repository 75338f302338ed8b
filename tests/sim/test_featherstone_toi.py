"""SolverFeatherstone(toi=True): impacts of link spheres in generalised coordinates (sim/featherstone_toi.py)
against analytic bounces, a thin wall hit at 100 m/s (which penalty contacts tunnel through), a pendulum's
rebound through its articulated inertia, and Tape gradients against analytic and finite-difference values."""
import numpy as np
import pytest

import sim
from featherstone_scenes import (WALL_TOP, assert_bounce_gradient_is_minus_e, assert_gradients_match_fd,
                                 free_link_model, pendulum_model, run, run_pendulum)

R = 0.1  # sphere radius [m]


def _sphere(pos=(0.0, 0.0, 0.0), density=1000.0):
    def add(b, body):
        b.add_shape_sphere(pos=pos, radius=R, body=body, density=density)
    return add


def _ball(e, y0, vel, gravity, **kwargs):
    return free_link_model(_sphere(), e, y0, vel, gravity, **kwargs)


def test_free_ball_rebounds_to_e_squared_of_its_drop():
    e, y0 = 0.8, 1.0
    model = _ball(e, y0, (0.0, 0.0, 0.0), -9.81)
    heights, _, _ = run(model, sim.SolverFeatherstone(model, toi=True), 1200, 1e-3)
    low = int(heights.argmin())
    assert abs(heights[low] - R) < 2e-3  # touches, no penetration beyond one step of gravity
    rebound = (heights[low:].max() - R) / (y0 - R)
    assert rebound == pytest.approx(e * e, abs=0.01)


def test_resting_ball_stays_on_the_ground():
    model = _ball(0.8, R, (0.0, 0.0, 0.0), -9.81)
    heights, qds, _ = run(model, sim.SolverFeatherstone(model, toi=True), 300, 1e-3)
    assert np.abs(heights - R).max() < 1e-4  # no hopping by g dt^2 each step
    assert np.abs(qds[-1]).max() < 1e-3


def test_ball_at_100_m_per_s_does_not_pass_through_a_thin_box():
    e, dt, steps = 0.5, 1e-3, 30
    model = _ball(e, 2.0, (0.0, -100.0, 0.0), 0.0, wall=True)
    heights, qds, s = run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = WALL_TOP + R
    t_hit = (2.0 - top) / 100.0
    assert float(s.joint_q.numpy()[1]) == pytest.approx(top + e * 100.0 * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * 100.0, rel=1e-4)
    assert heights.min() > top - 1e-3
    # penalty contacts alone pass through it (what the sweep is for)
    model = _ball(e, 2.0, (0.0, -100.0, 0.0), 0.0, wall=True)
    heights, _, _ = run(model, sim.SolverFeatherstone(model, toi=False), steps, dt)
    assert heights.min() < 0.49


@pytest.mark.parametrize("toi", [True, False])
def test_pendulum_bob_rebounds_from_a_thin_wall(toi):
    """A sphere bob 0.5 m below the pivot at 200 rad/s towards a 2 cm wall whose face is at x = 0.3."""
    e = 0.5
    angles, rates = run_pendulum(pendulum_model(_sphere(pos=(0.0, -0.5, 0.0), density=1.0), e), toi)
    touch = np.arcsin((0.3 - R) / 0.5)  # the bob's angle when it touches the wall
    if toi:
        assert max(angles) < touch + 0.02
        # one dof, frictionless: the normal velocity reverses with e, so does the joint rate
        assert rates[-1] == pytest.approx(-e * 200.0, rel=1e-3)
    else:
        assert max(angles) > touch + 0.3  # penalty contacts: through the wall


def test_gradient_through_a_bounce_is_the_bounce_s():
    """No gravity, no friction: a ball at 2 m/s from y0 bounces once; y(T) = R + e (2 T - (y0 - R)), so
    dy(T)/dy0 = -e and dy(T)/dvy0 = -e T (a step-sampled penalty contact gives stiffness-dependent values)."""
    e, dt, steps = 0.5, 1e-2, 40
    model = _ball(e, 0.5, (0.0, -2.0, 0.0), 0.0, mu=0.0, requires_grad=True)
    assert_bounce_gradient_is_minus_e(model, e, steps, dt, R + e * (2.0 * steps * dt - 0.4))


def test_gradients_with_friction_and_spin_match_finite_differences():
    """A spinning ball thrown at the ground with friction (it sticks at the impact), under gravity:
    the Tape's directional derivatives of a random weighting of the final state against central
    differences of the same simulation."""
    dt, steps = 5e-3, 40
    model = _ball(0.6, 0.3, (0.3, -2.0, 0.1), -9.81, mu=0.8, ang_vel=(1.0, 2.0, 3.0), requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    assert_gradients_match_fd(model, q0, qd0, steps, dt)
