"""Face-to-face contacts of box bodies in SolverSemiImplicit (sim/collide_body_pairs.py with the face
manifold of sim/collide_box_faces.py): equal boxes stacked or pushed side by side, whose corners lie
on each other's face planes, hold each other up and apart; gradients through a resting face contact
match float64 finite differences."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.collide_body_pairs import BodyPairContacts
from sim.contacts import Contacts

from box_clip_reference import (brute_box_pair, check_resting_contacts, pressed_box_poses,  # noqa: E402
                                quat_xyzw)  # tests/sim helper

pytest.importorskip("geometry")

H = 0.1  # half extent [m] of every box


def _boxes(centres, ke=2e5, e=0.2, mu=0.6, ground=True, gravity=(0, -9.81, 0), requires_grad=False):
    """Equal boxes (half extent H, density 1000 kg/m^3) at ``centres`` [m], unrotated."""
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=ke, restitution=e, mu=mu)
    if ground:
        b.set_ground_plane()
    for c in centres:
        body = b.add_body(kc.transform(kc.vec3(*c), kc.quat(0, 0, 0, 1)))
        b.add_shape_box(half_extents=(H, H, H), body=body)
    m = b.finalize(requires_grad=requires_grad)
    return m, sim.SolverSemiImplicit(m, toi=False)


def _run(m, solver, seconds, dt=1e-3, control=None, watch=None):
    """Step ``seconds`` [s]; returns the last state and the largest value of ``watch(body_q)``."""
    s0, s1 = m.state(), m.state()
    worst = -np.inf
    for _ in range(int(round(seconds / dt))):
        solver.step(m, s0, s1, control, dt)
        s0, s1 = s1, s0
        if watch is not None:
            worst = max(worst, watch(s0.body_q.numpy()))
    return s0, worst


def _face_depths(solver, count):
    """Depths [m] of the last step's body-body contacts, which must be ``count`` points."""
    c = solver.body_pair_contacts.numpy()
    assert c["count"] == count
    return c["depth"].astype(np.float64)


@pytest.mark.parametrize("offset", [0.0, 0.02])
def test_equal_box_stacked_on_an_equal_box_rests(offset):
    # exactly on top (every corner of each box on the other's face plane), or set off by 2 cm in x and z
    # (the upper box's corners on the lower one's side planes); the corner contacts let the upper box
    # sink 20 cm, straight into the lower one
    m, solver = _boxes([(0, H, 0), (offset, 3 * H, offset)])
    s, worst = _run(m, solver, 2.0, watch=lambda q: 2 * H - (q[1, 1] - q[0, 1]))
    q, qd = s.body_q.numpy(), s.body_qd.numpy()
    assert worst < 2e-3                                   # never more than 2 mm into each other
    assert np.abs(qd[:, :3]).max() < 1e-2                 # at rest after 2 s
    assert np.abs(qd[:, 3:]).max() * np.sqrt(3) * H < 1e-2  # corners too
    np.testing.assert_allclose(q[1, [0, 2]], [offset, offset], atol=1e-3)  # no drift
    # at rest the face points' springs carry the upper box's weight (the offset one tilts a little, so
    # its points are loaded unequally)
    depth = _face_depths(solver, 4)
    np.testing.assert_allclose(2e5 * depth.sum(), m.body_mass.numpy()[1] * 9.81, rtol=0.02)


def test_equal_boxes_pushed_together_side_by_side_do_not_interpenetrate():
    # two equal boxes on the ground, face to face, pushed together by 50 N each; no corner of either
    # lies inside the other, so the corner contacts let them pass through each other
    m, solver = _boxes([(-H, H, 0), (H, H, 0)], mu=0.0)  # frictionless: the pair alone balances the push
    ctl = m.control()
    push = 50.0
    ctl.body_f = kc.array(np.array([[push, 0, 0, 0, 0, 0], [-push, 0, 0, 0, 0, 0]], np.float32),
                          dtype=kc.spatial_vector)
    s, worst = _run(m, solver, 0.5, control=ctl, watch=lambda q: 2 * H - (q[1, 0] - q[0, 0]))
    q, qd = s.body_q.numpy(), s.body_qd.numpy()
    assert worst < 2e-3
    assert q[1, 0] - q[0, 0] > 2 * H - 2e-3
    assert np.abs(qd[:, :3]).max() < 1e-2
    # the face points' springs balance the push
    depth = _face_depths(solver, 4)
    np.testing.assert_allclose(2e5 * depth.sum(), push, rtol=0.02)


def test_equal_boxes_sliding_into_each_other_bounce_apart():
    # no gravity, head-on along x at 0.5 m/s each: momentum kept, they separate
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e5, restitution=0.5, mu=0.0)
    for x, v in ((-H - 0.01, 0.5), (H + 0.01, -0.5)):
        body = b.add_body(kc.transform(kc.vec3(x, 0.0, 0.0), kc.quat(0, 0, 0, 1)), vel=(v, 0, 0))
        b.add_shape_box(half_extents=(H, H, H), body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=False)
    s, worst = _run(m, solver, 0.2, watch=lambda q: 2 * H - (q[1, 0] - q[0, 0]))
    qd = s.body_qd.numpy()
    assert worst < 5e-3
    assert qd[0, 0] < -0.1 and qd[1, 0] > 0.1  # bounced
    np.testing.assert_allclose(qd[0, 0], -qd[1, 0], atol=1e-4)  # momentum
    np.testing.assert_allclose(qd[:, 1:], 0.0, atol=1e-4)  # face to face: no sideways push, no spin


@pytest.mark.parametrize("case", range(6))
def test_box_pair_contacts_match_numpy_brute_force(case):
    # the contacts one generation writes for two box bodies (the manifold computed once per pair, its points
    # in their points' slots) against the numpy manifold; box A is shape 0 (the pair's lower index)
    half_a, pos_a, rot_a, half_b, pos_b, rot_b = pressed_box_poses()[case]
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    for half, pos, rot in ((half_a, pos_a, rot_a), (half_b, pos_b, rot_b)):
        body = b.add_body(kc.transform(kc.vec3(*pos), kc.quat(*quat_xyzw(rot))))
        b.add_shape_box(half_extents=tuple(half), body=body)
    m = b.finalize()
    pairs = BodyPairContacts(m)
    contacts = Contacts(pairs.capacity(), m.device)
    pairs.generate(m, m.state(), contacts, 1e-3)
    got = contacts.numpy()
    ref = brute_box_pair(np.array([pos_a, pos_b]), np.array([rot_a, rot_b]), np.array([half_a, half_b]))
    assert ref is not None  # face to face, not edge to edge
    r, n, world, heights = ref
    check_resting_contacts(got, n, world, heights)
    np.testing.assert_array_equal(got["shape_a"], 1 - r)  # the incident box
    np.testing.assert_array_equal(got["shape_b"], r)


def test_gradient_through_a_resting_face_contact_matches_finite_differences():
    # a free pair, no gravity: the upper box starts 2 mm into the lower one's top face and slides along
    # it while pressed into it; d(final poses) / d(upper box's initial velocity) against central differences
    m, solver = _boxes([(0, 0, 0), (0.01, 2 * H - 0.002, 0.0)], ke=2e4, e=0.5, mu=0.3, ground=False,
                       gravity=(0, 0, 0), requires_grad=True)
    steps, dt = 150, 1e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((2, 7), np.float32)
    w[0, :3] = (0.3, 1.0, -0.2)
    w[1, :6] = (0.5, -0.7, 0.2, 0.3, 0.4, 0.1)
    seen = []

    def run(v0):
        states[0].body_qd.numpy()[1, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
            seen.append(int(solver.body_pair_contacts.count.numpy()[0]))
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    v0 = np.array([0.1, -0.3, 0.05])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[1, :3].astype(np.float64)
    assert max(seen) >= 4  # a face manifold, not a corner
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    assert np.abs(fd).max() > 0.05
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=3e-3)
