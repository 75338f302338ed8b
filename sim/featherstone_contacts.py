"""Body-static penalty contacts for SolverFeatherstone, fused into its step (kernels + launcher).

The same contacts and forces as sim/collide_bodies.py, through the same funcs (its
``static_contact_slot``: contact points and signed distances; ``body_contact_wrench``: the
contact law of sim/contact.py with the body's effective inverse mass along the normal),
for a solver that only needs the wrenches: ``pair_contact_wrench``
takes one (body shape, static collider) pair, computes the shape's world frame once,
visits its contact points (8 box corners, 2 capsule ends, a sphere's centre; a box on a
static box: the pair's face manifold of sim/collide_box_faces.py) and returns the summed
wrench.  Nothing is written per contact (no ``Contacts`` arrays, no counter), which at 256
legged robots made contact generation ~60% of a step.  ``fs_step_contacts_kernel`` is
SolverFeatherstone's whole step with contacts in one launch: each articulation's thread
does its own pairs (sorted by articulation, :func:`pairs_by_articulation`) between
kinematics and dynamics, so no atomics are needed;
``fs_static_contacts_kernel`` (one thread per pair, :func:`eval_fs_static_contacts`) is
the same function as a launch of its own.

A pair against the ground or a static plane whose shape cannot reach the contact law's
range this step (the centre's signed distance minus the shape's bounding radius is
beyond the cohesion reach plus half a step of the fastest point's motion) is skipped
before its points are visited; the signed distance of a plane is exact, so this changes
no force.
"""
from __future__ import annotations

import kernelcore as kc

from .collide_bodies import BOX, GROUND, PLANE, SLOTS, static_contact_slot, static_distance
from .collide_box_faces import box_on_static_box
from .articulation import fk_articulation
from .contact import material_inputs
from .featherstone_kernels import fs_assemble, fs_kinematics, fs_solve_integrate
from .featherstone_link_points import link_shape_bound, link_shape_frame, point_wrench, static_collider
from .featherstone_mesh_contacts import mesh_pair_contact_wrench
from .featherstone_self_contacts import add_link_pair_contacts

ALL_SLOTS = kc.constant(SLOTS)


@kc.func
def pair_contact_wrench(
        p: int, pair_shape: kc.array(dtype=int), pair_static: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        cohesion_reach: float, material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), dt: float) -> kc.spatial_vector:
    """Wrench (force [N], torque about the centre of mass [N m]) of pair ``p``'s contacts on the shape's body."""
    wrench = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    s = pair_shape[p]
    c = pair_static[p]
    b = shape_body[s]
    kind = shape_type[s]
    scale = shape_scale[s]
    qd = body_qd[b]
    c_kind, c_pos, c_rot, c_scale, c_material = static_collider(c, shape_type, shape_pos, shape_rot, shape_scale,
                                                                shape_material, ground_material)
    rot, shape_pos_world, shape_rot_world, com = link_shape_frame(body_q[b], shape_pos[s], shape_rot[s], body_com[b])
    v_com = kc.spatial_top(qd)
    w = kc.spatial_bottom(qd)
    near = int(1)
    if c_kind == GROUND or c_kind == PLANE:
        radius = link_shape_bound(kind, scale, kc.vec3(0.0, 0.0, 0.0))
        centre = static_distance(shape_pos_world, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
        v_max = kc.length(v_com) + kc.length(w) * (kc.length(shape_pos_world - com) + radius)
        if centre[3] - radius > cohesion_reach + 0.5 * dt * v_max:
            near = 0
    if near != 0:
        inv_inertia_world = rot * body_inv_inertia[b] * kc.transpose(rot)
        for k in range(ALL_SLOTS):
            found, n, gap, contact = static_contact_slot(k, kind, scale, shape_pos_world, shape_rot_world, c_kind,
                                                         c_pos, c_rot, c_scale, ground_normal, ground_offset)
            if found != 0:
                wrench = wrench + point_wrench(n, gap, contact, com, v_com, w, body_inv_mass[b], inv_inertia_world,
                                               shape_material[s], c_material, material_ke, material_damping_ratio,
                                               material_mu, material_cohesion, material_cohesion_distance,
                                               cohesion_reach, dt)
        if kind == BOX and c_kind == BOX:  # the pair's face manifold, which static_contact_slot leaves out
            n_box, x, y, z, gaps, n_f = box_on_static_box(shape_pos_world, shape_rot_world, scale, c_pos, c_rot,
                                                          c_scale)
            for m in range(n_box):
                wrench = wrench + point_wrench(n_f, gaps[m], kc.vec3(x[m], y[m], z[m]), com, v_com, w,
                                               body_inv_mass[b], inv_inertia_world, shape_material[s], c_material,
                                               material_ke, material_damping_ratio, material_mu, material_cohesion,
                                               material_cohesion_distance, cohesion_reach, dt)
    return wrench


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
    w = pair_contact_wrench(p, pair_shape, pair_static, body_q, body_qd, body_com, body_inv_mass, body_inv_inertia,
                            shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material, ground_normal,
                            ground_offset, ground_material, cohesion_reach, material_ke, material_damping_ratio,
                            material_mu, material_cohesion, material_cohesion_distance, dt)
    if kc.dot(kc.spatial_top(w), kc.spatial_top(w)) + kc.dot(kc.spatial_bottom(w), kc.spatial_bottom(w)) > 0.0:
        kc.atomic_add(body_f, shape_body[pair_shape[p]], w)


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


@kc.kernel
def fs_step_contacts_kernel(
        art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
        joint_X_p: kc.array(dtype=kc.transform), joint_X_c: kc.array(dtype=kc.transform),
        joint_axis: kc.array(dtype=kc.vec3), body_joint: kc.array(dtype=int), joint_q: kc.array(dtype=float),
        joint_qd: kc.array(dtype=float), joint_armature: kc.array(dtype=float), joint_damping: kc.array(dtype=float),
        joint_target_ke: kc.array(dtype=float), joint_target_kd: kc.array(dtype=float),
        joint_limit_lower: kc.array(dtype=float), joint_limit_upper: kc.array(dtype=float),
        joint_limit_ke: kc.array(dtype=float), joint_limit_kd: kc.array(dtype=float),
        joint_effort_limit: kc.array(dtype=float), joint_f: kc.array(dtype=float), target_pos: kc.array(dtype=float),
        target_vel: kc.array(dtype=float), body_com: kc.array(dtype=kc.vec3), body_mass: kc.array(dtype=float),
        body_inertia: kc.array(dtype=kc.mat33), control_body_f: kc.array(dtype=kc.spatial_vector),
        gravity: kc.vec3, dt: float,
        art_pair_start: kc.array(dtype=int), pair_shape: kc.array(dtype=int), pair_static: kc.array(dtype=int),
        body_inv_mass: kc.array(dtype=float), body_inv_inertia: kc.array(dtype=kc.mat33),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        cohesion_reach: float, material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float),
        art_self_start: kc.array(dtype=int), self_shape_a: kc.array(dtype=int), self_shape_b: kc.array(dtype=int),
        art_mesh_start: kc.array(dtype=int), mesh_pair_shape: kc.array(dtype=int),
        mesh_pair_static: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_info: kc.array(dtype=kc.vec3),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_v: kc.array(dtype=kc.spatial_vector), body_a: kc.array(dtype=kc.spatial_vector),
        body_m: kc.array(dtype=float), body_h: kc.array(dtype=kc.vec3), body_io: kc.array(dtype=kc.mat33),
        joint_S: kc.array(dtype=kc.spatial_vector), wrenches: kc.array(dtype=kc.spatial_vector),
        f_acc: kc.array(dtype=kc.spatial_vector), ic_m: kc.array(dtype=float),
        ic_h: kc.array(dtype=kc.vec3), ic_io: kc.array(dtype=kc.mat33), H: kc.array(dtype=float),
        rhs: kc.array(dtype=float), L: kc.array(dtype=float), y: kc.array(dtype=float),
        qdd: kc.array(dtype=float), joint_q_out: kc.array(dtype=float),
        joint_qd_out: kc.array(dtype=float), body_q_out: kc.array(dtype=kc.transform),
        body_qd_out: kc.array(dtype=kc.spatial_vector)):
    """A whole step with contacts in one launch: kinematics, the contacts of this articulation's
    pairs (``art_pair_start``: pairs sorted by articulation, the thread owns their bodies, so no
    atomics; ``art_mesh_start``: the same for the pairs of sim/featherstone_mesh_contacts.py),
    dynamics, integration and the bodies of the new state."""
    a = kc.tid()
    fs_kinematics(a, art_table, joint_table, joint_X_p, joint_X_c, joint_axis, joint_q, joint_qd, body_com, body_mass,
                  body_inertia, body_q, body_qd, body_v, body_a, body_m, body_h, body_io, joint_S)
    for j in range(art_table[a, 0], art_table[a, 1]):
        wrenches[joint_table[j, 2]] = control_body_f[joint_table[j, 2]]
    for p in range(art_pair_start[a], art_pair_start[a + 1]):
        w = pair_contact_wrench(p, pair_shape, pair_static, body_q, body_qd, body_com, body_inv_mass,
                                body_inv_inertia, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                                shape_material, ground_normal, ground_offset, ground_material, cohesion_reach,
                                material_ke, material_damping_ratio, material_mu, material_cohesion,
                                material_cohesion_distance, dt)
        b = shape_body[pair_shape[p]]
        wrenches[b] = wrenches[b] + w
    for p in range(art_self_start[a], art_self_start[a + 1]):
        add_link_pair_contacts(p, self_shape_a, self_shape_b, body_q, body_qd, body_com, body_inv_mass,
                               body_inv_inertia, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                               shape_material, shape_mesh, shape_info, cohesion_reach, material_ke,
                               material_damping_ratio, material_mu, material_cohesion, material_cohesion_distance, dt,
                               wrenches)
    for p in range(art_mesh_start[a], art_mesh_start[a + 1]):
        w = mesh_pair_contact_wrench(p, mesh_pair_shape, mesh_pair_static, body_q, body_qd, body_com, body_inv_mass,
                                     body_inv_inertia, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                                     shape_material, shape_mesh, shape_info, ground_normal, ground_offset,
                                     ground_material, cohesion_reach, material_ke, material_damping_ratio,
                                     material_mu, material_cohesion, material_cohesion_distance, dt)
        b = shape_body[mesh_pair_shape[p]]
        wrenches[b] = wrenches[b] + w
    fs_assemble(a, art_table, joint_table, joint_X_p, body_joint, joint_q, joint_qd, joint_armature, joint_damping,
                joint_target_ke, joint_target_kd, joint_limit_lower, joint_limit_upper, joint_limit_ke, joint_limit_kd,
                joint_effort_limit, joint_f, target_pos, target_vel, body_q, body_com, wrenches, body_v, body_a,
                body_m, body_h, body_io, joint_S, gravity, dt, f_acc, ic_m, ic_h, ic_io, H, rhs)
    fs_solve_integrate(a, art_table, joint_table, joint_X_c, body_com, H, rhs, joint_q, joint_qd, dt, L, y, qdd,
                       joint_q_out, joint_qd_out)
    fk_articulation(a, art_table, joint_table, joint_X_p, joint_X_c, joint_axis, joint_q_out, joint_qd_out, body_com,
                    body_q_out, body_qd_out)


def pairs_by_articulation(model, pairs, body_joint):
    """(pairs sorted by the articulation of their body shape, art_pair_start (A+1,)), kc arrays."""
    import numpy as np

    shape, static = (a.numpy() for a in pairs)
    art = model.joint_articulation.numpy()[body_joint[model.shape_body.numpy()[shape]]] if len(shape) else shape
    order = np.argsort(art, kind="stable")
    start = np.searchsorted(art[order], np.arange(model.articulation_count + 1)).astype(np.int32)
    dev = model.device
    return ((kc.array(np.ascontiguousarray(shape[order]).astype(np.int32), dtype=kc.int32, device=dev),
             kc.array(np.ascontiguousarray(static[order]).astype(np.int32), dtype=kc.int32, device=dev)),
            kc.array(start, dtype=kc.int32, device=dev))


def fs_contact_inputs(model, pairs, art_pair_start, self_pairs):
    """The contact arguments of fs_step_contacts_kernel, in order (``self_pairs``: sim/featherstone_self_contacts.py's
    self_contact_pairs)."""
    return [art_pair_start, pairs[0], pairs[1], model.body_inv_mass, model.body_inv_inertia, model.shape_type,
            model.shape_body, model.shape_pos, model.shape_rot, model.shape_scale, model.shape_material,
            model.ground_normal, model.ground_offset, model.ground_material, model.material_max_cohesion_distance,
            *material_inputs(model), self_pairs[2], self_pairs[0], self_pairs[1]]
