"""The seam flags of static triangle meshes, found once per model (sim/toi_mesh_seams.py), against a numpy
brute force over every pair of triangles: an edge is a seam when a coplanar triangle (of the same mesh or of
another static mesh tile) shares it from the other side; a vertex is a flat inner vertex when every triangle
round it is coplanar and their angles there close a full turn.  Units: m."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from test_rigid_toi_slide import _grid

pytest.importorskip("geometry")

from sim.toi_mesh_seams import static_mesh_seams  # noqa: E402

WELD, ANGLE, TURN_TOL = 1.0e-6, 1.0e-4, 1.0e-3


def _brute_force_flags(tiles):
    """Seam flags (bit e: edge e = (v_e, v_(e+1)%3); bit 3 + j: vertex j) of every triangle of the ``tiles``
    [(points (V, 3), triangles (T, 3))], in order, in float64: every other triangle of every tile is looked at."""
    tris = np.concatenate([pts[idx.reshape(-1, 3)] for pts, idx in tiles]).astype(np.float32).astype(np.float64)
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])

    def coplanar(i, g):
        return np.linalg.norm(np.cross(normals[i], normals[g])) <= ANGLE * np.linalg.norm(normals[i]) * \
            np.linalg.norm(normals[g])

    def slot(x, g):
        hit = np.nonzero(np.linalg.norm(tris[g] - x, axis=1) <= WELD)[0]
        return int(hit[0]) if len(hit) else -1

    def angle(t, k):
        b, c = t[(k + 1) % 3] - t[k], t[(k + 2) % 3] - t[k]
        return np.arctan2(np.linalg.norm(np.cross(b, c)), np.dot(b, c))

    out = np.zeros(len(tris), np.int32)
    for i, t in enumerate(tris):
        turn = [angle(t, j) for j in range(3)]
        bent = [False] * 3
        for g in range(len(tris)):
            if g == i:
                continue
            slots = [slot(t[j], g) for j in range(3)]
            for j in range(3):
                if slots[j] >= 0 and coplanar(i, g):
                    turn[j] += angle(tris[g], slots[j])
                elif slots[j] >= 0:
                    bent[j] = True
            for e in range(3):
                a, b, other = t[e], t[(e + 1) % 3], t[(e + 2) % 3]
                if slots[e] >= 0 and slots[(e + 1) % 3] >= 0 and coplanar(i, g):
                    g_other = tris[g][3 - slots[e] - slots[(e + 1) % 3]]
                    if np.dot(np.cross(b - a, other - a), np.cross(b - a, g_other - a)) < 0.0:  # across the edge
                        out[i] |= 1 << e
        for j in range(3):
            if not bent[j] and abs(turn[j] - 2.0 * np.pi) <= TURN_TOL:
                out[i] |= 8 << j
    return out


def _model(tiles):
    b = sim.ModelBuilder()
    b.add_shape_sphere(pos=(0.0, -1.0, 0.0), radius=0.1)  # a shape before the meshes: their offsets are not 0
    for pts, idx in tiles:
        b.add_shape_mesh(pts, idx)
    body = b.add_body(kc.transform(kc.vec3(0.2, 0.3, 0.1), kc.quat(0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box(half_extents=(0.05, 0.05, 0.05), body=body)
    return b.finalize()


def test_precomputed_seam_flags_equal_a_numpy_brute_force_across_tiles_and_bends():
    # tile A flat; tile B beside it (a border at x = 0.3), flat up to x = 0.5, then tilted: the edges and
    # vertices along x = 0.5 join non-coplanar triangles (no seams), those of the tilted strip are seams again
    tiles = [_grid(0.0, 0.3, 0.0, 0.2, 0.1),
             _grid(0.3, 0.6, 0.0, 0.2, 0.1, lambda x, z: 0.5 * max(x - 0.5, 0.0))]
    m = _model(tiles)
    seams = static_mesh_seams(m).numpy()
    counts = [len(idx) for _, idx in tiles]
    got = np.concatenate([seams[seams[s]:seams[s] + n] for s, n in zip(m.mesh_shape_indices, counts)])
    want = _brute_force_flags(tiles)
    np.testing.assert_array_equal(got, want)
    # the cases the brute force must have met, so that the comparison means something
    tri = np.concatenate([pts[idx.reshape(-1, 3)] for pts, idx in tiles])
    on_border = [i for i in range(len(tri)) if np.sum(np.abs(tri[i][:, 0] - 0.3) < 1e-9) == 2]
    on_bend = [i for i in range(len(tri)) if np.sum(np.abs(tri[i][:, 0] - 0.5) < 1e-9) == 2]
    assert on_border and all(want[i] & 7 for i in on_border)                   # seams across the tile border
    assert on_bend and not any(want[i] & _edge_bits_at(tri[i], 0.5) for i in on_bend)  # bend edges: no seams
    assert any(want[i] >> 3 for i in on_border)                                # a flat inner vertex on the border
    assert not any(want[i] >> 3 & _vertex_bits_at(tri[i], 0.5) for i in range(len(tri)))  # bent vertices: none


def _edge_bits_at(t, x):
    """Edge bits of the triangle ``t`` (3, 3) whose edges lie on the line x = ``x``."""
    return sum(1 << e for e in range(3) if abs(t[e][0] - x) < 1e-9 and abs(t[(e + 1) % 3][0] - x) < 1e-9)


def _vertex_bits_at(t, x):
    """Vertex bits (0..2) of the vertices of ``t`` on the line x = ``x``."""
    return sum(1 << j for j in range(3) if abs(t[j][0] - x) < 1e-9)


def test_seam_flags_are_found_once_per_model_by_the_solver():
    tiles = [_grid(0.0, 0.2, 0.0, 0.2, 0.1)]
    m = _model(tiles)
    assert getattr(m, "shape_seams", None) is None
    sim.SolverSemiImplicit(m, toi=True)
    seams = m.shape_seams
    assert static_mesh_seams(m) is seams                                       # kept, not found again
    s = m.mesh_shape_indices[0]
    np.testing.assert_array_equal(seams.numpy()[seams.numpy()[s]:], _brute_force_flags(tiles))
