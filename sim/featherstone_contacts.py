"""Body-static penalty contacts for SolverFeatherstone in one launch (kernel + launcher).

The same contacts and forces as sim/collide_bodies.py (its contact points, signed
distances and the contact law of sim/contact.py with the body's effective inverse mass
along the normal), fused for a solver that only needs the wrenches: one thread per
(body shape, static collider) pair computes the shape's world frame once, visits its
contact points (8 box corners, 2 capsule ends, a sphere's centre, the box edge-edge
slot) and adds the summed wrench to the body with a single ``atomic_add``.  Nothing is
written per contact (no ``Contacts`` arrays, no counter), which at 256 legged robots
made contact generation ~60% of a step.

A pair against the ground or a static plane whose shape cannot reach the contact law's
range this step (the centre's signed distance minus the shape's bounding radius is
beyond the cohesion reach plus half a step of the fastest point's motion) is skipped
before its points are visited; the signed distance of a plane is exact, so this changes
no force.
"""
from __future__ import annotations

import kernelcore as kc

from .collide_bodies import (BOX, CAPSULE, GROUND, MAX_POINTS, PLANE, SLOTS, SPHERE, box_edge_contact,
                             closest_point_to, shape_point, spatial_wrench, static_distance)
from .contact import material_inputs, mixed_contact_force

POINTS = kc.constant(MAX_POINTS)
ALL_SLOTS = kc.constant(SLOTS)


@kc.func
def bounding_radius(kind: int, scale: kc.vec3) -> float:
    """Radius [m] of a ball about the shape's origin holding the whole shape."""
    r = scale[0]
    if kind == CAPSULE:
        r = scale[0] + scale[1]
    elif kind == BOX:
        r = kc.length(scale)
    return r


@kc.kernel
def fs_static_contacts_kernel(
        pair_shape: kc.array(dtype=int), pair_static: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        cohesion_reach: float, material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), dt: float,
        body_f: kc.array(dtype=kc.spatial_vector)):
    p = kc.tid()
    s = pair_shape[p]
    c = pair_static[p]
    b = shape_body[s]
    kind = shape_type[s]
    scale = shape_scale[s]
    tf = body_q[b]
    qd = body_qd[b]
    c_kind = GROUND
    c_pos = kc.vec3(0.0, 0.0, 0.0)
    c_rot = kc.identity(3, dtype=float)
    c_scale = kc.vec3(0.0, 0.0, 0.0)
    c_material = ground_material
    if c >= 0:
        c_kind = shape_type[c]
        c_pos = shape_pos[c]
        c_rot = shape_rot[c]
        c_scale = shape_scale[c]
        c_material = shape_material[c]
    rot = kc.quat_to_matrix(kc.transform_get_rotation(tf))
    shape_rot_world = rot * shape_rot[s]
    shape_pos_world = kc.transform_point(tf, shape_pos[s])
    com = kc.transform_point(tf, body_com[b])
    v_com = kc.spatial_top(qd)
    w = kc.spatial_bottom(qd)
    near = int(1)
    if c_kind == GROUND or c_kind == PLANE:
        radius = bounding_radius(kind, scale)
        centre = static_distance(shape_pos_world, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
        v_max = kc.length(v_com) + kc.length(w) * (kc.length(shape_pos_world - com) + radius)
        if centre[3] - radius > cohesion_reach + 0.5 * dt * v_max:
            near = 0
    if near != 0:
        inv_inertia_world = rot * body_inv_inertia[b] * kc.transpose(rot)
        wrench = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        touched = int(0)
        for k in range(ALL_SLOTS):
            found = int(0)
            n = kc.vec3(0.0, 1.0, 0.0)
            gap = float(1.0e30)
            contact = shape_pos_world
            if k < POINTS:
                pt = shape_point(kind, scale, k)
                if c_kind == SPHERE:
                    if kind != SPHERE:  # the body's point closest to the sphere's centre, once
                        pt = kc.vec4(0.0, 0.0, 0.0, -1.0)
                        if k == 0:
                            pt = closest_point_to(kind, scale, kc.transpose(shape_rot_world) * (c_pos - shape_pos_world))
                if pt[3] >= 0.0:
                    x = shape_pos_world + shape_rot_world * kc.vec3(pt[0], pt[1], pt[2])
                    nd = static_distance(x, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
                    n = kc.vec3(nd[0], nd[1], nd[2])
                    gap = nd[3] - pt[3]
                    contact = x - n * pt[3]  # on the body's surface
                    found = 1
            elif kind == BOX and c_kind == BOX:
                gap_e, n_e, contact_e, found_e = box_edge_contact(shape_pos_world, shape_rot_world, scale, c_pos,
                                                                  c_rot, c_scale)
                if found_e != 0:
                    n = n_e
                    gap = gap_e
                    contact = contact_e
                    found = 1
            if found != 0:
                arm = contact - com
                v = v_com + kc.cross(w, arm)
                if gap < cohesion_reach + 0.5 * dt * kc.length(v):
                    rn = kc.cross(arm, n)
                    inv_m = body_inv_mass[b] + kc.dot(rn, inv_inertia_world * rn)
                    f = mixed_contact_force(n, gap, v, inv_m, shape_material[s], c_material, material_ke,
                                            material_damping_ratio, material_mu, material_cohesion,
                                            material_cohesion_distance, dt)
                    wrench = wrench + spatial_wrench(f, arm)
                    touched = 1
        if touched != 0:
            kc.atomic_add(body_f, b, wrench)


def eval_fs_static_contacts(model, body_q, body_qd, pairs, wrenches, dt: float):
    """Add the penalty contact wrenches [N, N m] of the body shapes at ``body_q`` / ``body_qd`` (B,)
    against the ground and static shapes (``pairs`` from sim.collide_bodies.body_static_pairs) to
    ``wrenches`` (spatial_vector, (B,)); one thread per pair."""
    pair_shape, pair_static = pairs
    if pair_shape.shape[0] == 0:
        return
    kc.launch(fs_static_contacts_kernel, dim=pair_shape.shape[0],
              inputs=[pair_shape, pair_static, body_q, body_qd, model.body_com, model.body_inv_mass,
                      model.body_inv_inertia, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, model.ground_normal, model.ground_offset,
                      model.ground_material, model.material_max_cohesion_distance, *material_inputs(model),
                      float(dt)],
              outputs=[wrenches], device=model.device)
