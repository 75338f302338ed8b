"""The contact normal and depth of a vertex of one convex mesh body inside another (kernel functions).

Why: a vertex's closest feature on the other mesh is the wrong contact normal when the two
hulls' faces are coplanar or nearly so.  A hull cube resting on an equal cube has its bottom
corners on the lower cube's top corners: pressed in by ``d``, a corner lies on the lower
cube's side planes (distance 0) and only ``d`` under its top face, so its closest face is a
side face, the normal is horizontal and nothing holds the upper cube up (it sinks through);
set off a little, the corners near the side faces push sideways and throw it off.

For two convex meshes the contact normal of the pair is the separating axis of least
overlap (the separating-axis test over both meshes' face normals), the same for every
vertex of the pair; a vertex ``x`` of mesh A in contact with mesh B then has the gap
``n . x - h_B(n)`` [m] (< 0: inside), ``h_B`` B's support function along ``n`` (the normal
points from B to A).  For convex B and any unit ``n`` that gap is at most the vertex's true
signed distance to B, so it only deepens contacts the closest-feature test already found;
the solver uses it for vertices that the closest-feature test finds in contact.

The axis is chosen by comparisons only (ints come out of the loops); the normal and the
support point are then evaluated outside them, so a Tape differentiates the depth and the
normal through both bodies' poses on the chosen axis.  Edge-edge axes are not tested: edges
crossing edges are sim/collide_mesh_edge_pairs.py's contacts.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* builtins)


#: an overlapping contact point of two swept bodies keeps its penalty force below this many times the
#: resting speed (:func:`overlap_impact_gap`)
OVERLAP_SPEED_FACTOR = kc.constant(10.0)


@kc.func
def hull_extent(mesh: kc.uint64, vertex_count: int, pos: kc.vec3, rot: kc.mat33, u: kc.vec3) -> kc.vec2:
    """(min, max) [m] of the world vertices ``pos + rot p`` of ``mesh`` projected on unit ``u`` (world)."""
    lo = float(1.0e30)
    hi = float(-1.0e30)
    for v in range(vertex_count):
        p = kc.dot(u, pos + rot * kc.mesh_get_point(mesh, v))
        lo = kc.min(lo, p)
        hi = kc.max(hi, p)
    return kc.vec2(lo, hi)


@kc.func
def hull_support_vertex(mesh: kc.uint64, vertex_count: int, rot: kc.mat33, n: kc.vec3) -> int:
    """Index of the vertex of ``mesh`` (turned by ``rot``) farthest along ``n`` (world)."""
    best = int(0)
    best_p = float(-1.0e30)
    for v in range(vertex_count):
        p = kc.dot(n, rot * kc.mesh_get_point(mesh, v))
        if p > best_p:
            best_p = p
            best = v
    return best


@kc.func
def hull_pair_axis(mesh_a: kc.uint64, nva: int, nfa: int, pos_a: kc.vec3, rot_a: kc.mat33,
                   mesh_b: kc.uint64, nvb: int, nfb: int, pos_b: kc.vec3, rot_b: kc.mat33) -> kc.vec3:
    """The separating axis of least overlap of convex meshes A and B over their faces' normals, as
    (which mesh's face: 0 for A, 1 for B; face index; +1 or -1: the sign that turns the face's world
    normal into the contact normal from B to A), encoded in a vec3 of exact small integers."""
    best = float(1.0e30)
    owner = int(0)
    face = int(0)
    sign = float(1.0)
    for side in range(2):
        mesh = mesh_a
        rot = rot_a
        nf = nfa
        if side == 1:
            mesh = mesh_b
            rot = rot_b
            nf = nfb
        for f in range(nf):
            u = rot * kc.mesh_eval_face_normal(mesh, f)
            ea = hull_extent(mesh_a, nva, pos_a, rot_a, u)
            eb = hull_extent(mesh_b, nvb, pos_b, rot_b, u)
            up = eb[1] - ea[0]     # overlap when A lies on the +u side of B
            down = ea[1] - eb[0]   # overlap when A lies on the -u side
            overlap = kc.min(up, down)
            if overlap < best:
                best = overlap
                owner = side
                face = f
                sign = 1.0
                if down < up:
                    sign = -1.0
    return kc.vec3(float(owner), float(face), sign)


@kc.func
def hull_pair_normal(mesh_a: kc.uint64, nva: int, nfa: int, pos_a: kc.vec3, rot_a: kc.mat33,
                     mesh_b: kc.uint64, nvb: int, nfb: int, pos_b: kc.vec3, rot_b: kc.mat33) -> kc.vec3:
    """Unit contact normal (world, from B to A) of convex meshes A and B: their axis of least overlap."""
    axis = hull_pair_axis(mesh_a, nva, nfa, pos_a, rot_a, mesh_b, nvb, nfb, pos_b, rot_b)
    face = int(axis[1])
    n = kc.vec3(0.0, 1.0, 0.0)
    if axis[0] > 0.5:
        n = rot_b * kc.mesh_eval_face_normal(mesh_b, face)
    else:
        n = rot_a * kc.mesh_eval_face_normal(mesh_a, face)
    return n * axis[2]


@kc.func
def hull_pair_separation(mesh_a: kc.uint64, nva: int, nfa: int, pos_a: kc.vec3, rot_a: kc.mat33,
                         mesh_b: kc.uint64, nvb: int, nfb: int, pos_b: kc.vec3, rot_b: kc.mat33) -> kc.vec4:
    """(nx, ny, nz, separation): :func:`hull_pair_normal` and the hulls' separation [m] along it (< 0:
    overlap).  It equals the hulls' distance when they touch face to face; touching vertex or edge first
    (no face normal separates them as far as they are apart) it is smaller."""
    n = hull_pair_normal(mesh_a, nva, nfa, pos_a, rot_a, mesh_b, nvb, nfb, pos_b, rot_b)
    ea = hull_extent(mesh_a, nva, pos_a, rot_a, n)
    eb = hull_extent(mesh_b, nvb, pos_b, rot_b, n)
    return kc.vec4(n[0], n[1], n[2], ea[0] - eb[1])


@kc.func
def hull_separation_along(mesh_a: kc.uint64, nva: int, pos_a: kc.vec3, rot_a: kc.mat33, mesh_b: kc.uint64, nvb: int,
                          pos_b: kc.vec3, rot_b: kc.mat33, n: kc.vec3) -> float:
    """Separation [m] of hulls A and B along unit ``n`` (world, from B to A): A's lowest vertex less B's
    highest (< 0: their shadows on ``n`` overlap).  It is at most their distance, equal for a separating
    axis of the touching features."""
    ea = hull_extent(mesh_a, nva, pos_a, rot_a, n)
    eb = hull_extent(mesh_b, nvb, pos_b, rot_b, n)
    return ea[0] - eb[1]


@kc.func
def hull_vertex_contact(x: kc.vec3, mesh_a: kc.uint64, nva: int, nfa: int, pos_a: kc.vec3, rot_a: kc.mat33,
                        mesh_b: kc.uint64, nvb: int, nfb: int, pos_b: kc.vec3, rot_b: kc.mat33) -> kc.vec4:
    """(nx, ny, nz, gap): the contact normal (world, unit, from B to A) of convex meshes A and B, and the
    gap [m] (< 0: inside) of A's point ``x`` (world) below B's support plane along it."""
    n = hull_pair_normal(mesh_a, nva, nfa, pos_a, rot_a, mesh_b, nvb, nfb, pos_b, rot_b)
    top = hull_support_vertex(mesh_b, nvb, rot_b, n)
    gap = kc.dot(n, x - pos_b - rot_b * kc.mesh_get_point(mesh_b, top))
    return kc.vec4(n[0], n[1], n[2], gap)


@kc.func
def hull_has_vertex_near(x: kc.vec3, mesh: kc.uint64, vertex_count: int, pos: kc.vec3, rot: kc.mat33,
                         tol: float) -> int:
    """1 when a vertex of ``mesh`` (world: ``pos + rot p``) lies within ``tol`` [m] of ``x``, else 0.

    Two hulls stacked corner on corner would otherwise get two contacts at each corner (each one's
    vertex inside the other): twice the stiffness, and twice the viscous friction of sim/contact.py,
    which then overshoots every step instead of stopping the sliding (a two-step rocking that never
    dies); the pair's higher shape index leaves such a vertex to the lower one's."""
    near = int(0)
    for v in range(vertex_count):
        if kc.length(pos + rot * kc.mesh_get_point(mesh, v) - x) < tol:
            near = 1
    return near


@kc.func
def overlap_impact_gap(gap: float, n: kc.vec3, v_rel: kc.vec3, impact_pair: int, impact_speed: float) -> float:
    """As sim/collide_body_pairs.py ``impact_gap`` (no penalty contact for a pair of two swept bodies whose
    normal speed is ``impact_speed`` or more), except that an overlap (``gap`` < 0) keeps its contact.

    Why: the sweep stops swept bodies apart, so an overlap is a resting contact's sag that the sweep
    does not take: it takes an impact at the pair's manifold point when that point approaches at the
    resting speed or more, while here each contact point is judged alone.  A hull rocking on another
    has corners that move faster than the resting speed while the manifold point does not; dropping
    those corners' contacts left a one-sided torque that spun the upper hull off (toi=True).  An overlap
    faster than OVERLAP_SPEED_FACTOR times the resting speed is still left out: that is a corner the
    sweep missed within its step (sim/README.md's known hole), not a sag, and a penalty force there
    would add a contact onset to the impact's exact gradient."""
    out = gap
    limit = impact_speed
    if gap < 0.0:
        limit = OVERLAP_SPEED_FACTOR * impact_speed
    if impact_pair == 2 and kc.abs(kc.dot(n, v_rel)) >= limit:
        out = 1.0e30
    return out


def mesh_is_convex(points, indices, tolerance: float = 1.0e-6, max_work: int = 20_000_000) -> bool:
    """True when every vertex of the closed triangle mesh lies on the inner side of every triangle's
    plane (within ``tolerance`` times the mesh's size): a convex hull, given or made by ``is_convex``.
    Meshes with more than ``max_work`` (triangle, vertex) pairs are reported not convex (the per-pair
    axis test loops over faces times vertices: meant for hulls and small meshes)."""
    pts = np.asarray(points, np.float64)
    tris = np.asarray(indices, np.int64).reshape(-1, 3)
    if len(tris) == 0 or len(tris) * len(pts) > max_work:
        return False
    normals = np.cross(pts[tris[:, 1]] - pts[tris[:, 0]], pts[tris[:, 2]] - pts[tris[:, 0]])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-30)
    heights = normals @ pts.T - np.einsum("fk,fk->f", normals, pts[tris[:, 0]])[:, None]
    size = float(np.ptp(pts, axis=0).max())
    return bool(heights.max() <= tolerance * max(size, 1e-12))


def shape_convex_flags(model) -> np.ndarray:
    """int32 (max(S, 1),): 1 for the convex mesh shapes on bodies (:func:`mesh_is_convex`), else 0."""
    flags = np.zeros(max(model.shape_count, 1), np.int32)
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    for s, (pts, tris) in model.shape_mesh_points.items():
        flags[s] = int(shape_body[s] >= 0 and mesh_is_convex(pts, tris))
    return flags
