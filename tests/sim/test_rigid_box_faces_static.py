"""Face manifolds of a box body on a static box (sim/collide_bodies.py with
sim.collide_box_faces.box_on_static_box): an equal box resting exactly on a static one, whose
corners lie on the static box's face planes, stays on top; the contacts written for random poses
match the numpy brute-force manifold; SolverFeatherstone's fused contacts give the same wrench."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.collide_bodies import body_static_pairs, generate_body_static_contacts
from sim.contacts import Contacts
from sim.featherstone_contacts import eval_fs_static_contacts

from box_clip_reference import (brute_box_pair, check_resting_contacts, pressed_box_poses,  # noqa: E402
                                quat_xyzw)  # tests/sim helper

H = 0.05  # half extent [m]: 0.1 m boxes


@pytest.mark.parametrize("offset", [0.0, 0.01])
def test_equal_box_on_an_equal_static_box_rests(offset):
    # exactly on top, or set off by 1 cm in x and z; with the corner contacts the upper box sank 10 cm, all the
    # way into the static one
    b = sim.ModelBuilder()
    b.set_ground_plane()
    b.add_shape_box(half_extents=(H, H, H), body=-1, pos=(0, H, 0))
    body = b.add_body(kc.transform(kc.vec3(offset, 3 * H, offset), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(H, H, H), body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=False)
    s0, s1 = m.state(), m.state()
    worst = 0.0
    for _ in range(2000):  # 2 s
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        worst = max(worst, 3 * H - float(s0.body_q.numpy()[0, 1]))
    q, qd = s0.body_q.numpy()[0], s0.body_qd.numpy()[0]
    assert worst < 3e-3                                   # never more than 3 mm into the static box
    assert np.abs(qd[:3]).max() < 1e-2                    # at rest
    assert np.abs(qd[3:]).max() * np.sqrt(3) * H < 1e-2   # corners too
    np.testing.assert_allclose(q[[0, 2]], [offset, offset], atol=1e-3)  # no drift
    # the face points' springs (default ke 1e4 N/m) carry the box's weight
    c = s0.contacts.numpy()  # the last step's output state
    on_box = c["shape_b"] == 0
    assert on_box.sum() == 4
    np.testing.assert_allclose(1e4 * c["depth"][on_box].sum(), m.body_mass.numpy()[0] * 9.81, rtol=0.03)


def _pose_model(case, vel=(0.0, 0.0, 0.0), ang_vel=(0.0, 0.0, 0.0)):
    """Model of pose ``case``: the static box is shape 0, the body box shape 1; no ground, no gravity."""
    half_b, pos_b, rot_b, half_s, pos_s, rot_s = pressed_box_poses()[case]
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.add_shape_box(half_extents=tuple(half_s), body=-1, pos=tuple(pos_s), rot=quat_xyzw(rot_s))
    body = b.add_body(kc.transform(kc.vec3(*pos_b), kc.quat(*quat_xyzw(rot_b))), vel=vel, ang_vel=ang_vel)
    b.add_shape_box(half_extents=tuple(half_b), body=body)
    return b.finalize()


@pytest.mark.parametrize("case", range(6))
def test_box_on_static_box_contacts_match_numpy_brute_force(case):
    half_b, pos_b, rot_b, half_s, pos_s, rot_s = pressed_box_poses()[case]
    m = _pose_model(case)
    st = m.state()
    pairs = body_static_pairs(m)
    contacts = Contacts(int(pairs[0].shape[0]) * sim.collide_bodies.SLOTS, m.device)
    generate_body_static_contacts(m, st, pairs, contacts, 1e-3)
    got = contacts.numpy()
    # the reference: box 0 the body, box 1 the static box
    ref = brute_box_pair(np.array([pos_b, pos_s]), np.array([rot_b, rot_s]), np.array([half_b, half_s]))
    assert ref is not None  # face to face, not edge to edge
    r, n, world, heights = ref
    assert r == (0 if case % 3 == 1 else 1)  # the case's reference box
    if r == 0:  # the body's face is the reference: the static box's points, moved onto the body's face
        n, world = -n, world - n * heights[:, None]
    check_resting_contacts(got, n, world, heights)
    np.testing.assert_array_equal(got["shape_a"], 1)
    np.testing.assert_array_equal(got["shape_b"], 0)


@pytest.mark.parametrize("case", [0, 1, 5])
def test_featherstone_fused_contacts_give_the_same_wrench(case):
    # SolverFeatherstone's fused body-static contacts against the generate + apply launches of
    # SolverSemiImplicit, for the same moving box pressed into a static box
    m = _pose_model(case, vel=(0.1, -0.2, 0.05), ang_vel=(0.5, 0.2, -0.3))
    st = m.state()
    pairs = body_static_pairs(m)
    fused = kc.zeros(1, dtype=kc.spatial_vector)
    eval_fs_static_contacts(m, st.body_q, st.body_qd, pairs, fused, 1e-3)
    split = kc.zeros(1, dtype=kc.spatial_vector)
    sim.collide_bodies.eval_body_static_contacts(m, st, pairs, split, 1e-3)
    w = split.numpy()[0]
    assert np.abs(w[:3]).max() > 10.0  # pressed in: a real force
    np.testing.assert_allclose(fused.numpy()[0], w, rtol=1e-4, atol=1e-3)
