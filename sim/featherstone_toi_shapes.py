"""Swept box and capsule links for SolverFeatherstone(toi=True) (funcs of sim/featherstone_toi.py's step).

A box or capsule shape on a link is swept with the rigid solver's queries (sim/toi_shapes.py):
over the step the link moves rigidly with the twist ``J qd'`` of the step's unconstrained
velocities (``qd' = qd + dt qdd``, the Jacobian at the start of the step), its centre of mass
along ``x_c + s dt v_c`` and its rotation along the Cayley path of its angular velocity ``w``
(sim/toi_shapes.py's ``pose_at``).  The time of impact ``s`` with the ground and the static
planes, spheres, boxes, capsules and meshes is found by conservative advancement
(``s += D(s) / B``, ``B = (|v_c| + |w| R) dt`` bounding any point's motion, ``D`` the
shape's closest feature, sim/toi_shapes.py's ``closest_feature``) and refined by two Newton
steps on the active feature, so that ``s``, and the state after the impact, is a smooth
function of the initial conditions (the gradient is that of the true impact).  A hit counts
only when the contact point approaches the surface at ``s``.

The impact itself is sim/featherstone_toi.py's single impulse in generalised coordinates;
it acts at the centroid of the contact manifold (every feature within ``MANIFOLD_TOL`` of
the closest one with a normal within ~25 degrees of its normal), so a box landing flat
(four corners) gets one impulse through its face centre: no spurious spin, the bounce of
the whole face.  Several impacts per articulation per step, and the contacts of several
shapes hit together, are sim/featherstone_toi.py's.  Limits: one impulse per shape and impact,
at a single point (a box landing on two separate colliders at once is pushed at the centroid of
the closer one's features only); the link's motion over the step is linearised (its twist at
the start).
"""
from __future__ import annotations

import kernelcore as kc

from .toi_mesh import mesh_closest_feature
from .toi_shapes import (CA_ITERATIONS, CONTACT_TOL, FEATURES, MANIFOLD_TOL, MESH, MESH_LOOKAHEAD, closest_feature,
                         collider_pose, feature_distance, pose_at, shape_reach, vec8)

NO_HIT = kc.constant(2.0)
#: a feature joins the manifold only if its normal is this close to the closest feature's (cos ~25 deg)
SAME_NORMAL = kc.constant(0.9)

# closest_feature's feature-id span for a link shape, a primitive (box, capsule; no mesh of its own,
# passed as mesh 0): nothing is skipped here, so the ids only need a non-zero span
PRIMITIVE_SPAN = kc.constant(256)


@kc.func
def link_shape_closest(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                       offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                       shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                       shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                       shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64), look: float):
    """Link shape ``sh`` ``tau`` [s] into its swept motion (centre of mass ``com_w`` [m], rotation ``q_b``,
    velocity ``v_com`` [m/s], angular velocity ``w`` [rad/s]; ``offset``: the shape's position from the
    centre of mass in the body frame): (distance [m], normal, contact point, centre of mass at tau)."""
    skip = vec8()
    xs, qs, pos_a, rot_a = pose_at(com_w, q_b, v_com, w, tau, offset, shape_rot[sh])
    d, n, p = closest_feature(shape_type[sh], pos_a, rot_a, shape_scale[sh], ground, ground_normal, ground_offset,
                              shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, 0, skip, 0,
                              shape_mesh, look, kc.uint64(0), kc.vec3(0.0, 0.0, 0.0), PRIMITIVE_SPAN)
    return d, n, p, xs


@kc.func
def sweep_link_shape(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, offset: kc.vec3, dt: float,
                     ground: int, ground_normal: kc.vec3, ground_offset: float, shape_count: int,
                     shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                     shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                     shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64)) -> float:
    """Time of impact ``s`` in [0, 1] (fraction of the step) of link shape ``sh`` moving rigidly (see
    :func:`link_shape_closest`) with the static colliders; NO_HIT when none, or when the contact
    point does not approach the surface there (resting, or leaving)."""
    reach = shape_reach(shape_type[sh], shape_scale[sh], offset)
    bound = (kc.length(v_com) + kc.length(w) * reach) * dt  # [m] no point moves farther per unit of s
    look = bound + MESH_LOOKAHEAD
    s = float(0.0)
    for _k in range(CA_ITERATIONS):  # conservative advancement: never steps past the contact
        if s <= 1.0:
            d, n, p, xs = link_shape_closest(sh, com_w, q_b, v_com, w, s * dt, offset, ground, ground_normal,
                                             ground_offset, shape_count, shape_type, shape_body, shape_pos,
                                             shape_rot, shape_scale, shape_mesh, look)
            if d > CONTACT_TOL:
                if bound > 0.0:
                    s = s + d / bound
                else:
                    s = 2.0
    out = float(NO_HIT)
    if s <= 1.0:
        d, n, p, xs = link_shape_closest(sh, com_w, q_b, v_com, w, s * dt, offset, ground, ground_normal,
                                         ground_offset, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                         shape_scale, shape_mesh, look)
        if d <= CONTACT_TOL:
            rate = float(0.0)
            # Newton on the active feature: lands on the root, so s is smooth in the inputs
            for _newton in range(2):
                d, n, p, xs = link_shape_closest(sh, com_w, q_b, v_com, w, s * dt, offset, ground, ground_normal,
                                                 ground_offset, shape_count, shape_type, shape_body, shape_pos,
                                                 shape_rot, shape_scale, shape_mesh, look)
                h = s * dt * 0.5
                w_c = w / (1.0 + kc.dot(w, w) * h * h)  # the Cayley path's angular velocity at s
                rate = kc.dot(n, v_com + kc.cross(w_c, p - xs)) * dt
                if rate < 0.0:
                    s = kc.min(kc.max(s - d / rate, 0.0), 1.0)
            if rate < 0.0:
                out = s
    return out


@kc.func
def link_shape_contact(sh: int, com_w: kc.vec3, q_b: kc.quat, v_com: kc.vec3, w: kc.vec3, tau: float,
                       offset: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float,
                       ground_material: int, shape_count: int, shape_type: kc.array(dtype=int),
                       shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                       shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                       shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64)):
    """The impact of link shape ``sh`` at ``tau`` [s] into its motion: (normal, the centroid [m] of
    the contact manifold, the material of the closest collider)."""
    ka = shape_type[sh]
    scale_a = shape_scale[sh]
    skip = vec8()
    xs, qs, pos_a, rot_a = pose_at(com_w, q_b, v_com, w, tau, offset, shape_rot[sh])
    look = MESH_LOOKAHEAD + MANIFOLD_TOL
    d_min, n0, p0 = closest_feature(ka, pos_a, rot_a, scale_a, ground, ground_normal, ground_offset, shape_count,
                                    shape_type, shape_body, shape_pos, shape_rot, shape_scale, 0, skip, 0,
                                    shape_mesh, look, kc.uint64(0), kc.vec3(0.0, 0.0, 0.0), PRIMITIVE_SPAN)
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
            for f in range(FEATURES):
                dd, nn, pp = feature_distance(f, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b, ground_normal,
                                              ground_offset)
                if dd < d_min + MANIFOLD_TOL and kc.dot(nn, n0) > SAME_NORMAL:
                    p_sum = p_sum + pp
                    count = count + 1.0
                if dd < best:
                    best = dd
                    material = mb
        elif c >= 0:
            if shape_body[c] < 0 and shape_type[c] == MESH:
                reach = shape_reach(ka, scale_a, kc.vec3(0.0, 0.0, 0.0))
                dd, nn, pp = mesh_closest_feature(ka, pos_a, rot_a, scale_a, reach, shape_mesh[c], look, 0, 0, skip)
                if dd < d_min + MANIFOLD_TOL and kc.dot(nn, n0) > SAME_NORMAL:
                    p_sum = p_sum + pp
                    count = count + 1.0
                if dd < best:
                    best = dd
                    material = mb
    p = p0
    if count > 0.0:
        p = p_sum / count
    return n0, p, material
