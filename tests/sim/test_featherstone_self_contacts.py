"""SolverFeatherstone(self_collision=True): links of one robot folding onto each other do not pass
through each other (sim/featherstone_self_contacts.py); the contact is internal, so the robot's
angular momentum about its free axis is kept; pairs joined by a joint are not collided."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.featherstone_self_contacts import self_contact_pairs

RADIUS = 0.05


def _folding_arm(self_collision, extra_env=False):
    """Three 1 m capsule links on z hinges (the first at the world origin), no gravity: the two outer
    hinges spin at 5 rad/s, folding link 3 back across link 1."""
    env = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    env.set_material(0, ke=1e4, mu=0.0, restitution=0.3)
    parent = -1
    for k in range(3):
        link = env.add_body(mass=1.0, inertia=np.eye(3) * 1e-2, com=(0.5, 0, 0))
        env.add_shape_capsule(pos=(0.5, 0, 0), radius=RADIUS, half_height=0.45, rot=(0, 0, 0.7071068, 0.7071068),
                              body=link, density=1.0)
        if parent < 0:
            env.add_joint_revolute(-1, link, axis=(0, 0, 1))
        else:
            env.add_joint_revolute(parent, link, parent_xform=(1.0, 0, 0, 0, 0, 0, 1), axis=(0, 0, 1), q0=2.0,
                                   qd0=5.0)
        parent = link
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_builder(env)
    if extra_env:
        b.add_builder(env, xform=(0.0, 0.0, 5.0, 0, 0, 0, 1))
    model = b.finalize()
    return model, sim.SolverFeatherstone(model, self_collision=self_collision)


def _segment_distance(body_q, i, j, samples=60):
    def points(k):
        p, (x, y, z, w) = body_q[k, :3], body_q[k, 3:]
        axis = np.array([1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w)])  # R e_x
        return p + np.linspace(0.05, 0.95, samples)[:, None] * axis
    return float(np.linalg.norm(points(i)[:, None] - points(j)[None], axis=2).min())


def _angular_momentum_z(model, state):
    q, qd = state.body_q.numpy().astype(np.float64), state.body_qd.numpy().astype(np.float64)
    com, mass, inertia = model.body_com.numpy(), model.body_mass.numpy(), model.body_inertia.numpy()
    total = 0.0
    for k in range(3):
        x, y, z, w = q[k, 3:]
        rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        c = q[k, :3] + rot @ com[k]
        total += mass[k] * np.cross(c, qd[k, :3])[2] + (rot @ inertia[k] @ rot.T @ qd[k, 3:])[2]
    return total


@pytest.mark.parametrize("self_collision", [True, False])
def test_folding_links_do_not_pass_through_each_other(self_collision):
    model, solver = _folding_arm(self_collision)
    s0, s1 = model.state(), model.state()
    closest = np.inf
    momentum = [_angular_momentum_z(model, s0)]
    for _ in range(1200):  # 0.3 s; dt small enough for the integrator's own momentum drift (O(dt)) to be ~1%
        solver.step(model, s0, s1, None, 2.5e-4)
        s0, s1 = s1, s0
        closest = min(closest, _segment_distance(s0.body_q.numpy(), 0, 2))
        momentum.append(_angular_momentum_z(model, s0))
    if self_collision:
        assert closest > RADIUS  # the capsules (radius sum 2 RADIUS) overlap by less than half of it
        # contacts are internal: the free hinge at the origin keeps the angular momentum about z
        assert max(abs(m - momentum[0]) for m in momentum) < 0.02 * abs(momentum[0])
    else:
        assert closest < 0.01  # without self contacts link 3 sweeps through link 1


def test_self_pairs_skip_parent_and_child_and_other_environments():
    model, solver = _folding_arm(True, extra_env=True)
    a, b, start = (x.numpy() for x in solver.self_pairs)
    shape_body = model.shape_body.numpy()
    # per robot only links 1 and 3 (links 1-2 and 2-3 share a joint)
    assert sorted((int(shape_body[i]), int(shape_body[j])) for i, j in zip(a, b)) == [(0, 2), (3, 5)]
    assert list(start) == [0, 1, 2]
    empty = self_contact_pairs(model, np.arange(model.body_count), False)
    assert empty[0].shape[0] == 0 and list(empty[2].numpy()) == [0, 0, 0]



CUBE = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
HALF = 0.1  # the cubes' half size [m]
REACH = float(np.hypot(0.5, 1.0))  # link 3's cube from its hinge [m]: it meets link 1's block on its swing


def _cube_chain(kind, self_collision=True):
    """Three links on z hinges (the first two with a heavy armature), no gravity: link 1 (hinge at the
    origin) carries a block at (0.5, 0, 0); link 2 (no shape) goes up to (1, 1, 0); link 3, hinged there
    pointing down-left at 225 degrees, carries a cube REACH out and turns at 1 rad/s towards link 1's
    block (they meet near 243 degrees).  ``kind``: "box" shapes or "hull" (the same boxes as convex mesh
    shapes)."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e6, mu=0.0, restitution=0.0)
    links = []
    for k, (q0, qd0) in enumerate(((0.0, 0.0), (np.pi / 2, 0.0), (0.75 * np.pi, 1.0))):
        # 1 kg at the cube (its shape adds 8 g)
        link = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-2, com=(0.5 if k == 0 else REACH, 0.0, 0.0))
        if k != 1:
            pos = (0.5 if k == 0 else REACH, 0.0, 0.0)
            # link 1's block twice as tall (z) as link 3's cube: the cube's corners get inside it (equal
            # heights would put them on its top and bottom faces, at distance 0)
            half = np.array([HALF, HALF, 2.0 * HALF if k == 0 else HALF])
            if kind == "box":
                b.add_shape_box(pos=pos, half_extents=tuple(half), body=link, density=1.0)
            else:
                b.add_shape_mesh(CUBE * half, pos=pos, is_convex=True, body=link, density=1.0)
        if k == 0:  # heavy armature: links 1 and 2 barely turn
            b.add_joint_revolute(-1, link, axis=(0, 0, 1), armature=100.0)
        elif k == 1:
            b.add_joint_revolute(links[-1], link, parent_xform=(1.0, 0, 0, 0, 0, 0, 1), axis=(0, 0, 1), q0=q0,
                                 armature=100.0)
        else:
            b.add_joint_revolute(links[-1], link, parent_xform=(1.0, 0, 0, 0, 0, 0, 1), axis=(0, 0, 1), q0=q0,
                                 qd0=qd0)
        links.append(link)
    model = b.finalize()
    return model, sim.SolverFeatherstone(model, self_collision=self_collision)


def _cube_overlap(body_q, centres):
    """Deepest penetration [m] of link 3's cube's corners into link 1's block (numpy geometry, > 0 inside;
    the block's corners stick out of the cube's z range): ``centres``: (body, centre in the body frame) of
    the block and the cube."""
    frames = []
    for body, local in centres:
        p, (x, y, z, w) = body_q[body, :3].astype(np.float64), body_q[body, 3:].astype(np.float64)
        rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        frames.append((p + rot @ np.asarray(local), rot))
    (cb, rb), (ca, ra) = frames
    corners = ca + (CUBE * HALF) @ ra.T
    # in the block's frame; the block spans the cube's z range (z hinges): inside when inside its x, y square
    inside = (HALF - np.abs((corners - cb) @ rb))[:, :2]
    return float(np.max(np.min(inside, axis=1)))


def _swing(kind, self_collision):
    model, solver = _cube_chain(kind, self_collision)
    s0, s1 = model.state(), model.state()
    depth = []
    for _ in range(300):
        solver.step(model, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        depth.append(_cube_overlap(s0.body_q.numpy(), [(0, (0.5, 0.0, 0.0)), (2, (REACH, 0.0, 0.0))]))
    return np.array(depth)


@pytest.mark.parametrize("kind", ["box", "hull"])
def test_mesh_links_stop_on_each_other_as_box_links(kind):
    # link 3's cube meets link 1's block (they touch: overlap ~0) and its corners never get 3 mm into it,
    # for hulls as for box shapes
    depth = _swing(kind, True)
    assert depth.max() > -1e-3
    assert depth.max() < 3e-3


def test_without_self_collision_the_cube_hull_swings_through():
    assert _swing("hull", False).max() > 0.02  # its corner crosses the block (2.9 cm in at the deepest)
