"""What SolverFeatherstone's fused link contacts share (funcs): the static collider of a pair, a link
shape's world frame, bounding radius and contact point count, and the penalty wrench of one contact point.

Used by sim/featherstone_contacts.py (primitive links against the ground and static primitives),
sim/featherstone_mesh_contacts.py (static triangle meshes and mesh links) and
sim/featherstone_self_contacts.py (link-link pairs).
"""
from __future__ import annotations

import kernelcore as kc

from .collide_bodies import BOX, CAPSULE, GROUND, body_contact_wrench
from .model import SHAPE_MESH

MESH = kc.constant(SHAPE_MESH)


@kc.func
def link_shape_bound(kind: int, scale: kc.vec3, info: kc.vec3) -> float:
    """Radius [m] of a ball about the link shape's origin holding the shape (``info``: sim/toi_mesh_body.py's
    mesh_shape_info of a mesh shape, (vertices, triangles, bounding radius); unused for a primitive)."""
    r = scale[0]
    if kind == CAPSULE:
        r = scale[0] + scale[1]
    elif kind == BOX:
        r = kc.length(scale)
    elif kind == MESH:
        r = info[2]
    return r


@kc.func
def link_point_count(kind: int, info: kc.vec3) -> int:
    """Contact points of a link shape: a mesh's vertices (``info``: its mesh info, as :func:`link_shape_bound`),
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
def static_collider(c: int, shape_type: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                    shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                    shape_material: kc.array(dtype=int), ground_material: int):
    """(kind, position [m], rotation, scale, material) of static shape ``c``; c < 0: the ground (GROUND)."""
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
    return c_kind, c_pos, c_rot, c_scale, c_material


@kc.func
def link_shape_frame(tf: kc.transform, pos: kc.vec3, rot: kc.mat33, com_local: kc.vec3):
    """World frame of a link shape (``pos``, ``rot`` in the link's frame ``tf``): (link rotation, shape
    position [m], shape rotation, the link's centre of mass [m])."""
    link_rot = kc.quat_to_matrix(kc.transform_get_rotation(tf))
    return link_rot, kc.transform_point(tf, pos), link_rot * rot, kc.transform_point(tf, com_local)


@kc.func
def point_wrench(n: kc.vec3, gap: float, contact: kc.vec3, com: kc.vec3, v_com: kc.vec3, w: kc.vec3,
                 inv_mass: float, inv_inertia_world: kc.mat33, material: int, c_material: int,
                 material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
                 material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
                 material_cohesion_distance: kc.array(dtype=float), cohesion_reach: float,
                 dt: float) -> kc.spatial_vector:
    """Wrench (force [N], torque about the centre of mass [N m]) of the contact law at a link's surface point
    ``contact`` (``gap`` [m] along the unit normal ``n``; the link moving with ``v_com`` [m/s], ``w``
    [rad/s]); zero beyond the law's onset window (the cohesion reach plus half a step of the point's motion)."""
    wrench = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    arm = contact - com
    v = v_com + kc.cross(w, arm)
    if gap < cohesion_reach + 0.5 * dt * kc.length(v):
        wrench = body_contact_wrench(n, gap, arm, v, inv_mass, inv_inertia_world, material, c_material, material_ke,
                                     material_damping_ratio, material_mu, material_cohesion,
                                     material_cohesion_distance, dt)
    return wrench
