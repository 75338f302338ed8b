"""Separating-axis helpers for boxes (kernel functions): a box's extent along a direction, the
closest points of two segments, and the edge-edge contact of two boxes.

Shared by the body-static contacts (sim/collide_bodies.py), the face manifold
(sim/collide_box_faces.py), the body-pair contacts and the time-of-impact sweeps; in a module of
their own so that those import one way.
"""
from __future__ import annotations

import kernelcore as kc


@kc.func
def box_extent(n: kc.vec3, rot: kc.mat33, half: kc.vec3) -> float:
    """Half the extent [m] of a box (rotation ``rot``, half extents ``half``) along the unit direction ``n``."""
    local = kc.transpose(rot) * n
    return kc.abs(local[0]) * half[0] + kc.abs(local[1]) * half[1] + kc.abs(local[2]) * half[2]


@kc.func
def segment_params(p1: kc.vec3, d1: kc.vec3, p2: kc.vec3, d2: kc.vec3) -> kc.vec2:
    """Parameters (s, t) in [0, 1] of the closest points ``p1 + s d1`` and ``p2 + t d2`` of two segments
    (either may have zero length)."""
    r = p1 - p2
    a = kc.dot(d1, d1)
    e = kc.dot(d2, d2)
    f = kc.dot(d2, r)
    s = float(0.0)
    t = float(0.0)
    tiny = float(1.0e-12)
    if a <= tiny:
        if e > tiny:
            t = kc.clamp(f / e, 0.0, 1.0)
    else:
        c = kc.dot(d1, r)
        if e <= tiny:
            s = kc.clamp(-c / a, 0.0, 1.0)
        else:
            b = kc.dot(d1, d2)
            denom = a * e - b * b
            if denom > tiny * a * e:
                s = kc.clamp((b * f - c * e) / denom, 0.0, 1.0)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = kc.clamp(-c / a, 0.0, 1.0)
            elif t > 1.0:
                t = 1.0
                s = kc.clamp((b - c) / a, 0.0, 1.0)
    return kc.vec2(s, t)


@kc.func
def box_edge_contact(pos_a: kc.vec3, rot_a: kc.mat33, half_a: kc.vec3, pos_b: kc.vec3, rot_b: kc.mat33,
                     half_b: kc.vec3):
    """Edge-edge contact of two boxes (world ``pos``, ``rot``, half extents ``half``) by the separating
    axis test: (separation [m] (< 0: overlap), unit normal from B to A, contact point, 1 if the
    contact is edge-edge).

    Of the 15 candidate axes (3 + 3 face normals, 9 edge cross products) the one of largest
    separation decides; only when it is an edge axis, by more than a small margin (faces win
    ties, their corners are tested elsewhere), is the contact edge-edge, at the closest points
    of the two boxes' support edges along it.
    """
    d = pos_a - pos_b
    face_best = float(-1.0e30)
    # runtime loop bounds: unrolled, these bodies are copied into every kernel that calls this (NVRTC size)
    faces = int(6)
    edges = int(9)
    for k in range(faces):
        axis = kc.vec3(rot_a[0, k % 3], rot_a[1, k % 3], rot_a[2, k % 3])
        if k >= 3:
            axis = kc.vec3(rot_b[0, k % 3], rot_b[1, k % 3], rot_b[2, k % 3])
        sep = kc.abs(kc.dot(axis, d)) - box_extent(axis, rot_a, half_a) - box_extent(axis, rot_b, half_b)
        face_best = kc.max(face_best, sep)
    edge_best = float(-1.0e30)
    edge_i = int(0)
    edge_j = int(0)
    edge_axis = kc.vec3(0.0, 1.0, 0.0)
    for k in range(edges):
        ua = kc.vec3(rot_a[0, k // 3], rot_a[1, k // 3], rot_a[2, k // 3])
        ub = kc.vec3(rot_b[0, k % 3], rot_b[1, k % 3], rot_b[2, k % 3])
        c = kc.cross(ua, ub)
        length = kc.length(c)
        if length > 1.0e-3:
            axis = c / length
            if kc.dot(axis, d) < 0.0:
                axis = -axis
            sep = kc.dot(axis, d) - box_extent(axis, rot_a, half_a) - box_extent(axis, rot_b, half_b)
            if sep > edge_best:
                edge_best = sep
                edge_i = k // 3
                edge_j = k % 3
                edge_axis = axis
    margin = 1.0e-4 * (kc.length(half_a) + kc.length(half_b))
    found = int(0)
    point = 0.5 * (pos_a + pos_b)
    if edge_best > face_best + margin:
        found = 1
        # support edges: A's along -axis, B's along +axis
        la = kc.transpose(rot_a) * edge_axis
        lb = kc.transpose(rot_b) * edge_axis
        ca = kc.vec3(0.0, 0.0, 0.0)
        cb = kc.vec3(0.0, 0.0, 0.0)
        for k in range(3):
            if k != edge_i:
                ca[k] = -half_a[k]
                if la[k] < 0.0:
                    ca[k] = half_a[k]
            if k != edge_j:
                cb[k] = half_b[k]
                if lb[k] < 0.0:
                    cb[k] = -half_b[k]
        ea = kc.vec3(0.0, 0.0, 0.0)
        ea[edge_i] = 2.0 * half_a[edge_i]
        eb = kc.vec3(0.0, 0.0, 0.0)
        eb[edge_j] = 2.0 * half_b[edge_j]
        ca[edge_i] = -half_a[edge_i]
        cb[edge_j] = -half_b[edge_j]
        a0 = pos_a + rot_a * ca
        da = rot_a * ea
        b0 = pos_b + rot_b * cb
        db = rot_b * eb
        st = segment_params(a0, da, b0, db)
        point = 0.5 * (a0 + da * st[0] + b0 + db * st[1])
    return edge_best, edge_axis, point, found
