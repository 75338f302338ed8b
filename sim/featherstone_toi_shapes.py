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
it acts at the centroid of the contact manifold (every feature within ``MANIFOLD_TOL`` of
the closest one with a normal within ~25 degrees of its normal), so a box landing flat
(four corners) gets one impulse through its face centre: no spurious spin, the bounce of
the whole face.  Several impacts per articulation per step, and the contacts of several
shapes hit together, are sim/featherstone_toi.py's.  Limits: one impulse per shape and impact,
at a single point (a box landing on two separate colliders at once is pushed at the centroid of
the closer one's features only); against a static triangle mesh the manifold holds that mesh's
closest feature only (a box or hull landing flat on a mesh floor is pushed at one corner); the
link's motion over the step is linearised (its twist at
the start).

The mesh variants (``*_mesh``) take the link shape's ``info_a`` (sim/toi_mesh_body.py's
``mesh_shape_info``: vertices, triangles, bounding radius; zeros for a primitive); the
functions without the suffix are those variants for primitive shapes (box, capsule).
"""
from __future__ import annotations

import kernelcore as kc

from .toi_mesh import mesh_closest_feature
from .toi_mesh_body import mesh_feature_count, mesh_feature_distance, mesh_static_mesh_closest
from .toi_shapes import (CA_ITERATIONS, CONTACT_TOL, FEATURES, MANIFOLD_TOL, MESH, MESH_LOOKAHEAD, closest_feature,
                         collider_pose, feature_distance, pose_at, shape_reach, vec8)

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
                            look: float, info_a: kc.vec3):
    """Link shape ``sh`` ``tau`` [s] into its swept motion (centre of mass ``com_w`` [m], rotation ``q_b``,
    velocity ``v_com`` [m/s], angular velocity ``w`` [rad/s]; ``offset``: the shape's position from the
    centre of mass in the body frame; ``info_a``: its mesh info, zeros for a primitive): (distance [m],
    normal, contact point, centre of mass at tau)."""
    skip = vec8()
    xs, qs, pos_a, rot_a = pose_at(com_w, q_b, v_com, w, tau, offset, shape_rot[sh])
    d, n, p = closest_feature(shape_type[sh], pos_a, rot_a, shape_scale[sh], ground, ground_normal, ground_offset,
                              shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, 0, skip, 0,
                              shape_mesh, look, shape_mesh[sh], info_a, PRIMITIVE_SPAN)
    return d, n, p, xs


@kc.func
def link_shape_closest(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                       offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                       shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                       shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                       shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64), look: float):
    """:func:`link_shape_closest_mesh` of a primitive link shape (box, capsule)."""
    d, n, p, xs = link_shape_closest_mesh(sh, com_w, q_b, v_com, w, tau, offset, ground, ground_normal,
                                          ground_offset, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                          shape_scale, shape_mesh, look, kc.vec3(0.0, 0.0, 0.0))
    return d, n, p, xs


@kc.func
def sweep_link_shape_mesh(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, offset: kc.vec3,
                          dt: float, ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                          shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                          shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                          shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                          info_a: kc.vec3) -> float:
    """Time of impact ``s`` in [0, 1] (fraction of the step) of link shape ``sh`` (a box, a capsule or a
    mesh of info ``info_a``) moving rigidly (see :func:`link_shape_closest_mesh`) with the static
    colliders; NO_HIT when none, or when the contact point does not approach the surface there
    (resting, or leaving)."""
    reach = link_shape_reach(shape_type[sh], shape_scale[sh], offset, info_a)
    bound = (kc.length(v_com) + kc.length(w) * reach) * dt  # [m] no point moves farther per unit of s
    look = bound + MESH_LOOKAHEAD
    s = float(0.0)
    for _k in range(CA_ITERATIONS):  # conservative advancement: never steps past the contact
        if s <= 1.0:
            d, n, p, xs = link_shape_closest_mesh(sh, com_w, q_b, v_com, w, s * dt, offset, ground, ground_normal,
                                                  ground_offset, shape_count, shape_type, shape_body, shape_pos,
                                                  shape_rot, shape_scale, shape_mesh, look, info_a)
            if d > CONTACT_TOL:
                if bound > 0.0:
                    s = s + d / bound
                else:
                    s = 2.0
    out = float(NO_HIT)
    if s <= 1.0:
        d, n, p, xs = link_shape_closest_mesh(sh, com_w, q_b, v_com, w, s * dt, offset, ground, ground_normal,
                                              ground_offset, shape_count, shape_type, shape_body, shape_pos,
                                              shape_rot, shape_scale, shape_mesh, look, info_a)
        if d <= CONTACT_TOL:
            rate = float(0.0)
            # Newton on the active feature: lands on the root, so s is smooth in the inputs
            for _newton in range(2):
                d, n, p, xs = link_shape_closest_mesh(sh, com_w, q_b, v_com, w, s * dt, offset, ground,
                                                      ground_normal, ground_offset, shape_count, shape_type,
                                                      shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                                      look, info_a)
                h = s * dt * 0.5
                w_c = w / (1.0 + kc.dot(w, w) * h * h)  # the Cayley path's angular velocity at s
                rate = kc.dot(n, v_com + kc.cross(w_c, p - xs)) * dt
                if rate < 0.0:
                    s = kc.min(kc.max(s - d / rate, 0.0), 1.0)
            if rate < 0.0:
                out = s
    return out


@kc.func
def sweep_link_shape(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, offset: kc.vec3, dt: float,
                     ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                     shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                     shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                     shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64)) -> float:
    """:func:`sweep_link_shape_mesh` of a primitive link shape (box, capsule)."""
    return sweep_link_shape_mesh(sh, com_w, q_b, v_com, w, offset, dt, ground, ground_normal, ground_offset,
                                 shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                 kc.vec3(0.0, 0.0, 0.0))


@kc.func
def manifold_add(dd: float, nn: kc.vec3, pp: kc.vec3, mb: int, d_min: float, n0: kc.vec3, p_sum: kc.vec3,
                 count: float, best: float, material: int):
    """One feature (distance ``dd`` [m], normal ``nn``, point ``pp``, collider material ``mb``) into the
    manifold of the closest feature (``d_min``, ``n0``): (point sum, count, closest distance so far,
    its collider's material)."""
    p_out = p_sum
    count_out = count
    if dd < d_min + MANIFOLD_TOL and kc.dot(nn, n0) > SAME_NORMAL:  # a zero normal (no feature) never joins
        p_out = p_sum + pp
        count_out = count + 1.0
    best_out = best
    material_out = material
    if dd < best:
        best_out = dd
        material_out = mb
    return p_out, count_out, best_out, material_out


@kc.func
def link_shape_contact_mesh(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                            offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float,
                            ground_material: int, shape_count: int, shape_type: kc.array(dtype=int),
                            shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                            shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                            shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
                            info_a: kc.vec3):
    """The impact of link shape ``sh`` (a box, a capsule or a mesh of info ``info_a``) at ``tau`` [s] into
    its motion: (normal, the centroid [m] of the contact manifold, the material of the closest collider)."""
    ka = shape_type[sh]
    scale_a = shape_scale[sh]
    mesh_a = shape_mesh[sh]
    nv = int(info_a[0])
    nf = int(info_a[1])
    skip = vec8()
    xs, qs, pos_a, rot_a = pose_at(com_w, q_b, v_com, w, tau, offset, shape_rot[sh])
    look = MESH_LOOKAHEAD + MANIFOLD_TOL
    d_min, n0, p0 = closest_feature(ka, pos_a, rot_a, scale_a, ground, ground_normal, ground_offset, shape_count,
                                    shape_type, shape_body, shape_pos, shape_rot, shape_scale, 0, skip, 0,
                                    shape_mesh, look, mesh_a, info_a, PRIMITIVE_SPAN)
    p_sum = kc.vec3(0.0, 0.0, 0.0)
    count = float(0.0)
    best = float(1.0e30)
    material = ground_material
    for c in range(-1, shape_count):
        kb, pos_b, rot_b, scale_b = collider_pose(c, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                                                  ground)
        mb = ground_material
        if c >= 0:
            mb = shape_material[c]
        if kb != -2:
            nff = int(FEATURES)
            if ka == MESH:
                nff = mesh_feature_count(kb, nv, nf)
            for f in range(nff):
                dd = float(1.0e30)
                nn = kc.vec3(0.0, 0.0, 0.0)
                pp = pos_a
                if ka == MESH:
                    dd, nn, pp = mesh_feature_distance(f, mesh_a, nv, pos_a, rot_a, kb, pos_b, rot_b, scale_b,
                                                       ground_normal, ground_offset, look)
                else:
                    dd, nn, pp = feature_distance(f, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b,
                                                  ground_normal, ground_offset)
                p_sum, count, best, material = manifold_add(dd, nn, pp, mb, d_min, n0, p_sum, count, best, material)
        elif c >= 0:
            if shape_body[c] < 0 and shape_type[c] == MESH:  # a static mesh: its closest feature
                dd = float(1.0e30)
                nn = kc.vec3(0.0, 0.0, 0.0)
                pp = pos_a
                if ka == MESH:
                    dd, nn, pp = mesh_static_mesh_closest(mesh_a, nv, nf, pos_a, rot_a, info_a[2], shape_mesh[c],
                                                          look, 0, 0, skip)
                else:
                    reach = shape_reach(ka, scale_a, kc.vec3(0.0, 0.0, 0.0))
                    dd, nn, pp = mesh_closest_feature(ka, pos_a, rot_a, scale_a, reach, shape_mesh[c], look, 0, 0,
                                                      skip)
                p_sum, count, best, material = manifold_add(dd, nn, pp, mb, d_min, n0, p_sum, count, best, material)
    p = p0
    if count > 0.0:
        p = p_sum / count
    return n0, p, material


@kc.func
def link_shape_contact(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                       offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float,
                       ground_material: int, shape_count: int, shape_type: kc.array(dtype=int),
                       shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                       shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                       shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64)):
    """:func:`link_shape_contact_mesh` of a primitive link shape (box, capsule)."""
    n, p, material = link_shape_contact_mesh(sh, com_w, q_b, v_com, w, tau, offset, ground, ground_normal,
                                             ground_offset, ground_material, shape_count, shape_type, shape_body,
                                             shape_pos, shape_rot, shape_scale, shape_material, shape_mesh,
                                             kc.vec3(0.0, 0.0, 0.0))
    return n, p, material
