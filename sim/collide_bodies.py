"""Contacts of body shapes with the ground and static shapes: penalty forces (kernel + launcher).

The candidate pairs (body shape, static collider) are listed once, when the solver is
made (:func:`body_static_pairs`), and each step launches one thread per pair and
contact point: a sphere tests its centre, a capsule its two segment ends, a box its
eight corners, each point inflated by the shape's radius (0 for box corners), against
the signed distance of the collider (ground, static plane, sphere, box or capsule).
Against a static sphere, a box or capsule body instead tests its single point closest
to the sphere's centre (a sphere resting on a box face touches no corner).  Not handled:
box edges against box edges, a capsule's side against a static box or capsule.

The force at each point is the particles' contact law (sim/contact.py) with the body's
effective inverse mass along the normal, ``1/m + (r x n) . I_world^-1 (r x n)``, and is
added to the body's wrench with ``atomic_add``.  The kernel reads only ``state_in``, so
a Tape replays it exactly.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .collide_shapes import box_closest
from .contact import material_inputs, mixed_contact_force
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SPHERE

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
CAPSULE = kc.constant(4)
GROUND = kc.constant(-1)

#: contact points per pair (the eight corners of a box)
MAX_POINTS = 8


@kc.func
def static_distance(x: kc.vec3, kind: int, pos: kc.vec3, rot: kc.mat33, scale: kc.vec3, ground_normal: kc.vec3,
                    ground_offset: float) -> kc.vec4:
    """Outward unit normal and signed distance [m] of point ``x`` from a static collider, (nx, ny, nz, d).

    ``kind``: GROUND (then ``ground_normal``/``ground_offset`` describe it), SPHERE, BOX,
    CAPSULE or PLANE (then ``pos``, ``rot``, ``scale`` do).
    """
    n = ground_normal
    d = kc.dot(ground_normal, x) - ground_offset
    if kind == SPHERE:
        rel = x - pos
        dist = kc.length(rel)
        n = kc.vec3(0.0, 1.0, 0.0)
        if dist > 0.0:
            n = rel / dist
        d = dist - scale[0]
    elif kind == BOX:
        nd = box_closest(kc.transpose(rot) * (x - pos), scale)
        n = rot * kc.vec3(nd[0], nd[1], nd[2])
        d = nd[3]
    elif kind == CAPSULE:
        axis = rot * kc.vec3(0.0, 1.0, 0.0)
        rel = x - pos
        along = kc.clamp(kc.dot(rel, axis), -scale[1], scale[1])
        off = rel - axis * along
        dist = kc.length(off)
        n = kc.vec3(0.0, 1.0, 0.0)
        if dist > 0.0:
            n = off / dist
        d = dist - scale[0]
    elif kind == PLANE:
        n = rot * kc.vec3(0.0, 1.0, 0.0)
        d = kc.dot(n, x - pos)
    return kc.vec4(n[0], n[1], n[2], d)


@kc.func
def shape_point(kind: int, scale: kc.vec3, k: int) -> kc.vec4:
    """Contact point ``k`` of a body shape in the shape frame and its radius, (x, y, z, radius);
    radius < 0 when the shape has fewer points."""
    p = kc.vec4(0.0, 0.0, 0.0, -1.0)
    if kind == SPHERE:
        if k == 0:
            p = kc.vec4(0.0, 0.0, 0.0, scale[0])
    elif kind == CAPSULE:
        if k < 2:
            p = kc.vec4(0.0, scale[1] * (2.0 * float(k) - 1.0), 0.0, scale[0])
    elif kind == BOX:
        sx = 2.0 * float(k % 2) - 1.0
        sy = 2.0 * float((k // 2) % 2) - 1.0
        sz = 2.0 * float(k // 4) - 1.0
        p = kc.vec4(sx * scale[0], sy * scale[1], sz * scale[2], 0.0)
    return p


@kc.func
def closest_point_to(kind: int, scale: kc.vec3, c: kc.vec3) -> kc.vec4:
    """The point of a box or capsule (shape frame) closest to ``c`` (shape frame) and its radius."""
    p = kc.vec4(0.0, 0.0, 0.0, -1.0)
    if kind == BOX:
        q = kc.min(kc.max(c, -scale), scale)
        p = kc.vec4(q[0], q[1], q[2], 0.0)
    elif kind == CAPSULE:
        p = kc.vec4(0.0, kc.clamp(c[1], -scale[1], scale[1]), 0.0, scale[0])
    return p


@kc.func
def spatial_wrench(force: kc.vec3, arm: kc.vec3) -> kc.spatial_vector:
    """Wrench (force, torque about the centre of mass) of ``force`` [N] applied at ``arm`` [m] from it."""
    return kc.spatial_vector(force, kc.cross(arm, force))


@kc.kernel
def eval_body_static_contacts_kernel(
        pair_shape: kc.array(dtype=int), pair_static: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int),
        ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), cohesion_reach: float, dt: float,
        body_f: kc.array(dtype=kc.spatial_vector)):
    p, k = kc.tid()
    s = pair_shape[p]
    c = pair_static[p]
    b = shape_body[s]
    kind = shape_type[s]
    tf = body_q[b]
    # the static collider (the ground when c < 0)
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
    shape_rot_world = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * shape_rot[s]
    shape_pos_world = kc.transform_point(tf, shape_pos[s])
    pt = shape_point(kind, shape_scale[s], k)
    if c_kind == SPHERE:
        if kind != SPHERE:  # the body's point closest to the sphere's centre, once
            pt = kc.vec4(0.0, 0.0, 0.0, -1.0)
            if k == 0:
                pt = closest_point_to(kind, shape_scale[s], kc.transpose(shape_rot_world) * (c_pos - shape_pos_world))
    if pt[3] >= 0.0:
        x = shape_pos_world + shape_rot_world * kc.vec3(pt[0], pt[1], pt[2])
        nd = static_distance(x, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
        n = kc.vec3(nd[0], nd[1], nd[2])
        gap = nd[3] - pt[3]
        qd = body_qd[b]
        com = kc.transform_point(tf, body_com[b])
        contact = x - n * pt[3]  # on the body's surface
        arm = contact - com
        v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
        reach = cohesion_reach + 0.5 * dt * kc.length(v)
        if gap < reach:
            rot = kc.quat_to_matrix(kc.transform_get_rotation(tf))
            inv_inertia_world = rot * body_inv_inertia[b] * kc.transpose(rot)
            rn = kc.cross(arm, n)
            w = body_inv_mass[b] + kc.dot(rn, inv_inertia_world * rn)
            f = mixed_contact_force(n, gap, v, w, shape_material[s], c_material, material_ke,
                                    material_damping_ratio, material_mu, material_cohesion,
                                    material_cohesion_distance, dt)
            kc.atomic_add(body_f, b, spatial_wrench(f, arm))


def body_static_pairs(model, swept_shapes=(), swept_kinds=(), device=None):
    """(pair_shape, pair_static) kc int arrays: every body shape with the ground (-1) and each static
    sphere, box, capsule and plane shape (meshes are not collided with bodies).

    Pairs of a shape in ``swept_shapes`` with the ground or a static shape whose type is in
    ``swept_kinds`` are left out: time-of-impact contacts handle them (sim/toi.py).
    """
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    body_shapes = [s for s in range(model.shape_count)
                   if shape_body[s] >= 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE)]
    statics = ([-1] if model.ground else []) + [
        s for s in range(model.shape_count)
        if shape_body[s] < 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE)]
    swept = set(int(s) for s in swept_shapes)
    world = model.shape_world.numpy() if model.shape_count else np.zeros(0, np.int32)

    def penalty(s, c):
        if c >= 0 and world[s] >= 0 and world[c] >= 0 and world[s] != world[c]:
            return False  # shapes of different environments do not touch
        return s not in swept or not (c < 0 or shape_type[c] in swept_kinds)

    pairs = np.array([(s, c) for s in body_shapes for c in statics if penalty(s, c)], np.int32).reshape(-1, 2)
    dev = device or model.device
    return (kc.array(np.ascontiguousarray(pairs[:, 0]), dtype=kc.int32, device=dev),
            kc.array(np.ascontiguousarray(pairs[:, 1]), dtype=kc.int32, device=dev))


def eval_body_static_contacts(model, state, pairs, wrenches, dt: float):
    """Add the penalty contact wrenches [N, N m] of ``state``'s body shapes against the ground and static
    shapes to ``wrenches`` (spatial_vector, (B,)); ``pairs`` from :func:`body_static_pairs`."""
    pair_shape, pair_static = pairs
    if pair_shape.shape[0] == 0:
        return
    kc.launch(eval_body_static_contacts_kernel, dim=(pair_shape.shape[0], MAX_POINTS),
              inputs=[pair_shape, pair_static, state.body_q, state.body_qd, model.body_com, model.body_inv_mass,
                      model.body_inv_inertia, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, model.ground_normal, model.ground_offset,
                      model.ground_material, *material_inputs(model), model.material_max_cohesion_distance,
                      float(dt)],
              outputs=[wrenches], device=model.device)
