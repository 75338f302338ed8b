"""Link-link (self) contacts of one articulation for SolverFeatherstone (``self_collision=True``).

The candidate pairs are fixed at the solver's construction (:func:`self_contact_pairs`):
every two sphere, box, capsule or mesh (convex hull, closed triangle mesh) shapes on different
links of one articulation, except links joined by a joint (parent and child: their shapes overlap
at the joint by design).
Sorted by articulation, they are handled by the articulation's own thread in the step
launch, so the wrench on each link and its reaction on the other need no atomics.

The narrow phase: two round shapes (sphere, capsule) by the closest points of their core
segments; a round shape against a box by its centre / capsule ends against the box's signed
distance; a box against a capsule by its eight corners (as sim/collide_body_pairs.py).  Two
boxes by the separating-axis test (:func:`box_link_pair_wrenches`): edge to edge when an edge axis
separates them most, else the incident face clipped to the reference face
(sim/collide_box_faces.py), since the corners of two boxes of equal extent lie on each other's
faces at distance 0.  A pair with a mesh shape (:func:`add_mesh_link_pair_contacts`): each
shape's points (a mesh's vertices, a primitive's ``shape_point``s with their radius) against the
other's signed distance (a mesh's through its BVH, sim/collide_mesh.py ``mesh_surface_distance``),
once the shapes' bounding balls are within reach.  Two convex meshes give a vertex on or inside
the other hull the pair's axis of least overlap (sim/collide_hull_pairs.py), for the same reason
as boxes, and each one's edges get contacts where they cross into the other hull
(sim/collide_hull_edges.py); a non-convex mesh's edges crossing the other's face between
vertices are not seen.  Each
contact's force is the contact law of sim/contact.py (the materials of both shapes
averaged) on the relative velocity of the two surface points, with the sum of both
links' effective inverse masses along the normal; it acts on link a and its reaction on
link b, and reaches the dofs through the step's ``J^T w`` like any other wrench.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_bodies import (BOX, CAPSULE, MAX_POINTS, segment_params, shape_point,
                             spatial_wrench, static_distance)
from .collide_body_mesh import COINCIDENT, HULL_SKIN
from .collide_body_pairs import core_half_axis, pair_relative_velocity
from .collide_box_faces import box_pair_manifold
from .collide_hull_edges import hull_edge_crossings
from .collide_hull_pairs import hull_extent, hull_has_vertex_near, hull_pair_normal, shape_convex_flags
from .collide_mesh import FAR, mesh_surface_distance
from .contact import mixed_body_contact_force
from .featherstone_link_points import MESH, link_point_count, link_shape_bound
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_SPHERE

POINTS = kc.constant(MAX_POINTS)


@kc.func
def point_against(k: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, kb: int, pos_b: kc.vec3,
                  rot_b: kc.mat33, scale_b: kc.vec3):
    """Contact point ``k`` of shape a against shape b's signed distance, when the pair uses a's
    points (a round shape against a box, a box against a capsule): (found, normal from b to a,
    gap [m], contact point on a's surface)."""
    found = int(0)
    n = kc.vec3(0.0, 1.0, 0.0)
    gap = float(1.0e30)
    contact = pos_a
    uses = int(0)
    if ka != BOX:
        if kb == BOX:
            uses = 1
    elif kb == CAPSULE:
        uses = 1
    if uses != 0:
        pt = shape_point(ka, scale_a, k)
        if pt[3] >= 0.0:
            x = pos_a + rot_a * kc.vec3(pt[0], pt[1], pt[2])
            nd = static_distance(x, kb, pos_b, rot_b, scale_b, kc.vec3(0.0, 1.0, 0.0), 0.0)
            n = kc.vec3(nd[0], nd[1], nd[2])
            gap = nd[3] - pt[3]
            contact = x - n * pt[3]
            found = 1
    return found, n, gap, contact


@kc.func
def link_contact_force(n: kc.vec3, gap: float, contact: kc.vec3, ba: int, bb: int, ma: int, mb: int,
                       body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                       body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
                       body_inv_inertia: kc.array(dtype=kc.mat33), cohesion_reach: float,
                       material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
                       material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
                       material_cohesion_distance: kc.array(dtype=float), dt: float) -> kc.vec3:
    """Force [N] on link a of one contact (normal ``n`` from b to a) by the law of sim/contact.py;
    zero beyond its range."""
    tfa = body_q[ba]
    tfb = body_q[bb]
    v_rel = pair_relative_velocity(contact, tfa, body_qd[ba], body_com[ba], tfb, body_qd[bb], body_com[bb])
    f = kc.vec3(0.0, 0.0, 0.0)
    if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
        ra = kc.quat_to_matrix(kc.transform_get_rotation(tfa))
        rb = kc.quat_to_matrix(kc.transform_get_rotation(tfb))
        na = kc.cross(contact - kc.transform_point(tfa, body_com[ba]), n)
        nb = kc.cross(contact - kc.transform_point(tfb, body_com[bb]), n)
        inv_m = (body_inv_mass[ba] + kc.dot(na, ra * body_inv_inertia[ba] * kc.transpose(ra) * na)
                 + body_inv_mass[bb] + kc.dot(nb, rb * body_inv_inertia[bb] * kc.transpose(rb) * nb))
        f = mixed_body_contact_force(n, gap, v_rel, inv_m, ma, mb, material_ke, material_damping_ratio, material_mu,
                                material_cohesion, material_cohesion_distance, dt)
    return f


@kc.func
def hull_point_gap(side: int, x: kc.vec3, n_h: kc.vec3, low_a: float, top_b: float):
    """(normal [unit], gap [m], < 0: inside) of a contact point ``x`` of hull pair (a, b) along the pair's
    axis of least overlap ``n_h`` (from b to a): a's point (``side`` 0) against b's support plane
    ``top_b`` [m] along it, or b's point (``side`` 1) against a's ``low_a``."""
    n = n_h
    gap = kc.dot(n_h, x) - top_b
    if side == 1:
        n = -n_h
        gap = low_a - kc.dot(n_h, x)
    return n, gap


@kc.func
def pair_point_wrenches(side: int, n: kc.vec3, gap: float, contact: kc.vec3, ba: int, bb: int, ma: int, mb: int,
                        com_a: kc.vec3, com_b: kc.vec3, body_q: kc.array(dtype=kc.transform),
                        body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                        body_inv_mass: kc.array(dtype=float), body_inv_inertia: kc.array(dtype=kc.mat33),
                        cohesion_reach: float, material_ke: kc.array(dtype=float),
                        material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
                        material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float),
                        dt: float):
    """Wrenches on links a and b (materials ``ma``, ``mb``, centres of mass ``com_a``, ``com_b`` [m]) of one
    contact: ``side`` 0: a point of link a, normal ``n`` from b to a; 1: a point of link b, normal from a
    to b.  The force on the point's link, its reaction on the other."""
    b1 = ba
    b2 = bb
    m1 = ma
    m2 = mb
    if side == 1:
        b1 = bb
        b2 = ba
        m1 = mb
        m2 = ma
    f = link_contact_force(n, gap, contact, b1, b2, m1, m2, body_q, body_qd, body_com, body_inv_mass,
                           body_inv_inertia, cohesion_reach, material_ke, material_damping_ratio, material_mu,
                           material_cohesion, material_cohesion_distance, dt)
    if side == 1:
        f = -f
    return spatial_wrench(f, contact - com_a), spatial_wrench(-f, contact - com_b)


@kc.func
def box_link_pair_wrenches(ba: int, bb: int, ma: int, mb: int, pos_a: kc.vec3, rot_a: kc.mat33, half_a: kc.vec3,
                           pos_b: kc.vec3, rot_b: kc.mat33, half_b: kc.vec3, body_q: kc.array(dtype=kc.transform),
                           body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                           body_inv_mass: kc.array(dtype=float), body_inv_inertia: kc.array(dtype=kc.mat33),
                           cohesion_reach: float, material_ke: kc.array(dtype=float),
                           material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
                           material_cohesion: kc.array(dtype=float),
                           material_cohesion_distance: kc.array(dtype=float), dt: float):
    """Wrenches on links a and b (force [N], torque about each centre of mass [N m]) of two box shapes
    (world ``pos``, ``rot``, half extents ``half`` [m]): the edge-edge contact when an edge axis separates
    them most, else the face manifold of sim/collide_box_faces.py (the incident box's clipped face
    against the reference box's; the force on the incident box, its reaction on the other)."""
    wa = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    wb = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    com_a = kc.transform_point(body_q[ba], body_com[ba])
    com_b = kc.transform_point(body_q[bb], body_com[bb])
    count, x, y, z, gap, n, side = box_pair_manifold(pos_a, rot_a, half_a, pos_b, rot_b, half_b)
    for k in range(count):
        w1, w2 = pair_point_wrenches(side, n, gap[k], kc.vec3(x[k], y[k], z[k]), ba, bb, ma, mb, com_a, com_b,
                                     body_q, body_qd, body_com, body_inv_mass, body_inv_inertia, cohesion_reach,
                                     material_ke, material_damping_ratio, material_mu, material_cohesion,
                                     material_cohesion_distance, dt)
        wa = wa + w1
        wb = wb + w2
    return wa, wb


@kc.func
def point_against_link_shape(k: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3,
                             mesh_a: kc.uint64, kb: int, pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3,
                             mesh_b: kc.uint64, margin: float):
    """Point ``k`` of link shape a (a mesh's vertex, or a primitive's ``shape_point`` with its radius)
    against link shape b's signed distance (a closed mesh's, in its own frame, out to ``margin`` [m]
    beyond the point's radius; a primitive's): (gap [m], FAR when out of reach; normal from b to a;
    contact point on a's surface)."""
    x = pos_a
    radius = float(0.0)
    if ka == MESH:
        x = pos_a + rot_a * kc.mesh_get_point(mesh_a, k)
    else:
        pt = shape_point(ka, scale_a, k)
        x = pos_a + rot_a * kc.vec3(pt[0], pt[1], pt[2])
        radius = pt[3]
    nd = kc.vec4(0.0, 1.0, 0.0, FAR)
    if kb == MESH:
        local = mesh_surface_distance(mesh_b, kc.transpose(rot_b) * (x - pos_b), radius + margin)
        if local[3] < FAR:
            n_b = rot_b * kc.vec3(local[0], local[1], local[2])
            nd = kc.vec4(n_b[0], n_b[1], n_b[2], local[3])
    else:
        nd = static_distance(x, kb, pos_b, rot_b, scale_b, kc.vec3(0.0, 1.0, 0.0), 0.0)
    n = kc.vec3(nd[0], nd[1], nd[2])
    gap = float(FAR)
    if nd[3] < FAR:
        gap = nd[3] - radius
    return gap, n, x - n * radius


@kc.func
def add_mesh_link_pair_contacts(
        sa: int, sb: int, hulls: int, body_q: kc.array(dtype=kc.transform),
        body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
        body_inv_mass: kc.array(dtype=float), body_inv_inertia: kc.array(dtype=kc.mat33),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_info: kc.array(dtype=kc.vec3), cohesion_reach: float, material_ke: kc.array(dtype=float),
        material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
        material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float), dt: float,
        wrenches: kc.array(dtype=kc.spatial_vector)):
    """Add the contact wrenches of the self pair (``sa``, ``sb``), one of them a mesh link shape, to both
    links' ``wrenches``: each shape's points (sim/featherstone_link_points.py ``link_point_count``)
    against the other's signed distance, the force on the point's link and its reaction on the other.
    ``hulls`` 1: both are convex meshes, and a vertex on or inside the other hull takes the pair's axis
    of least overlap as its normal and its depth below the other hull's support plane along it as its
    gap (sim/collide_hull_pairs.py: equal hulls side by side have their vertices on each other's
    coplanar faces, at distance 0), and so do the points where each hull's edges cross into the other
    (sim/collide_hull_edges.py).  Skipped when the shapes' bounding balls are out of the contact law's
    reach."""
    ba = shape_body[sa]
    bb = shape_body[sb]
    tfa = body_q[ba]
    tfb = body_q[bb]
    pos_a = kc.transform_point(tfa, shape_pos[sa])
    pos_b = kc.transform_point(tfb, shape_pos[sb])
    com_a = kc.transform_point(tfa, body_com[ba])
    com_b = kc.transform_point(tfb, body_com[bb])
    bound_a = link_shape_bound(shape_type[sa], shape_scale[sa], shape_info[sa])
    bound_b = link_shape_bound(shape_type[sb], shape_scale[sb], shape_info[sb])
    # the contact law's onset window: half a step of the fastest points' relative motion beyond the surface
    qa = body_qd[ba]
    qb = body_qd[bb]
    speed = (kc.length(kc.spatial_top(qa)) + kc.length(kc.spatial_bottom(qa)) * (bound_a + kc.length(pos_a - com_a))
             + kc.length(kc.spatial_top(qb)) + kc.length(kc.spatial_bottom(qb)) * (bound_b + kc.length(pos_b - com_b)))
    reach = cohesion_reach + 0.5 * dt * speed
    if kc.length(pos_a - pos_b) - bound_a - bound_b <= reach:
        wa = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        wb = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        # the hull pair's axis of least overlap (normal from b to a) and both hulls' support planes along it
        n_h = kc.vec3(0.0, 1.0, 0.0)
        low_a = float(0.0)
        top_b = float(0.0)
        if hulls != 0:
            rot_a = kc.quat_to_matrix(kc.transform_get_rotation(tfa)) * shape_rot[sa]
            rot_b = kc.quat_to_matrix(kc.transform_get_rotation(tfb)) * shape_rot[sb]
            nva = int(shape_info[sa][0])
            nvb = int(shape_info[sb][0])
            n_h = hull_pair_normal(shape_mesh[sa], nva, int(shape_info[sa][1]), pos_a, rot_a, shape_mesh[sb], nvb,
                                   int(shape_info[sb][1]), pos_b, rot_b)
            low_a = hull_extent(shape_mesh[sa], nva, pos_a, rot_a, n_h)[0]
            top_b = hull_extent(shape_mesh[sb], nvb, pos_b, rot_b, n_h)[1]
        sides = int(2)  # a runtime bound: the body is not unrolled twice
        for side in range(sides):  # a's points against b, then b's points against a
            s1 = sa
            s2 = sb
            if side == 1:
                s1 = sb
                s2 = sa
            b1 = shape_body[s1]
            b2 = shape_body[s2]
            k1 = shape_type[s1]
            k2 = shape_type[s2]
            p1 = kc.transform_point(body_q[b1], shape_pos[s1])
            p2 = kc.transform_point(body_q[b2], shape_pos[s2])
            r1 = kc.quat_to_matrix(kc.transform_get_rotation(body_q[b1])) * shape_rot[s1]
            r2 = kc.quat_to_matrix(kc.transform_get_rotation(body_q[b2])) * shape_rot[s2]
            skin = HULL_SKIN * bound_a
            bound2 = bound_b
            if side == 1:
                skin = HULL_SKIN * bound_b
                bound2 = bound_a
            # round shapes against each other: handled by the round shape's point against the mesh (a mesh
            # vertex against a sphere is counted too: a vertex poking into it)
            for k in range(link_point_count(k1, shape_info[s1])):
                gap, n, contact = point_against_link_shape(k, k1, p1, r1, shape_scale[s1], shape_mesh[s1], k2, p2, r2,
                                                           shape_scale[s2], shape_mesh[s2], reach)
                if hulls != 0 and gap <= skin:
                    n, gap = hull_point_gap(side, contact, n_h, low_a, top_b)
                    if side == 1:
                        if hull_has_vertex_near(contact, shape_mesh[sa], int(shape_info[sa][0]), p2, r2,
                                                COINCIDENT * bound_a) != 0:
                            gap = FAR  # a's vertex here is the contact already: not twice the stiffness
                if gap < reach:
                    w1, w2 = pair_point_wrenches(side, n, gap, contact, ba, bb, shape_material[sa],
                                                 shape_material[sb], com_a, com_b, body_q, body_qd, body_com,
                                                 body_inv_mass, body_inv_inertia, cohesion_reach, material_ke,
                                                 material_damping_ratio, material_mu, material_cohesion,
                                                 material_cohesion_distance, dt)
                    wa = wa + w1
                    wb = wb + w2
            if hulls != 0 and low_a < top_b:
                # s1's edges where they cross into s2 (sim/collide_hull_edges.py): no vertex sees them; none
                # while the pair's axis separates the hulls
                for e in range(3 * int(shape_info[s1][1])):
                    enters, x_in, leaves, x_out = hull_edge_crossings(shape_mesh[s1], e, p1, r1, shape_mesh[s2],
                                                                      int(shape_info[s2][1]), p2, r2, bound2)
                    ends = int(2)
                    for end in range(ends):
                        x = x_in
                        crosses = enters
                        if end == 1:
                            x = x_out
                            crosses = leaves
                        if crosses != 0:
                            n, gap = hull_point_gap(side, x, n_h, low_a, top_b)
                            if gap < reach:
                                w1, w2 = pair_point_wrenches(side, n, gap, x, ba, bb, shape_material[sa],
                                                             shape_material[sb], com_a, com_b, body_q, body_qd,
                                                             body_com, body_inv_mass, body_inv_inertia, cohesion_reach,
                                                             material_ke, material_damping_ratio, material_mu,
                                                             material_cohesion, material_cohesion_distance, dt)
                                wa = wa + w1
                                wb = wb + w2
        wrenches[ba] = wrenches[ba] + wa
        wrenches[bb] = wrenches[bb] + wb


@kc.func
def add_link_pair_contacts(
        p: int, self_shape_a: kc.array(dtype=int), self_shape_b: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_info: kc.array(dtype=kc.vec3), cohesion_reach: float, material_ke: kc.array(dtype=float),
        material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
        material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float), dt: float,
        wrenches: kc.array(dtype=kc.spatial_vector)):
    """Add the contact wrenches of self pair ``p`` to both links' entries of ``wrenches`` (force at
    the centre of mass, torque about it); the caller's thread owns both links.  ``shape_info``:
    sim/toi_mesh_body.py's mesh_shape_info of every shape."""
    sa = self_shape_a[p]
    sb = self_shape_b[p]
    hulls = int(0)
    if sb < 0:  # two convex meshes (:func:`self_contact_pairs`)
        sb = -1 - sb
        hulls = 1
    if shape_type[sa] == MESH or shape_type[sb] == MESH:
        add_mesh_link_pair_contacts(sa, sb, hulls, body_q, body_qd, body_com, body_inv_mass, body_inv_inertia, shape_type,
                                    shape_body, shape_pos, shape_rot, shape_scale, shape_material, shape_mesh,
                                    shape_info, cohesion_reach, material_ke, material_damping_ratio, material_mu,
                                    material_cohesion, material_cohesion_distance, dt, wrenches)
    else:
        add_primitive_link_pair_contacts(sa, sb, body_q, body_qd, body_com, body_inv_mass, body_inv_inertia,
                                         shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material,
                                         cohesion_reach, material_ke, material_damping_ratio, material_mu,
                                         material_cohesion, material_cohesion_distance, dt, wrenches)


@kc.func
def add_primitive_link_pair_contacts(
        sa: int, sb: int, body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), cohesion_reach: float, material_ke: kc.array(dtype=float),
        material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
        material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float), dt: float,
        wrenches: kc.array(dtype=kc.spatial_vector)):
    """:func:`add_link_pair_contacts` of two sphere, box or capsule shapes ``sa``, ``sb``."""
    ba = shape_body[sa]
    bb = shape_body[sb]
    ka = shape_type[sa]
    kb = shape_type[sb]
    ma = shape_material[sa]
    mb = shape_material[sb]
    tfa = body_q[ba]
    tfb = body_q[bb]
    rot_a = kc.quat_to_matrix(kc.transform_get_rotation(tfa)) * shape_rot[sa]
    rot_b = kc.quat_to_matrix(kc.transform_get_rotation(tfb)) * shape_rot[sb]
    pos_a = kc.transform_point(tfa, shape_pos[sa])
    pos_b = kc.transform_point(tfb, shape_pos[sb])
    scale_a = shape_scale[sa]
    scale_b = shape_scale[sb]
    com_a = kc.transform_point(tfa, body_com[ba])
    com_b = kc.transform_point(tfb, body_com[bb])
    wa = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    wb = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if ka != BOX and kb != BOX:
        # two round shapes: the closest points of their core segments
        ha = core_half_axis(ka, rot_a, scale_a)
        hb = core_half_axis(kb, rot_b, scale_b)
        st = segment_params(pos_a - ha, ha * 2.0, pos_b - hb, hb * 2.0)
        ca = pos_a - ha + ha * (2.0 * st[0])
        cb = pos_b - hb + hb * (2.0 * st[1])
        sep = ca - cb
        dist = kc.length(sep)
        n = kc.vec3(0.0, 1.0, 0.0)
        if dist > 0.0:
            n = sep / dist
        contact = ca - n * scale_a[0]
        f = link_contact_force(n, dist - scale_a[0] - scale_b[0], contact, ba, bb, ma, mb, body_q, body_qd, body_com,
                               body_inv_mass, body_inv_inertia, cohesion_reach, material_ke, material_damping_ratio,
                               material_mu, material_cohesion, material_cohesion_distance, dt)
        wa = wa + spatial_wrench(f, contact - com_a)
        wb = wb + spatial_wrench(-f, contact - com_b)
    elif ka == BOX and kb == BOX:
        wa, wb = box_link_pair_wrenches(ba, bb, ma, mb, pos_a, rot_a, scale_a, pos_b, rot_b, scale_b, body_q, body_qd,
                                        body_com, body_inv_mass, body_inv_inertia, cohesion_reach, material_ke,
                                        material_damping_ratio, material_mu, material_cohesion,
                                        material_cohesion_distance, dt)
    else:
        # a round shape and a box: the round shape's points against the box, the box's corners against a capsule
        points = int(2 * POINTS)  # a runtime bound: the body is not unrolled 16 times
        for j in range(points):
            # a's points against b (side 0: force on a), then b's points against a (side 1: force on b)
            side = j // POINTS
            found = int(0)
            n = kc.vec3(0.0, 1.0, 0.0)
            gap = float(FAR)
            contact = pos_a
            if side == 0:
                found, n, gap, contact = point_against(j, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b)
            else:
                found, n, gap, contact = point_against(j - POINTS, kb, pos_b, rot_b, scale_b, ka, pos_a, rot_a, scale_a)
            if found != 0:
                w1, w2 = pair_point_wrenches(side, n, gap, contact, ba, bb, ma, mb, com_a, com_b, body_q, body_qd,
                                             body_com, body_inv_mass, body_inv_inertia, cohesion_reach, material_ke,
                                             material_damping_ratio, material_mu, material_cohesion,
                                             material_cohesion_distance, dt)
                wa = wa + w1
                wb = wb + w2
    wrenches[ba] = wrenches[ba] + wa
    wrenches[bb] = wrenches[bb] + wb


def self_contact_pairs(model, body_joint, enabled: bool):
    """(self_shape_a, self_shape_b, art_self_start (A+1,)) kc int arrays: the link-link shape pairs of
    each articulation (module docstring), sorted by articulation; empty when not ``enabled``.  A pair
    of two convex mesh shapes has ``-1 - sb`` in ``self_shape_b`` (:func:`add_mesh_link_pair_contacts`'s
    ``hulls``)."""
    pairs = []
    if enabled and model.shape_count:
        shape_body = model.shape_body.numpy()
        shape_type = model.shape_type.numpy()
        convex = shape_convex_flags(model)
        parent = model.joint_parent.numpy()
        art_of_joint = model.joint_articulation.numpy()
        by_art = {}
        for s in range(model.shape_count):
            b = int(shape_body[s])
            if b >= 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH):
                by_art.setdefault(int(art_of_joint[body_joint[b]]), []).append(s)
        for a in sorted(by_art):
            shapes = by_art[a]
            for i, sa in enumerate(shapes):
                for sb in shapes[i + 1:]:
                    ba, bb = int(shape_body[sa]), int(shape_body[sb])
                    if ba == bb or parent[body_joint[bb]] == ba or parent[body_joint[ba]] == bb:
                        continue
                    pairs.append((a, sa, -1 - sb if convex[sa] and convex[sb] else sb))
    table = np.array(pairs, np.int32).reshape(-1, 3)
    start = np.searchsorted(table[:, 0], np.arange(model.articulation_count + 1)).astype(np.int32)
    dev = model.device
    return (kc.array(np.ascontiguousarray(table[:, 1]), dtype=kc.int32, device=dev),
            kc.array(np.ascontiguousarray(table[:, 2]), dtype=kc.int32, device=dev),
            kc.array(start, dtype=kc.int32, device=dev))
