"""Face-to-face contact manifold of two boxes (kernel functions).

Why: testing each box's eight corners against the other's signed distance misses two boxes of
equal extent along an axis.  Side by side, a corner of one lies exactly on the other's top or
bottom face plane, its closest face is that one at distance 0, and the boxes pass through each
other sideways without a force; two equal bars crossed face to face have no corner inside the
other at all.

Here the face axis of least overlap (the three face normals of each box; sim/collide_bodies.py
``box_edge_contact`` decides first whether an edge-edge axis separates them more) picks the
*reference* face: that box's face turned towards the other box.  The other box's face most
opposed to it is the *incident* face; its quadrilateral is clipped (Sutherland-Hodgman) to the
reference face's rectangle, leaving up to 8 points, each with its height above the reference
face's plane as the gap [m] (< 0: inside) and the reference face's outward normal as the
contact normal.  Points on the incident box's surface.

The faces and the clipping planes are chosen by comparisons; the points and gaps are smooth
functions of both boxes' poses, so a Tape carries their gradients.  The loops have runtime
bounds: unrolled, the clipping body would be copied 32 times per call site (NVRTC code size).
"""
from __future__ import annotations

import kernelcore as kc

from .collide_box_sat import box_edge_contact, box_extent

vec8 = kc.vector(length=8, dtype=float)

#: most points of a clipped face manifold (a quadrilateral clipped by four planes)
MAX_FACE_POINTS = 8


@kc.func
def column(m: kc.mat33, k: int) -> kc.vec3:
    """Column ``k`` of ``m`` (a box's local axis ``k`` in world)."""
    return kc.vec3(m[0, k], m[1, k], m[2, k])


@kc.func
def box_face_axis(pos_a: kc.vec3, rot_a: kc.mat33, half_a: kc.vec3, pos_b: kc.vec3, rot_b: kc.mat33,
                  half_b: kc.vec3) -> kc.vec3:
    """Face axis of least overlap of boxes A and B (world ``pos`` [m], ``rot``, half extents ``half`` [m]):
    (owner 0: a face normal of A, 1: of B; the owner's local axis 0..2; separation [m] along it, < 0:
    overlap), the first two as exact small integers."""
    d = pos_a - pos_b
    best = float(-1.0e30)
    owner = int(0)
    axis = int(0)
    faces = int(6)  # runtime bound: not unrolled
    for k in range(faces):
        u = column(rot_a, k % 3)
        if k >= 3:
            u = column(rot_b, k % 3)
        sep = kc.abs(kc.dot(u, d)) - box_extent(u, rot_a, half_a) - box_extent(u, rot_b, half_b)
        if sep > best:
            best = sep
            owner = k // 3
            axis = k % 3
    return kc.vec3(float(owner), float(axis), best)


@kc.func
def clip_side(count: int, u: vec8, v: vec8, h: vec8, plane: int, limit_u: float, limit_v: float):
    """One Sutherland-Hodgman pass of the polygon (``u``, ``v`` in the reference face's plane [m], height
    ``h`` [m]; ``count`` vertices in order) against side ``plane`` (0: u <= limit_u, 1: -u <= limit_u,
    2: v <= limit_v, 3: -v <= limit_v): (count, u, v, h) of the clipped polygon."""
    ou = vec8()
    ov = vec8()
    oh = vec8()
    m = int(0)
    sign = float(1.0)
    if plane % 2 == 1:
        sign = -1.0
    limit = limit_u
    if plane >= 2:
        limit = limit_v
    for k in range(count):
        prev = (k + count - 1) % count
        # inside distances (>= 0: kept) of the edge's two ends
        fp = limit - sign * u[prev]
        fc = limit - sign * u[k]
        if plane >= 2:
            fp = limit - sign * v[prev]
            fc = limit - sign * v[k]
        cut = int(0)
        if fc >= 0.0:
            if fp < 0.0 and fc > 0.0:
                cut = 1
        elif fp > 0.0:
            cut = 1
        if cut != 0 and m < MAX_FACE_POINTS:
            t = fp / (fp - fc)
            ou[m] = u[prev] + (u[k] - u[prev]) * t
            ov[m] = v[prev] + (v[k] - v[prev]) * t
            oh[m] = h[prev] + (h[k] - h[prev]) * t
            m = m + 1
        if fc >= 0.0 and m < MAX_FACE_POINTS:
            ou[m] = u[k]
            ov[m] = v[k]
            oh[m] = h[k]
            m = m + 1
    return m, ou, ov, oh


@kc.func
def box_face_manifold(pos_r: kc.vec3, rot_r: kc.mat33, half_r: kc.vec3, axis: int, pos_i: kc.vec3,
                      rot_i: kc.mat33, half_i: kc.vec3):
    """Incident box I's face clipped to reference box R's face along R's local ``axis`` (the face turned
    towards I): (count, x, y, z: the points on I's face [m], gap: their heights above R's face [m] (< 0:
    inside R), n: R's outward face normal, the contact normal from R to I)."""
    col = column(rot_r, axis)
    n = col
    if kc.dot(col, pos_i - pos_r) < 0.0:
        n = -col
    c = pos_r + n * half_r[axis]
    t1 = column(rot_r, (axis + 1) % 3)
    t2 = column(rot_r, (axis + 2) % 3)
    e1 = half_r[(axis + 1) % 3]
    e2 = half_r[(axis + 2) % 3]
    # the incident face: I's face whose outward normal is most opposed to n
    j = int(0)
    best = float(-1.0)
    axes = int(3)
    for k in range(axes):
        a = kc.abs(kc.dot(column(rot_i, k), n))
        if a > best:
            best = a
            j = k
    fi = column(rot_i, j)
    if kc.dot(fi, n) > 0.0:
        fi = -fi
    ci = pos_i + fi * half_i[j]
    a1 = column(rot_i, (j + 1) % 3) * half_i[(j + 1) % 3]
    a2 = column(rot_i, (j + 2) % 3) * half_i[(j + 2) % 3]
    u = vec8()
    v = vec8()
    h = vec8()
    corners = int(4)
    for k in range(corners):  # the face's corners in order around it
        s1 = float(1.0)
        if k == 1 or k == 2:
            s1 = -1.0
        s2 = float(1.0)
        if k >= 2:
            s2 = -1.0
        rel = ci + a1 * s1 + a2 * s2 - c
        u[k] = kc.dot(rel, t1)
        v[k] = kc.dot(rel, t2)
        h[k] = kc.dot(rel, n)
    count = int(4)
    planes = int(4)
    for plane in range(planes):
        if count > 0:
            count, u, v, h = clip_side(count, u, v, h, plane, e1, e2)
    x = vec8()
    y = vec8()
    z = vec8()
    for k in range(count):
        p = c + t1 * u[k] + t2 * v[k] + n * h[k]
        x[k] = p[0]
        y[k] = p[1]
        z[k] = p[2]
    return count, x, y, z, h, n


@kc.func
def box_pair_manifold(pos_a: kc.vec3, rot_a: kc.mat33, half_a: kc.vec3, pos_b: kc.vec3, rot_b: kc.mat33,
                      half_b: kc.vec3):
    """Contact points of boxes A and B (world ``pos`` [m], ``rot``, half extents ``half`` [m]): the
    edge-edge contact of sim/collide_bodies.box_edge_contact when an edge axis separates them most
    (one point between the two edges), else :func:`box_face_manifold` with the owner of the face
    axis of least overlap as the reference box (up to 8 points on the other box's face).

    Returns (count, x, y, z: the points [m], gap: their separations [m] (< 0: overlap), n: the unit
    normal, side): side 0: the normal points from B to A and the points lie on A (or between the
    edges); side 1: from A to B, the points lie on B."""
    gap_e, n_e, contact_e, found_e = box_edge_contact(pos_a, rot_a, half_a, pos_b, rot_b, half_b)
    count = int(0)
    x = vec8()
    y = vec8()
    z = vec8()
    gap = vec8()
    n = n_e
    side = int(0)
    if found_e != 0:
        count = 1
        x[0] = contact_e[0]
        y[0] = contact_e[1]
        z[0] = contact_e[2]
        gap[0] = gap_e
    else:
        face = box_face_axis(pos_a, rot_a, half_a, pos_b, rot_b, half_b)
        # the face's owner is the reference box; the other one's face is clipped (side 1: that is B)
        pos_r = pos_b
        rot_r = rot_b
        half_r = half_b
        pos_i = pos_a
        rot_i = rot_a
        half_i = half_a
        if face[0] < 0.5:
            side = 1
            pos_r = pos_a
            rot_r = rot_a
            half_r = half_a
            pos_i = pos_b
            rot_i = rot_b
            half_i = half_b
        # one call site: the clipper is large (NVRTC code size)
        count, x, y, z, gap, n = box_face_manifold(pos_r, rot_r, half_r, int(face[1]), pos_i, rot_i, half_i)
    return count, x, y, z, gap, n, side


@kc.func
def box_on_static_box(pos: kc.vec3, rot: kc.mat33, half: kc.vec3, c_pos: kc.vec3, c_rot: kc.mat33, c_half: kc.vec3):
    """:func:`box_pair_manifold` of a body box (world ``pos`` [m], ``rot``, half extents ``half`` [m]) and a
    static box (``c_pos``, ``c_rot``, ``c_half``) in the body-static convention: (count, x, y, z: the points
    on the body box's surface [m], gap: their separations [m] (< 0: overlap), n: the unit normal from the
    static box to the body)."""
    count, x, y, z, gap, n, side = box_pair_manifold(pos, rot, half, c_pos, c_rot, c_half)
    if side != 0:
        # the static box's face was clipped: its points, moved by their gap onto the body's reference face
        n = -n
        for k in range(count):
            x[k] = x[k] + n[0] * gap[k]
            y[k] = y[k] + n[1] * gap[k]
            z[k] = z[k] + n[2] * gap[k]
    return count, x, y, z, gap, n
