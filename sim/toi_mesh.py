"""Distance features of a swept body shape (sphere, box, capsule) against a static triangle mesh,
for the time-of-impact sweep of sim/toi_shapes.py.

A static mesh (``add_shape_mesh(body=-1)``, vertices in world) is a set of triangles; the
distance of a convex shape A from one triangle, when they are apart, is the smallest of

- A's points (box corners; sphere centre and capsule ends with their radius) against the
  triangle (closest point on the triangle);
- the triangle's three vertices against A's signed distance;
- A's segments (12 box edges; the capsule's core with its radius) against the three edges.

The triangles are those of the mesh's BVH (``geometry.Mesh``) whose bounds overlap a cube of
half-side ``reach + lookahead`` about the shape: every triangle outside it is farther than
``lookahead`` from the shape, so ``lookahead`` is a lower bound on the distance when nothing
closer is found, which is what conservative advancement needs.  The mesh is two-sided (a thin
wall of two triangles stops a body from either side): the normal points from the closest
point of the triangle towards the shape.  So that this direction is defined at the impact,
the triangles are given a skin of MESH_SKIN [m]: the shape stops that far from them (touching
a triangle of no thickness, the separation vector is rounding noise).

**Seams.**  Inside a flat region (two coplanar triangles sharing an edge, of one mesh or of
two tiles side by side; a vertex whose triangles lie in one plane all round it: found once per
model by sim/toi_mesh_seams.py, read here by index, :func:`face_seams`) the surface has no edge,
but each triangle alone does: a box corner 0.5 mm past the shared edge, a sphere's centre 5 mm
past it, a box edge parallel to it were features with a tilted normal within the manifold's reach
(MANIFOLD_TOL), which braked, tripped or stopped a box sliding across the seam.  So a point of A whose closest point on the triangle lies
on a seam takes the face normal and its distance along it (:func:`seam_plane_feature`: no more
than the tilted distance, so the sweep stays conservative) while its offset from the seam is
within SEAM_REACH's reach; a flat inner vertex against A and A's segments against a seam edge
are no features (the closest points of a convex A and a flat region are A's points over the face
or on the region's border, whose edges and vertices are no seams).
"""
from __future__ import annotations

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .cloth_self_contact import triangle_closest_weights
from .collide_bodies import segment_params, shape_point, static_distance

FAR = kc.constant(1.0e30)
#: thickness [m] of the skin around static mesh triangles (see the module docstring)
MESH_SKIN = kc.constant(1.0e-4)
#: features of one (shape, triangle) pair: 8 points, 3 vertices, 12 x 3 segment pairs
TRIANGLE_FEATURES = 47
#: a seam feature takes the face normal while its in-plane offset is within what a tilted feature
#: this much [m] farther than the face's would have (beyond MANIFOLD_TOL, the manifold's reach)
SEAM_REACH = kc.constant(2.0e-3)


skip_vector = kc.vector(length=8, dtype=float)


@kc.func
def mesh_feature_id(face: int, f: int, k: int) -> float:
    """Id of feature ``f`` of triangle ``face`` against body shape ``k`` (negative: apart from the ids of
    sim/toi_shapes.py's other features; exact in float32 below 2^24 / (8 TRIANGLE_FEATURES) faces)."""
    return -1.0 - float((face * TRIANGLE_FEATURES + f) * 8 + k % 8)


@kc.func
def is_skipped(gid: float, count: int, ids: skip_vector) -> int:
    """1 when ``gid`` is one of the first ``count`` entries of ``ids``."""
    out = int(0)
    for c in range(count):  # a runtime bound: not unrolled
        if ids[c] == gid:
            out = 1
    return out


@kc.func
def triangle_vertex(mesh: kc.uint64, face: int, j: int) -> kc.vec3:
    """Vertex ``j`` (0..2) of triangle ``face`` of a mesh [m]."""
    return kc.mesh_get_point(mesh, kc.mesh_get_index(mesh, face * 3 + j))


@kc.func
def box_segment(scale: kc.vec3, k: int):
    """Edge ``k`` (0..11) of a box of half extents ``scale`` in its frame: (start, end)."""
    axis = k // 4
    s1 = 2.0 * float(k % 2) - 1.0
    s2 = 2.0 * float((k // 2) % 2) - 1.0
    a = kc.vec3(-scale[0], s1 * scale[1], s2 * scale[2])
    b = kc.vec3(scale[0], s1 * scale[1], s2 * scale[2])
    if axis == 1:
        a = kc.vec3(s1 * scale[0], -scale[1], s2 * scale[2])
        b = kc.vec3(s1 * scale[0], scale[1], s2 * scale[2])
    elif axis == 2:
        a = kc.vec3(s1 * scale[0], s2 * scale[1], -scale[2])
        b = kc.vec3(s1 * scale[0], s2 * scale[1], scale[2])
    return a, b


@kc.func
def triangle_edge(t0: kc.vec3, t1: kc.vec3, t2: kc.vec3, e: int):
    """Edge ``e`` (0, 1, 2) of the triangle (t0, t1, t2): (start, end), going round t0 -> t1 -> t2."""
    b0 = t0
    b1 = t1
    if e == 1:
        b0 = t1
        b1 = t2
    elif e == 2:
        b0 = t2
        b1 = t0
    return b0, b1


@kc.func
def segment_pair_feature(a0: kc.vec3, da: kc.vec3, ra: float, b0: kc.vec3, db: kc.vec3, rb: float,
                         centre_b: kc.vec3, by_centre: int):
    """Segment A (``a0``, ``a0 + da``, radius ``ra``) against segment B (radius ``rb``) [m]: (distance,
    unit normal from B to A, contact point on A's surface); distance FAR when they touch at no
    defined direction.  Two crossing segments take the normal across both, exact where the
    separation is rounding noise (at the time of impact); its side is that of the separation, or
    with ``by_centre`` away from ``centre_b`` (B an edge of a convex solid of that centre: at the
    time of impact two sharp edges touch and the separation has no side)."""
    d = float(FAR)
    n = kc.vec3(0.0, 1.0, 0.0)
    st = segment_params(a0, da, b0, db)
    pa = a0 + da * st[0]
    sep = pa - (b0 + db * st[1])
    dist = kc.length(sep)
    axis = kc.cross(da, db)
    crossing = st[0] > 0.0 and st[0] < 1.0 and st[1] > 0.0 and st[1] < 1.0
    if crossing and kc.length(axis) > 1.0e-6 * kc.length(da) * kc.length(db):
        axis = kc.normalize(axis)
        h = kc.dot(sep, axis)
        side = h
        if by_centre != 0:
            side = kc.dot(b0 + db * st[1] - centre_b, axis)
        n = axis
        if side < 0.0:
            n = -axis
        d = kc.abs(h) - ra - rb  # the segments' distance either way
    elif dist > 0.0:
        n = sep / dist
        d = dist - ra - rb
    return d, n, pa - n * ra


@kc.func
def face_seams(seams: kc.array(dtype=int), c: int, face: int) -> int:
    """The seam flags of triangle ``face`` of the static mesh shape ``c`` (``seams``: sim/toi_mesh_seams.py's
    ``static_mesh_seams``, whose docstring has the layout and the bits)."""
    return seams[seams[c] + face]


@kc.func
def seam_plane_feature(d: float, n: kc.vec3, p: kc.vec3, x: kc.vec3, r: float, c: kc.vec3, t0: kc.vec3,
                       t1: kc.vec3, t2: kc.vec3, on_seam: int):
    """A feature (distance ``d`` [m], normal ``n``, point ``p``) of a point ``x`` of A's core (radius ``r`` [m])
    whose closest point on the triangle is ``c`` [m]: with ``on_seam`` (``c`` on a seam edge or a flat inner
    vertex, sim/toi_mesh_seams.py ``seam_flags``) and ``x`` past ``c`` along the plane by less than SEAM_REACH's
    reach, the face normal and the distance along it (no more than the tilted distance: the sweep stays
    conservative)."""
    if on_seam != 0 and d < FAR:
        face_n = kc.cross(t1 - t0, t2 - t0)
        if kc.length(face_n) > 0.0:
            face_n = kc.normalize(face_n)
            sep = x - c
            h = kc.dot(x - t0, face_n)
            ah = kc.abs(h)
            if kc.dot(sep, sep) - h * h <= SEAM_REACH * (2.0 * ah + SEAM_REACH):
                n = face_n
                if h < 0.0:
                    n = -face_n
                d = ah - r - MESH_SKIN
                p = x - n * r
    return d, n, p


@kc.func
def seam_at_weights(wts: kc.vec3, seams: int) -> int:
    """1 when the point of barycentric weights ``wts`` lies on a seam edge or a flat inner vertex (``seams``:
    sim/toi_mesh_seams.py ``seam_flags``)."""
    bit = int(-1)
    if wts[0] > 0.0 and wts[1] > 0.0 and wts[2] <= 0.0:
        bit = 0
    elif wts[1] > 0.0 and wts[2] > 0.0 and wts[0] <= 0.0:
        bit = 1
    elif wts[2] > 0.0 and wts[0] > 0.0 and wts[1] <= 0.0:
        bit = 2
    elif wts[0] > 0.0:
        bit = 3
    elif wts[1] > 0.0:
        bit = 4
    elif wts[2] > 0.0:
        bit = 5
    out = int(0)
    if bit >= 0:
        out = (seams >> bit) & 1
    return out


@kc.func
def triangle_feature(f: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3,
                     t0: kc.vec3, t1: kc.vec3, t2: kc.vec3, seams: int):
    """Feature ``f`` (0 <= f < TRIANGLE_FEATURES) of shape A (kind ``ka``: 0 sphere, 1 box, 4 capsule)
    against the triangle (t0, t1, t2) [m] (``seams``: its sim/toi_mesh_seams.py ``seam_flags``): (distance [m],
    unit normal from the triangle to A, contact point on A's surface); distance FAR when the feature does not exist."""
    d = float(FAR)
    n = kc.vec3(0.0, 1.0, 0.0)
    p = pos_a
    if f < 8:  # a point of A against the triangle
        pt = shape_point(ka, scale_a, f)
        if pt[3] >= 0.0:
            x = pos_a + rot_a * kc.vec3(pt[0], pt[1], pt[2])
            wts = triangle_closest_weights(x, t0, t1, t2)
            sep = x - (t0 * wts[0] + t1 * wts[1] + t2 * wts[2])
            dist = kc.length(sep)
            face_n = kc.cross(t1 - t0, t2 - t0)
            if wts[0] > 0.0 and wts[1] > 0.0 and wts[2] > 0.0 and kc.length(face_n) > 0.0:
                # over the face: its normal, exact where the separation is rounding noise
                face_n = kc.normalize(face_n)
                h = kc.dot(x - t0, face_n)
                n = face_n
                if h < 0.0:
                    n = -face_n
                d = kc.abs(h) - pt[3] - MESH_SKIN
                p = x - n * pt[3]
            elif dist > 0.0:
                n = sep / dist
                d = dist - pt[3] - MESH_SKIN
                p = x - n * pt[3]
                if seams != 0:
                    d, n, p = seam_plane_feature(d, n, p, x, pt[3], x - sep, t0, t1, t2, seam_at_weights(wts, seams))
    elif f < 11:  # a vertex of the triangle against A's signed distance
        v = t0
        if f == 9:
            v = t1
        elif f == 10:
            v = t2
        nd = static_distance(v, ka, pos_a, rot_a, scale_a, kc.vec3(0.0, 1.0, 0.0), 0.0)
        n = -kc.vec3(nd[0], nd[1], nd[2])
        d = nd[3] - MESH_SKIN
        p = v + n * nd[3]
        if (seams >> (f - 5)) & 1 != 0:  # a flat inner vertex: never the closest point of a flat region
            d = FAR
    else:  # a segment of A against an edge of the triangle
        g = f - 11
        k = g // 3
        e = g % 3
        la0 = kc.vec3(0.0, 0.0, 0.0)
        la1 = kc.vec3(0.0, 0.0, 0.0)
        ra = float(-1.0)
        if ka == 1:
            la0, la1 = box_segment(scale_a, k)
            ra = 0.0
        elif ka == 4:
            if k == 0:
                la0 = kc.vec3(0.0, -scale_a[1], 0.0)
                la1 = kc.vec3(0.0, scale_a[1], 0.0)
                ra = scale_a[0]
        if ra >= 0.0:
            b0, b1 = triangle_edge(t0, t1, t2, e)
            # the triangle edge as a segment of radius MESH_SKIN (the skin every mesh feature has)
            d, n, p = segment_pair_feature(pos_a + rot_a * la0, rot_a * (la1 - la0), ra, b0, b1 - b0, MESH_SKIN, b0, 0)
            if (seams >> e) & 1 != 0:  # a seam: its crossings are A's points' over the face, its ends vertices'
                d = FAR
    return d, n, p


@kc.func
def mesh_closest_feature(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, reach: float, c: int,
                         lookahead: float, k: int, skip_count: int, skip_ids: skip_vector,
                         shape_mesh: kc.array(dtype=kc.uint64), seams: kc.array(dtype=int)):
    """Closest feature of shape A (``reach`` [m]: bound on its points' distance from ``pos_a``; the body's
    shape ``k``) against the static mesh shape ``c``, leaving out the ``skip_count`` feature ids (:func:`mesh_feature_id`)
    in ``skip_ids``: (distance [m], normal from the mesh to A, contact point on A).  The distance is
    ``lookahead - MESH_SKIN`` (a lower bound) when no triangle is that close.  ``seams``: the model's
    sim/toi_mesh_seams.py ``static_mesh_seams``."""
    best = lookahead - MESH_SKIN
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    h = reach + lookahead
    mesh = shape_mesh[c]
    query = kc.mesh_query_aabb(mesh, pos_a - kc.vec3(h, h, h), pos_a + kc.vec3(h, h, h))
    face = int(0)
    while kc.mesh_query_aabb_next(query, face):
        t0 = triangle_vertex(mesh, face, 0)
        t1 = triangle_vertex(mesh, face, 1)
        t2 = triangle_vertex(mesh, face, 2)
        flags = face_seams(seams, c, face)
        for f in range(TRIANGLE_FEATURES):
            d, n, p = triangle_feature(f, ka, pos_a, rot_a, scale_a, t0, t1, t2, flags)
            if d < best:
                if is_skipped(mesh_feature_id(face, f, k), skip_count, skip_ids) == 0:
                    best = d
                    best_n = n
                    best_p = p
    return best, best_n, best_p


@kc.func
def shape_lowest(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, n: kc.vec3) -> float:
    """Smallest ``n . x`` [m] over the points x of shape A (kind ``ka``: 0 sphere, 1 box, 4 capsule; ``n`` a
    unit vector): how far along ``n`` its lowest point lies."""
    count = int(8)  # a runtime bound: box corners; a sphere has one point, a capsule two
    if ka == 0:
        count = 1
    elif ka == 4:
        count = 2
    low = float(FAR)
    for f in range(count):
        pt = shape_point(ka, scale_a, f)
        low = kc.min(low, kc.dot(n, pos_a + rot_a * kc.vec3(pt[0], pt[1], pt[2])) - pt[3])
    return low


@kc.func
def mesh_flat_top(mesh: kc.uint64, centre: kc.vec3, half: float):
    """The static mesh's triangles whose bounds overlap the cube of half-side ``half`` [m] about ``centre``, as
    a half-space that holds them: (unit normal m, level [m]), m the face normal of the first such triangle
    on the side of ``centre``, the level the largest ``m . v`` over their vertices (a triangle is the convex
    hull of its vertices).  On a flat patch the level is the patch's own; a bump or a wall in the cube
    raises it.  Level -1e30 when no triangle is there."""
    m = kc.vec3(0.0, 1.0, 0.0)
    found = int(0)
    top = float(-1.0e30)
    query = kc.mesh_query_aabb(mesh, centre - kc.vec3(half, half, half), centre + kc.vec3(half, half, half))
    face = int(0)
    while kc.mesh_query_aabb_next(query, face):
        t0 = triangle_vertex(mesh, face, 0)
        t1 = triangle_vertex(mesh, face, 1)
        t2 = triangle_vertex(mesh, face, 2)
        if found == 0:
            face_n = kc.cross(t1 - t0, t2 - t0)
            if kc.length(face_n) > 0.0:
                m = kc.normalize(face_n)
                if kc.dot(m, centre - t0) < 0.0:
                    m = -m
                found = 1
        top = kc.max(top, kc.max(kc.dot(m, t0), kc.max(kc.dot(m, t1), kc.dot(m, t2))))
    return m, top


#: static meshes with more triangles than this have feature ids that float32 cannot tell apart
MAX_EXACT_FACES = (1 << 24) // (8 * TRIANGLE_FEATURES)


def warn_large_meshes(model, solver_name: str = "SolverSemiImplicit"):
    """Warn (at solver construction) about static meshes too large for exact feature ids: after an
    impact the sweep may then also leave out another triangle's feature for the rest of that step."""
    import warnings

    big = [(s, len(model.shape_mesh_points[s][1]) // 3) for s in model.mesh_shape_indices
           if len(model.shape_mesh_points[s][1]) // 3 > MAX_EXACT_FACES]
    if big:
        warnings.warn(f"{solver_name}(toi=True): static mesh shapes {[s for s, _ in big]} have "
                      f"{[n for _, n in big]} triangles, more than {MAX_EXACT_FACES}: their feature ids are not exact "
                      f"in float32, so an impact may leave out another triangle for the rest of its step", stacklevel=3)
    return [s for s, _ in big]
