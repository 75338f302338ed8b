"""Swept box, capsule and mesh links for SolverFeatherstone(toi=True) (funcs of sim/featherstone_toi.py's step).

A box, capsule or mesh shape on a link (a mesh: ``add_shape_mesh(body=link)``, a convex hull or a
closed triangle mesh, with sim/toi_mesh_body.py's vertex, BVH-point and edge features) is swept
with the rigid solver's queries (sim/toi_shapes.py): over the step the link moves rigidly with
the twist ``J qd'`` of the step's unconstrained velocities (``qd' = qd + dt qdd``, the Jacobian
at the start of the step), its centre of mass along ``x_c + s dt v_c`` and its rotation along
the Cayley path of its angular velocity ``w`` (sim/toi_shapes.py's ``pose_at``).  The time of
impact ``s`` with the ground and the static planes, spheres, boxes, capsules and meshes is found
by conservative advancement (``s += D(s) / B``, ``B = (|v_c| + |w| R) dt`` bounding any point's
motion, ``R`` the shape's reach from the centre of mass, ``D`` the shape's closest feature,
sim/toi_shapes.py's ``closest_feature``) and refined by two Newton steps on the active feature,
so that ``s``, and the state after the impact, is a smooth function of the initial conditions
(the gradient is that of the true impact).  A hit counts only when the contact point approaches
the surface at ``s``.

The impact itself is sim/featherstone_toi.py's single impulse in generalised coordinates;
it acts at the centre of the contact manifold: the rigid solver's manifold (sim/toi_shapes.py's
``gather_manifold``: of every feature within ``MANIFOLD_TOL`` of the closest one, against every
static collider, the triangles of static meshes included, the deepest and the extreme ones in
seven directions across the normal) restricted to the features whose normal is within ~25
degrees of the closest one's, and its centre the middle of their extent across the normal; so
a box or hull landing flat (four corners) on the ground, a box or a mesh floor gets one impulse
through its face centre: no spurious spin, the bounce of the whole face.  Several impacts per
articulation per step, and the contacts of several shapes hit together, are
sim/featherstone_toi.py's.  Limits: one impulse per shape and impact, at a single point (a box
landing on two separate colliders at once is pushed at the centre of both's features within
``MANIFOLD_TOL``); the link's motion over the step is linearised (its twist at the start).

The mesh variants (``*_mesh``) take the link shape's ``info_a`` (sim/toi_mesh_body.py's
``mesh_shape_info``: vertices, triangles, bounding radius; zeros for a primitive); the
functions without the suffix are those variants for primitive shapes (box, capsule).
"""
from __future__ import annotations

import kernelcore as kc

from .toi_shapes import (CA_ITERATIONS, CONTACT_TOL, FAR, MANIFOLD_TOL, MESH, MESH_LOOKAHEAD,
                         closest_feature, gather_manifold_passes, pose_at, shape_reach, tangent_basis, vec8)

NO_HIT = kc.constant(2.0)
#: a feature joins the manifold only if its normal is this close to the closest feature's (cos ~25 deg)
SAME_NORMAL = kc.constant(0.9)

# closest_feature's feature-id span for a link shape: the link sweep skips no feature (skip count 0),
# so the ids only need a non-zero span, for primitives and meshes alike
PRIMITIVE_SPAN = kc.constant(256)


@kc.func
def link_shape_reach(kind: int, scale: kc.vec3, offset: kc.vec3, info_a: kc.vec3) -> float:
    """Bound [m] on the distance of any point of a link shape from its link's centre of mass (``offset``:
    the shape's origin from it; a mesh: its bounding radius ``info_a[2]`` about its origin)."""
    r = shape_reach(kind, scale, offset)
    if kind == MESH:
        r = kc.length(offset) + info_a[2]
    return r


@kc.func
def link_shape_closest_mesh(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                            offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float,
                            shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                            shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                            shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                            look: float, info_a: kc.vec3, seams: kc.array(dtype=int)):
    """Link shape ``sh`` ``tau`` [s] into its swept motion (centre of mass ``com_w`` [m], rotation ``q_b``,
    velocity ``v_com`` [m/s], angular velocity ``w`` [rad/s]; ``offset``: the shape's position from the
    centre of mass in the body frame; ``info_a``: its mesh info, zeros for a primitive): (distance [m],
    normal, contact point, centre of mass at tau); ``seams``: the static meshes' (sim/toi_mesh_seams.py)."""
    skip = vec8()
    xs, qs, pos_a, rot_a = pose_at(com_w, q_b, v_com, w, tau, offset, shape_rot[sh])
    d, n, p = closest_feature(shape_type[sh], pos_a, rot_a, shape_scale[sh], ground, ground_normal, ground_offset,
                              shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, 0, skip, 0,
                              shape_mesh, look, shape_mesh[sh], info_a, PRIMITIVE_SPAN, seams)
    return d, n, p, xs


@kc.func
def link_shape_closest(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                       offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                       shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                       shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                       shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64), look: float,
                       seams: kc.array(dtype=int)):
    """:func:`link_shape_closest_mesh` of a primitive link shape (box, capsule)."""
    d, n, p, xs = link_shape_closest_mesh(sh, com_w, q_b, v_com, w, tau, offset, ground, ground_normal,
                                          ground_offset, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                          shape_scale, shape_mesh, look, kc.vec3(0.0, 0.0, 0.0), seams)
    return d, n, p, xs


@kc.func
def sweep_link_shape_mesh(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, offset: kc.vec3,
                          dt: float, ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                          shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                          shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                          shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                          info_a: kc.vec3, seams: kc.array(dtype=int)) -> float:
    """Time of impact ``s`` in [0, 1] (fraction of the step) of link shape ``sh`` (a box, a capsule or a
    mesh of info ``info_a``) moving rigidly (see :func:`link_shape_closest_mesh`) with the static
    colliders; NO_HIT when none, or when the contact point does not approach the surface there
    (resting, or leaving)."""
    reach = link_shape_reach(shape_type[sh], shape_scale[sh], offset, info_a)
    bound = (kc.length(v_com) + kc.length(w) * reach) * dt  # [m] no point moves farther per unit of s
    look = bound + MESH_LOOKAHEAD
    # one loop, one closest_feature call site (its static-mesh search is big: each call site is
    # compiled again): conservative advancement (phase 0, never steps past the contact), then at the
    # contact two Newton steps on the active feature (phase 1: they land on the root, so s is smooth
    # in the inputs), then done (phase 2)
    s = float(0.0)
    phase = int(0)
    newton = int(0)
    rate = float(0.0)
    for _k in range(CA_ITERATIONS + 2):
        if phase < 2 and s <= 1.0:
            d, n, p, xs = link_shape_closest_mesh(sh, com_w, q_b, v_com, w, s * dt, offset, ground, ground_normal,
                                                  ground_offset, shape_count, shape_type, shape_body, shape_pos,
                                                  shape_rot, shape_scale, shape_mesh, look, info_a, seams)
            if phase == 0:
                if d > CONTACT_TOL:
                    if bound > 0.0:
                        s = s + d / bound
                    else:
                        s = 2.0
                else:
                    phase = 1
            if phase == 1:
                h = s * dt * 0.5
                w_c = w / (1.0 + kc.dot(w, w) * h * h)  # the Cayley path's angular velocity at s
                rate = kc.dot(n, v_com + kc.cross(w_c, p - xs)) * dt
                if rate < 0.0:
                    s = kc.min(kc.max(s - d / rate, 0.0), 1.0)
                newton = newton + 1
                if newton == 2:
                    phase = 2
    out = float(NO_HIT)
    if phase == 2 and rate < 0.0:
        out = s
    return out


@kc.func
def sweep_link_shape(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, offset: kc.vec3, dt: float,
                     ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                     shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                     shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                     shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                     seams: kc.array(dtype=int)) -> float:
    """:func:`sweep_link_shape_mesh` of a primitive link shape (box, capsule)."""
    return sweep_link_shape_mesh(sh, com_w, q_b, v_com, w, offset, dt, ground, ground_normal, ground_offset,
                                 shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                 kc.vec3(0.0, 0.0, 0.0), seams)


@kc.func
def link_shape_contact_mesh(i: int, toi_shape: kc.array(dtype=int), com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3,
                            w: kc.vec3, tau: float, com_b: kc.vec3, ground: int, ground_normal: kc.vec3,
                            ground_offset: float, ground_material: int, shape_count: int,
                            shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                            shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                            shape_scale: kc.array(dtype=kc.vec3), shape_material: kc.array(dtype=int),
                            shape_mesh: kc.array(dtype=kc.uint64), material_restitution: kc.array(dtype=float),
                            material_mu: kc.array(dtype=float), shape_info: kc.array(dtype=kc.vec3),
                            seams: kc.array(dtype=int)):
    """The impact of link shape ``toi_shape[i]`` (a box, a capsule or a mesh; its link's centre of mass
    ``com_b`` in the body frame) at ``tau`` [s] into its motion: (normal, the centroid [m] of the contact
    manifold, restitution, friction coefficient).  The manifold is the rigid solver's
    (sim/toi_shapes.py's ``gather_manifold``: the deepest feature and the extreme ones in seven directions
    across the normal, over every static collider, static triangle meshes included) restricted to the
    features whose normal is within ~25 degrees of the closest one's; the restitution and friction are
    its points' averages."""
    sh = toi_shape[i]
    skip = vec8()
    offset = shape_pos[sh] - com_b
    xs, qs, pos_a, rot_a = pose_at(com_w, q_b, v_com, w, tau, offset, shape_rot[sh])
    look = MESH_LOOKAHEAD + MANIFOLD_TOL
    d_min, n0, p0 = closest_feature(shape_type[sh], pos_a, rot_a, shape_scale[sh], ground, ground_normal,
                                    ground_offset, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                    shape_scale, 0, skip, 0, shape_mesh, look, shape_mesh[sh], shape_info[sh],
                                    PRIMITIVE_SPAN, seams)
    rot = kc.quat_to_matrix(qs)
    # every near point joins (no approach-speed rule here: v = w = 0, slow = FAR)
    count, nx, ny, nz, rx, ry, rz, mu, e = gather_manifold_passes(
        d_min, n0, i, 1, toi_shape, com_b, xs, rot, ground, ground_normal, ground_offset, ground_material,
        shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material, shape_mesh,
        material_restitution, material_mu, look, shape_info, com_b * 0.0, com_b * 0.0, FAR, seams)
    # the centre of the kept points' extent across the normal (their bounding rectangle along t1, t2):
    # the face centre of a box or hull landing flat whichever of the tied points the slots took (their
    # plain mean leans towards an edge where several candidates tie), an edge's midpoint, a corner
    t1 = tangent_basis(n0)
    t2 = kc.cross(n0, t1)
    lo = kc.vec3(FAR, FAR, FAR)
    hi = kc.vec3(-FAR, -FAR, -FAR)
    e_sum = float(0.0)
    mu_sum = float(0.0)
    kept = float(0.0)
    for c in range(count):
        if kc.dot(kc.vec3(nx[c], ny[c], nz[c]), n0) > SAME_NORMAL:
            r = kc.vec3(rx[c], ry[c], rz[c])
            coords = kc.vec3(kc.dot(r, t1), kc.dot(r, t2), kc.dot(r, n0))
            lo = kc.min(lo, coords)
            hi = kc.max(hi, coords)
            e_sum = e_sum + e[c]
            mu_sum = mu_sum + mu[c]
            kept = kept + 1.0
    # no point kept (not expected: the closest feature is a candidate): the closest point, the link
    # shape's own material
    p = p0
    e_out = material_restitution[shape_material[sh]]
    mu_out = material_mu[shape_material[sh]]
    if kept > 0.0:
        mid = (lo + hi) * 0.5
        p = xs + t1 * mid[0] + t2 * mid[1] + n0 * mid[2]
        e_out = e_sum / kept
        mu_out = mu_sum / kept
    return n0, p, e_out, mu_out
