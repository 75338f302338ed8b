"""Link-link (self) contacts of one articulation for SolverFeatherstone (``self_collision=True``).

The candidate pairs are fixed at the solver's construction (:func:`self_contact_pairs`):
every two sphere, box or capsule shapes on different links of one articulation, except
links joined by a joint (parent and child: their shapes overlap at the joint by design).
Mesh shapes on links are left out, with a warning naming them (they meet static colliders:
sim/featherstone_mesh_contacts.py, and with ``toi`` sim/featherstone_toi_shapes.py).
Sorted by articulation, they are handled by the articulation's own thread in the step
launch, so the wrench on each link and its reaction on the other need no atomics.

The narrow phase is that of sim/collide_body_pairs.py: two round shapes (sphere,
capsule) by the closest points of their core segments; a round shape against a box by
its centre / capsule ends against the box's signed distance; a box against a capsule or
box by its eight corners, and two boxes also edge to edge (separating-axis test).  Each
contact's force is the contact law of sim/contact.py (the materials of both shapes
averaged) on the relative velocity of the two surface points, with the sum of both
links' effective inverse masses along the normal; it acts on link a and its reaction on
link b, and reaches the dofs through the step's ``J^T w`` like any other wrench.
"""
from __future__ import annotations

import warnings

import numpy as np

import kernelcore as kc

from .collide_bodies import (BOX, CAPSULE, MAX_POINTS, SPHERE, box_edge_contact, segment_params, shape_point,
                             spatial_wrench, static_distance)
from .collide_body_pairs import core_half_axis, pair_relative_velocity
from .contact import mixed_contact_force
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
def add_link_pair_contacts(
        p: int, self_shape_a: kc.array(dtype=int), self_shape_b: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), cohesion_reach: float, material_ke: kc.array(dtype=float),
        material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
        material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float), dt: float,
        wrenches: kc.array(dtype=kc.spatial_vector)):
    """Add the contact wrenches of self pair ``p`` to both links' entries of ``wrenches`` (force at
    the centre of mass, torque about it); the caller's thread owns both links."""
    sa = self_shape_a[p]
    sb = self_shape_b[p]
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
    each articulation (module docstring), sorted by articulation; empty when not ``enabled``.  Mesh
    shapes on links are not in these pairs: a warning names them."""
    pairs = []
    if enabled and model.shape_count:
        shape_body = model.shape_body.numpy()
        shape_type = model.shape_type.numpy()
        meshes = np.nonzero((shape_body >= 0) & (shape_type == SHAPE_MESH))[0]
        if len(meshes):
            shown = ", ".join(str(int(s)) for s in meshes[:5]) + (", ..." if len(meshes) > 5 else "")
            warnings.warn(f"SolverFeatherstone(self_collision=True): {len(meshes)} mesh shapes on links (shapes "
                          f"{shown}) do not collide with the other links of their robot (only sphere, box and "
                          f"capsule shapes do; sim/featherstone_self_contacts.py)", stacklevel=3)
        parent = model.joint_parent.numpy()
        art_of_joint = model.joint_articulation.numpy()
        by_art = {}
        for s in range(model.shape_count):
            b = int(shape_body[s])
            if b >= 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE):
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
