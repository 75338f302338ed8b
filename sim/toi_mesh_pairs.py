"""Distance features and time of impact of two swept bodies' shapes when one or both is a mesh, for
sim/toi_body_pairs.py.

A mesh shape on a body (``add_shape_mesh(body=b)``: a convex hull or a closed triangle mesh, its
vertices in the shape's frame, queried through its BVH) against a shape B on another body, both
moving on their step's paths (sim/toi_body_pairs.py ``body_path``).  The features are those of
sim/toi_mesh_body.py, there with a static B, here with B where its body is at the time asked:

- mesh against a sphere, box or capsule: every vertex of the mesh against B's signed distance,
  B's points (sphere centre, box corners, capsule ends with their radius) against the mesh's
  (its BVH), every edge of the mesh against B's segments (box edges, capsule core);
  ``mesh_feature_distance``, with the roles swapped when the mesh is the second shape;
- mesh against mesh: every vertex of either against the other's signed distance (its BVH, in its
  frame), and A's edges against the edges of B's triangles near A (found in B's frame through
  B's BVH: distances do not change under a rigid motion); B carries sim/toi_mesh.py's 0.1 mm
  skin, so the bodies stop that far apart, where the normal of two touching surfaces is defined.

Apart, the smallest feature is the distance of the two shapes (convex or not).  The time of impact
is sim/toi_body_pairs.py ``pair_time_of_impact`` with ``is_mesh`` set (conservative advancement on
both paths, then two Newton steps on the active feature; while the shapes' bounding balls are far
apart their distance stands in for the features': a lower bound, and cheap: nothing is queried
until the shapes are near).  The contact point is the centroid of the point features (vertices,
corners, centres) within MANIFOLD_TOL of the closest one, else of the edge features (a hull
landing flat on another touches on a face, not at one vertex).

Cost: the features of a mesh against a primitive are linear in its vertices and edges; mesh
against mesh is a BVH query per vertex of either and per edge of A (B's triangles within the
best distance found so far of that edge), per advancement step: meant for hulls and small
meshes (tens to a few hundred triangles).
"""
from __future__ import annotations

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_mesh import mesh_surface_distance
from .toi_mesh import MESH_SKIN, segment_pair_feature, triangle_edge, triangle_vertex
from .toi_mesh_body import mesh_edge, mesh_feature_count, mesh_feature_distance
from .toi_shapes import MANIFOLD_TOL, shape_reach

MESH = kc.constant(3)
FAR = kc.constant(1.0e30)
#: an edge feature must be this much closer [m] than the point features to be the closest (as in
#: sim/toi_body_pairs.py: a face on a face also touches edge to edge)
EDGE_TIE = kc.constant(1.0e-5)
#: the meshes' signed distances are searched this much [m] beyond the step's relative motion
LOOKAHEAD = kc.constant(1.0e-3)


@kc.func
def shape_radius(kind: int, scale: kc.vec3, info: kc.vec3) -> float:
    """Radius [m] of a ball about the shape's origin that holds the shape (a mesh's from ``info``, see
    sim/toi_mesh_body.py ``mesh_shape_info``)."""
    r = shape_reach(kind, scale, kc.vec3(0.0, 0.0, 0.0))
    if kind == MESH:
        r = info[2]
    return r


@kc.func
def segment_box_corner(a0: kc.vec3, da: kc.vec3, r: float) -> kc.vec3:
    """The corner of the segment (a0, a0 + da)'s bounding box grown by |r| [m]: the lower one for r < 0,
    the upper one for r > 0."""
    a1 = a0 + da
    out = kc.vec3(kc.max(a0[0], a1[0]) + r, kc.max(a0[1], a1[1]) + r, kc.max(a0[2], a1[2]) + r)
    if r < 0.0:
        out = kc.vec3(kc.min(a0[0], a1[0]) + r, kc.min(a0[1], a1[1]) + r, kc.min(a0[2], a1[2]) + r)
    return out


@kc.func
def mesh_vertex_against_mesh(x: kc.vec3, pos_b: kc.vec3, rot_b: kc.mat33, mesh_b: kc.uint64, lookahead: float):
    """A point ``x`` [m] (a vertex of another mesh) against mesh B's signed distance (with B's skin):
    (distance [m], unit normal out of B towards x, the point on B's surface); ``lookahead`` with a zero
    normal when B's surface is farther than that (a lower bound).  Over a face the normal is the face's
    (as sim/toi_mesh.py's ``triangle_feature``): at the skin's 0.1 mm the separation from the closest
    point is rounding noise of a few 1e-4 rad."""
    d = lookahead
    n = kc.vec3(0.0, 0.0, 0.0)
    p = x
    local = kc.transpose(rot_b) * (x - pos_b)
    query = kc.mesh_query_point_sign_normal(mesh_b, local, lookahead + MESH_SKIN)
    if query.result:
        cp = kc.mesh_eval_position(mesh_b, query.face, query.u, query.v)
        sep = local - cp
        dist = kc.length(sep)
        side = float(1.0)
        if query.sign < 0.0:
            side = -1.0
        nl = kc.mesh_eval_face_normal(mesh_b, query.face)  # outward (counter-clockwise winding)
        h = side * dist
        if query.u > 0.0 and query.v > 0.0 and query.u + query.v < 1.0:
            h = kc.dot(sep, nl)  # over the face: the signed height above its plane
        elif dist > 1.0e-7:
            nl = sep * (side / dist)
        n = rot_b * nl
        d = h - MESH_SKIN
        p = x - n * h
    return d, n, p


@kc.func
def closest_vertex_against_mesh(mesh_v: kc.uint64, nv: int, pos_v: kc.vec3, rot_v: kc.mat33, mesh_m: kc.uint64,
                                pos_m: kc.vec3, rot_m: kc.mat33, lookahead: float, swapped: int, best: float,
                                best_n: kc.vec3, best_p: kc.vec3):
    """The closest of (``best``, ``best_n``, ``best_p``) and the vertices of mesh V against mesh M's signed
    distance (:func:`mesh_vertex_against_mesh`): (distance [m], unit normal, point).  ``swapped`` 0: V is A
    (normal out of M, the vertex is the point on A); 1: V is B (normal turned round, the point on A is M's
    surface point)."""
    out_d = best
    out_n = best_n
    out_p = best_p
    for v in range(nv):
        x = pos_v + rot_v * kc.mesh_get_point(mesh_v, v)
        d, n, p = mesh_vertex_against_mesh(x, pos_m, rot_m, mesh_m, lookahead)
        if d < out_d and kc.length(n) > 0.0:
            out_d = d
            if swapped != 0:
                out_n = -n
                out_p = p
            else:
                out_n = n
                out_p = x
    return out_d, out_n, out_p


@kc.func
def sum_vertices_near_mesh(mesh_v: kc.uint64, nv: int, pos_v: kc.vec3, rot_v: kc.mat33, mesh_m: kc.uint64,
                           pos_m: kc.vec3, rot_m_t: kc.mat33, reach: float, d_min: float, points: kc.vec3,
                           n_points: float):
    """``points`` plus the world vertices of mesh V within MANIFOLD_TOL of ``d_min`` of mesh M (signed
    distance less MESH_SKIN; ``rot_m_t``: M's rotation transposed), and ``n_points`` plus their count."""
    total = points
    count = n_points
    for v in range(nv):
        x = pos_v + rot_v * kc.mesh_get_point(mesh_v, v)
        sd = mesh_surface_distance(mesh_m, rot_m_t * (x - pos_m), kc.max(reach, 0.0) + MESH_SKIN)
        if sd[3] - MESH_SKIN < d_min + MANIFOLD_TOL:
            total = total + x
            count = count + 1.0
    return total, count


@kc.func
def mesh_mesh_closest(pos_a: kc.vec3, rot_a: kc.mat33, mesh_a: kc.uint64, info_a: kc.vec3,
                      pos_b: kc.vec3, rot_b: kc.mat33, mesh_b: kc.uint64, info_b: kc.vec3, lookahead: float):
    """Closest feature of mesh A against mesh B (world poses): (distance [m], unit normal from B to A,
    point on A).  Each vertex of either against the other's signed distance (so a vertex that starts a
    step a hair inside the other mesh, after a penalty contact, has the outward normal), and A's edges
    against the edges of B's triangles near A (found in B's frame through its BVH); B carries
    MESH_SKIN.  Nothing within ``lookahead`` [m]: ``lookahead`` (a lower bound)."""
    best = lookahead
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    best, best_n, best_p = closest_vertex_against_mesh(mesh_a, int(info_a[0]), pos_a, rot_a, mesh_b, pos_b, rot_b,
                                                       lookahead, 0, best, best_n, best_p)
    best, best_n, best_p = closest_vertex_against_mesh(mesh_b, int(info_b[0]), pos_b, rot_b, mesh_a, pos_a, rot_a,
                                                       lookahead, 1, best, best_n, best_p)
    # edges against edges, in B's frame (an edge feature must beat the vertices by EDGE_TIE): each edge of
    # A against the edges of B's triangles within the best distance so far of it (B's BVH), so that near
    # contact only the few triangles near each edge are visited
    rt = kc.transpose(rot_b)
    local_pos = rt * (pos_a - pos_b)
    local_rot = rt * rot_a
    for ea in range(3 * int(info_a[1])):
        la0, la1 = mesh_edge(mesh_a, ea)
        a0 = local_pos + local_rot * la0
        da = local_rot * (la1 - la0)
        r = kc.max(best, 0.0) + MESH_SKIN + 1.0e-6  # (crossing edges are never closer than -MESH_SKIN)
        query = kc.mesh_query_aabb(mesh_b, segment_box_corner(a0, da, -r), segment_box_corner(a0, da, r))
        face = int(0)
        while kc.mesh_query_aabb_next(query, face):
            t0 = triangle_vertex(mesh_b, face, 0)
            t1 = triangle_vertex(mesh_b, face, 1)
            t2 = triangle_vertex(mesh_b, face, 2)
            for e in range(3):
                b0, b1 = triangle_edge(t0, t1, t2, e)
                d, n, p = segment_pair_feature(a0, da, 0.0, b0, b1 - b0, 0.0, b0, 0)
                if d - MESH_SKIN < best - EDGE_TIE:
                    best = d - MESH_SKIN
                    best_n = rot_b * n
                    best_p = pos_b + rot_b * p
    return best, best_n, best_p


@kc.func
def mesh_pair_closest(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, mesh_a: kc.uint64,
                      info_a: kc.vec3, kb: int, pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3,
                      mesh_b: kc.uint64, info_b: kc.vec3, lookahead: float):
    """Closest feature of shapes A and B (world poses), at least one a mesh: (distance [m], unit normal
    from B to A, point on A).  The meshes' signed distances are searched ``lookahead`` [m] around the
    other shape's points: farther, that is the distance (a lower bound)."""
    best = float(FAR)
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    no_ground = kc.vec3(0.0, 1.0, 0.0)
    if ka == MESH and kb == MESH:
        best, best_n, best_p = mesh_mesh_closest(pos_a, rot_a, mesh_a, info_a, pos_b, rot_b, mesh_b, info_b,
                                                 lookahead)
    elif ka == MESH:
        nv = int(info_a[0])
        for f in range(mesh_feature_count(kb, nv, int(info_a[1]))):
            d, n, p = mesh_feature_distance(f, mesh_a, nv, pos_a, rot_a, kb, pos_b, rot_b, scale_b, no_ground, 0.0,
                                            lookahead)
            margin = float(0.0)
            if f >= nv + 8:
                margin = EDGE_TIE
            if d < best - margin:
                best = d
                best_n = n
                best_p = p
    else:  # B is the mesh: its features against A, the normal turned round
        nv = int(info_b[0])
        for f in range(mesh_feature_count(ka, nv, int(info_b[1]))):
            d, n, p = mesh_feature_distance(f, mesh_b, nv, pos_b, rot_b, ka, pos_a, rot_a, scale_a, no_ground, 0.0,
                                            lookahead)
            margin = float(0.0)
            if f >= nv + 8:
                margin = EDGE_TIE
            if d < best - margin:
                best = d
                best_n = -n
                best_p = p - n * d  # from B's surface across the gap to A's
    return best, best_n, best_p


@kc.func
def mesh_mesh_manifold_point(pos_a: kc.vec3, rot_a: kc.mat33, mesh_a: kc.uint64, info_a: kc.vec3,
                             pos_b: kc.vec3, rot_b: kc.mat33, mesh_b: kc.uint64, info_b: kc.vec3,
                             d_min: float) -> kc.vec3:
    """Centroid [m] of the contacts of two meshes within MANIFOLD_TOL of ``d_min``: each vertex of either
    against the other's signed distance (once per vertex), else the edge pairs (every edge of a closed
    mesh is listed twice, so each still weighs the same)."""
    points = kc.vec3(0.0, 0.0, 0.0)
    n_points = float(0.0)
    reach = d_min + MANIFOLD_TOL + MESH_SKIN
    rta = kc.transpose(rot_a)
    rtb = kc.transpose(rot_b)
    points, n_points = sum_vertices_near_mesh(mesh_a, int(info_a[0]), pos_a, rot_a, mesh_b, pos_b, rtb, reach, d_min,
                                              points, n_points)
    points, n_points = sum_vertices_near_mesh(mesh_b, int(info_b[0]), pos_b, rot_b, mesh_a, pos_a, rta, reach, d_min,
                                              points, n_points)
    out = points / kc.max(n_points, 1.0)
    if n_points == 0.0:
        # edges against edges, in B's frame: each edge of A against B's triangles near it
        edges = kc.vec3(0.0, 0.0, 0.0)
        n_edges = float(0.0)
        local_pos = rtb * (pos_a - pos_b)
        local_rot = rtb * rot_a
        r = kc.max(reach, 0.0) + 1.0e-6
        for ea in range(3 * int(info_a[1])):
            la0, la1 = mesh_edge(mesh_a, ea)
            a0 = local_pos + local_rot * la0
            da = local_rot * (la1 - la0)
            query = kc.mesh_query_aabb(mesh_b, segment_box_corner(a0, da, -r), segment_box_corner(a0, da, r))
            face = int(0)
            while kc.mesh_query_aabb_next(query, face):
                t0 = triangle_vertex(mesh_b, face, 0)
                t1 = triangle_vertex(mesh_b, face, 1)
                t2 = triangle_vertex(mesh_b, face, 2)
                for e in range(3):
                    b0, b1 = triangle_edge(t0, t1, t2, e)
                    d, n, p = segment_pair_feature(a0, da, 0.0, b0, b1 - b0, 0.0, b0, 0)
                    if d - MESH_SKIN < d_min + MANIFOLD_TOL:
                        edges = edges + pos_b + rot_b * p
                        n_edges = n_edges + 1.0
        out = edges / kc.max(n_edges, 1.0)
    return out


@kc.func
def mesh_pair_manifold_point(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, mesh_a: kc.uint64,
                             info_a: kc.vec3, kb: int, pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3,
                             mesh_b: kc.uint64, info_b: kc.vec3, d_min: float, lookahead: float) -> kc.vec3:
    """Centroid [m] of the contact points of the features within MANIFOLD_TOL of the closest one
    (``d_min``): point features when any is that close, else the edge features."""
    out = pos_a
    if ka == MESH and kb == MESH:
        out = mesh_mesh_manifold_point(pos_a, rot_a, mesh_a, info_a, pos_b, rot_b, mesh_b, info_b, d_min)
    else:
        points = kc.vec3(0.0, 0.0, 0.0)
        n_points = float(0.0)
        edges = kc.vec3(0.0, 0.0, 0.0)
        n_edges = float(0.0)
        no_ground = kc.vec3(0.0, 1.0, 0.0)
        # the mesh first: its features against the other shape
        k_other = kb
        pos_m = pos_a
        rot_m = rot_a
        mesh_m = mesh_a
        info_m = info_a
        pos_o = pos_b
        rot_o = rot_b
        scale_o = scale_b
        if kb == MESH:
            k_other = ka
            pos_m = pos_b
            rot_m = rot_b
            mesh_m = mesh_b
            info_m = info_b
            pos_o = pos_a
            rot_o = rot_a
            scale_o = scale_a
        nv = int(info_m[0])
        for f in range(mesh_feature_count(k_other, nv, int(info_m[1]))):
            d, n, p = mesh_feature_distance(f, mesh_m, nv, pos_m, rot_m, k_other, pos_o, rot_o, scale_o, no_ground,
                                            0.0, lookahead)
            if d < d_min + MANIFOLD_TOL and kc.length(n) > 0.0:
                if f < nv + 8:
                    points = points + p
                    n_points = n_points + 1.0
                else:
                    edges = edges + p
                    n_edges = n_edges + 1.0
        out = edges / kc.max(n_edges, 1.0)
        if n_points > 0.0:
            out = points / n_points
    return out
