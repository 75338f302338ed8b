"""Edge-edge penalty contacts of boxes (sim/collide_bodies.box_edge_contact): crossed boxes, whose
corners never touch the other box, are held apart."""
import numpy as np
import pytest

import kernelcore as kc
import sim

pytest.importorskip("geometry")

H = 0.05
S45 = np.sin(np.pi / 8)
C45 = np.cos(np.pi / 8)
ABOUT_X = (S45, 0.0, 0.0, C45)   # 45 degrees about x: an edge along x points down
ABOUT_Z = (0.0, 0.0, S45, C45)   # 45 degrees about z: an edge along z points up


def _separation(q_top, y_bottom):
    """Gap [m] between the top box's lowest edge and the bottom box's highest edge (both at 45 degrees)."""
    return (q_top[1] - H * np.sqrt(2)) - (y_bottom + H * np.sqrt(2))


def test_box_resting_edge_on_a_crossed_static_box_is_held_up():
    b = sim.ModelBuilder(gravity=(0, -9.81, 0))
    b.set_material(0, ke=1e4, restitution=0.2, mu=0.5)
    b.add_shape_box((0, 0, 0), rot=ABOUT_Z, half_extents=(H, H, H))
    top = b.add_body(kc.transform(kc.vec3(0, 2 * H * np.sqrt(2) + 0.005, 0), kc.quat(*ABOUT_X)))
    b.add_shape_box(half_extents=(H, H, H), body=top)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    gaps = []
    for _ in range(500):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        gaps.append(_separation(s0.body_q.numpy()[0], 0.0))
    q, qd = s0.body_q.numpy()[0], s0.body_qd.numpy()[0]
    assert min(gaps) > -2e-3          # penetration under 2 mm ...
    assert abs(gaps[-1]) < 2e-3       # ... and it rests on the edge
    assert np.abs(qd[:3]).max() < 2e-2
    assert np.hypot(q[0], q[2]) < 1e-3


def test_crossed_box_bodies_collide_edge_to_edge():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e5, restitution=0.5, mu=0.0)
    low = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(*ABOUT_Z)), vel=(0, 0.2, 0))
    b.add_shape_box(half_extents=(H, H, H), body=low)
    top = b.add_body(kc.transform(kc.vec3(0, 2 * H * np.sqrt(2) + 0.02, 0), kc.quat(*ABOUT_X)), vel=(0, -0.2, 0))
    b.add_shape_box(half_extents=(H, H, H), body=top)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    gaps = []
    for _ in range(500):
        solver.step(m, s0, s1, None, 2e-4)
        s0, s1 = s1, s0
        q = s0.body_q.numpy()
        gaps.append(_separation(q[1], q[0, 1]))
    qd = s0.body_qd.numpy()
    assert min(gaps) > -2e-3
    # they bounce apart along y with about the restitution (the contact is on the line of centres)
    np.testing.assert_allclose(qd[:, 1], [-0.1, 0.1], atol=0.02)
    np.testing.assert_allclose(qd[:, 3:], 0.0, atol=1e-2)
