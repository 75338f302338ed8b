"""SolverFeatherstone(self_collision=True): links of one robot folding onto each other do not pass
through each other (sim/featherstone_self_contacts.py); the contact is internal, so the robot's
angular momentum about its free axis is kept; pairs joined by a joint are not collided."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.collide_box_faces import box_face_axis, box_face_manifold
from sim.collide_hull_edges import hull_edge_crossings
from sim.featherstone_self_contacts import self_contact_pairs

from box_clip_reference import brute_face_manifold  # noqa: E402  (tests/sim helper)

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


def _cube_chain(kind, self_collision=True, block_half_z=2.0 * HALF):
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
            # by default link 1's block is twice as tall (z) as link 3's cube, so that the cube's corners
            # get inside it; of equal heights they lie on its top and bottom faces, at distance 0
            half = np.array([HALF, HALF, block_half_z if k == 0 else HALF])
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


def _box_penetration(body_q, boxes):
    """Penetration depth [m] of link 1's block and link 3's cube (> 0: overlap, < 0: their distance), from
    the separating-axis test over both boxes' face normals and their edges' cross products (numpy; exact
    for two boxes): ``boxes``: (body, centre in the body frame, half extents) of each."""
    frames = []
    for body, local, half in boxes:
        p, (x, y, z, w) = body_q[body, :3].astype(np.float64), body_q[body, 3:].astype(np.float64)
        rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        frames.append((p + rot @ np.asarray(local), rot, np.asarray(half)))
    (ca, ra, ha), (cb, rb, hb) = frames
    axes = list(ra.T) + list(rb.T) + [np.cross(u, v) for u in ra.T for v in rb.T]
    seps = [abs(u @ (ca - cb)) / np.linalg.norm(u) - (np.abs(ra.T @ u) @ ha + np.abs(rb.T @ u) @ hb)
            / np.linalg.norm(u) for u in axes if np.linalg.norm(u) > 1e-6]
    return -float(max(seps))


def _swing(kind, self_collision, block_half_z=2.0 * HALF):
    model, solver = _cube_chain(kind, self_collision, block_half_z)
    s0, s1 = model.state(), model.state()
    boxes = [(0, (0.5, 0.0, 0.0), (HALF, HALF, block_half_z)), (2, (REACH, 0.0, 0.0), (HALF, HALF, HALF))]
    depth = []
    for _ in range(300):
        solver.step(model, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        depth.append(_box_penetration(s0.body_q.numpy(), boxes))
    return np.array(depth)


@pytest.mark.parametrize("kind", ["box", "hull"])
def test_mesh_links_stop_on_each_other_as_box_links(kind):
    # link 3's cube meets link 1's block (they touch: overlap ~0) and never gets 3 mm into it, for hulls as
    # for box shapes (the block's corner meets the cube's face first; from the block's top and bottom faces
    # its vertical edge crosses the cube's face)
    depth = _swing(kind, True)
    assert depth.max() > -1e-3
    assert depth.max() < 3e-3


def test_without_self_collision_the_cube_hull_swings_through():
    assert _swing("hull", False).max() > 0.02  # the cube crosses the block


@pytest.mark.parametrize("kind", ["box", "hull"])
def test_links_of_equal_extent_stop_on_each_other(kind):
    # the block as tall as the cube: each one's corners lie on the other's top and bottom face planes (the
    # closest faces, distance 0); the face manifold (boxes) or the hulls' axis of least overlap must hold
    # them apart (main's corner contacts let the cube 6.4 cm into the block)
    depth = _swing(kind, True, block_half_z=HALF)
    assert depth.max() > -1e-3
    assert depth.max() < 3e-3


@kc.kernel
def _face_manifold_kernel(pos: kc.array(dtype=kc.vec3), rot: kc.array(dtype=kc.mat33),
                          half: kc.array(dtype=kc.vec3), axis_out: kc.array(dtype=kc.vec3),
                          count_out: kc.array(dtype=int), points: kc.array(dtype=kc.vec3),
                          gaps: kc.array(dtype=float), normal: kc.array(dtype=kc.vec3)):
    face = box_face_axis(pos[0], rot[0], half[0], pos[1], rot[1], half[1])
    axis_out[0] = face
    r = int(face[0])  # the reference box: the axis's owner
    count, x, y, z, gap, n = box_face_manifold(pos[r], rot[r], half[r], int(face[1]), pos[1 - r], rot[1 - r],
                                               half[1 - r])
    count_out[0] = count
    normal[0] = n
    for k in range(count):
        points[k] = kc.vec3(x[k], y[k], z[k])
        gaps[k] = gap[k]


def _rotation(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


@pytest.mark.parametrize("case", range(5))
def test_box_face_manifold_matches_numpy_brute_force(case):
    rng = np.random.default_rng(case)
    half = np.array([[0.2, 0.15, 0.1], [0.3, 0.35, 0.15]])
    rot = np.array([_rotation(rng.normal(size=3), rng.uniform(0.1, 0.6)), np.eye(3)])
    if case % 2:  # A turned about (nearly) z on B's top face: B's face is the reference, A's face inside it
        rot[0] = _rotation((0.1, -0.2, 1.0), 0.4 + 0.2 * case)
    if case == 4:  # equal square faces turned 45 degrees about z: every corner clipped, an octagon
        half[0, :2] = half[1, :2] = 0.3
        rot[0] = _rotation((0.0, 0.0, 1.0), 0.25 * np.pi)
    # A 2 cm into B's top face, a little off its centre
    pos = np.array([[*rng.normal(scale=0.03, size=2), 0.15 + np.abs(rot[0][2]) @ half[0] - 0.02], [0.0, 0.0, 0.0]])
    arrays = [kc.array(pos, dtype=kc.vec3), kc.array(rot, dtype=kc.mat33), kc.array(half, dtype=kc.vec3),
              kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=int), kc.zeros(8, dtype=kc.vec3),
              kc.zeros(8, dtype=float), kc.zeros(1, dtype=kc.vec3)]
    kc.launch(_face_manifold_kernel, dim=1, inputs=arrays)
    axis, count, points, gaps, normal = (a.numpy() for a in arrays[3:])
    sep, r, ax, n, world, heights = brute_face_manifold(pos, rot, half)
    assert (int(axis[0, 0]), int(axis[0, 1])) == (r, ax)
    np.testing.assert_allclose(axis[0, 2], sep, atol=1e-5)
    np.testing.assert_allclose(normal[0], n, atol=1e-5)
    count = int(count[0])
    assert count == len(world) and count >= 3
    # the same polygon vertices, in any order, with the heights of the incident face's plane
    dist = np.linalg.norm(points[:count, None] - world[None], axis=2)
    assert dist.min(axis=1).max() < 1e-5 and dist.min(axis=0).max() < 1e-5
    np.testing.assert_allclose(gaps[:count], heights[dist.argmin(axis=1)], atol=1e-5)
    # no point deeper than the boxes' overlap along the axis; A's deepest corner, over B's face, that deep
    assert gaps[:count].min() < 0.0 and gaps[:count].min() > sep - 1e-5
    if case % 2:
        assert r == 1 and ax == 2 and count == 4
        np.testing.assert_allclose(gaps[:count].min(), sep, atol=1e-5)
    if case == 4:
        assert count == 8
        np.testing.assert_allclose(gaps[:count], -0.02, atol=1e-5)


@kc.kernel
def _edge_crossings_kernel(mesh: kc.array(dtype=kc.uint64), pos: kc.array(dtype=kc.vec3),
                           rot: kc.array(dtype=kc.mat33), nfb: int, bound_b: float,
                           found: kc.array(dtype=int), points: kc.array(dtype=kc.vec3)):
    e = kc.tid()
    enters, x_in, leaves, x_out = hull_edge_crossings(mesh[0], e, pos[0], rot[0], mesh[1], nfb, pos[1], rot[1],
                                                      bound_b)
    found[2 * e] = enters
    found[2 * e + 1] = leaves
    points[2 * e] = x_in
    points[2 * e + 1] = x_out


def test_hull_edge_crossings_match_numpy_slab_clipping():
    # a tall block (A) turned about z and tilted, through a cube hull (B): where A's edges (triangle sides,
    # face diagonals included) enter and leave B, against the segments clipped to B's three slabs (numpy)
    half_a, half_b = np.array([0.1, 0.1, 0.2]), np.array([0.1, 0.1, 0.1])
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    for half in (half_a, half_b):
        b.add_shape_mesh(CUBE * half, is_convex=True, body=b.add_body(mass=1.0, inertia=np.eye(3)), density=1.0)
    model = b.finalize()
    rot = np.array([_rotation((0.1, 0.2, 1.0), 0.5), np.eye(3)])
    pos = np.array([[0.17, 0.05, 0.03], [0.0, 0.0, 0.0]])
    pts, tris = model.shape_mesh_points[0]
    tris = np.asarray(tris).reshape(-1, 3)
    nfb = len(np.asarray(model.shape_mesh_points[1][1])) // 3
    found, points = kc.zeros(6 * len(tris), dtype=int), kc.zeros(6 * len(tris), dtype=kc.vec3)
    kc.launch(_edge_crossings_kernel, dim=3 * len(tris),
              inputs=[model.shape_mesh, kc.array(pos, dtype=kc.vec3), kc.array(rot, dtype=kc.mat33), nfb,
                      float(np.linalg.norm(half_b)) * 1.001, found, points])
    got = points.numpy()[found.numpy() != 0]
    expect = []
    for i0, i1 in {(min(t[k], t[(k + 1) % 3]), max(t[k], t[(k + 1) % 3])) for t in tris for k in range(3)}:
        x0, x1 = (pos[0] + rot[0] @ np.asarray(pts[i], np.float64) for i in (i0, i1))
        lo, hi = 0.0, 1.0
        for k in range(3):  # B is axis-aligned at the origin
            d = x1[k] - x0[k]
            if abs(d) < 1e-12:
                lo, hi = (lo, hi) if abs(x0[k]) <= half_b[k] else (2.0, 0.0)
            else:
                t0, t1 = sorted(((-half_b[k] - x0[k]) / d, (half_b[k] - x0[k]) / d))
                lo, hi = max(lo, t0), min(hi, t1)
        if lo < hi:
            expect += [x0 + (x1 - x0) * t for t in (lo, hi) if 1e-3 < t < 1 - 1e-3]
    expect = np.array(expect)
    assert len(got) == len(expect) and len(got) >= 4
    dist = np.linalg.norm(got[:, None] - expect[None], axis=2)
    assert dist.min(axis=1).max() < 1e-5 and dist.min(axis=0).max() < 1e-5
