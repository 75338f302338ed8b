"""Time-of-impact contacts of mesh bodies (a convex hull or a closed triangle mesh on a body,
sim/toi_mesh_body.py through sim/toi_shapes.py): against the ground, static boxes, spheres,
capsules and triangle meshes a fast hull does not tunnel, bounces with the material's
restitution at the analytic place, and its bounce gradients are those of the real bounce."""
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

from sim.toi_mesh import MESH_SKIN  # noqa: E402
from rigid_scenes import run_recording  # noqa: E402

H = 0.02  # half size of the hulls [m]
CUBE = H * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
TETRA = H * np.array([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)], np.float64)


def _hull_model(points, pos=(0, 0, 0), vel=(0, 0, 0), rot=(0, 0, 0, 1), ang_vel=(0, 0, 0), e=1.0, mu=0.0,
                gravity=(0, 0, 0), ground=False, statics=(), requires_grad=False):
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=1e4, restitution=e, mu=mu)
    if ground:
        b.set_ground_plane()
    for add in statics:
        add(b)
    body = b.add_body(kc.transform(kc.vec3(*pos), kc.quat(*rot)), vel=vel, ang_vel=ang_vel)
    b.add_shape_mesh(points, is_convex=True, body=body)
    return b.finalize(requires_grad=requires_grad)


def _energy(m, s):
    mass = float(m.body_mass.numpy()[0])
    inertia = m.body_inertia.numpy()[0].astype(np.float64)
    q, qd = s.body_q.numpy()[0].astype(np.float64), s.body_qd.numpy()[0].astype(np.float64)
    r = quat_to_matrix(q[3:])
    om = r.T @ qd[3:]
    return 0.5 * mass * qd[:3] @ qd[:3] + 0.5 * om @ inertia @ om


def _wall(b):  # a 1 cm static box wall, its face at x = 0.495
    b.add_shape_box(pos=(0.5, 0, 0), half_extents=(0.005, 0.5, 0.5))


@pytest.mark.parametrize("toi", [True, False])
@pytest.mark.parametrize("shape", ["tetrahedron", "cube"])
def test_fast_hull_bounces_off_a_thin_wall_and_keeps_its_energy(shape, toi):
    # 100 m/s, dt = 0.01 (1 m per step) against a 1 cm wall, e = 1: bounces back at the wall
    # (its leading vertices / face stop at the wall's face); without TOI it passes through
    pts = TETRA if shape == "tetrahedron" else CUBE
    m = _hull_model(pts, vel=(100.0, 0, 0), statics=[_wall])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one mesh body: everything it meets is swept, nothing to warn about
        solver = sim.SolverSemiImplicit(m, toi=toi)
    s, rec = run_recording(m, solver, 3, 0.01, lambda s: float(s.body_q.numpy()[0, 0]))
    if not toi:
        assert rec[-1] > 1.0  # tunnelled
        return
    hit = 0.495 - H
    assert max(rec) < hit + 1e-4
    np.testing.assert_allclose(rec[0], hit - (1.0 - hit), atol=1e-4)
    np.testing.assert_allclose(s.body_qd.numpy()[0, :3], [-100, 0, 0], atol=1e-2)
    np.testing.assert_allclose(_energy(m, s), 0.5 * float(m.body_mass.numpy()[0]) * 1e4, rtol=1e-4)


def test_tilted_hull_hits_a_wall_corner_first_and_keeps_its_energy():
    # a cube hull turned about y and z: a corner meets the wall first and sets it spinning; e = 1,
    # frictionless: energy kept, the wall's impulse along x only (momentum along y and z kept),
    # no vertex ever beyond the wall's face
    q = np.array([0.0, np.sin(0.3), np.sin(0.2), 1.0])
    q /= np.linalg.norm(q)
    m = _hull_model(CUBE, vel=(30.0, 0.5, 0), rot=tuple(q), statics=[_wall])
    solver = sim.SolverSemiImplicit(m, toi=True)
    e0 = _energy(m, m.state())
    s, rec = run_recording(m, solver, 4, 0.01, lambda s: s.body_q.numpy()[0].copy())
    qd = s.body_qd.numpy()[0]
    assert qd[0] < 0.0 and np.abs(qd[3:]).max() > 100.0  # bounced back, spinning
    np.testing.assert_allclose(_energy(m, s), e0, rtol=1e-4)
    np.testing.assert_allclose(qd[1:3], [0.5, 0.0], atol=1e-3)
    for q7 in rec:
        x = q7[:3] + CUBE @ quat_to_matrix(q7[3:]).T
        assert x[:, 0].max() < 0.495 + 1e-4


@pytest.mark.parametrize("collider", ["sphere", "capsule", "mesh"])
def test_fast_cube_hull_falls_onto_a_static_shape(collider):
    # 50 m/s straight down (0.5 m per step) onto a static sphere / capsule top / thin mesh quad:
    # the hull's face (not a vertex: the collider's point against the hull's signed distance)
    # stops at the collider's top and bounces with e = 1
    def add(b):
        if collider == "sphere":
            b.add_shape_sphere(pos=(0, 0, 0), radius=0.05)
        elif collider == "capsule":  # lying along x, a sharp "ridge" under the face
            b.add_shape_capsule(pos=(0, 0, 0), rot=(0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)), radius=0.05,
                                half_height=0.2)
        else:
            pts = np.array([(-0.5, 0.05, -0.5), (0.5, 0.05, -0.5), (0.5, 0.05, 0.5), (-0.5, 0.05, 0.5)])
            b.add_shape_mesh(pts, np.array([(0, 2, 1), (0, 3, 2)]))

    m = _hull_model(CUBE, pos=(0.0, 0.5, 0.0), vel=(0, -50.0, 0), statics=[add])
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 2, 0.01, lambda s: s.body_q.numpy()[0].copy())
    top = 0.05 + H + (MESH_SKIN if collider == "mesh" else 0.0)
    np.testing.assert_allclose(rec[0][1], top + (0.5 - (0.5 - top)), atol=2e-4)
    # on the mesh the manifold (at most 8 of the face's many touching features) need not be symmetric: a
    # spin of a few 0.01 rad/s, 1e-4 of the speed over the hull's size
    np.testing.assert_allclose(s.body_qd.numpy()[0], [0, 50.0, 0, 0, 0, 0], atol=5e-2)


def test_crossing_edges_stop_a_turned_cube_hull_on_a_turned_box():
    # a cube hull turned 45 deg about z (lowest edge along z) falls at 40 m/s on a static box turned
    # 45 deg about x (top edge along x): the first contact is edge against edge, at the analytic height
    c = np.cos(np.pi / 8)
    s8 = np.sin(np.pi / 8)

    def add(b):
        b.add_shape_box(pos=(0, 0, 0), rot=(s8, 0, 0, c), half_extents=(0.1, 0.03, 0.03))

    m = _hull_model(CUBE, pos=(0, 0.4, 0), vel=(0, -40.0, 0), rot=(0, 0, s8, c), statics=[add])
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 1, 0.01, lambda s: s.body_q.numpy()[0].copy())
    touch = 0.03 * np.sqrt(2) + H * np.sqrt(2)  # centre height at the touch
    np.testing.assert_allclose(rec[0][1], touch + (0.4 - (0.4 - touch)), atol=2e-4)
    np.testing.assert_allclose(s.body_qd.numpy()[0, :3], [0, 40.0, 0], atol=2e-2)


def test_hull_bounce_gradients_are_those_of_the_real_bounce():
    # the bouncing-ball set-up with a cube hull, no gravity: d(final height)/d(initial height) = -e,
    # d(final height)/d(initial vertical velocity) = -e T, and the first equals finite differences
    e, steps, dt = 0.8, 200, 0.002
    m = _hull_model(CUBE, pos=(0, 0.5, 0), vel=(0.0, -2.0, 0), e=e, ground=True, requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True)
    states = [m.state() for _ in range(steps + 1)]

    def run(h0):
        states[0].body_q.numpy()[0, 1] = h0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float(states[-1].body_q.numpy()[0, 1])

    tape = kc.Tape()
    with tape:
        h = run(0.5)
    seed = np.zeros((1, 7), np.float32)
    seed[0, 1] = 1.0
    tape.backward(grads={states[-1].body_q: seed})
    d_h0 = float(states[0].body_q.grad.numpy()[0, 1])
    d_vy0 = float(states[0].body_qd.grad.numpy()[0, 1])
    t = steps * dt
    t_hit = (0.5 - H) / 2.0
    np.testing.assert_allclose(h, H + e * 2.0 * (t - t_hit), atol=1e-4)
    np.testing.assert_allclose(d_h0, -e, rtol=0.02)
    np.testing.assert_allclose(d_vy0, -e * t, rtol=0.02)
    eps = 1e-3
    np.testing.assert_allclose(d_h0, (run(0.5 + eps) - run(0.5 - eps)) / (2 * eps), rtol=0.02)


def test_gradient_of_a_tumbling_hull_corner_impact_matches_finite_differences():
    # a spinning, tilted tetrahedron hits the ground with a vertex (friction on): Tape gradients of
    # the final pose w.r.t. the initial velocities equal finite differences
    rot = np.array([0.25, 0.1, -0.15, 1.0])
    rot /= np.linalg.norm(rot)
    m = _hull_model(TETRA, pos=(0, 0.12, 0), vel=(0.3, -1.5, 0.0), rot=tuple(rot), ang_vel=(3.0, 1.0, -2.0),
                    e=0.7, mu=0.3, gravity=(0, -2.0, 0), ground=True, requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True)
    steps, dt = 100, 2e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((1, 7), np.float32)
    w[0, :3] = (1.0, 0.7, -0.4)

    def run(qd0):
        states[0].body_qd.numpy()[0, :] = qd0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    qd0 = np.array([0.3, -1.5, 0.0, 3.0, 1.0, -2.0])
    tape = kc.Tape()
    with tape:
        run(qd0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[0].astype(np.float64)
    vy = np.array([s.body_qd.numpy()[0, 1] for s in states])
    assert vy.max() > 0.2  # it bounced
    eps = 1e-3
    fd = np.array([(run(qd0 + d) - run(qd0 - d)) / (2 * eps) for d in np.eye(6) * eps])
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)
