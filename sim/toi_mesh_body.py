"""Distance features of a mesh shape on a swept body, for the time-of-impact sweep of sim/toi_shapes.py.

A mesh on a body (``add_shape_mesh(body=b)``: a convex hull or a closed triangle mesh, its
vertices in the shape's own frame) is swept like a box: conservative advancement on the
smallest of its *features* against each static collider, then Newton steps on the active
one (sim/toi_shapes.py).  The features of the mesh A against a collider B are

- every vertex of A against B's signed distance (ground, plane, sphere, box, capsule);
- B's points (sphere centre, box corners, capsule ends, with their radius) against A's signed
  distance (``mesh_surface_distance``: A's BVH in A's frame, the side from the pseudo-normal);
- every edge of A (each triangle's three edges) against B's segments (12 box edges, the
  capsule's core with its radius);

and against one triangle of a static mesh (two-sided, with sim/toi_mesh.py's skin):

- every vertex of A against the triangle;
- the triangle's three vertices against A's signed distance;
- every edge of A against the triangle's three edges.

Two polyhedra (or a polyhedron and a round shape) that are apart are closest at a vertex
against a face, a face against a vertex or an edge against an edge, so when they are apart
this minimum is their distance, convex or not.  A's signed distance is searched only
``lookahead`` [m] around B's points; farther, ``lookahead`` stands in for it (a lower bound,
what conservative advancement needs) with a zero normal, which the manifold leaves out.

The cost is linear in A's vertices and edges per collider (and per nearby triangle of a
static mesh), at every advancement step: meant for hulls and small meshes (tens to a few
hundred triangles).
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_bodies import segment_params, shape_point, static_distance
from .collide_mesh import FAR, mesh_surface_distance
from .model import SHAPE_MESH
from .toi_mesh import (MESH_SKIN, box_segment, face_seams, is_skipped, segment_pair_feature, skip_vector,
                       triangle_edge, triangle_feature, triangle_vertex)

BOX = kc.constant(1)
PLANE = kc.constant(2)
CAPSULE = kc.constant(4)
GROUND = kc.constant(-1)


@kc.func
def mesh_edge(mesh: kc.uint64, e: int):
    """Edge ``e`` (0 <= e < 3 faces) of a mesh, in its frame: edge ``e % 3`` of triangle ``e // 3``
    (every inner edge appears twice, once from each side)."""
    face = e // 3
    j = e % 3
    a = triangle_vertex(mesh, face, j)
    b = triangle_vertex(mesh, face, (j + 1) % 3)
    return a, b


@kc.func
def collider_segments(kb: int) -> int:
    """Segments of a static collider kind: 12 box edges, a capsule's core, else none."""
    out = int(0)
    if kb == BOX:
        out = 12
    elif kb == CAPSULE:
        out = 1
    return out


@kc.func
def collider_segment(kb: int, scale: kc.vec3, k: int):
    """Segment ``k`` of a static collider in its frame: (start, end, radius) (box edges, capsule core)."""
    a = kc.vec3(0.0, -scale[1], 0.0)
    b = kc.vec3(0.0, scale[1], 0.0)
    r = scale[0]
    if kb == BOX:
        a, b = box_segment(scale, k)
        r = 0.0
    return a, b, r


@kc.func
def mesh_feature_count(kb: int, nv: int, nf: int) -> int:
    """Features of a mesh of ``nv`` vertices and ``nf`` triangles against a static collider of kind ``kb``."""
    return nv + 8 + 3 * nf * collider_segments(kb)


@kc.func
def mesh_feature_distance(f: int, mesh: kc.uint64, nv: int, pos_a: kc.vec3, rot_a: kc.mat33, kb: int,
                          pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3, ground_normal: kc.vec3,
                          ground_offset: float, lookahead: float):
    """Feature ``f`` (< :func:`mesh_feature_count`) of mesh A (world pose ``pos_a``, ``rot_a``; ``nv``
    vertices) against the static collider B: (distance [m], unit normal from B to A, contact point on
    A's surface); FAR when the feature does not exist, ``lookahead`` with a zero normal when A's
    surface is farther than that from B's point."""
    d = float(FAR)
    n = kc.vec3(0.0, 1.0, 0.0)
    p = pos_a
    if f < nv:  # a vertex of A against B's signed distance
        x = pos_a + rot_a * kc.mesh_get_point(mesh, f)
        nd = static_distance(x, kb, pos_b, rot_b, scale_b, ground_normal, ground_offset)
        n = kc.vec3(nd[0], nd[1], nd[2])
        d = nd[3]
        p = x
    elif f < nv + 8:  # a point of B against A's signed distance
        if kb != GROUND and kb != PLANE:
            pt = shape_point(kb, scale_b, f - nv)
            if pt[3] >= 0.0:
                x = pos_b + rot_b * kc.vec3(pt[0], pt[1], pt[2])
                sd = mesh_surface_distance(mesh, kc.transpose(rot_a) * (x - pos_a), lookahead + pt[3])
                if sd[3] < FAR:
                    n = -(rot_a * kc.vec3(sd[0], sd[1], sd[2]))
                    d = sd[3] - pt[3]
                    p = x + n * sd[3]
                else:
                    n = kc.vec3(0.0, 0.0, 0.0)
                    d = lookahead
    else:  # an edge of A against a segment of B
        segs = collider_segments(kb)
        if segs > 0:
            ge = f - nv - 8
            la0, la1 = mesh_edge(mesh, ge // segs)
            lb0, lb1, rb = collider_segment(kb, scale_b, ge % segs)
            by_centre = int(0)  # a box's sharp edge: the normal points away from the box's centre
            if kb == BOX:
                by_centre = 1
            d, n, p = segment_pair_feature(pos_a + rot_a * la0, rot_a * (la1 - la0), 0.0, pos_b + rot_b * lb0,
                                           rot_b * (lb1 - lb0), rb, pos_b, by_centre)
    return d, n, p


@kc.func
def mesh_triangle_feature_count(nv: int, nf: int) -> int:
    """Features of a mesh of ``nv`` vertices and ``nf`` triangles against one static triangle."""
    return nv + 3 + 9 * nf


@kc.func
def mesh_triangle_feature(f: int, mesh: kc.uint64, nv: int, pos_a: kc.vec3, rot_a: kc.mat33, t0: kc.vec3,
                          t1: kc.vec3, t2: kc.vec3, lookahead: float, seams: int):
    """Feature ``f`` (< :func:`mesh_triangle_feature_count`) of mesh A against the static triangle
    (t0, t1, t2) [m] with its skin (``seams``: its sim/toi_mesh_seams.py ``seam_flags``, whose seams take the face
    normal): (distance, unit normal from the triangle to A, contact point on A)."""
    d = float(FAR)
    n = kc.vec3(0.0, 1.0, 0.0)
    p = pos_a
    if f < nv:  # a vertex of A against the triangle: a sphere of radius 0 (sim/toi_mesh.py)
        x = pos_a + rot_a * kc.mesh_get_point(mesh, f)
        d, n, p = triangle_feature(0, 0, x, rot_a, kc.vec3(0.0, 0.0, 0.0), t0, t1, t2, seams)
    elif f < nv + 3:  # a vertex of the triangle against A's signed distance
        v = t0
        if f == nv + 1:
            v = t1
        elif f == nv + 2:
            v = t2
        sd = mesh_surface_distance(mesh, kc.transpose(rot_a) * (v - pos_a), lookahead + MESH_SKIN)
        if sd[3] < FAR:
            n = -(rot_a * kc.vec3(sd[0], sd[1], sd[2]))
            d = sd[3] - MESH_SKIN
            p = v + n * sd[3]
            if (seams >> (3 + f - nv)) & 1 != 0:  # a flat inner vertex (sim/toi_mesh_seams.py seam_flags)
                d = FAR
        else:
            n = kc.vec3(0.0, 0.0, 0.0)
            d = lookahead
    else:  # an edge of A against an edge of the triangle
        ge = f - nv - 3
        la0, la1 = mesh_edge(mesh, ge // 3)
        e = ge % 3
        b0, b1 = triangle_edge(t0, t1, t2, e)
        d, n, p = segment_pair_feature(pos_a + rot_a * la0, rot_a * (la1 - la0), 0.0, b0, b1 - b0, 0.0, b0, 0)
        d = d - MESH_SKIN
        if (seams >> e) & 1 != 0:  # a seam edge (sim/toi_mesh_seams.py seam_flags)
            d = FAR
    return d, n, p


@kc.func
def mesh_body_feature_id(face: int, f: int, nft: int, k: int) -> float:
    """Id of feature ``f`` of static triangle ``face`` against the body's mesh shape ``k`` (``nft`` features
    per triangle): negative, in the lane ``k % 8`` as sim/toi_mesh.py's ``mesh_feature_id``."""
    return -1.0 - float((face * nft + f) * 8 + k % 8)


@kc.func
def mesh_static_mesh_closest(mesh_a: kc.uint64, nv: int, nf: int, pos_a: kc.vec3, rot_a: kc.mat33, reach: float,
                             c: int, lookahead: float, k: int, skip_count: int, skip_ids: skip_vector,
                             shape_mesh: kc.array(dtype=kc.uint64), seams: kc.array(dtype=int)):
    """Closest feature of the body's mesh shape ``k`` (A: ``reach`` [m] bounds its vertices' distance from
    ``pos_a``) against the static mesh shape ``c``, leaving out the skipped ids (:func:`mesh_body_feature_id`):
    (distance [m], normal from the mesh to A, contact point on A); ``lookahead - MESH_SKIN`` (a lower
    bound) when no triangle is that close.  ``seams``: the model's sim/toi_mesh_seams.py ``static_mesh_seams``."""
    best = lookahead - MESH_SKIN
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    h = reach + lookahead
    nft = mesh_triangle_feature_count(nv, nf)
    mesh = shape_mesh[c]
    query = kc.mesh_query_aabb(mesh, pos_a - kc.vec3(h, h, h), pos_a + kc.vec3(h, h, h))
    face = int(0)
    while kc.mesh_query_aabb_next(query, face):
        t0 = triangle_vertex(mesh, face, 0)
        t1 = triangle_vertex(mesh, face, 1)
        t2 = triangle_vertex(mesh, face, 2)
        flags = face_seams(seams, c, face)
        for f in range(nft):
            d, n, p = mesh_triangle_feature(f, mesh_a, nv, pos_a, rot_a, t0, t1, t2, lookahead, flags)
            if d < best:
                if is_skipped(mesh_body_feature_id(face, f, nft, k), skip_count, skip_ids) == 0:
                    best = d
                    best_n = n
                    best_p = p
    return best, best_n, best_p


@kc.func
def mesh_lowest(mesh: kc.uint64, nv: int, pos_a: kc.vec3, rot_a: kc.mat33, n: kc.vec3) -> float:
    """Smallest ``n . x`` [m] over the ``nv`` vertices of the body's mesh shape at (``pos_a``, ``rot_a``): how far
    along the unit vector ``n`` its lowest point lies (the hull of its vertices holds the whole shape)."""
    low = float(FAR)
    for j in range(nv):
        low = kc.min(low, kc.dot(n, pos_a + rot_a * kc.mesh_get_point(mesh, j)))
    return low


@kc.func
def mesh_body_reach(first: int, count: int, shape_list: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                    shape_info: kc.array(dtype=kc.vec3), com: kc.vec3) -> float:
    """Bound [m] on the distance of the vertices of the body's mesh shapes from its centre of mass
    (0 without mesh shapes)."""
    reach = float(0.0)
    for k in range(count):
        sh = shape_list[first + k]
        if shape_info[sh][0] > 0.0:
            reach = kc.max(reach, kc.length(shape_pos[sh] - com) + shape_info[sh][2])
    return reach


def mesh_shape_info(model):
    """float vec3 (S,) per shape: (vertices, triangles, bounding radius [m] about the shape's origin) of
    the mesh shapes on bodies; zeros for every other shape."""
    info = np.zeros((model.shape_count, 3), np.float32)
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    for s in range(model.shape_count):
        if shape_type[s] == SHAPE_MESH and shape_body[s] >= 0:
            pts, tris = model.shape_mesh_points[s]
            pts = np.asarray(pts, np.float64)
            # float32 rounding of the vertices and of the distance: a hair more than the exact radius
            info[s] = (len(pts), len(tris) // 3, float(np.linalg.norm(pts, axis=1).max()) * (1.0 + 1.0e-6) + 1.0e-7)
    return info


def mesh_feature_span(model) -> int:
    """Feature ids one (body shape, static primitive) pair needs: 256 (sim/toi_shapes.py's FEATURES
    rounded up) or a mesh shape's :func:`mesh_feature_count` against a box, as a multiple of 256."""
    info = mesh_shape_info(model)
    most = max([256] + [int(nv) + 8 + 36 * int(nf) for nv, nf, _ in info if nv > 0])
    return 256 * ((most + 255) // 256)
