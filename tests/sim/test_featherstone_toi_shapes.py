"""SolverFeatherstone(toi=True) with box and capsule links (sim/featherstone_toi_shapes.py): a free box at
100 m/s on a thin static box (rebound e v; penalty contacts tunnel), a capsule pendulum bob at 200 rad/s
rebounding from a thin wall through the articulated inertia, and Tape gradients through a box's bounce
against the analytic -e and against central differences."""
import numpy as np
import pytest

import sim
from featherstone_scenes import (WALL_TOP, assert_bounce_gradient_is_minus_e, assert_gradients_match_fd,
                                 free_link_model, impact_angle, pendulum_model, run, run_pendulum)

H = 0.1  # box half extent [m]


def _add_box(b, body):
    b.add_shape_box(half_extents=(H, H, H), body=body, density=1000.0)


def _box(e, y0, vel, gravity, **kwargs):
    return free_link_model(_add_box, e, y0, vel, gravity, **kwargs)


def test_box_at_100_m_per_s_rebounds_from_a_thin_box_at_e_v():
    e, dt, steps = 0.5, 1e-3, 30
    model = _box(e, 2.0, (0.0, -100.0, 0.0), 0.0, wall=True)
    heights, qds, s = run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = WALL_TOP + H
    t_hit = (2.0 - top) / 100.0
    assert float(s.joint_q.numpy()[1]) == pytest.approx(top + e * 100.0 * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * 100.0, rel=1e-4)
    assert np.abs(qds[-1][3:]).max() < 1e-3  # landing flat: the impulse goes through the face centre, no spin
    assert heights.min() > top - 1e-3
    # penalty contacts alone pass through it (what the sweep is for)
    model = _box(e, 2.0, (0.0, -100.0, 0.0), 0.0, wall=True)
    heights, _, _ = run(model, sim.SolverFeatherstone(model, toi=False), steps, dt)
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
    heights, qds, s = run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = 0.5 + below
    t_hit = (y0 - top) / v
    assert heights[-1] == pytest.approx(top + e * v * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * v, rel=1e-4)
    assert np.abs(qds[-1][3:]).max() < 1e-3
    assert heights.min() > top - 1e-3


def test_resting_box_stays_on_the_ground():
    model = _box(0.8, H, (0.0, 0.0, 0.0), -9.81)
    heights, qds, _ = run(model, sim.SolverFeatherstone(model, toi=True), 200, 1e-3)
    assert np.abs(heights - H).max() < 1e-4
    assert np.abs(qds[-1]).max() < 1e-3


@pytest.mark.parametrize("toi", [True, False])
def test_capsule_pendulum_bob_rebounds_from_a_thin_wall(toi):
    """A capsule bob (axis along the rod, centre 0.5 m below the pivot) at 200 rad/s towards a 2 cm wall
    whose face is at x = 0.3."""
    e, radius, half = 0.5, 0.05, 0.05

    def add_capsule(b, bob):
        b.add_shape_capsule(pos=(0.0, -0.5, 0.0), radius=radius, half_height=half, body=bob, density=1.0)

    angles, rates = run_pendulum(pendulum_model(add_capsule, e), toi)
    touch = np.arcsin((0.3 - radius) / (0.5 + half))  # the capsule's lower end touches the wall
    if toi:
        assert max(angles) < touch + 0.01
        assert impact_angle(angles, rates, e) == pytest.approx(touch, abs=3e-3)  # at the wall, not early
        # one dof, frictionless: the normal velocity reverses with e, so does the joint rate
        assert rates[-1] == pytest.approx(-e * 200.0, rel=1e-3)
    else:
        assert max(angles) > touch + 0.3  # penalty contacts: through the wall


def test_gradient_through_a_box_bounce_is_the_bounce_s():
    """No gravity, no friction: a box at 2 m/s from y0 lands flat once; y(T) = H + e (2 T - (y0 - H)), so
    dy(T)/dy0 = -e and dy(T)/dvy0 = -e T."""
    e, dt, steps = 0.5, 1e-2, 40
    model = _box(e, 0.5, (0.0, -2.0, 0.0), 0.0, mu=0.0, requires_grad=True)
    assert_bounce_gradient_is_minus_e(model, e, steps, dt, H + e * (2.0 * steps * dt - 0.4))


def test_box_gradients_with_friction_and_spin_match_finite_differences():
    """A tilted, spinning box thrown at the ground with friction under gravity (it lands on one corner):
    the Tape's directional derivatives of a random weighting of the final state against central
    differences of the same simulation (accumulated in float64)."""
    dt, steps = 5e-3, 30
    model = _box(0.6, 0.4, (0.3, -2.0, 0.1), -9.81, mu=0.8, ang_vel=(1.0, 2.0, 3.0), requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    tilt = np.array([np.sin(0.2), 0.0, np.sin(0.15), 1.0])
    q0[3:] = tilt / np.linalg.norm(tilt)  # a corner lands first
    assert_gradients_match_fd(model, q0, qd0, steps, dt)
