"""Time-of-impact contacts of box, capsule and compound bodies against the ground and static shapes.

With ``SolverSemiImplicit(model, toi=True)`` a body whose only shape is a box, a capsule or a
mesh (a convex hull or a closed triangle mesh: its features are sim/toi_mesh_body.py's), or a
compound of several spheres, boxes, capsules and meshes (a dumbbell; also a single sphere when
the model has static meshes, which sim/toi.py does not sweep), is moved through its step
along its real path, translation ``x(s) = x0 + s dt v1`` and
the Cayley rotation of the step's (midpoint) angular velocity ``w``, and stopped at the
first time of impact ``s`` with the ground or a static plane, sphere, box, capsule or triangle
mesh (sim/toi_mesh.py: the triangles near the shape, two-sided, with a 0.1 mm skin).  A
compound's distance is the smallest of its shapes', so its time of impact is the earliest of
its shapes' and its manifold gathers the contacts of all of them.

**Distance.**  The distance of the body shape A from a static collider B is the smallest
of its *features* (each a signed distance, the unit normal n from B to A and the
contact point on A's surface):

- the points of A (box corners; capsule segment ends with the radius) against B's
  signed distance (ground, plane, sphere, box, capsule);
- the points of B (sphere centre, box corners, capsule ends) against A's signed distance;
- the segments of A (12 box edges; the capsule's core) against those of B when one of
  them is round (a capsule): the distance of the two segments;
- two boxes: the edge-edge contact of the separating-axis test
  (``sim.collide_bodies.box_edge_contact``: the separation along the cross product of two
  edges where that axis separates the boxes best, at the closest points of their
  support edges).

Separated, this minimum is the exact distance of the two shapes (their closest points
are a point against a face or an edge against an edge).

**Time of impact.**  Conservative advancement: ``s += D(s) / B`` with ``B = (|v| + |w|
R) dt`` bounding how fast any point of the shape (R from the centre of mass) can move
per unit of s, so the step never passes the contact (against the ground and planes only the
motion along the normal counts, ``B = (max(-n . v, 0) + |w| R) dt``: sliding brings nothing
closer).  A feature within ``CONTACT_TOL = 2e-5 m`` is an impact only when it approaches (its
point's normal velocity below ``-APPROACH_SPEED``); one that touches but rests or leaves lets the
sweep advance by ``SKIN / B`` (no feature comes more than ``SKIN = 5e-5 m`` closer between two
looks).  A sweep has a runtime budget of looks (``SWEEP_ITERATIONS``); when it runs out the next
sweep goes on from there.  Two Newton steps on the impact feature, ``s -= D / D'`` with
``D' = n . (v + w_c x r) dt`` (``w_c = w / (1 + |w s dt / 2|^2)`` is the Cayley path's angular
velocity), then land on the root, so that s, and everything after it, is a smooth function of
the initial conditions and the gradient is that of the true impact (d h_T / d h0 = -e for a box
dropped flat, as for spheres).

**Impulse.**  All features within 1 mm of the closest one form the contact manifold (a box
landing flat touches with four corners), except in a bounce (an impact approaching at
``BOUNCE_SPEED`` = 1 m/s or faster), which takes only the features touching at its instant (within
``CONTACT_TOL``): a point 1 mm off that comes in fast gets its own impact later in the step, so e = 1
keeps the energy; a resting impact takes the near features that approach slower than
``resting_speed``.  With more than 8 of them (a face on a fine triangle
mesh) a first pass scores them and the manifold keeps the deepest one and the extreme ones along
seven directions across the normal, so that it spans the contact patch.  Projected Gauss-Seidel
(16 sweeps, accumulated impulses projected onto the Coulomb disk ``|j_t| <= mu j_n``) solves the
inelastic (compression) impulses that stop every contact point; restitution then adds
``e`` times each normal impulse (Poisson's hypothesis, which never gains energy without
friction, whatever the number of contacts).  The velocity at impact is ``v0 + s dt a``;
the rest of the step's acceleration ``(1 - s) dt a`` is added after the bounce and stopped
by a second inelastic solve if it would press into the surface (resting contact).
Approach speeds below ``resting_speed`` (two steps of gravity) get no restitution.

**Rest of the step.**  The sweep goes on from the impact with the new velocities, every
feature included: one that the impact sent spinning back into the surface (a light body turned
a few times within the step) is an impact again, up to four impacts per step.  When the impacts
or the sweeps run out before the step's end, the body stays where the sweep got it (moving on
unswept could pass a thin wall).

Impacts between swept bodies (mesh bodies included, through sim/toi_mesh_pairs.py) are
sim/toi_body_pairs.py's (it runs first and hands over a virtual start).
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .body_integrate import angular_midpoint, body_frame_from_com, rotate_by
from .collide_bodies import box_edge_contact, segment_params, shape_point, static_distance
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE
from .toi_mesh import (MESH_SKIN, TRIANGLE_FEATURES, face_seams, mesh_closest_feature, mesh_feature_id, mesh_flat_top,
                       shape_lowest, triangle_feature, triangle_vertex)
from .toi_mesh_body import (mesh_body_feature_id, mesh_body_reach, mesh_feature_count, mesh_feature_distance,
                            mesh_feature_span, mesh_lowest, mesh_shape_info, mesh_static_mesh_closest, mesh_triangle_feature,
                            mesh_triangle_feature_count)
from .toi_mesh_seams import static_mesh_seams

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
MESH = kc.constant(3)
CAPSULE = kc.constant(4)
GROUND = kc.constant(-1)
FAR = kc.constant(1.0e30)

#: features of one (body shape, collider) pair: 8 + 8 points, 12 x 12 segment pairs
FEATURES = 160
#: contact points of one impact
MAX_CONTACTS = 8
#: impacts handled per step
MAX_IMPACTS = 4
#: conservative-advancement iterations per impact search (the link and body-pair sweeps)
CA_ITERATIONS = 24
#: looks of one sweep of this module (a runtime budget: when they run out the next sweep goes on)
SWEEP_ITERATIONS = 48
#: sweeps per step (each ends at an impact, at the step's end or when its looks run out)
MAX_SWEEPS = 12
#: a feature already touching may come this much [m] closer between two looks
SKIN = 5.0e-5
#: a touching feature is an impact when it approaches faster than this [m/s] (or a quarter of what the
#: body's acceleration adds in a step, when that is less)
APPROACH_SPEED = 1.0e-3
#: Gauss-Seidel sweeps of one impulse solve
PGS_ITERATIONS = 16
#: conservative advancement stops this close [m]
CONTACT_TOL = 2.0e-5
#: features this much farther than the closest one [m] still join the manifold
MANIFOLD_TOL = 1.0e-3
#: an impact approaching at least this fast [m/s] (a drop from 5 cm) is a bounce, whose manifold takes
#: only the touching features; slower ones (a body settling, rocking or chattering in a pile) keep the
#: MANIFOLD_TOL manifold, which stops all its near points at once
BOUNCE_SPEED = kc.constant(1.0)

#: static meshes are searched this much [m] beyond the step's reach (> CONTACT_TOL: a body at rest
#: far from every triangle is not "touching")
MESH_LOOKAHEAD = kc.constant(1.0e-3)

vec8 = kc.vector(length=8, dtype=float)


@kc.func
def shape_segment(kind: int, scale: kc.vec3, k: int):
    """Segment ``k`` of a shape in its own frame: (start, end, radius); radius < 0 when the
    shape has fewer segments (box: 12 edges, capsule: its core, others none)."""
    a = kc.vec3(0.0, 0.0, 0.0)
    b = kc.vec3(0.0, 0.0, 0.0)
    r = float(-1.0)
    if kind == BOX:
        if k < 12:
            axis = k // 4
            s1 = 2.0 * float(k % 2) - 1.0
            s2 = 2.0 * float((k // 2) % 2) - 1.0
            if axis == 0:
                a = kc.vec3(-scale[0], s1 * scale[1], s2 * scale[2])
                b = kc.vec3(scale[0], s1 * scale[1], s2 * scale[2])
            elif axis == 1:
                a = kc.vec3(s1 * scale[0], -scale[1], s2 * scale[2])
                b = kc.vec3(s1 * scale[0], scale[1], s2 * scale[2])
            else:
                a = kc.vec3(s1 * scale[0], s2 * scale[1], -scale[2])
                b = kc.vec3(s1 * scale[0], s2 * scale[1], scale[2])
            r = 0.0
    elif kind == CAPSULE:
        if k == 0:
            a = kc.vec3(0.0, -scale[1], 0.0)
            b = kc.vec3(0.0, scale[1], 0.0)
            r = scale[0]
    return a, b, r


@kc.func
def feature_distance(f: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3,
                     kb: int, pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3,
                     ground_normal: kc.vec3, ground_offset: float):
    """Feature ``f`` (0 <= f < FEATURES) of shape A against shape B: (distance [m], unit normal from B
    to A, contact point on A's surface); distance FAR when the feature does not exist.

    ``kb`` GROUND: B is the ground (``ground_normal``, ``ground_offset``)."""
    d = float(FAR)
    n = kc.vec3(0.0, 1.0, 0.0)
    p = pos_a
    if f < 8:  # a point of A against B's signed distance
        pt = shape_point(ka, scale_a, f)
        if pt[3] >= 0.0:
            x = pos_a + rot_a * kc.vec3(pt[0], pt[1], pt[2])
            nd = static_distance(x, kb, pos_b, rot_b, scale_b, ground_normal, ground_offset)
            n = kc.vec3(nd[0], nd[1], nd[2])
            d = nd[3] - pt[3]
            p = x - n * pt[3]
    elif f < 16:  # a point of B against A's signed distance
        if kb != GROUND and kb != PLANE:
            pt = shape_point(kb, scale_b, f - 8)
            if pt[3] >= 0.0:
                x = pos_b + rot_b * kc.vec3(pt[0], pt[1], pt[2])
                nd = static_distance(x, ka, pos_a, rot_a, scale_a, ground_normal, ground_offset)
                n = -kc.vec3(nd[0], nd[1], nd[2])
                d = nd[3] - pt[3]
                p = x + n * nd[3]
    elif ka == BOX and kb == BOX:  # two boxes: edge against edge, by the separating-axis test
        if f == 16:
            sep, axis, point, found = box_edge_contact(pos_a, rot_a, scale_a, pos_b, rot_b, scale_b)
            if found != 0:
                d = sep
                n = axis
                p = point
    else:  # a segment of A against a segment of B, one of them round: their distance
        g = f - 16
        la0, la1, ra = shape_segment(ka, scale_a, g // 12)
        lb0, lb1, rb = shape_segment(kb, scale_b, g % 12)
        if ra >= 0.0 and rb >= 0.0:
            a0 = pos_a + rot_a * la0
            da = rot_a * (la1 - la0)
            b0 = pos_b + rot_b * lb0
            db = rot_b * (lb1 - lb0)
            st = segment_params(a0, da, b0, db)
            pa = a0 + da * st[0]
            sep = pa - (b0 + db * st[1])
            dist = kc.length(sep)
            if dist > 0.0:
                n = sep / dist
                d = dist - ra - rb
                p = pa - n * ra
    return d, n, p


@kc.func
def collider_pose(c: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                  shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                  shape_scale: kc.array(dtype=kc.vec3), ground: int):
    """Static collider ``c`` (-1: the ground): (kind, pos, rot, scale); kind -2 when it is not one
    the sweep handles (a shape on a body, a mesh, no ground)."""
    kind = int(-2)
    pos = kc.vec3(0.0, 0.0, 0.0)
    rot = kc.identity(3, dtype=float)
    scale = kc.vec3(0.0, 0.0, 0.0)
    if c < 0:
        if ground != 0:
            kind = GROUND
    elif shape_body[c] < 0:
        t = shape_type[c]
        if t == PLANE or t == SPHERE or t == BOX or t == CAPSULE:
            kind = t
            pos = shape_pos[c]
            rot = shape_rot[c]
            scale = shape_scale[c]
    return kind, pos, rot, scale


@kc.func
def excluded(gid: int, count: int, ids: vec8) -> int:
    """1 when feature ``gid`` is one of the first ``count`` entries of ``ids``."""
    out = int(0)
    for c in range(count):  # a runtime bound: not unrolled
        if int(ids[c]) == gid:
            out = 1
    return out


@kc.func
def shape_reach(kind: int, scale: kc.vec3, offset: kc.vec3) -> float:
    """Bound [m] on the distance of any point of the shape from its body's centre of mass."""
    r = kc.length(offset) + kc.length(scale)
    if kind == SPHERE:
        r = kc.length(offset) + scale[0]
    elif kind == CAPSULE:
        r = kc.length(offset) + scale[0] + scale[1]
    return r


@kc.func
def collider_closest(c: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, ground: int,
                     ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                     shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                     shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                     shape_scale: kc.array(dtype=kc.vec3), skip_count: int, skip_ids: vec8, id_base: int,
                     shape_mesh: kc.array(dtype=kc.uint64), lookahead: float, mesh_a: kc.uint64, info_a: kc.vec3,
                     span: int, seams: kc.array(dtype=int)):
    """The closest feature of shape A against static collider ``c`` (-1: the ground), leaving out the
    skipped ids (see :func:`closest_feature`): (distance [m], normal, contact point, collider kind);
    distance FAR when ``c`` is not a static collider."""
    best = float(FAR)
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    kb, pos_b, rot_b, scale_b = collider_pose(c, shape_type, shape_body, shape_pos, shape_rot, shape_scale, ground)
    if kb != -2 and ka == MESH:
        nv = int(info_a[0])
        for f in range(mesh_feature_count(kb, nv, int(info_a[1]))):
            d, n, p = mesh_feature_distance(f, mesh_a, nv, pos_a, rot_a, kb, pos_b, rot_b, scale_b, ground_normal,
                                            ground_offset, lookahead)
            if d < best:
                if excluded(id_base + (c + 1) * span + f, skip_count, skip_ids) == 0:
                    best = d
                    best_n = n
                    best_p = p
    elif kb != -2:
        for f in range(FEATURES):
            d, n, p = feature_distance(f, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b, ground_normal,
                                       ground_offset)
            if d < best:
                if excluded(id_base + (c + 1) * span + f, skip_count, skip_ids) == 0:
                    best = d
                    best_n = n
                    best_p = p
    elif c >= 0:
        if shape_body[c] < 0 and shape_type[c] == MESH:
            kb = MESH
            if ka == MESH:
                best, best_n, best_p = mesh_static_mesh_closest(mesh_a, int(info_a[0]), int(info_a[1]), pos_a, rot_a,
                                                                info_a[2], c, lookahead,
                                                                id_base // ((shape_count + 1) * span), skip_count,
                                                                skip_ids, shape_mesh, seams)
            else:
                reach = shape_reach(ka, scale_a, kc.vec3(0.0, 0.0, 0.0))
                best, best_n, best_p = mesh_closest_feature(ka, pos_a, rot_a, scale_a, reach, c, lookahead,
                                                            id_base // ((shape_count + 1) * span), skip_count,
                                                            skip_ids, shape_mesh, seams)
    return best, best_n, best_p, kb


@kc.func
def closest_feature(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, ground: int,
                    ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                    shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                    shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                    shape_scale: kc.array(dtype=kc.vec3), skip_count: int, skip_ids: vec8, id_base: int,
                    shape_mesh: kc.array(dtype=kc.uint64), lookahead: float, mesh_a: kc.uint64, info_a: kc.vec3,
                    span: int, seams: kc.array(dtype=int)):
    """The closest feature of shape A against every static collider, leaving out the ``skip_count``
    feature ids in ``skip_ids`` (a feature's id: ``id_base + (collider + 1) * span + f``, ``id_base`` a
    multiple of ``(shape_count + 1) * span``; those of static meshes: sim/toi_mesh.py's
    ``mesh_feature_id``): (distance, normal, contact point).  Static meshes are searched
    ``lookahead`` [m] around the shape (sim/toi_mesh.py): farther, the distance is a lower bound.
    A mesh shape A (kind MESH: ``mesh_a``, ``info_a`` = (vertices, triangles, bounding radius)) has
    the features of sim/toi_mesh_body.py.  ``seams``: the static meshes' seam flags, found once per model
    (sim/toi_mesh_seams.py ``static_mesh_seams``)."""
    best = float(FAR)
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    for c in range(-1, shape_count):
        d, n, p, kb = collider_closest(c, ka, pos_a, rot_a, scale_a, ground, ground_normal, ground_offset, shape_count,
                                       shape_type, shape_body, shape_pos, shape_rot, shape_scale, skip_count, skip_ids,
                                       id_base, shape_mesh, lookahead, mesh_a, info_a, span, seams)
        if d < best:
            best = d
            best_n = n
            best_p = p
    return best, best_n, best_p


@kc.func
def pose_at(x_c: kc.vec3, q_c: kc.quat, v: kc.vec3, w: kc.vec3, tau: float, offset: kc.vec3, rot_local: kc.mat33):
    """Centre of mass, rotation, shape position and shape rotation ``tau`` [s] after (x_c, q_c) moving
    with velocity ``v`` and angular velocity ``w`` (Cayley path); ``offset``: the shape's position
    relative to the centre of mass in the body frame, ``rot_local`` its rotation in the body frame."""
    x = x_c + v * tau
    q = rotate_by(q_c, w, tau)
    rot = kc.quat_to_matrix(q)
    return x, q, x + rot * offset, rot * rot_local


@kc.func
def tangent_basis(n: kc.vec3) -> kc.vec3:
    """A unit vector perpendicular to ``n``."""
    a = kc.vec3(1.0, 0.0, 0.0)
    if kc.abs(n[0]) > 0.7:
        a = kc.vec3(0.0, 1.0, 0.0)
    return kc.normalize(kc.cross(n, a))


@kc.func
def solve_impulses(v: kc.vec3, w: kc.vec3, count: int, nx: vec8, ny: vec8, nz: vec8, rx: vec8, ry: vec8, rz: vec8,
                   mu: vec8, inv_mass: float, inv_inertia: kc.mat33, iterations: int):
    """Inelastic impulses that stop every contact point of a body against static surfaces (projected
    Gauss-Seidel, Coulomb disk friction): (new velocity, new angular velocity, normal impulses [N s])."""
    lam_n = vec8()
    lam_1 = vec8()
    lam_2 = vec8()
    for _it in range(iterations):  # runtime bounds: unrolled, these loops would be 100k lines of C++
        for c in range(count):
            if c >= 0:
                n = kc.vec3(nx[c], ny[c], nz[c])
                r = kc.vec3(rx[c], ry[c], rz[c])
                rn = kc.cross(r, n)
                k_n = inv_mass + kc.dot(rn, inv_inertia * rn)
                vn = kc.dot(n, v + kc.cross(w, r))
                new_n = kc.max(lam_n[c] - vn / k_n, 0.0)
                dn = new_n - lam_n[c]
                lam_n[c] = new_n
                v = v + n * (dn * inv_mass)
                w = w + inv_inertia * rn * dn
                t1 = tangent_basis(n)
                t2 = kc.cross(n, t1)
                limit = mu[c] * new_n
                # both tangent impulses at once, in the Coulomb disk |j_t| <= mu j_n (clamping each to a box
                # let a body sliding across the basis brake up to sqrt(2) too hard): the 2 x 2 solve that
                # sticks, or when that leaves the disk a step along the slip scaled onto its rim, whose fixed
                # point is friction against the slip (a step through the 2 x 2 inverse would skew it)
                r1 = kc.cross(r, t1)
                r2 = kc.cross(r, t2)
                u = v + kc.cross(w, r)
                u1 = kc.dot(t1, u)
                u2 = kc.dot(t2, u)
                k11 = inv_mass + kc.dot(r1, inv_inertia * r1)
                k22 = inv_mass + kc.dot(r2, inv_inertia * r2)
                k12 = kc.dot(r1, inv_inertia * r2)
                det = k11 * k22 - k12 * k12
                new_1 = lam_1[c] - (k22 * u1 - k12 * u2) / det
                new_2 = lam_2[c] - (k11 * u2 - k12 * u1) / det
                if new_1 * new_1 + new_2 * new_2 > limit * limit:
                    k_max = kc.max(k11, k22)
                    new_1 = lam_1[c] - u1 / k_max
                    new_2 = lam_2[c] - u2 / k_max
                    mag = kc.sqrt(new_1 * new_1 + new_2 * new_2)
                    shrink = float(0.0)
                    if mag > limit:
                        shrink = limit / mag
                    else:
                        shrink = 1.0
                    new_1 = new_1 * shrink
                    new_2 = new_2 * shrink
                d1 = new_1 - lam_1[c]
                d2 = new_2 - lam_2[c]
                lam_1[c] = new_1
                lam_2[c] = new_2
                v = v + (t1 * d1 + t2 * d2) * inv_mass
                w = w + inv_inertia * (r1 * d1 + r2 * d2)
    return v, w, lam_n


@kc.func
def body_reach(first: int, count: int, shape_list: kc.array(dtype=int), shape_type: kc.array(dtype=int),
               shape_pos: kc.array(dtype=kc.vec3), shape_scale: kc.array(dtype=kc.vec3), com: kc.vec3) -> float:
    """Bound [m] on the distance of any point of the body's shapes from its centre of mass."""
    reach = float(0.0)
    for k in range(count):
        sh = shape_list[first + k]
        reach = kc.max(reach, shape_reach(shape_type[sh], shape_scale[sh], shape_pos[sh] - com))
    return reach


@kc.func
def shape_core_reach(kind: int, scale: kc.vec3, offset: kc.vec3, info: kc.vec3) -> float:
    """Bound [m] on the distance from the body's centre of mass of the shape's core: the shape less its
    radius (a sphere's centre, a capsule's segment; a box or a mesh whole).  Turning moves the shape's
    lowest point along a normal no faster than |w| times this: a rolling sphere's does not move at all."""
    r = kc.length(offset) + kc.length(scale)
    if kind == SPHERE:
        r = kc.length(offset)
    elif kind == CAPSULE:
        r = kc.length(offset) + scale[1]
    elif kind == MESH:
        r = kc.length(offset) + info[2]
    return r


@kc.func
def flat_mesh_advance(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, mesh_a: kc.uint64, info_a: kc.vec3,
                      mesh: kc.uint64, lookahead: float, d: float, v: kc.vec3, w_dt: float, core: float,
                      dt: float) -> float:
    """How far in s [1] shape A may advance against a static mesh that is flat near it, as against a plane
    (0 when it is not flat there); its closest feature is at distance ``d`` [m].

    The triangles found within ``lookahead`` [m] of A (all that it can reach this sweep, see
    sim/toi_mesh.py) lie in the half-space below their highest vertex along the normal m of one of them
    (:func:`sim.toi_mesh.mesh_flat_top`); A's distance from them is at least its gap above that level
    (any m would do: the bound holds for every direction), which only motion along m (``v`` [m/s]) and turning
    (``w_dt`` = |w| dt times the ``core`` reach [m]) can close.  On a flat floor or ramp of many triangles
    the gap is the distance itself and sliding costs one look, not one per SKIN; a bump or a wall near A
    makes the gap small or negative and leaves the usual bound.  The sweep lets a feature come at most
    SKIN closer than ``min(d, 0)``, as the usual bound does."""
    half = lookahead
    if ka == MESH:
        half = half + info_a[2]
    else:
        half = half + shape_reach(ka, scale_a, kc.vec3(0.0, 0.0, 0.0))
    m, top = mesh_flat_top(mesh, pos_a, half)
    low = float(0.0)
    if ka == MESH:
        low = mesh_lowest(mesh_a, int(info_a[0]), pos_a, rot_a, m)
    else:
        low = shape_lowest(ka, pos_a, rot_a, scale_a, m)
    gap = low - top - MESH_SKIN
    allowed = gap - kc.min(d - SKIN, 0.0)
    b = kc.max(-kc.dot(m, v) * dt, 0.0) + w_dt * core
    out = float(0.0)
    if allowed > 0.0:
        out = FAR
        if b > 0.0:
            out = allowed / b
    return out


@kc.func
def sweep_look(first: int, count: int, shape_list: kc.array(dtype=int), com: kc.vec3, xs: kc.vec3, qs: kc.quat,
               v: kc.vec3, w_c: kc.vec3, bound: float, w_dt: float, approach_tol: float, dt: float, ground: int,
               ground_normal: kc.vec3, ground_offset: float, shape_count: int, shape_type: kc.array(dtype=int),
               shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
               shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
               shape_mesh: kc.array(dtype=kc.uint64), lookahead: float, shape_info: kc.array(dtype=kc.vec3),
               span: int, seams: kc.array(dtype=int)):
    """One look of the sweep: the body's centre of mass at ``xs`` with rotation ``qs``, moving with ``v`` [m/s] and turning with ``w_c`` [rad/s] (the Cayley path's rate there).

    Returns (impact distance [m], normal, contact point, advance, closest distance [m]).  An impact is
    the closest feature (of any shape against any static collider) within CONTACT_TOL that approaches
    faster than ``approach_tol`` [m/s] (a touching feature that rests or leaves is no impact, however
    often it touched before); impact distance FAR when there is none.  ``advance`` is how far in s
    the sweep may go with no feature coming closer than its distance (or than SKIN, for a feature
    already touching): ``bound`` [m per unit s] bounds how
    fast any point moves; against the ground, planes and static meshes flat near the shape
    (:func:`flat_mesh_advance`) only the motion along the normal counts (``w_dt``: |w| dt [rad per unit
    s] times the shape's core reach), so that sliding, rolling and resting stay cheap."""
    hit_d = float(FAR)
    hit_n = kc.vec3(0.0, 1.0, 0.0)
    hit_p = xs
    advance = float(FAR)
    d_min = float(FAR)
    rot = kc.quat_to_matrix(qs)
    stride = (shape_count + 1) * span
    skip = vec8()
    for k in range(count):
        sh = shape_list[first + k]
        pos_a = xs + rot * (shape_pos[sh] - com)
        rot_a = rot * shape_rot[sh]
        core = shape_core_reach(shape_type[sh], shape_scale[sh], shape_pos[sh] - com, shape_info[sh])
        for c in range(-1, shape_count):
            d, n, p, kb = collider_closest(c, shape_type[sh], pos_a, rot_a, shape_scale[sh], ground, ground_normal,
                                           ground_offset, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                           shape_scale, 0, skip, k * stride, shape_mesh, lookahead, shape_mesh[sh],
                                           shape_info[sh], span, seams)
            if d < FAR:
                d_min = kc.min(d_min, d)
                if d <= CONTACT_TOL and kc.dot(n, v + kc.cross(w_c, p - xs)) < -approach_tol:
                    if d < hit_d:
                        hit_d = d
                        hit_n = n
                        hit_p = p
                else:
                    b = bound
                    if kb == GROUND or kb == PLANE:  # a flat collider: sliding along it brings nothing closer
                        b = kc.max(-kc.dot(n, v) * dt, 0.0) + w_dt * core
                    if b > 0.0:
                        step = kc.max(d, SKIN) / b
                        if kb == MESH and step < 1.0:  # the sweep's end is s = 1 at most: no need when it gets there
                            step = kc.max(step, flat_mesh_advance(shape_type[sh], pos_a, rot_a, shape_scale[sh],
                                                                  shape_mesh[sh], shape_info[sh], shape_mesh[c],
                                                                  lookahead, d, v, w_dt, core, dt))
                        advance = kc.min(advance, step)
    return hit_d, hit_n, hit_p, advance, d_min


@kc.func
def manifold_slot(mode: int, many: int, dd: float, pp: kc.vec3, n0: kc.vec3, best: vec8):
    """Whether a manifold candidate (distance ``dd`` [m], point ``pp``) is kept, and the slots' scores.

    With more than MAX_CONTACTS candidates (``many`` = 1) the manifold keeps the deepest one (slot 0)
    and the extreme ones along seven directions across the normal ``n0`` (slots 1..7), so that it
    spans the contact patch.  ``mode`` 0 (first pass): ``best`` collects every slot's best score;
    ``mode`` 1: a candidate that reaches a slot's best score takes it (its score becomes FAR, so a
    tie is taken once).  Runtime loops: unrolled, this body would be copied per slot and call site."""
    take = int(0)
    if mode == 1 and many == 0:
        take = 1
    else:
        t1 = tangent_basis(n0)
        t2 = kc.cross(n0, t1)
        slots = int(MAX_CONTACTS)
        for j in range(slots):
            score = -dd
            if j > 0:
                angle = 6.283185307179586 * float(j - 1) / 7.0
                score = kc.dot(t1 * kc.cos(angle) + t2 * kc.sin(angle), pp)
            if mode == 0:
                best[j] = kc.max(best[j], score)
            elif score >= best[j]:
                best[j] = float(FAR)
                take = 1
    return take, best


@kc.func
def manifold_admit_speed(approach: float, resting_speed: float) -> float:
    """The speed [m/s] below which a manifold candidate that does not touch yet still joins an impact
    whose feature approaches at ``approach`` [m/s] (:func:`manifold_point`): ``resting_speed`` for a
    resting impact (slower than ``resting_speed``), FAR (every candidate) for a slow impact, -FAR
    (touching candidates only) for a bounce, at BOUNCE_SPEED or faster.

    Why a bounce takes only its touching points: Poisson's restitution over points that do not touch
    at the same instant loses energy (a spinning hull's second vertex 0.5 mm off a wall, which the
    first vertex's impulse drives into it, took 14% of the energy), while sequential impacts, each
    point's own later in the step, keep it.  Why slower impacts do not: with touching points only at
    every speed, boxes rocking and chattering on the ground in the 64-body toi pile of
    benchmarks/bench_rigid.py ended up overlapped with neighbours (held to them by penalty body-body
    contacts, as sim/toi_body_pairs.py takes only the pairs' faster impacts) and one was pumped to
    6 m/s; with this threshold the pile's fastest body stays under 1 m/s (tests/sim/test_rigid_toi_pile.py)."""
    slow = float(FAR)
    if approach < resting_speed:
        slow = resting_speed
    elif approach >= BOUNCE_SPEED:
        slow = -FAR
    return slow


@kc.func
def manifold_point(mode: int, many: int, dd: float, nn: kc.vec3, pp: kc.vec3, n0: kc.vec3, xs: kc.vec3, mu_c: float,
                   e_c: float, count: int, candidates: int, best: vec8, nx: vec8, ny: vec8, nz: vec8, rx: vec8,
                   ry: vec8, rz: vec8, mu: vec8, e: vec8, d_min: float, v: kc.vec3, w: kc.vec3, slow: float):
    """A manifold candidate (distance ``dd`` [m], normal ``nn``, point ``pp``; friction ``mu_c``,
    restitution ``e_c``) counted, scored and, when :func:`manifold_slot` keeps it, appended to the
    contact arrays (lever arm from the centre of mass ``xs``).

    A candidate joins only when it touches (within CONTACT_TOL of the closest feature, ``d_min``
    [m], or of the surface: a penetrating point always touches) or approaches slower than ``slow``
    [m/s] (:func:`manifold_admit_speed`) with the body's velocity ``v`` [m/s] and angular velocity
    ``w`` [rad/s]."""
    admit = int(1)
    if dd > CONTACT_TOL and dd - d_min > CONTACT_TOL:
        if -kc.dot(nn, v + kc.cross(w, pp - xs)) >= slow:
            admit = 0
    take = int(0)
    if admit != 0:
        candidates = candidates + 1
        take, best = manifold_slot(mode, many, dd, pp, n0, best)
    if take != 0 and count < MAX_CONTACTS:
        r = pp - xs
        nx[count] = nn[0]
        ny[count] = nn[1]
        nz[count] = nn[2]
        rx[count] = r[0]
        ry[count] = r[1]
        rz[count] = r[2]
        mu[count] = mu_c
        e[count] = e_c
        count = count + 1
    return count, candidates, best, nx, ny, nz, rx, ry, rz, mu, e


@kc.func
def gather_manifold(mode: int, many: int, best: vec8, d_min: float, n0: kc.vec3, first: int, nsh: int,
                    shape_list: kc.array(dtype=int), com: kc.vec3, xs: kc.vec3, rot: kc.mat33, ground: int,
                    ground_normal: kc.vec3, ground_offset: float, ground_material: int, shape_count: int,
                    shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                    shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                    shape_scale: kc.array(dtype=kc.vec3), shape_material: kc.array(dtype=int),
                    shape_mesh: kc.array(dtype=kc.uint64), material_restitution: kc.array(dtype=float),
                    material_mu: kc.array(dtype=float), look: float, shape_info: kc.array(dtype=kc.vec3),
                    v: kc.vec3, w: kc.vec3, slow: float, seams: kc.array(dtype=int)):
    """One pass over the contact manifold's candidates: every feature (of every shape against every
    static collider) within MANIFOLD_TOL of the closest one, ``d_min`` [m], that touches or approaches
    slower than ``slow`` [m/s] (:func:`manifold_point`; ``v``, ``w``: the body's velocity [m/s] and
    angular velocity [rad/s] at the impact).  ``mode`` 0 counts them and
    scores the slots (:func:`manifold_slot`); ``mode`` 1 gathers the kept ones: (count, normals
    nx, ny, nz, lever arms from the centre of mass rx, ry, rz [m], friction, restitution, slot
    scores, candidates)."""
    count = int(0)
    candidates = int(0)
    nx = vec8()
    ny = vec8()
    nz = vec8()
    rx = vec8()
    ry = vec8()
    rz = vec8()
    mu = vec8()
    e = vec8()
    for k in range(nsh):
        sh = shape_list[first + k]
        ka = shape_type[sh]
        scale_a = shape_scale[sh]
        pos_k = xs + rot * (shape_pos[sh] - com)
        rot_k = rot * shape_rot[sh]
        ma = shape_material[sh]
        for c in range(-1, shape_count):
            kb, pos_b, rot_b, scale_b = collider_pose(c, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                                                      ground)
            mb = ground_material
            if c >= 0:
                mb = shape_material[c]
            mesh_c = int(0)
            if kb == -2 and c >= 0:
                if shape_body[c] < 0 and shape_type[c] == MESH:
                    mesh_c = 1
            mu_c = 0.5 * (material_mu[ma] + material_mu[mb])
            e_c = 0.5 * (material_restitution[ma] + material_restitution[mb])
            if mesh_c != 0:
                # a static mesh: the features of the triangles near the shape
                hm = shape_reach(ka, scale_a, kc.vec3(0.0, 0.0, 0.0)) + MANIFOLD_TOL + kc.max(d_min, 0.0)
                nft = int(TRIANGLE_FEATURES)
                if ka == MESH:  # a mesh shape on the body (sim/toi_mesh_body.py)
                    hm = shape_info[sh][2] + MANIFOLD_TOL + kc.max(d_min, 0.0)
                    nft = mesh_triangle_feature_count(int(shape_info[sh][0]), int(shape_info[sh][1]))
                query = kc.mesh_query_aabb(shape_mesh[c], pos_k - kc.vec3(hm, hm, hm), pos_k + kc.vec3(hm, hm, hm))
                face = int(0)
                while kc.mesh_query_aabb_next(query, face):
                    t0 = triangle_vertex(shape_mesh[c], face, 0)
                    t1 = triangle_vertex(shape_mesh[c], face, 1)
                    t2 = triangle_vertex(shape_mesh[c], face, 2)
                    flags = face_seams(seams, c, face)
                    for ft in range(nft):
                        dd = float(FAR)
                        nn = kc.vec3(0.0, 1.0, 0.0)
                        pp = pos_k
                        if ka == MESH:
                            dd, nn, pp = mesh_triangle_feature(ft, shape_mesh[sh], int(shape_info[sh][0]), pos_k, rot_k,
                                                               t0, t1, t2, look, flags)
                        else:
                            dd, nn, pp = triangle_feature(ft, ka, pos_k, rot_k, scale_a, t0, t1, t2, flags)
                        if dd < d_min + MANIFOLD_TOL and kc.length(nn) > 0.0:
                            count, candidates, best, nx, ny, nz, rx, ry, rz, mu, e = manifold_point(
                                mode, many, dd, nn, pp, n0, xs, mu_c, e_c, count, candidates, best, nx, ny, nz, rx,
                                ry, rz, mu, e, d_min, v, w, slow)
            elif kb != -2:
                nff = int(FEATURES)
                if ka == MESH:  # a mesh shape on the body (sim/toi_mesh_body.py)
                    nff = mesh_feature_count(kb, int(shape_info[sh][0]), int(shape_info[sh][1]))
                for ff in range(nff):
                    dd = float(FAR)
                    nn = kc.vec3(0.0, 1.0, 0.0)
                    pp = pos_k
                    if ka == MESH:
                        dd, nn, pp = mesh_feature_distance(ff, shape_mesh[sh], int(shape_info[sh][0]), pos_k, rot_k,
                                                           kb, pos_b, rot_b, scale_b, ground_normal, ground_offset,
                                                           look)
                    else:
                        dd, nn, pp = feature_distance(ff, ka, pos_k, rot_k, scale_a, kb, pos_b, rot_b, scale_b,
                                                      ground_normal, ground_offset)
                    if dd < d_min + MANIFOLD_TOL and kc.length(nn) > 0.0:
                        count, candidates, best, nx, ny, nz, rx, ry, rz, mu, e = manifold_point(
                            mode, many, dd, nn, pp, n0, xs, mu_c, e_c, count, candidates, best, nx, ny, nz, rx, ry,
                            rz, mu, e, d_min, v, w, slow)
    return count, nx, ny, nz, rx, ry, rz, mu, e, best, candidates


@kc.func
def gather_manifold_passes(d_min: float, n0: kc.vec3, first: int, nsh: int, shape_list: kc.array(dtype=int),
                           com: kc.vec3, xs: kc.vec3, rot: kc.mat33, ground: int, ground_normal: kc.vec3,
                           ground_offset: float, ground_material: int, shape_count: int,
                           shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                           shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                           shape_scale: kc.array(dtype=kc.vec3), shape_material: kc.array(dtype=int),
                           shape_mesh: kc.array(dtype=kc.uint64), material_restitution: kc.array(dtype=float),
                           material_mu: kc.array(dtype=float), look: float, shape_info: kc.array(dtype=kc.vec3),
                           v: kc.vec3, w: kc.vec3, slow: float, seams: kc.array(dtype=int)):
    """The contact manifold of shapes ``shape_list[first .. first + nsh]`` (centre of mass ``com`` in the
    body frame, at ``xs`` [m] with rotation ``rot``; closest distance ``d_min`` [m] along ``n0``):
    :func:`gather_manifold` once, and a second time to pick the slots when there are more candidates
    than MAX_CONTACTS (``v``, ``w``, ``slow``: the body's velocity [m/s], angular velocity [rad/s] and the
    approach speed below which a point joins, :func:`manifold_admit_speed`).  Returns (count, normals nx, ny, nz, lever arms rx, ry, rz [m], friction,
    restitution).  One call site per solver: the pass loop has a runtime bound, so the big gathering
    body (with its static-mesh triangle loop) is compiled once, not unrolled into two copies."""
    many = int(0)
    best = vec8()
    for j in range(MAX_CONTACTS):
        best[j] = -FAR
    count = int(0)
    nx = vec8()
    ny = vec8()
    nz = vec8()
    rx = vec8()
    ry = vec8()
    rz = vec8()
    mu = vec8()
    e = vec8()
    passes = int(2)
    for mode in range(passes):
        count, nx, ny, nz, rx, ry, rz, mu, e, best, candidates = gather_manifold(
            mode, many, best, d_min, n0, first, nsh, shape_list, com, xs, rot, ground, ground_normal, ground_offset,
            ground_material, shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material,
            shape_mesh, material_restitution, material_mu, look, shape_info, v, w, slow, seams)
        if mode == 0 and candidates > MAX_CONTACTS:
            many = 1
    return count, nx, ny, nz, rx, ry, rz, mu, e


@kc.kernel
def integrate_shape_bodies_toi_kernel(
        body_ids: kc.array(dtype=int), body_first: kc.array(dtype=int), body_shape_count: kc.array(dtype=int),
        shape_list: kc.array(dtype=int),
        body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
        body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
        inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33), inv_inertia: kc.array(dtype=kc.mat33),
        gravity: kc.vec3, dt: float,
        ground: int, ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        material_restitution: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), resting_speed: float, max_impacts: int, pgs_iterations: int,
        shape_info: kc.array(dtype=kc.vec3), span: int, max_sweeps: int, sweep_iterations: int,
        seams: kc.array(dtype=int),
        body_q1: kc.array(dtype=kc.transform), body_qd1: kc.array(dtype=kc.spatial_vector)):
    tid = kc.tid()
    i = body_ids[tid]
    first = body_first[i]
    nsh = body_shape_count[i]
    tf = body_q0[i]
    q0 = kc.transform_get_rotation(tf)
    qd = body_qd0[i]
    f = body_f[i]
    com = body_com[i]
    m_inv = inv_mass[i]
    a = kc.spatial_top(f) * m_inv + gravity
    # the free step (sim/body_integrate.py): what the body does when nothing is hit
    v1 = kc.spatial_top(qd) + a * dt
    w0 = kc.quat_rotate_inv(q0, kc.spatial_bottom(qd))
    tau = kc.quat_rotate_inv(q0, kc.spatial_bottom(f))
    wm = angular_midpoint(w0, tau, inertia[i], inv_inertia[i], dt)
    w = kc.quat_rotate(q0, wm)
    q_free = rotate_by(q0, w, dt)
    w_free = kc.quat_rotate(q_free, wm * 2.0 - w0)
    zero = kc.vec3(0.0, 0.0, 0.0)
    unrotated = kc.identity(3, dtype=float)
    reach = kc.max(body_reach(first, nsh, shape_list, shape_type, shape_pos, shape_scale, com),
                   mesh_body_reach(first, nsh, shape_list, shape_pos, shape_info, com))  # [m]
    # the motion so far: at fraction s_c, centre x_c, rotation q_c, velocity v_c; it moves
    # on with v_path = v_c + (1 - s_c) dt a (semi-implicit) and angular velocity w
    x_c = kc.transform_point(tf, com)
    q_c = q0
    v_c = kc.spatial_top(qd)
    s_c = float(0.0)
    hits = int(0)
    # approach speed [m/s] of an impact: above the impulse solve's residual, below what the step's
    # acceleration adds (a resting body pressed down each step is caught at the step's start)
    approach_tol = kc.max(kc.min(APPROACH_SPEED, 0.25 * kc.length(a) * dt), 1.0e-2 * APPROACH_SPEED)
    for _sweep in range(max_sweeps):  # a sweep ends at an impact, at the step's end or when its looks run out
        if s_c < 1.0 and hits < max_impacts:
            v_path = v_c + a * ((1.0 - s_c) * dt)
            w_dt = kc.length(w) * dt  # [rad per unit s]
            bound = kc.length(v_path) * dt + w_dt * reach  # [m per unit s]
            look = bound + MESH_LOOKAHEAD  # static meshes are searched this far [m] (sim/toi_mesh.py)
            # conservative advancement from s_c
            s = s_c
            hit = int(0)
            for _k in range(sweep_iterations):
                if hit == 0 and s <= 1.0:
                    xs, qs, pos_a, rot_a = pose_at(x_c, q_c, v_path, w, (s - s_c) * dt, zero, unrotated)
                    h = (s - s_c) * dt * 0.5
                    hd, hn, hp, advance, d_min = sweep_look(first, nsh, shape_list, com, xs, qs, v_path,
                                                            w / (1.0 + kc.dot(w, w) * h * h), bound, w_dt,
                                                            approach_tol, dt, ground, ground_normal, ground_offset,
                                                            shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                                            shape_scale, shape_mesh, look, shape_info, span, seams)
                    if hd < FAR:
                        hit = 1
                    else:
                        s = s + advance
            if hit != 0:
                # Newton on the impact feature: lands on the root, smooth in the inputs
                s_found = s
                for _newton in range(2):
                    xs, qs, pos_a, rot_a = pose_at(x_c, q_c, v_path, w, (s - s_c) * dt, zero, unrotated)
                    h = (s - s_c) * dt * 0.5
                    w_c = w / (1.0 + kc.dot(w, w) * h * h)
                    hd, hn, hp, advance, d_min = sweep_look(first, nsh, shape_list, com, xs, qs, v_path, w_c, bound,
                                                            w_dt, approach_tol, dt, ground, ground_normal,
                                                            ground_offset, shape_count, shape_type, shape_body,
                                                            shape_pos, shape_rot, shape_scale, shape_mesh, look,
                                                            shape_info, span, seams)
                    if hd < FAR:
                        rate = kc.dot(hn, v_path + kc.cross(w_c, hp - xs)) * dt
                        if rate < 0.0:
                            s = kc.min(kc.max(s - hd / rate, s_c), 1.0)
                hd = FAR
                d_min = float(FAR)
                n0 = kc.vec3(0.0, 1.0, 0.0)
                hp = x_c
                xs = x_c
                qs = q_c
                v_hit = v_c
                final_looks = int(2)
                for _final in range(final_looks):  # a runtime bound: one sweep_look call site
                    # a feature found already deeper than its root (a look may let a touching feature come
                    # SKIN closer) sends Newton back to the sweep's start, where it is no impact: the impact
                    # is then taken where the feature was found, or the sweep would not move on
                    again = int(0)
                    if _final > 0 and hd >= FAR and s <= s_c and s_found > s_c:
                        s = s_found
                        again = 1
                    if _final == 0 or again != 0:
                        xs, qs, pos_a, rot_a = pose_at(x_c, q_c, v_path, w, (s - s_c) * dt, zero, unrotated)
                        v_hit = v_c + a * ((s - s_c) * dt)
                        h = (s - s_c) * dt * 0.5
                        hd, n0, hp, advance, d_min = sweep_look(first, nsh, shape_list, com, xs, qs, v_path,
                                                                w / (1.0 + kc.dot(w, w) * h * h), bound, w_dt,
                                                                approach_tol, dt, ground, ground_normal,
                                                                ground_offset, shape_count, shape_type, shape_body,
                                                                shape_pos, shape_rot, shape_scale, shape_mesh, look,
                                                                shape_info, span, seams)
                rot = kc.quat_to_matrix(qs)
                # the contact manifold; a bounce takes the touching points, any other point it sends into
                # the surface has its own impact later in the step
                slow = manifold_admit_speed(-kc.dot(n0, v_hit + kc.cross(w, hp - xs)), resting_speed)
                count, nx, ny, nz, rx, ry, rz, mu, e = gather_manifold_passes(
                    d_min, n0, first, nsh, shape_list, com, xs, rot, ground, ground_normal, ground_offset,
                    ground_material, shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                    shape_material, shape_mesh, material_restitution, material_mu, look, shape_info, v_hit, w, slow,
                    seams)
                inv_inertia_world = rot * inv_inertia[i] * kc.transpose(rot)
                # approach speed: restitution only for real impacts
                approach = float(0.0)
                for c in range(count):
                    if c >= 0:
                        nc = kc.vec3(nx[c], ny[c], nz[c])
                        approach = kc.max(approach, -kc.dot(nc, v_hit + kc.cross(w, kc.vec3(rx[c], ry[c], rz[c]))))
                v_after, w_after, lam = solve_impulses(v_hit, w, count, nx, ny, nz, rx, ry, rz, mu, m_inv,
                                                       inv_inertia_world, pgs_iterations)
                if approach >= resting_speed:
                    for c in range(count):
                        if c >= 0:
                            nc = kc.vec3(nx[c], ny[c], nz[c])
                            rc = kc.vec3(rx[c], ry[c], rz[c])
                            j = lam[c] * e[c]
                            v_after = v_after + nc * (j * m_inv)
                            w_after = w_after + inv_inertia_world * kc.cross(rc, nc) * j
                # the rest of the step's acceleration, stopped if it presses into the surfaces
                rest = (1.0 - s) * dt
                v_end, w_end, lam2 = solve_impulses(v_after + a * rest, w_after, count, nx, ny, nz, rx, ry, rz, mu,
                                                    m_inv, inv_inertia_world, pgs_iterations)
                x_c = xs
                q_c = qs
                v_c = v_end - a * rest
                w = w_end
                s_c = s
                hits = hits + 1
            else:
                # nothing is hit: move to the end of the step, or as far as this sweep's looks got
                s_end = kc.min(s, 1.0)
                x_c, q_c, pos_a, rot_a = pose_at(x_c, q_c, v_path, w, (s_end - s_c) * dt, zero, unrotated)
                v_c = v_c + a * ((s_end - s_c) * dt)
                s_c = s_end
    # when the impacts or sweeps ran out before the step's end, the body stays where the sweep got it
    # (moving on unswept could pass a wall)
    x1 = x_c
    q1 = q_c
    v_out = v_c + a * ((1.0 - s_c) * dt)
    w_out = w
    if hits == 0 and s_c >= 1.0:  # exactly the free step
        x1 = kc.transform_point(tf, com) + v1 * dt
        q1 = q_free
        v_out = v1
        w_out = w_free
    body_q1[i] = body_frame_from_com(x1, q1, com)
    body_qd1[i] = kc.spatial_vector(v_out, w_out)


#: shape kinds a swept body may be made of
SWEPT_BODY_KINDS = (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE)


def body_shape_lists(model, meshes: bool = False):
    """The shapes of every body whose shapes are all spheres, boxes or capsules (and meshes, with
    ``meshes=True``), as numpy int32 arrays: (first (B,), count (B,), shape list): body b's shapes are
    ``list[first[b]:first[b] + count[b]]``; count 0 for a body with no shape or with a shape of
    another kind."""
    kinds = SWEPT_BODY_KINDS + ((SHAPE_MESH,) if meshes else ())
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    first = np.zeros(model.body_count, np.int32)
    count = np.zeros(model.body_count, np.int32)
    shapes = []
    for b in range(model.body_count):
        mine = np.nonzero(shape_body == b)[0]
        if len(mine) and all(shape_type[s] in kinds for s in mine):
            first[b] = len(shapes)
            count[b] = len(mine)
            shapes.extend(int(s) for s in mine)
    return first, count, np.asarray(shapes, np.int32)


class SweptBodyShapes:
    """kc arrays of :func:`body_shape_lists`: ``first``, ``count`` (B,), ``shapes`` (n,); with ``meshes=True``
    also bodies with mesh shapes, and ``info`` (S,) / ``span`` of sim/toi_mesh_body.py."""

    def __init__(self, model, meshes: bool = False):
        first, count, shapes = body_shape_lists(model, meshes)
        self.info = kc.array(mesh_shape_info(model).reshape(-1, 3) if model.shape_count else np.zeros((1, 3),
                             np.float32), dtype=kc.vec3, device=model.device)
        self.span = mesh_feature_span(model)
        dev = model.device
        self.first = kc.array(first, dtype=kc.int32, device=dev)
        self.count = kc.array(count, dtype=kc.int32, device=dev)
        self.shapes = kc.array(shapes if len(shapes) else np.zeros(1, np.int32), dtype=kc.int32, device=dev)


def body_shape_toi_shapes(model):
    """int (B,): for each body this module steps (a body whose only shape is a box, a capsule or a mesh,
    or a compound of several spheres, boxes, capsules and meshes; single spheres too when the model
    has static meshes, which sim/toi.py does not sweep) its first shape, else -1 (single spheres are
    sim/toi.py's)."""
    first, count, shapes = body_shape_lists(model, meshes=True)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    kinds = (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH)
    if model.mesh_shape_indices:
        kinds = kinds + (SHAPE_SPHERE,)
    out = np.full(model.body_count, -1, np.int32)
    for b in range(model.body_count):
        if count[b] > 1 or (count[b] == 1 and shape_type[shapes[first[b]]] in kinds):
            out[b] = shapes[first[b]]
    return out


def body_shape_toi_all_shapes(model, marks):
    """Every shape of the bodies that ``marks`` (from :func:`body_shape_toi_shapes`) marks (list of int)."""
    first, count, shapes = body_shape_lists(model, meshes=True)
    return [int(s) for b in np.nonzero(np.asarray(marks) >= 0)[0] for s in shapes[first[b]:first[b] + count[b]]]


#: static collider kinds the box/capsule sweep handles
TOI_SHAPE_STATIC_KINDS = (SHAPE_PLANE, SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH)


def integrate_shape_bodies_toi(model, state_in, wrenches, state_out, dt: float, body_ids, body_shapes):
    """Newton–Euler step with time-of-impact contacts of the box, capsule and compound bodies ``body_ids``
    (kc int (n,)); ``body_shapes``: a :class:`SweptBodyShapes` of the model.  Writes only those
    bodies of ``state_out``."""
    if body_ids.shape[0] == 0:
        return
    from .toi import resting_speed

    kc.launch(integrate_shape_bodies_toi_kernel, dim=body_ids.shape[0],
              inputs=[body_ids, body_shapes.first, body_shapes.count, body_shapes.shapes, state_in.body_q,
                      state_in.body_qd, wrenches, model.body_com,
                      model.body_inv_mass, model.body_inertia, model.body_inv_inertia, model.gravity, float(dt),
                      int(model.ground), model.ground_normal, model.ground_offset, model.ground_material,
                      model.shape_count, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, model.shape_mesh, model.material_restitution,
                      model.material_mu, resting_speed(model, dt), MAX_IMPACTS, PGS_ITERATIONS, body_shapes.info,
                      body_shapes.span, MAX_SWEEPS, SWEEP_ITERATIONS, static_mesh_seams(model)],
              outputs=[state_out.body_q, state_out.body_qd], device=model.device)
