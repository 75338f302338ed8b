"""Time-of-impact contacts of bodies made of several shapes (a dumbbell: two spheres on a capsule
bar): against static shapes (sim/toi_shapes.py) and against other bodies (sim/toi_body_pairs.py)
the compound's time of impact is the earliest of its shapes'.  No tunnelling, the impact law,
momentum and energy, gradients against finite differences."""
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import (add_free_body, add_thin_static_wall, impact_builder, momentum_energy, pose_gradient_and_fd,
                          run_recording)
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

BALL = 0.02   # dumbbell sphere radius [m]
ARM = 0.06    # sphere centres at +-ARM along the bar [m]


def _add_dumbbell(b, pos, vel=(0, 0, 0), rot=(0, 0, 0, 1), ang_vel=(0, 0, 0)):
    """A dumbbell along its body Y axis: a capsule bar and two spheres at its ends."""
    body = add_free_body(b, pos, vel, rot, ang_vel)
    b.add_shape_capsule(radius=0.008, half_height=ARM, body=body)
    b.add_shape_sphere(pos=(0, ARM, 0), radius=BALL, body=body)
    b.add_shape_sphere(pos=(0, -ARM, 0), radius=BALL, body=body)
    return body


def test_fast_dumbbell_bounces_off_a_thin_static_wall():
    # 100 m/s, dt = 0.01 (1 m per step), a 1 cm wall: both end spheres hit it at once, e = 1
    b = impact_builder()
    add_thin_static_wall(b)
    _add_dumbbell(b, (0.0, 0.0, 0.0), vel=(100.0, 0, 0))
    m = b.finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compound of spheres and capsules is swept: no warning
        solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 3, 0.01, lambda s: float(s.body_q.numpy()[0, 0]))
    wall = 0.495 - BALL
    assert max(rec) < wall + 1e-4
    np.testing.assert_allclose(rec[0], wall - (1.0 - wall), atol=1e-4)  # bounced at the wall, not before
    np.testing.assert_allclose(s.body_qd.numpy()[0], [-100, 0, 0, 0, 0, 0], atol=1e-2)


def test_tilted_dumbbell_hits_the_wall_with_its_leading_sphere():
    # turned 30 degrees about z: the lower-x sphere hits first, it leaves spinning; e = 1 and no
    # friction keep the kinetic energy, the impulse is along the wall normal (no y or z momentum)
    b = impact_builder()
    add_thin_static_wall(b)
    half = np.radians(30) / 2
    _add_dumbbell(b, (0.0, 0.0, 0.0), vel=(50.0, 0, 0), rot=(0, 0, np.sin(half), np.cos(half)))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    _, _, ke0 = momentum_energy(m, m.state())
    s, rec = run_recording(m, solver, 4, 0.01, lambda s: s.body_q.numpy()[0].copy())
    qd = s.body_qd.numpy()[0]
    p1, _, ke1 = momentum_energy(m, s)
    assert qd[0] < 0.0 and abs(qd[5]) > 1.0          # it bounced back, spinning about z
    np.testing.assert_allclose(ke1, ke0, rtol=1e-3)
    np.testing.assert_allclose(p1[1:], 0.0, atol=1e-3 * float(m.body_mass.numpy()[0]) * 50)
    # no sphere centre ever got closer to the wall face than its radius
    for q in rec:
        r = quat_to_matrix(q[3:].astype(np.float64))
        for end in (ARM, -ARM):
            assert (q[:3] + r @ np.array([0, end, 0]))[0] < 0.495 - BALL + 1e-4


@pytest.mark.parametrize("other", ["box", "dumbbell"])
def test_fast_dumbbell_against_a_free_body_keeps_momentum_and_energy(other):
    # 100 m/s onto a free thin box (1 cm) or a second dumbbell at rest: nothing passes through,
    # momentum kept exactly, energy kept with e = 1 (no friction)
    b = impact_builder(ke=1e-6)
    a = _add_dumbbell(b, (-0.5, 0.0, 0.0), vel=(100.0, 0, 0))
    if other == "box":
        c = b.add_body(kc.transform(kc.vec3(0, 0.01, 0), kc.quat(0, 0, 0, 1)))
        b.add_shape_box(half_extents=(0.005, 0.1, 0.1), body=c)
    else:
        half = np.radians(20) / 2
        c = _add_dumbbell(b, (0.0, 0.03, 0.0), rot=(np.sin(half), 0, 0, np.cos(half)))
    m = b.finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solver = sim.SolverSemiImplicit(m, toi=True)
    p0, L0, ke0 = momentum_energy(m, m.state())
    s, rec = run_recording(m, solver, 3, 0.01, lambda s: s.body_q.numpy()[:, 0].copy())
    p1, L1, ke1 = momentum_energy(m, s)
    scale = float(m.body_mass.numpy().max()) * 100
    np.testing.assert_allclose(p1, p0, atol=1e-4 * scale)
    np.testing.assert_allclose(L1, L0, atol=1e-3 * scale)
    np.testing.assert_allclose(ke1, ke0, rtol=2e-3)
    assert all(x[a] < x[c] for x in rec)               # the dumbbell stayed on its side
    assert s.body_qd.numpy()[c, 0] > 10.0              # the hit moved the other body


def test_dumbbell_bounce_gradients_match_finite_differences():
    # a spinning, tilted dumbbell bounces on the ground (one end sphere first): Tape gradients of
    # the final pose w.r.t. the initial velocities equal finite differences
    b = impact_builder(e=0.7, mu=0.3, gravity=(0, -2.0, 0))
    b.set_ground_plane()
    rot = np.array([0.25, 0.1, -0.35, 1.0])
    rot /= np.linalg.norm(rot)
    _add_dumbbell(b, (0.0, 0.2, 0.0), vel=(0.3, -1.5, 0.0), rot=tuple(rot), ang_vel=(3.0, 1.0, -2.0))
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True)
    w = np.zeros((1, 7), np.float32)
    w[0, :3] = (1.0, 0.7, -0.4)
    grad, fd, vy_max = pose_gradient_and_fd(m, solver, np.array([0.3, -1.5, 0.0, 3.0, 1.0, -2.0]), w, 100, 2e-3)
    assert vy_max > 0.2  # it bounced
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)


@pytest.mark.parametrize("kind", ["box", "dumbbell"])
def test_several_impacts_in_one_step_in_a_narrow_gap(kind):
    # between two static walls 8 cm apart at 6 m/s, dt = 0.01: the body crosses its 3 cm of free
    # room twice per step, so it hits a wall two or three times within one step; e = 1, no
    # friction: it stays between the walls and keeps its speed
    b = impact_builder()
    for side in (-1, 1):
        add_thin_static_wall(b, x=0.045 * side)
    if kind == "box":
        body = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, 0, 1)), vel=(6.0, 0, 0))
        b.add_shape_box(half_extents=(0.025, 0.05, 0.05), body=body)
    else:
        body = _add_dumbbell(b, (0.0, 0.0, 0.0), vel=(6.0, 0, 0))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 20, 0.01, lambda s: (float(s.body_q.numpy()[0, 0]), float(s.body_qd.numpy()[0, 0])))
    x = np.array([r[0] for r in rec])
    v = np.array([r[1] for r in rec])
    room = 0.04 - (0.025 if kind == "box" else BALL)
    assert np.abs(x).max() < room + 1e-4                  # never through or into a wall
    np.testing.assert_allclose(np.abs(v), 6.0, rtol=1e-3)  # elastic bounces only
    assert (np.diff(np.sign(v)) != 0).sum() < 20           # ... and not every step the same way:
    assert (np.diff(np.sign(v)) == 0).sum() > 0            # two impacts in a step keep the sign
