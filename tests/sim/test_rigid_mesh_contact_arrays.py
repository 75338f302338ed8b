"""Mesh contacts in the per-step contact arrays (sim/contacts.py): what the mesh generation
launches write into ``state_out.contacts`` and ``state_out.body_pair_contacts`` equals a float64
numpy narrow phase (a mesh cube is a box, so box signed distances are the reference)."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

CUBE_POINTS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64) - 0.5
CUBE_TRIS = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
CORNERS = np.array([[2 * (k % 2) - 1, 2 * ((k // 2) % 2) - 1, 2 * (k // 4) - 1.0] for k in range(8)])
TERRAIN_Y = 0.1


def _quat(angle, axis):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.append(axis * np.sin(angle / 2), np.cos(angle / 2))


def _terrain():
    """A flat 4 x 4 grid over x in [4, 6], z in [-1, 1] at y = TERRAIN_Y, facing +y."""
    xs, zs = np.linspace(4.0, 6.0, 5), np.linspace(-1.0, 1.0, 5)
    pts = np.array([[x, TERRAIN_Y, z] for x in xs for z in zs])
    tris = []
    for i in range(4):
        for j in range(4):
            a, b, c, d = i * 5 + j, (i + 1) * 5 + j, (i + 1) * 5 + j + 1, i * 5 + j + 1
            tris += [(a, d, c), (a, c, b)]
    return pts, np.asarray(tris)


def _scene():
    """Static: ground, a box, a terrain mesh.  Bodies: a mesh cube in the ground, a mesh cube in the
    box's top, a box body in the terrain, and a mesh cube overlapping a box body in the air."""
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_ground_plane()
    b.add_shape_box((2.0, 0.2, 0.0), rot=tuple(_quat(0.2, (0, 1, 0))), half_extents=(0.3, 0.2, 0.3))
    pts, tris = _terrain()
    b.add_shape_mesh(pts, tris)
    bodies = [  # (position, rotation, kind, size: mesh scale or box half extents)
        ((0.0, 0.085, 0.0), _quat(0.5, (1, 0.3, 0.2)), "mesh", (0.2, 0.1, 0.16)),
        ((2.05, 0.43, 0.05), _quat(0.3, (0.2, 0.1, 1)), "mesh", (0.25, 0.1, 0.2)),
        ((5.02, 0.18, 0.03), _quat(0.25, (1, 0.2, 0.6)), "box", (0.12, 0.1, 0.15)),
        ((-3.0, 2.0, 0.0), _quat(0.7, (0.3, 1, 0.2)), "mesh", (0.2, 0.2, 0.2)),
        ((-2.86, 2.03, 0.02), _quat(0.4, (1, 0.4, 0.1)), "box", (0.1, 0.08, 0.12)),
    ]
    for p, q, kind, size in bodies:
        body = b.add_body(kc.transform(kc.vec3(*p), kc.quat(*q)))
        if kind == "mesh":
            b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=size, body=body)
        else:
            b.add_shape_box(half_extents=size, body=body)
    return b.finalize(), bodies


def _box_sdf(x, pos, rot, half):
    """Outward normal and signed distance [m] of point x from a box (float64)."""
    p = rot.T @ (x - pos)
    q = np.abs(p) - half
    if q.max() < 0.0:
        a = int(np.argmax(q))
        n = np.zeros(3)
        n[a] = np.sign(p[a])
        return rot @ n, q[a]
    off = p - np.clip(p, -half, half)
    d = np.linalg.norm(off)
    return rot @ (off / d), d


def _numpy_contacts(bodies, static_box, terrain_pts):
    """(static, pair) lists of (shape_a, shape_b, point, normal, depth) for every penetrating pair of
    points, shape indices as _scene adds them (0: static box, 1: terrain, 2..: body shapes)."""
    box_pos, box_rot, box_half = static_box
    shapes = []
    for i, (p, q, kind, size) in enumerate(bodies):
        half = np.asarray(size, np.float64) / 2 if kind == "mesh" else np.asarray(size, np.float64)
        shapes.append((2 + i, kind, np.asarray(p, np.float64), quat_to_matrix(np.asarray(q, np.float64)), half))
    static, pair = [], []

    def add(out, a, b, x, n, gap):
        if gap < 0.0:
            out.append((a, b, np.asarray(x), np.asarray(n), -gap))

    in_terrain = lambda x: 4.0 <= x[0] <= 6.0 and -1.0 <= x[2] <= 1.0  # noqa: E731
    for s, kind, pos, rot, half in shapes:
        points = pos + (CORNERS * half) @ rot.T  # mesh vertices or box corners
        for x in points:
            if kind == "mesh":
                add(static, s, -1, x, (0, 1, 0), x[1])
                n, d = _box_sdf(x, box_pos, box_rot, box_half)
                add(static, s, 0, x, n, d)
            if in_terrain(x):
                add(static, s, 1, x, (0, 1, 0), x[1] - TERRAIN_Y)
        if kind == "mesh":  # the static box's corners against the mesh
            for y in box_pos + (CORNERS * box_half) @ box_rot.T:
                n, d = _box_sdf(y, pos, rot, half)
                add(static, s, 0, y - n * d, -n, d)
        for v in terrain_pts:  # the terrain's vertices against the body shape
            n, d = _box_sdf(v, pos, rot, half)
            add(static, s, 1, v - n * d, -n, d)
    (sm, _, pm, rm, hm), (sb, _, pb, rb, hb) = shapes[3], shapes[4]
    for x in pm + (CORNERS * hm) @ rm.T:  # mesh vertices against the box body
        n, d = _box_sdf(x, pb, rb, hb)
        add(pair, sm, sb, x, n, d)
    for y in pb + (CORNERS * hb) @ rb.T:  # box corners against the mesh body
        n, d = _box_sdf(y, pm, rm, hm)
        add(pair, sb, sm, y, n, d)
    return static, pair


def _match(found, expected):
    assert len(found["depth"]) == len(expected), (found, expected)
    used = set()
    for a, b, x, n, depth in expected:
        candidates = [i for i in range(len(found["depth"])) if i not in used and found["shape_a"][i] == a
                      and found["shape_b"][i] == b and np.linalg.norm(found["point"][i] - x) < 1e-4]
        assert len(candidates) == 1, (a, b, x, candidates)
        i = candidates[0]
        used.add(i)
        assert abs(found["depth"][i] - depth) < 2e-6, (a, b, found["depth"][i], depth)
        np.testing.assert_allclose(found["normal"][i], n, atol=1e-4)


def test_mesh_contacts_are_in_the_step_arrays_and_match_a_numpy_narrow_phase():
    m, bodies = _scene()
    solver = sim.SolverSemiImplicit(m)
    # the reference is vertices and corners only: the mesh body's edges through the box body
    # (sim/collide_mesh_edge_pairs.py) have their own brute force in test_rigid_mesh_edge_pairs.py
    solver.body_mesh_contacts.edge_pairs = None
    s0, s1 = m.state(), m.state()
    solver.step(m, s0, s1, None, 1e-3)
    static_box = (np.array([2.0, 0.2, 0.0]), quat_to_matrix(_quat(0.2, (0, 1, 0))), np.array([0.3, 0.2, 0.3]))
    static, pair = _numpy_contacts(bodies, static_box, _terrain()[0])
    # every kind of mesh contact occurs: vertex/ground, vertex/box, box corner/mesh, terrain vertex/body,
    # box corner/terrain, mesh vertex/box body, box corner/mesh body
    kinds = {(a, b) for a, b, *_ in static} | {(a, b) for a, b, *_ in pair}
    assert {(2, -1), (3, 0), (4, 1), (5, 6), (6, 5)} <= kinds, kinds
    assert len(static) >= 6 and len(pair) >= 2
    assert s1.contacts is solver.contacts and s1.body_pair_contacts is solver.body_pair_contacts
    _match(s1.contacts.numpy(), static)
    _match(s1.body_pair_contacts.numpy(), pair)
    assert int(s1.contacts.count.numpy()[0]) == len(static)


def test_too_many_mesh_contacts_for_their_slots_raise_naming_the_argument():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    pts, tris = _terrain()
    b.add_shape_mesh(pts, tris)
    body = b.add_body(kc.transform(kc.vec3(5.0, 0.1, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.6, 0.1, 0.1), body=body)  # holds the terrain vertices at x = 4.5, 5, 5.5
    m = b.finalize()
    s0, s1 = m.state(), m.state()
    with pytest.raises(RuntimeError, match=r"mesh contacts: 1 contacts did not fit .*mesh_contact_slots"):
        sim.SolverSemiImplicit(m, mesh_contact_slots=2).step(m, s0, s1, None, 1e-3)
    sim.SolverSemiImplicit(m, mesh_contact_slots=3).step(m, s0, s1, None, 1e-3)
    assert int(s1.contacts.count.numpy()[0]) == 3 + 4   # three vertices in the box, its four lower corners
    with pytest.raises(ValueError, match=r"slots=0"):
        sim.SolverSemiImplicit(m, mesh_contact_slots=0)
