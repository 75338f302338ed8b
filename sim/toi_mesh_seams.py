"""Seams of static triangle meshes, computed once per model: where a flat region has no edge.

Inside a flat region (two coplanar triangles sharing an edge, of one mesh or of two tiles side by
side; a vertex whose triangles lie in one plane all round it) the surface has no edge, but each
triangle alone does.  sim/toi_mesh.py's sweep features give such seams the face normal (see its
docstring); this module finds them.  Seams belong to the static meshes, which never move, so
:func:`static_mesh_seams` finds them once (one kernel over every static triangle, at solver
construction) and keeps them on the model as one int32 array that the sweep reads by index
(sim/toi_mesh.py ``face_seams``):

- ``seams[c]`` for a static mesh shape ``c`` (0 <= c < K shapes): the index of its triangle 0's flags;
  0 for the other shapes;
- ``seams[seams[c] + face]``: :func:`seam_flags` of triangle ``face`` of shape ``c``: bit e (0..2) its
  edge e is a seam, bit 3 + j its vertex j is a flat inner vertex.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .model import SHAPE_MESH
from .toi_mesh import triangle_vertex

#: two triangles sharing an edge are coplanar when their normals differ by less than this [rad]
SEAM_ANGLE = kc.constant(1.0e-4)
#: vertices this close [m] are one (seams of meshes with repeated vertices)
SEAM_WELD = kc.constant(1.0e-6)
#: a flat inner vertex: the angles of its coplanar triangles sum to 2 pi within this [rad]
SEAM_TURN_TOL = kc.constant(1.0e-3)
#: sim.model.SHAPE_MESH, the kind of the static meshes that seams may join
SHAPE_MESH_KIND = kc.constant(SHAPE_MESH)


@kc.func
def triangle_corner(t0: kc.vec3, t1: kc.vec3, t2: kc.vec3, j: int) -> kc.vec3:
    """Vertex ``j`` (0, 1, 2) of the triangle (t0, t1, t2)."""
    out = t0
    if j == 1:
        out = t1
    elif j == 2:
        out = t2
    return out


@kc.func
def corner_slot(x: kc.vec3, g0: kc.vec3, g1: kc.vec3, g2: kc.vec3) -> int:
    """Which vertex (0, 1, 2) of the triangle (g0, g1, g2) is ``x`` (within SEAM_WELD), -1 when none."""
    out = int(-1)
    w2 = SEAM_WELD * SEAM_WELD
    if kc.length_sq(x - g0) <= w2:
        out = 0
    elif kc.length_sq(x - g1) <= w2:
        out = 1
    elif kc.length_sq(x - g2) <= w2:
        out = 2
    return out


@kc.func
def corner_angle(g0: kc.vec3, g1: kc.vec3, g2: kc.vec3, k: int) -> float:
    """Angle [rad] of the triangle (g0, g1, g2) at its vertex ``k``."""
    a = triangle_corner(g0, g1, g2, k)
    b = triangle_corner(g0, g1, g2, (k + 1) % 3) - a
    c = triangle_corner(g0, g1, g2, (k + 2) % 3) - a
    return kc.atan2(kc.length(kc.cross(b, c)), kc.dot(b, c))


@kc.func
def seam_edge_bit(ma: int, mb: int, a: kc.vec3, b: kc.vec3, t_other: kc.vec3, g0: kc.vec3, g1: kc.vec3,
                  g2: kc.vec3, e: int) -> int:
    """``1 << e`` when the triangle (g0, g1, g2), coplanar with the one whose edge ``e`` is (a, b) and whose
    third vertex is ``t_other``, has a and b at its vertices ``ma``, ``mb`` and its third vertex on the
    edge's other side (a neighbour across the edge, not a copy over it), else 0."""
    out = int(0)
    if ma >= 0 and mb >= 0:
        g_other = triangle_corner(g0, g1, g2, 3 - ma - mb)
        ab = b - a
        if kc.dot(kc.cross(ab, t_other - a), kc.cross(ab, g_other - a)) < 0.0:
            out = 1 << e
    return out


@kc.func
def seam_scan(mesh: kc.uint64, skip: int, t0: kc.vec3, t1: kc.vec3, t2: kc.vec3, flags: int, bent: int, turn: kc.vec3):
    """The triangles of ``mesh`` (but face ``skip``) whose bounds overlap those of (t0, t1, t2), folded into
    :func:`seam_flags`'s ``flags`` (edge bits), ``bent`` (bit j: vertex j has a triangle out of the plane) and
    ``turn`` (the angles [rad] of the coplanar triangles at each vertex)."""
    nf = kc.cross(t1 - t0, t2 - t0)
    area2 = kc.length(nf)
    lo = kc.min(t0, kc.min(t1, t2)) - kc.vec3(SEAM_WELD, SEAM_WELD, SEAM_WELD)
    hi = kc.max(t0, kc.max(t1, t2)) + kc.vec3(SEAM_WELD, SEAM_WELD, SEAM_WELD)
    query = kc.mesh_query_aabb(mesh, lo, hi)
    g = int(0)
    while kc.mesh_query_aabb_next(query, g):
        if g != skip:
            g0 = triangle_vertex(mesh, g, 0)
            g1 = triangle_vertex(mesh, g, 1)
            g2 = triangle_vertex(mesh, g, 2)
            ng = kc.cross(g1 - g0, g2 - g0)
            m0 = corner_slot(t0, g0, g1, g2)
            m1 = corner_slot(t1, g0, g1, g2)
            m2 = corner_slot(t2, g0, g1, g2)
            if kc.length(kc.cross(nf, ng)) <= SEAM_ANGLE * area2 * kc.length(ng) and kc.length(ng) > 0.0:
                flags = flags | seam_edge_bit(m0, m1, t0, t1, t2, g0, g1, g2, 0)
                flags = flags | seam_edge_bit(m1, m2, t1, t2, t0, g0, g1, g2, 1)
                flags = flags | seam_edge_bit(m2, m0, t2, t0, t1, g0, g1, g2, 2)
                if m0 >= 0:
                    turn[0] = turn[0] + corner_angle(g0, g1, g2, m0)
                if m1 >= 0:
                    turn[1] = turn[1] + corner_angle(g0, g1, g2, m1)
                if m2 >= 0:
                    turn[2] = turn[2] + corner_angle(g0, g1, g2, m2)
            else:
                if m0 >= 0:
                    bent = bent | 1
                if m1 >= 0:
                    bent = bent | 2
                if m2 >= 0:
                    bent = bent | 4
    return flags, bent, turn


@kc.func
def seam_flags(c: int, face: int, t0: kc.vec3, t1: kc.vec3, t2: kc.vec3, shape_count: int,
               shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
               shape_mesh: kc.array(dtype=kc.uint64)) -> int:
    """Where triangle ``face`` (t0, t1, t2) of the static mesh shape ``c`` lies inside a flat region: bit e
    (0..2) when its edge e (sim/toi_mesh.py ``triangle_edge``) is a seam, shared with a coplanar triangle on
    the other side; bit 3 + j when its vertex j is a flat inner vertex, its triangles coplanar and closing a
    full turn (their angles there sum to 2 pi).  Vertices are matched by position (SEAM_WELD), so repeated vertices
    count; a triangle at the mesh's border also looks for its neighbours in the other static meshes (tiles
    laid side by side).  The neighbours are the faces whose bounds overlap the triangle's (BVH queries)."""
    flags = int(0)
    if kc.length(kc.cross(t1 - t0, t2 - t0)) > 0.0:
        bent = int(0)
        turn = kc.vec3(corner_angle(t0, t1, t2, 0), corner_angle(t0, t1, t2, 1), corner_angle(t0, t1, t2, 2))
        flags, bent, turn = seam_scan(shape_mesh[c], face, t0, t1, t2, flags, bent, turn)
        if flags != 7 or kc.min(turn[0], kc.min(turn[1], turn[2])) < 6.283185307179586 - SEAM_TURN_TOL:
            for c2 in range(shape_count):  # only at a mesh's border: a runtime loop over the shapes
                if c2 != c and shape_body[c2] < 0 and shape_type[c2] == SHAPE_MESH_KIND:
                    flags, bent, turn = seam_scan(shape_mesh[c2], -1, t0, t1, t2, flags, bent, turn)
        for j in range(3):
            if (bent >> j) & 1 == 0 and kc.abs(turn[j] - 6.283185307179586) <= SEAM_TURN_TOL:
                flags = flags | (8 << j)
    return flags


@kc.kernel(enable_backward=False)  # set-up: nothing to differentiate
def static_mesh_seams_kernel(face_shape: kc.array(dtype=int), shape_count: int, shape_type: kc.array(dtype=int),
                             shape_body: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
                             seams: kc.array(dtype=int)):
    """One thread per static triangle (``face_shape``: its mesh shape, the triangles of each shape in order):
    writes its :func:`seam_flags` at ``seams[shape_count + tid]`` (``seams[c]``, the offsets, set beforehand)."""
    tid = kc.tid()
    c = face_shape[tid]
    face = shape_count + tid - seams[c]
    mesh = shape_mesh[c]
    t0 = triangle_vertex(mesh, face, 0)
    t1 = triangle_vertex(mesh, face, 1)
    t2 = triangle_vertex(mesh, face, 2)
    seams[shape_count + tid] = seam_flags(c, face, t0, t1, t2, shape_count, shape_type, shape_body, shape_mesh)


def seam_layout(model):
    """numpy int32: (the seam array of the module docstring with its offsets set and zero flags, the mesh shape
    of each static triangle (F,))."""
    k = model.shape_count
    faces = [(s, len(model.shape_mesh_points[s][1]) // 3) for s in model.mesh_shape_indices]
    seams = np.zeros(k + sum(n for _, n in faces), np.int32)
    start = k
    for s, n in faces:
        seams[s] = start
        start += n
    face_shape = np.concatenate([np.full(n, s, np.int32) for s, n in faces] or [np.zeros(0, np.int32)])
    return seams, face_shape


def static_mesh_seams(model):
    """kc int32 (K + F,): the seams of the model's static meshes (layout: the module docstring), found on the
    first call and kept as ``model.shape_seams`` (static meshes never change).  Call it outside a Tape (the
    solvers do, at construction)."""
    seams = getattr(model, "shape_seams", None)
    if seams is None:
        layout, face_shape = seam_layout(model)
        seams = kc.array(layout if len(layout) else np.zeros(1, np.int32), dtype=kc.int32, device=model.device)
        if len(face_shape):
            kc.launch(static_mesh_seams_kernel, dim=len(face_shape),
                      inputs=[kc.array(face_shape, dtype=kc.int32, device=model.device), model.shape_count,
                              model.shape_type, model.shape_body, model.shape_mesh],
                      outputs=[seams], device=model.device)
        model.shape_seams = seams
    return seams
