"""Penalty contacts of articulation links with static triangle meshes, and of mesh links with every
static collider, for SolverFeatherstone without ``toi`` (funcs of sim/featherstone_contacts.py's step).

The pairs (link shape, static collider) are listed once at the solver's construction
(:func:`mesh_link_pairs`): every sphere, box or capsule link shape with every static triangle
mesh, and every mesh link shape (``add_shape_mesh(body=link)``) with the ground and every static
sphere, box, capsule, plane and mesh (of its own environment).  Sorted by articulation, they are
visited by the articulation's own thread in the step launch, like sim/featherstone_contacts.py's
primitive pairs, so no atomics are needed.

The contact points are those of the rigid solver's body-mesh contacts (sim/collide_body_mesh.py),
each one a contact of the manifold:

- a primitive link shape against a static mesh: its points (a sphere's centre, a capsule's two
  ends, a box's eight corners; sim/collide_bodies.py ``shape_point``) against the mesh's signed
  distance (sim/collide_mesh.py ``mesh_surface_distance``, through the mesh's BVH), inflated by
  the point's radius: a box foot flat on a mesh floor gets its four bottom corners;
- a mesh link against a static mesh, the ground, a plane, box or capsule: each of its vertices
  against the collider's signed distance; against a static sphere: the sphere's centre against
  the link's mesh (in the mesh's own frame), inflated by the radius.

Each point's force is the contact law of sim/contact.py with the link's effective inverse mass
along the normal (sim/collide_bodies.py ``body_contact_wrench``), the same model (ke, kd, mu,
cohesion) as the links' other penalty contacts; the wrench reaches the dofs through the step's
``J^T w``, and the Tape differentiates it through the mesh queries.

A pair whose shape's bounding ball (about the shape's origin) is out of the contact law's reach is
skipped before its points are visited (one BVH query of the shape's origin for a static mesh).
Not handled (the rigid solver handles them): a static mesh's own vertices poking into a box or
mesh link's face (a spike under a flat foot), a static box's corners under a mesh link's face,
and sharp mesh edges across a box's face.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_bodies import SPHERE, shape_point, static_distance
from .collide_mesh import FAR, mesh_surface_distance
from .featherstone_link_points import (MESH, link_point_count, link_shape_bound, link_shape_frame, point_wrench,
                                      static_collider)
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE


@kc.func
def mesh_pair_contact_wrench(
        p: int, pair_shape: kc.array(dtype=int), pair_static: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_info: kc.array(dtype=kc.vec3), ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        cohesion_reach: float, material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), dt: float) -> kc.spatial_vector:
    """Wrench (force [N], torque about the centre of mass [N m]) on the link of mesh pair ``p``'s contacts
    (:func:`mesh_link_pairs`; ``pair_static`` -1: the ground)."""
    wrench = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    s = pair_shape[p]
    c = pair_static[p]
    b = shape_body[s]
    kind = shape_type[s]
    scale = shape_scale[s]
    info = shape_info[s]
    qd = body_qd[b]
    c_kind, c_pos, c_rot, c_scale, c_material = static_collider(c, shape_type, shape_pos, shape_rot, shape_scale,
                                                                shape_material, ground_material)
    c_mesh = kc.uint64(0)
    if c >= 0:
        c_mesh = shape_mesh[c]
    rot, pos_s, rot_s, com = link_shape_frame(body_q[b], shape_pos[s], shape_rot[s], body_com[b])
    v_com = kc.spatial_top(qd)
    w = kc.spatial_bottom(qd)
    radius = link_shape_bound(kind, scale, info)
    # the contact law's onset window reaches half a step of the fastest point's motion beyond the surface
    reach = cohesion_reach + 0.5 * dt * (kc.length(v_com) + kc.length(w) * (kc.length(pos_s - com) + radius))
    centre = float(0.0)
    if c_kind == MESH:
        centre = mesh_surface_distance(c_mesh, pos_s, radius + reach)[3]
    else:
        centre = static_distance(pos_s, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)[3]
    if centre - radius <= reach:
        inv_inertia_world = rot * body_inv_inertia[b] * kc.transpose(rot)
        # query radius beyond a point's own: the reach, and some overlap to recover from (as the rigid solver)
        margin = reach + 0.5 * radius
        count = link_point_count(kind, info)
        if kind == MESH and c_kind == SPHERE:
            count = 1  # the sphere's centre against the link's mesh
        for k in range(count):
            gap = FAR
            n = kc.vec3(0.0, 1.0, 0.0)
            contact = pos_s
            if kind == MESH:
                if c_kind == SPHERE:  # the sphere's centre against the link's mesh, in the mesh's frame
                    nd = mesh_surface_distance(shape_mesh[s], kc.transpose(rot_s) * (c_pos - pos_s),
                                               c_scale[0] + margin)
                    if nd[3] < FAR:
                        n_out = rot_s * kc.vec3(nd[0], nd[1], nd[2])  # from the link towards the sphere
                        gap = nd[3] - c_scale[0]
                        contact = c_pos - n_out * nd[3]               # the link's closest point
                        n = -n_out
                else:  # vertex k against the collider
                    x = pos_s + rot_s * kc.mesh_get_point(shape_mesh[s], k)
                    nd = kc.vec4(0.0, 1.0, 0.0, FAR)
                    if c_kind == MESH:
                        nd = mesh_surface_distance(c_mesh, x, margin)
                    else:
                        nd = static_distance(x, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
                    n = kc.vec3(nd[0], nd[1], nd[2])
                    gap = nd[3]
                    contact = x
            else:  # a primitive's point k against the static mesh, inflated by its radius
                pt = shape_point(kind, scale, k)
                x = pos_s + rot_s * kc.vec3(pt[0], pt[1], pt[2])
                nd = mesh_surface_distance(c_mesh, x, pt[3] + margin)
                if nd[3] < FAR:
                    n = kc.vec3(nd[0], nd[1], nd[2])
                    gap = nd[3] - pt[3]
                    contact = x - n * pt[3]
            if gap < FAR:
                wrench = wrench + point_wrench(n, gap, contact, com, v_com, w, body_inv_mass[b], inv_inertia_world,
                                               shape_material[s], c_material, material_ke, material_damping_ratio,
                                               material_mu, material_cohesion, material_cohesion_distance,
                                               cohesion_reach, dt)
    return wrench


def mesh_link_pairs(model, body_joint):
    """(pair_shape, pair_static, art_mesh_start (A+1,)) kc int arrays: the (link shape, static collider)
    pairs of the module docstring sorted by the link's articulation (-1: the ground)."""
    k = model.shape_count
    shape_body = model.shape_body.numpy() if k else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if k else np.zeros(0, np.int32)
    world = model.shape_world.numpy() if k else np.zeros(0, np.int32)
    static = shape_body < 0
    static_meshes = np.nonzero(static & (shape_type == SHAPE_MESH))[0]
    primitives = (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE)
    all_statics = ([-1] if model.ground else []) + [
        int(c) for c in np.nonzero(static & np.isin(shape_type, primitives + (SHAPE_MESH,)))[0]]
    pairs = []
    for s in np.nonzero(~static)[0]:
        kind = int(shape_type[s])
        if kind == SHAPE_MESH:
            colliders = all_statics
        elif kind in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE):
            colliders = [int(c) for c in static_meshes]
        else:
            continue
        for c in colliders:
            if c >= 0 and world[s] >= 0 and world[c] >= 0 and world[s] != world[c]:
                continue  # shapes of different environments do not touch
            pairs.append((int(s), c))
    table = np.array(pairs, np.int32).reshape(-1, 2)
    art = (model.joint_articulation.numpy()[body_joint[shape_body[table[:, 0]]]] if len(table)
           else np.zeros(0, np.int32))
    order = np.argsort(art, kind="stable")
    start = np.searchsorted(art[order], np.arange(model.articulation_count + 1)).astype(np.int32)
    dev = model.device
    return (kc.array(np.ascontiguousarray(table[order, 0]), dtype=kc.int32, device=dev),
            kc.array(np.ascontiguousarray(table[order, 1]), dtype=kc.int32, device=dev),
            kc.array(start, dtype=kc.int32, device=dev))


def fs_mesh_contact_inputs(model, mesh_pairs, shape_info):
    """The mesh-contact arguments of sim/featherstone_contacts.py's fs_step_contacts_kernel, in order
    (``mesh_pairs``: :func:`mesh_link_pairs`; ``shape_info``: kc vec3 (S,), sim/toi_mesh_body.py's
    mesh_shape_info)."""
    return [mesh_pairs[2], mesh_pairs[0], mesh_pairs[1], model.shape_mesh, shape_info]
