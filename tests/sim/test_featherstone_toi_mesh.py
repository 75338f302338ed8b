"""SolverFeatherstone(toi=True) with mesh links (add_shape_mesh(body=link), convex hulls; swept by
sim/featherstone_toi_shapes.py with sim/toi_mesh_body.py's features): a free hull at 100 m/s with
dt = 0.01 on a 2 cm box rebounds at e v (without toi it passes through), a hull pendulum bob at
200 rad/s rebounds from a thin wall at the analytic angle through the articulated inertia, a hull
resting on the ground stays put, and Tape gradients through a hull's bounce against the analytic
-e and central differences (friction, spin, a corner landing first)."""
import warnings

import numpy as np
import pytest

import sim

pytest.importorskip("geometry")

from sim.toi_mesh import MESH_SKIN  # noqa: E402

from featherstone_scenes import (PENDULUM_RATE, PENDULUM_WALL, ROD, WALL_TOP,  # noqa: E402
                                 assert_bounce_gradient_is_minus_e, assert_gradients_match_fd, free_link_model,
                                 impact_angle, pendulum_model, run, run_pendulum)

H = 0.1  # half size of the hulls [m]
CUBE = H * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
TETRA = H * np.array([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)], np.float64)  # an edge at y = -H
OCTA = H * np.array([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], np.float64)
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
    # without the sweep the mesh link's penalty contacts (sim/featherstone_mesh_contacts.py) never see the box
    model = free_link_model(_hull(HULLS[shape]), e, 2.0, (0.0, -v, 0.0), 0.0, wall=True)
    heights, _, _ = run(model, sim.SolverFeatherstone(model, toi=False), steps, dt)
    assert heights.min() < 0.49


def _add_collider(b, collider):
    """A static collider whose top is at y = 0.5 right under the falling link's centre of mass."""
    if collider == "sphere":
        b.add_shape_sphere(pos=(0.0, 0.4, 0.0), radius=0.1)
    elif collider == "capsule":  # along x
        b.add_shape_capsule(pos=(0.0, 0.45, 0.0), radius=0.05, half_height=0.3,
                            rot=(0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)))
    elif collider == "plane":
        b.add_shape_plane(pos=(0.0, 0.5, 0.0))
    elif collider == "box":
        b.add_shape_box(pos=(0.0, 0.49, 0.0), half_extents=(0.5, 0.01, 0.5))
    else:  # an open two-triangle floor (x, z in [-1, 2] x [-1, 1.5]; its diagonal misses the landing point)
        floor = np.array([(-1.0, 0.5, -1.0), (2.0, 0.5, -1.0), (2.0, 0.5, 1.5), (-1.0, 0.5, 1.5)])
        b.add_shape_mesh(floor, np.array([0, 2, 1, 0, 3, 2]))


@pytest.mark.parametrize("collider", ["sphere", "capsule", "plane", "box", "mesh"])
def test_fast_hull_rebounds_from_each_static_kind(collider):
    # an octahedron hull (a vertex under its centre of mass) at 50 m/s, no gravity, dt = 1 ms (5 cm per
    # step, half its size) lands on its lowest vertex on the top of each static kind: rebound at e v,
    # no spin, never below the surface
    e, dt, steps, v, y0 = 0.5, 1e-3, 30, 50.0, 1.5
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.5, restitution=e)
    _add_collider(b, collider)
    body = b.add_body(xform=(0.0, y0, 0.0, 0, 0, 0, 1), vel=(0.0, -v, 0.0))
    b.add_shape_mesh(OCTA, is_convex=True, body=body, density=1000.0)
    b.add_joint_free(body)
    model = b.finalize()
    heights, qds, _ = run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = 0.5 + H
    if collider == "mesh":
        top += MESH_SKIN  # static meshes are met at their skin (sim/toi_mesh.py)
    t_hit = (y0 - top) / v
    assert heights[-1] == pytest.approx(top + e * v * (steps * dt - t_hit), abs=2e-3)
    assert qds[-1][1] == pytest.approx(e * v, rel=1e-4)
    assert np.abs(qds[-1][3:]).max() < 1e-3
    assert heights.min() > top - 1e-3


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


def test_every_link_shape_meets_static_meshes_with_and_without_toi_silently():
    # mesh links and link shapes against static meshes: swept with toi=True, penalty contacts without
    # (sim/featherstone_mesh_contacts.py); no warning either way
    model = free_link_model(_hull(CUBE), 0.5, 1.0, (0.0, 0.0, 0.0), -9.81)
    b = sim.ModelBuilder()
    floor = np.array([(-1.0, 0.0, -1.0), (1.0, 0.0, -1.0), (1.0, 0.0, 1.0), (-1.0, 0.0, 1.0)])
    b.add_shape_mesh(floor, np.array([0, 2, 1, 0, 3, 2]))
    body = b.add_body(xform=(0.0, 1.0, 0.0, 0, 0, 0, 1))
    b.add_shape_sphere(radius=0.1, body=body)
    b.add_joint_free(body)
    sphere_on_mesh = b.finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in (model, sphere_on_mesh):
            sim.SolverFeatherstone(m, toi=True)
            sim.SolverFeatherstone(m, toi=False)
            sim.SolverFeatherstone(m, contacts=False)
