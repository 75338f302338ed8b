"""SolverFeatherstone(toi=True) with mesh links (add_shape_mesh(body=link), convex hulls; swept by
sim/featherstone_toi_shapes.py with sim/toi_mesh_body.py's features): a free hull at 100 m/s with
dt = 0.01 on a 2 cm box rebounds at e v (without toi it passes through), a hull pendulum bob at
200 rad/s rebounds from a thin wall at the analytic angle through the articulated inertia, a hull
resting on the ground stays put, and Tape gradients through a hull's bounce against the analytic
-e and central differences (friction, spin, a corner landing first)."""
import numpy as np
import pytest

import sim

pytest.importorskip("geometry")

from featherstone_scenes import (PENDULUM_RATE, PENDULUM_WALL, ROD, WALL_TOP,  # noqa: E402
                                 assert_bounce_gradient_is_minus_e, assert_gradients_match_fd, free_link_model,
                                 impact_angle, pendulum_model, run, run_pendulum)

H = 0.1  # half size of the hulls [m]
CUBE = H * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
TETRA = H * np.array([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)], np.float64)  # an edge at y = -H
HULLS = {"cube": CUBE, "tetrahedron": TETRA}


def _hull(points, pos=(0.0, 0.0, 0.0), density=1000.0):
    def add(b, body):
        b.add_shape_mesh(points, pos=pos, is_convex=True, body=body, density=density)
    return add


@pytest.mark.parametrize("shape", ["cube", "tetrahedron"])
def test_hull_at_100_m_per_s_rebounds_from_a_thin_box_at_e_v(shape):
    # dt = 0.01: 1 m per step against a 2 cm box; both hulls land flat (a face, an edge) under their
    # centre of mass, so the impulse goes through it: no spin
    e, dt, steps, v = 0.5, 1e-2, 5, 100.0
    model = free_link_model(_hull(HULLS[shape]), e, 2.0, (0.0, -v, 0.0), 0.0, wall=True)
    heights, qds, s = run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = WALL_TOP + H
    t_hit = (2.0 - top) / v
    assert heights[-1] == pytest.approx(top + e * v * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * v, rel=1e-4)
    assert np.abs(qds[-1][3:]).max() < 1e-3
    assert heights.min() > top - 1e-3
    # without the sweep the mesh link passes through it
    model = free_link_model(_hull(HULLS[shape]), e, 2.0, (0.0, -v, 0.0), 0.0, wall=True)
    heights, _, _ = run(model, sim.SolverFeatherstone(model, toi=False), steps, dt)
    assert heights.min() < 0.49


def _touch_angle(points):
    """The pendulum angle [rad] at which the first vertex of the bob (``points`` about its centre, turning
    with it) reaches the wall's face: brute force on a fine grid, then bisection."""
    def reach(theta):
        c, s = np.cos(theta), np.sin(theta)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        centre = np.array([ROD * s, -ROD * c, 0.0])
        return float((centre + points @ rot.T)[:, 0].max()) - PENDULUM_WALL

    grid = np.linspace(0.0, 1.2, 2401)
    k = int(np.argmax([reach(t) > 0.0 for t in grid]))
    lo, hi = grid[k - 1], grid[k]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if reach(mid) > 0.0 else (mid, hi)
    return lo


@pytest.mark.parametrize("toi", [True, False])
def test_hull_pendulum_bob_rebounds_from_a_thin_wall(toi):
    # a 10 cm cube hull turning with the rod at 200 rad/s (0.2 rad per step): its leading corner meets
    # the wall; one dof, frictionless, so the joint rate reverses with e wherever the corner is
    e, half = 0.5, 0.05
    pts = CUBE * (half / H)
    model = pendulum_model(_hull(pts, pos=(0.0, -ROD, 0.0), density=1.0), e)
    angles, rates = run_pendulum(model, toi)
    touch = _touch_angle(pts)
    if toi:
        assert angles.max() < touch + 0.01
        assert impact_angle(angles, rates, e) == pytest.approx(touch, abs=3e-3)  # at the wall, not early
        assert rates[-1] == pytest.approx(-e * PENDULUM_RATE, rel=1e-3)
    else:
        assert angles.max() > touch + 0.3  # through the wall


@pytest.mark.parametrize("shape", ["cube", "tetrahedron"])
def test_resting_hull_stays_on_the_ground(shape):
    model = free_link_model(_hull(HULLS[shape]), 0.8, H, (0.0, 0.0, 0.0), -9.81)
    heights, qds, _ = run(model, sim.SolverFeatherstone(model, toi=True), 200, 1e-3)
    assert np.abs(heights - H).max() < 1e-4  # no hopping by g dt^2 each step
    assert np.abs(qds[-1]).max() < 1e-3


def test_gradient_through_a_hull_bounce_is_the_bounce_s():
    # no gravity, no friction: a cube hull at 2 m/s from y0 = 0.5 lands flat once:
    # y(T) = H + e (2 T - (y0 - H)), d y(T) / d y0 = -e, d y(T) / d vy0 = -e T
    e, dt, steps = 0.5, 1e-2, 40
    model = free_link_model(_hull(CUBE), e, 0.5, (0.0, -2.0, 0.0), 0.0, mu=0.0, requires_grad=True)
    assert_bounce_gradient_is_minus_e(model, e, steps, dt, H + e * (2.0 * steps * dt - 0.4))


def test_hull_gradients_with_friction_and_spin_match_finite_differences():
    # a tilted, spinning cube hull thrown at the ground with friction under gravity (a corner lands first)
    dt, steps = 5e-3, 30
    model = free_link_model(_hull(CUBE), 0.6, 0.4, (0.3, -2.0, 0.1), -9.81, mu=0.8, ang_vel=(1.0, 2.0, 3.0),
                            requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    tilt = np.array([np.sin(0.2), 0.0, np.sin(0.15), 1.0])
    q0[3:] = tilt / np.linalg.norm(tilt)
    states = assert_gradients_match_fd(model, q0, qd0, steps, dt)
    assert max(float(s.joint_qd.numpy()[1]) for s in states) > 0.1  # it bounced (the gradients are the bounce's)
