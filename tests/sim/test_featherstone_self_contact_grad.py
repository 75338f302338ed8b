"""Tape gradients through SolverFeatherstone(self_collision=True) link-link contacts
(sim/featherstone_self_contacts.py: sphere pairs, box pairs through the face manifold of
sim/collide_box_faces.py), against central differences of the same simulation (issue 16).

The scene: three links on z hinges, no gravity; link 1 (hinge at the origin) carries a shape at
(0.5, 0, 0), link 2 (no shape) reaches up to (1, 1, 0), link 3 hinged there swings its shape at
2 rad/s into link 1's (or, from rest, under a 200 N m hinge torque: the gradient w.r.t. joint_f).
Links 1 and 3 are not joined by a joint, so they are a self-contact pair.
"""
import numpy as np
import pytest

import kernelcore as kc
from featherstone_scenes import rollout  # noqa: E402
from test_featherstone_self_contacts import _box_penetration  # noqa: E402

import sim

HALF = 0.1  # the shapes' half size / radius [m]
REACH = float(np.hypot(0.5, 1.0))  # link 3's shape from its hinge [m]
DT, STEPS = 1e-3, 60
W = np.array([1.0, 0.5, 1.0])  # loss = W . joint_q after STEPS steps [rad]
CUBE = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)


def _chain(kind):
    """The three-link chain with ``kind`` ("box" or "sphere") shapes on links 1 and 3; link 3 starts at
    2.6 rad (meets link 1's shape after ~20 ms).  Link 1's box is twice as tall (z) as link 3's."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.0, restitution=0.0)
    links = []
    for k, (q0, qd0) in enumerate(((0.0, 0.0), (np.pi / 2, 0.0), (2.6, 2.0))):
        link = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-2, com=(0.5 if k == 0 else REACH, 0.0, 0.0))
        if k != 1:
            pos = (0.5 if k == 0 else REACH, 0.0, 0.0)
            if kind == "box":
                b.add_shape_box(pos=pos, half_extents=(HALF, HALF, 2.0 * HALF if k == 0 else HALF), body=link,
                                density=1.0)
            else:
                b.add_shape_sphere(pos=pos, radius=HALF, body=link, density=1.0)
        if k == 0:
            b.add_joint_revolute(-1, link, axis=(0, 0, 1), armature=1.0)
        else:
            b.add_joint_revolute(links[-1], link, parent_xform=(1.0, 0, 0, 0, 0, 0, 1), axis=(0, 0, 1), q0=q0,
                                 qd0=qd0, armature=1.0 if k == 1 else 0.0)
        links.append(link)
    return b.finalize(requires_grad=True)


def _deepest_overlap(kind, states):
    """The links' largest overlap [m] over the run (> 0: the shapes interpenetrated, so contact acted),
    from numpy geometry of the states' body frames."""
    if kind == "box":
        boxes = [(0, (0.5, 0.0, 0.0), (HALF, HALF, 2.0 * HALF)), (2, (REACH, 0.0, 0.0), (HALF, HALF, HALF))]
        return max(_box_penetration(s.body_q.numpy(), boxes) for s in states[1:])
    depth = -np.inf
    for s in states[1:]:
        q = s.body_q.numpy().astype(np.float64)
        centres = []
        for body, local in ((0, 0.5), (2, REACH)):
            x, y, z, w = q[body, 3:]
            centres.append(q[body, :3] + local * np.array([1 - 2 * (y * y + z * z), 2 * (x * y + z * w),
                                                           2 * (x * z - y * w)]))
        depth = max(depth, 2.0 * HALF - float(np.linalg.norm(centres[0] - centres[1])))
    return depth


def _loss(model, q0, qd0, self_collision=True, toi=False):
    states, loss = rollout(model, q0, qd0, STEPS, DT, W, np.zeros(3), toi=toi, self_collision=self_collision)
    return float(loss.numpy()[0]), states


@pytest.mark.parametrize("toi", [False, True])
@pytest.mark.parametrize("kind", ["box", "sphere"])
def test_self_contact_gradients_match_finite_differences(kind, toi):
    model = _chain(kind)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    tape = kc.Tape()
    states, loss = rollout(model, q0, qd0, STEPS, DT, W, np.zeros(3), tape, toi=toi, self_collision=True)
    tape.backward(loss)
    gq = states[0].joint_q.grad.numpy().astype(np.float64)
    gqd = states[0].joint_qd.grad.numpy().astype(np.float64)

    # self contact acted: the shapes met (overlap > 0 at some step) and link 3 bounced back, where
    # without self contacts it swings on at ~2 rad/s
    assert _deepest_overlap(kind, states) > 0.0
    assert float(states[-1].joint_qd.numpy()[2]) < -1.0
    free_end = _loss(model, q0, qd0, self_collision=False, toi=toi)[1][-1]
    assert float(free_end.joint_qd.numpy()[2]) > 1.5

    for i in range(3):
        e = np.eye(3)[i]
        fd_q = (_loss(model, q0 + 1e-3 * e, qd0, toi=toi)[0] - _loss(model, q0 - 1e-3 * e, qd0, toi=toi)[0]) / 2e-3
        fd_qd = (_loss(model, q0, qd0 + 1e-2 * e, toi=toi)[0] - _loss(model, q0, qd0 - 1e-2 * e, toi=toi)[0]) / 2e-2
        assert gq[i] == pytest.approx(fd_q, rel=1e-2, abs=2e-3), (i, gq[i], fd_q)
        assert gqd[i] == pytest.approx(fd_qd, rel=2e-2, abs=5e-4), (i, gqd[i], fd_qd)
    # the gradient is the contact's: without it turning link 3 further (q0[2]) moves its end angle one
    # for one (d loss / d q0[2] ~ +1); the contact reverses it (box -1.95, sphere -0.84)
    assert gq[2] < -0.5
    assert abs(gq[0] - 1.0) < 1e-3  # turning the whole chain rigidly moves link 1's angle one for one


def _control(model, joint_f):
    c = model.control()
    c.joint_f.assign(np.asarray(joint_f, np.float32))
    return c


@pytest.mark.parametrize("kind", ["box", "sphere"])
def test_self_contact_gradient_of_a_joint_torque_matches_finite_differences(kind):
    # link 3 starts at rest and a constant 200 N m on its hinge drives it into link 1 (contact after
    # ~20 ms) and keeps pressing: d loss / d joint_f through the contact against central differences
    model = _chain(kind)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), np.zeros(3)
    tau = np.array([0.0, 0.0, 200.0])  # [N m]

    def taped(self_collision):
        control = _control(model, tau)
        tape = kc.Tape()
        states, loss = rollout(model, q0, qd0, STEPS, DT, W, np.zeros(3), tape, toi=False,
                               self_collision=self_collision, control=control)
        tape.backward(loss)
        return states, control.joint_f.grad.numpy().astype(np.float64)

    def loss_at(f):
        return float(rollout(model, q0, qd0, STEPS, DT, W, np.zeros(3), toi=False, self_collision=True,
                             control=_control(model, f))[1].numpy()[0])

    states, grad = taped(True)
    assert _deepest_overlap(kind, states) > 0.0
    for i in range(3):
        e = np.eye(3)[i]
        numeric = (loss_at(tau + e) - loss_at(tau - e)) / 2.0
        assert grad[i] == pytest.approx(numeric, rel=2e-2, abs=2e-6), (i, grad[i], numeric)
    # the contact holds link 3: a stronger push barely turns it (box 1.7e-4, sphere 0.9e-4 rad per N m,
    # against 1.5e-3 without self contacts)
    free = taped(False)[1]
    assert free[2] > 1e-3
    assert 0.0 < grad[2] < 0.2 * free[2]
