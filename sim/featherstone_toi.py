"""Time-of-impact contacts for SolverFeatherstone (``SolverFeatherstone(model, toi=True)``).

Every sphere shape on a link is swept, not pushed out by penalty forces: after the step's
unconstrained solve (``qd' = qd + dt qdd``, with the penalty contacts of the other shapes
and everything else of the step), the sphere's centre moves to first order along
``d = J(x0) qd' dt`` (``J`` the point's Jacobian at the start of the step) and is swept
against the ground and the static planes, spheres and boxes (sim/toi.py's ``first_hit``,
so a thin box is seen however far the link moves in one step).  The earliest hit ``s`` in
[0, 1] over the articulation's spheres gets one impact, in generalised coordinates:

    w_n = j_n H^-1 j_n^T = |L^-1 j_n^T|^2        (j_n = n^T J at the contact point, L L^T = H)
    j_n impulse = max(e |v_n(s)| - v_n', 0) / w_n   (e = 0 below the resting speed)
    friction    = min(mu j_n, |v_t'| / w_t)  against the sliding direction
    qd_out = qd' + H^-1 J^T (n j_n - t j_t)

``v_n(s)`` is the normal velocity at the time of impact (``qd + s dt qdd``), ``v_n'`` and
``v_t'`` those at the end of the step, so one impulse both bounces (restitution of the
material pair, ``material_restitution``) and, when the rest of the step's acceleration
presses into the surface, stops it (resting contact).  ``H`` is the step's matrix (mass,
armature and the implicit drive terms), so the impulse moves the whole articulation with
its articulated inertia: a pendulum bob hitting a wall takes the pivot's reaction.  The
coordinates move with ``qd'`` up to the impact and with ``qd_out`` after it
(``qd_move = qd' + (1 - s) dqd``).  Because ``s`` is a smooth function of the initial
conditions, gradients through a bounce are those of the bounce (e.g. d(height after) /
d(height before) = -e for a ball dropped without gravity).

Box, capsule and mesh shapes on links are swept rigidly with their link's twist by the rigid
solver's queries (sim/featherstone_toi_shapes.py) and take the same impulse, at the centroid
of their contact manifold.

Limits: one impact per articulation per step (the earliest); static capsules keep penalty
contacts with the spheres too; the sweep is linear in the step (a link's rotation over one
step is linearised).
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .articulation import fk_articulation
from .featherstone_contacts import pair_contact_wrench
from .featherstone_self_contacts import add_link_pair_contacts
from .featherstone_kernels import fs_assemble, fs_integrate_coords, fs_kinematics, fs_solve
from .featherstone_toi_shapes import link_shape_contact_mesh, sweep_link_shape_mesh
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_SPHERE
from .toi_mesh_body import mesh_shape_info
from .toi import NO_HIT, SPHERE, first_hit, first_hit_material


@kc.func
def link_twist(b: int, joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
               joint_S: kc.array(dtype=kc.spatial_vector), qd: kc.array(dtype=float)) -> kc.spatial_vector:
    """Spatial velocity of body ``b`` for the dof velocities ``qd`` (angular [rad/s], linear [m/s] of the
    point at the articulation's reference point): the motion subspaces of the joints from ``b`` to the root."""
    v = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    j = body_joint[b]
    while j >= 0:
        for k in range(joint_table[j, 4], joint_table[j, 5]):
            v = v + joint_S[k] * qd[k]
        p = joint_table[j, 1]
        j = -1
        if p >= 0:
            j = body_joint[p]
    return v


@kc.func
def link_point_velocity(b: int, x: kc.vec3, origin: kc.vec3, joint_table: kc.array(dtype=int, ndim=2),
                        body_joint: kc.array(dtype=int), joint_S: kc.array(dtype=kc.spatial_vector),
                        qd: kc.array(dtype=float)) -> kc.vec3:
    """World velocity [m/s] of the point ``x`` fixed to body ``b`` for the dof velocities ``qd``:
    ``J(x) qd``, summing the motion subspaces of the joints from ``b`` to the root."""
    v = link_twist(b, joint_table, body_joint, joint_S, qd)
    return kc.spatial_bottom(v) + kc.cross(kc.spatial_top(v), x - origin)


@kc.func
def joint_moves_body(joint: int, b: int, joint_table: kc.array(dtype=int, ndim=2),
                     body_joint: kc.array(dtype=int)) -> float:
    """1.0 when ``joint`` is on the path from body ``b`` to the root (its dofs move ``b``), else 0.0."""
    r = float(0.0)
    j = int(-1)
    if b >= 0:
        j = body_joint[b]
    while j >= 0:
        if j == joint:
            r = 1.0
        p = joint_table[j, 1]
        j = -1
        if p >= 0:
            j = body_joint[p]
    return r


@kc.func
def generalised_force(a: int, b: int, f: kc.spatial_vector, art_table: kc.array(dtype=int, ndim=2),
                      joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
                      joint_S: kc.array(dtype=kc.spatial_vector), tau: kc.array(dtype=float)):
    """``tau = J^T f`` of articulation ``a`` for the wrench ``f`` (torque about the articulation's
    reference point, force) on body ``b`` (every dof written once)."""
    for j in range(art_table[a, 0], art_table[a, 1]):
        on = joint_moves_body(j, b, joint_table, body_joint)
        for k in range(joint_table[j, 4], joint_table[j, 5]):
            tau[k] = on * kc.dot(joint_S[k], f)


@kc.func
def lower_solve(a: int, art_table: kc.array(dtype=int, ndim=2), L: kc.array(dtype=float),
                b: kc.array(dtype=float), out: kc.array(dtype=float)) -> float:
    """``out = L^-1 b`` for articulation ``a``'s Cholesky factor; returns ``|out|^2 = b^T H^-1 b``."""
    d0 = art_table[a, 2]
    n = art_table[a, 3] - d0
    h0 = art_table[a, 4]
    total = float(0.0)
    for i in range(n):
        s = b[d0 + i]
        for k in range(i):
            s = s - L[h0 + i * n + k] * out[d0 + k]
        y = s / L[h0 + i * n + i]
        out[d0 + i] = y
        total = total + y * y
    return total


@kc.func
def upper_solve(a: int, art_table: kc.array(dtype=int, ndim=2), L: kc.array(dtype=float),
                b: kc.array(dtype=float), out: kc.array(dtype=float)):
    """``out = L^-T b`` for articulation ``a``'s Cholesky factor."""
    d0 = art_table[a, 2]
    n = art_table[a, 3] - d0
    h0 = art_table[a, 4]
    for ii in range(n):
        i = n - 1 - ii
        s = b[d0 + i]
        for k in range(i + 1, n):
            s = s - L[h0 + k * n + i] * out[d0 + k]
        out[d0 + i] = s / L[h0 + i * n + i]


@kc.func
def fs_toi_impact(a: int, art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                  joint_X_p: kc.array(dtype=kc.transform), body_joint: kc.array(dtype=int),
                  joint_qd: kc.array(dtype=float), dt: float, body_q: kc.array(dtype=kc.transform),
                  joint_S: kc.array(dtype=kc.spatial_vector), L: kc.array(dtype=float), qdd: kc.array(dtype=float),
                  art_toi_start: kc.array(dtype=int), toi_shape: kc.array(dtype=int), ground: int,
                  ground_normal: kc.vec3, ground_offset: float, ground_material: int, shape_count: int,
                  shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                  shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                  shape_material: kc.array(dtype=int), material_restitution: kc.array(dtype=float),
                  material_mu: kc.array(dtype=float), resting_speed: float, body_com: kc.array(dtype=kc.vec3),
                  shape_mesh: kc.array(dtype=kc.uint64), shape_info: kc.array(dtype=kc.vec3),
                  qd_free: kc.array(dtype=float), tau_n: kc.array(dtype=float), tau_t: kc.array(dtype=float),
                  y_n: kc.array(dtype=float), y_t: kc.array(dtype=float), impulse: kc.array(dtype=float),
                  dqd: kc.array(dtype=float), qd_move: kc.array(dtype=float), joint_qd_out: kc.array(dtype=float)):
    """The impact of articulation ``a`` after its solve (module docstring): writes ``joint_qd_out`` and
    ``qd_move``, the velocities its coordinates move with (both ``qd'`` when nothing is hit)."""
    d0 = art_table[a, 2]
    d1 = art_table[a, 3]
    for k in range(d0, d1):
        qd_free[k] = joint_qd[k] + qdd[k] * dt
    origin = kc.transform_get_translation(joint_X_p[art_table[a, 0]])
    best_s = float(NO_HIT)
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_x = kc.vec3(0.0, 0.0, 0.0)
    best_b = int(-1)
    e = float(0.0)
    mu = float(0.0)
    for i in range(art_toi_start[a], art_toi_start[a + 1]):
        sh = toi_shape[i]
        b = shape_body[sh]
        if shape_type[sh] == SPHERE:
            r = shape_scale[sh][0]
            c0 = kc.transform_point(body_q[b], shape_pos[sh])
            d = link_point_velocity(b, c0, origin, joint_table, body_joint, joint_S, qd_free) * dt
            hit = first_hit(c0, d, r, ground, ground_normal, ground_offset, ground_material, shape_count, shape_type,
                            shape_body, shape_pos, shape_rot, shape_scale, shape_material)
            if hit[3] < best_s:
                best_s = hit[3]
                best_n = kc.vec3(hit[0], hit[1], hit[2])
                best_x = c0 + d * hit[3] - best_n * r  # the contact point at the time of impact
                best_b = b
                mb = first_hit_material(c0, d, r, ground, ground_normal, ground_offset, ground_material, shape_count,
                                        shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material)
                ma = shape_material[sh]
                e = 0.5 * (material_restitution[ma] + material_restitution[mb])
                mu = 0.5 * (material_mu[ma] + material_mu[mb])
        else:  # a box, a capsule or a mesh: swept rigidly with its link's twist (sim/featherstone_toi_shapes.py)
            twist = link_twist(b, joint_table, body_joint, joint_S, qd_free)
            w = kc.spatial_top(twist)
            com_w = kc.transform_point(body_q[b], body_com[b])
            v_com = kc.spatial_bottom(twist) + kc.cross(w, com_w - origin)
            q_b = kc.transform_get_rotation(body_q[b])
            offset = shape_pos[sh] - body_com[b]
            s_hit = sweep_link_shape_mesh(sh, com_w, q_b, v_com, w, offset, dt, ground, ground_normal,
                                          ground_offset, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                          shape_scale, shape_mesh, shape_info[sh])
            if s_hit < best_s:
                best_s = s_hit
                n_hit, x_hit, mb2 = link_shape_contact_mesh(sh, com_w, q_b, v_com, w, s_hit * dt, offset, ground,
                                                            ground_normal, ground_offset, ground_material,
                                                            shape_count, shape_type, shape_body, shape_pos, shape_rot,
                                                            shape_scale, shape_material, shape_mesh, shape_info[sh])
                best_n = n_hit
                best_x = x_hit
                best_b = b
                ma2 = shape_material[sh]
                e = 0.5 * (material_restitution[ma2] + material_restitution[mb2])
                mu = 0.5 * (material_mu[ma2] + material_mu[mb2])
    n = best_n
    arm = best_x - origin
    f_n = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    f_t = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    vn_hit = float(0.0)
    vn_end = float(0.0)
    vt_len = float(0.0)
    if best_b >= 0:
        v_end = link_point_velocity(best_b, best_x, origin, joint_table, body_joint, joint_S, qd_free)
        v_start = link_point_velocity(best_b, best_x, origin, joint_table, body_joint, joint_S, joint_qd)
        v_hit = v_start + (v_end - v_start) * best_s
        vn_hit = kc.dot(n, v_hit)
        vn_end = kc.dot(n, v_end)
        f_n = kc.spatial_vector(kc.cross(arm, n), n)
        vt = v_end - n * vn_end
        vt_len = kc.length(vt)
        if vt_len > 0.0:
            t = vt / vt_len
            f_t = kc.spatial_vector(kc.cross(arm, t), t)
    generalised_force(a, best_b, f_n, art_table, joint_table, body_joint, joint_S, tau_n)
    generalised_force(a, best_b, f_t, art_table, joint_table, body_joint, joint_S, tau_t)
    w_n = lower_solve(a, art_table, L, tau_n, y_n)
    w_t = lower_solve(a, art_table, L, tau_t, y_t)
    jn = float(0.0)
    jt = float(0.0)
    if best_b >= 0 and w_n > 0.0:
        bounce = e
        if -vn_hit < resting_speed:
            bounce = 0.0
        jn = kc.max(bounce * kc.max(-vn_hit, 0.0) - vn_end, 0.0) / w_n
        if w_t > 0.0:
            jt = kc.min(mu * jn, vt_len / w_t)
    for k in range(d0, d1):
        impulse[k] = y_n[k] * jn - y_t[k] * jt
    upper_solve(a, art_table, L, impulse, dqd)
    s = kc.min(best_s, 1.0)
    for k in range(d0, d1):
        joint_qd_out[k] = qd_free[k] + dqd[k]
        qd_move[k] = qd_free[k] + dqd[k] * (1.0 - s)


@kc.kernel
def fs_step_toi_kernel(
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
        art_toi_start: kc.array(dtype=int), toi_shape: kc.array(dtype=int), ground: int, shape_count: int,
        material_restitution: kc.array(dtype=float), resting_speed: float, shape_mesh: kc.array(dtype=kc.uint64),
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
        body_qd_out: kc.array(dtype=kc.spatial_vector),
        qd_free: kc.array(dtype=float), tau_n: kc.array(dtype=float), tau_t: kc.array(dtype=float),
        y_n: kc.array(dtype=float), y_t: kc.array(dtype=float), impulse: kc.array(dtype=float),
        dqd: kc.array(dtype=float), qd_move: kc.array(dtype=float)):
    """A whole step with penalty contacts (the pairs the sweep does not handle) and the impact of
    the articulation's swept spheres, one launch (sim/featherstone_contacts.py's step plus
    :func:`fs_toi_impact` between the solve and the integration)."""
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
                               shape_material, cohesion_reach, material_ke, material_damping_ratio, material_mu,
                               material_cohesion, material_cohesion_distance, dt, wrenches)
    fs_assemble(a, art_table, joint_table, joint_X_p, body_joint, joint_q, joint_qd, joint_armature, joint_damping,
                joint_target_ke, joint_target_kd, joint_limit_lower, joint_limit_upper, joint_limit_ke, joint_limit_kd,
                joint_effort_limit, joint_f, target_pos, target_vel, body_q, body_com, wrenches, body_v, body_a,
                body_m, body_h, body_io, joint_S, gravity, dt, f_acc, ic_m, ic_h, ic_io, H, rhs)
    fs_solve(a, art_table, H, rhs, L, y, qdd)
    fs_toi_impact(a, art_table, joint_table, joint_X_p, body_joint, joint_qd, dt, body_q, joint_S, L, qdd,
                  art_toi_start, toi_shape, ground, ground_normal, ground_offset, ground_material, shape_count,
                  shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material, material_restitution,
                  material_mu, resting_speed, body_com, shape_mesh, shape_info, qd_free, tau_n, tau_t, y_n, y_t, impulse, dqd, qd_move, joint_qd_out)
    fs_integrate_coords(a, art_table, joint_table, joint_X_c, body_com, joint_q, qd_move, dt, joint_q_out)
    fk_articulation(a, art_table, joint_table, joint_X_p, joint_X_c, joint_axis, joint_q_out, joint_qd_out, body_com,
                    body_q_out, body_qd_out)


class ToiBuffers:
    """Per-step dof-sized intermediates of the impact (each written once per step: the Tape's
    adjoint of a step needs that step's values)."""

    NAMES = ("qd_free", "tau_n", "tau_t", "y_n", "y_t", "impulse", "dqd", "qd_move")

    def __init__(self, model):
        for name in self.NAMES:
            setattr(self, name, kc.zeros(model.joint_dof_count, dtype=float, device=model.device,
                                         requires_grad=model.requires_grad))

    def outputs(self):
        return [getattr(self, name) for name in self.NAMES]


def swept_shapes_by_articulation(model, body_joint):
    """(sphere, box, capsule and mesh shape ids on links sorted by articulation, art_toi_start (A+1,)) as kc
    int arrays, the numpy sphere ids (body_static_pairs' swept_shapes: their pairs with the kinds of
    sim/toi.py's sweep) and the numpy box, capsule and mesh ids (its swept_shapes_all: every static pair
    is swept)."""
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    on_link = shape_body >= 0
    swept_kinds = (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH)
    shapes = np.nonzero(on_link & np.isin(shape_type, swept_kinds))[0].astype(np.int32)
    spheres = shapes[shape_type[shapes] == SHAPE_SPHERE]
    solids = shapes[shape_type[shapes] != SHAPE_SPHERE]
    art = model.joint_articulation.numpy()[body_joint[shape_body[shapes]]] if len(shapes) else shapes
    order = np.argsort(art, kind="stable")
    start = np.searchsorted(art[order], np.arange(model.articulation_count + 1)).astype(np.int32)
    dev = model.device
    return (kc.array(np.ascontiguousarray(shapes[order]), dtype=kc.int32, device=dev),
            kc.array(start, dtype=kc.int32, device=dev), spheres, solids)


def fs_toi_inputs(model, toi_shape, art_toi_start, resting_speed: float):
    """The sweep's arguments of fs_step_toi_kernel, in order (after the contact arguments)."""
    # (vertices, triangles, radius) of the mesh shapes on links (sim/toi_mesh_body.py), zeros for the others
    info = mesh_shape_info(model).reshape(-1, 3) if model.shape_count else np.zeros((1, 3), np.float32)
    return [art_toi_start, toi_shape, int(bool(model.ground)), int(model.shape_count), model.material_restitution,
            float(resting_speed), model.shape_mesh, kc.array(info, dtype=kc.vec3, device=model.device)]

