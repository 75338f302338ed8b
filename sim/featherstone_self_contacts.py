"""Link-link (self) contacts of one articulation for SolverFeatherstone (``self_collision=True``).

The candidate pairs are fixed at the solver's construction (:func:`self_contact_pairs`):
every two sphere, box, capsule or mesh (convex hull, closed triangle mesh) shapes on different
links of one articulation, except links joined by a joint (parent and child: their shapes overlap
at the joint by design).
Sorted by articulation, they are handled by the articulation's own thread in the step
launch, so the wrench on each link and its reaction on the other need no atomics.

The narrow phase is that of sim/collide_body_pairs.py: two round shapes (sphere,
capsule) by the closest points of their core segments; a round shape against a box by
its centre / capsule ends against the box's signed distance; a box against a capsule or
box by its eight corners, and two boxes also edge to edge (separating-axis test).  A pair
with a mesh shape (:func:`add_mesh_link_pair_contacts`): each shape's points (a mesh's vertices,
a primitive's ``shape_point``s with their radius) against the other's signed distance (a mesh's
through its BVH, sim/collide_mesh.py ``mesh_surface_distance``), once the shapes' bounding balls
are within reach; a mesh's edges crossing the other's face between vertices are not seen.  Each
contact's force is the contact law of sim/contact.py (the materials of both shapes
averaged) on the relative velocity of the two surface points, with the sum of both
links' effective inverse masses along the normal; it acts on link a and its reaction on
link b, and reaches the dofs through the step's ``J^T w`` like any other wrench.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_bodies import (BOX, CAPSULE, MAX_POINTS, SPHERE, box_edge_contact, segment_params, shape_point,
                             spatial_wrench, static_distance)
from .collide_body_pairs import core_half_axis, pair_relative_velocity
from .collide_mesh import FAR, mesh_surface_distance
from .contact import mixed_contact_force
from .featherstone_link_points import MESH, link_shape_bound
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_SPHERE

POINTS = kc.constant(MAX_POINTS)


@kc.func
def point_against(k: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3, kb: int, pos_b: kc.vec3,
                  rot_b: kc.mat33, scale_b: kc.vec3):
    """Contact point ``k`` of shape a against shape b's signed distance, when the pair uses a's
    points (a round shape against a box, a box against a capsule or box): (found, normal from b
    to a, gap [m], contact point on a's surface)."""
    found = int(0)
    n = kc.vec3(0.0, 1.0, 0.0)
    gap = float(1.0e30)
    contact = pos_a
    uses = int(0)
    if ka != BOX:
        if kb == BOX:
            uses = 1
    elif kb != SPHERE:
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
        f = mixed_contact_force(n, gap, v_rel, inv_m, ma, mb, material_ke, material_damping_ratio, material_mu,
                                material_cohesion, material_cohesion_distance, dt)
    return f


@kc.func
def link_point_count(kind: int, info: kc.vec3) -> int:
    """Contact points of a link shape against another link: a mesh's vertices (``info``: its mesh info),
    a box's corners, a capsule's ends, a sphere's centre (sim/collide_bodies.py ``shape_point``)."""
    count = 1
    if kind == CAPSULE:
        count = 2
    elif kind == BOX:
        count = 8
    elif kind == MESH:
        count = int(info[0])
    return count


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
        sa: int, sb: int, body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_info: kc.array(dtype=kc.vec3), cohesion_reach: float, material_ke: kc.array(dtype=float),
        material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
        material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float), dt: float,
        wrenches: kc.array(dtype=kc.spatial_vector)):
    """Add the contact wrenches of the self pair (``sa``, ``sb``), one of them a mesh link shape, to both
    links' ``wrenches``: each shape's points (:func:`link_point_count`) against the other's signed
    distance, the force on the point's link and its reaction on the other.  Skipped when the shapes'
    bounding balls are out of the contact law's reach."""
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
            c1 = com_a
            c2 = com_b
            if side == 1:
                c1 = com_b
                c2 = com_a
            # round shapes against each other: handled by the round shape's point against the mesh (a mesh
            # vertex against a sphere is counted too: a vertex poking into it)
            for k in range(link_point_count(k1, shape_info[s1])):
                gap, n, contact = point_against_link_shape(k, k1, p1, r1, shape_scale[s1], shape_mesh[s1], k2, p2, r2,
                                                           shape_scale[s2], shape_mesh[s2], reach)
                if gap < reach:
                    f = link_contact_force(n, gap, contact, b1, b2, shape_material[s1], shape_material[s2], body_q,
                                           body_qd, body_com, body_inv_mass, body_inv_inertia, cohesion_reach,
                                           material_ke, material_damping_ratio, material_mu, material_cohesion,
                                           material_cohesion_distance, dt)
                    w1 = spatial_wrench(f, contact - c1)
                    w2 = spatial_wrench(-f, contact - c2)
                    if side == 0:
                        wa = wa + w1
                        wb = wb + w2
                    else:
                        wb = wb + w1
                        wa = wa + w2
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
    if shape_type[sa] == MESH or shape_type[sb] == MESH:
        add_mesh_link_pair_contacts(sa, sb, body_q, body_qd, body_com, body_inv_mass, body_inv_inertia, shape_type,
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
    else:
        for k in range(POINTS):
            # a's points against b (force on a), then b's points against a (force on b)
            found, n, gap, contact = point_against(k, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b)
            if found != 0:
                f = link_contact_force(n, gap, contact, ba, bb, ma, mb, body_q, body_qd, body_com, body_inv_mass,
                                       body_inv_inertia, cohesion_reach, material_ke, material_damping_ratio,
                                       material_mu, material_cohesion, material_cohesion_distance, dt)
                wa = wa + spatial_wrench(f, contact - com_a)
                wb = wb + spatial_wrench(-f, contact - com_b)
            found2, n2, gap2, contact2 = point_against(k, kb, pos_b, rot_b, scale_b, ka, pos_a, rot_a, scale_a)
            if found2 != 0:
                f2 = link_contact_force(n2, gap2, contact2, bb, ba, mb, ma, body_q, body_qd, body_com, body_inv_mass,
                                        body_inv_inertia, cohesion_reach, material_ke, material_damping_ratio,
                                        material_mu, material_cohesion, material_cohesion_distance, dt)
                wb = wb + spatial_wrench(f2, contact2 - com_b)
                wa = wa + spatial_wrench(-f2, contact2 - com_a)
        if ka == BOX and kb == BOX:
            gap_e, n_e, contact_e, found_e = box_edge_contact(pos_a, rot_a, scale_a, pos_b, rot_b, scale_b)
            if found_e != 0:
                f = link_contact_force(n_e, gap_e, contact_e, ba, bb, ma, mb, body_q, body_qd, body_com,
                                       body_inv_mass, body_inv_inertia, cohesion_reach, material_ke,
                                       material_damping_ratio, material_mu, material_cohesion,
                                       material_cohesion_distance, dt)
                wa = wa + spatial_wrench(f, contact_e - com_a)
                wb = wb + spatial_wrench(-f, contact_e - com_b)
    wrenches[ba] = wrenches[ba] + wa
    wrenches[bb] = wrenches[bb] + wb


def self_contact_pairs(model, body_joint, enabled: bool):
    """(self_shape_a, self_shape_b, art_self_start (A+1,)) kc int arrays: the link-link shape pairs of
    each articulation (module docstring), sorted by articulation; empty when not ``enabled``."""
    pairs = []
    if enabled and model.shape_count:
        shape_body = model.shape_body.numpy()
        shape_type = model.shape_type.numpy()
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
                    pairs.append((a, sa, sb))
    table = np.array(pairs, np.int32).reshape(-1, 3)
    start = np.searchsorted(table[:, 0], np.arange(model.articulation_count + 1)).astype(np.int32)
    dev = model.device
    return (kc.array(np.ascontiguousarray(table[:, 1]), dtype=kc.int32, device=dev),
            kc.array(np.ascontiguousarray(table[:, 2]), dtype=kc.int32, device=dev),
            kc.array(start, dtype=kc.int32, device=dev))
