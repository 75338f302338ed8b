"""Time-of-impact contacts for SolverFeatherstone (``SolverFeatherstone(model, toi=True)``).

Every sphere shape on a link is swept, not pushed out by penalty forces: after the step's
unconstrained solve (``qd' = qd + dt qdd``, with the penalty contacts of the other shapes
and everything else of the step), the sphere's centre moves to first order along
``d = J(x0) qd' dt`` (``J`` the point's Jacobian at the start of the step) and is swept
against the ground and the static planes, spheres and boxes (sim/toi.py's ``first_hit``,
so a thin box is seen however far the link moves in one step).  The earliest hit ``s`` in
[0, 1] over the articulation's swept shapes gets an impact, in generalised coordinates:

    w_n = j_n H^-1 j_n^T = |L^-1 j_n^T|^2        (j_n = n^T J at the contact point, L L^T = H)
    j_n impulse = max(max(e |v_n(s)| + a_n (1 - s) dt, 0) - v_n', 0) / w_n   (e = 0 below the resting speed)
    friction    j_t = -K_t^-1 v_t'  scaled back to length mu j_n when longer
    qd_out = qd' + H^-1 J^T (n j_n + j_t)

``v_n(s)`` is the normal velocity at the time of impact (``qd + s dt qdd``), ``a_n`` the
step's normal acceleration at the point (``n J qdd``), ``v_n'`` and ``v_t'`` the velocities at
the end of the step (``v_t'`` in the tangent plane, along a fixed basis t1, t2 of it; ``K_t`` the
point's tangent-plane contact mass ``J_t H^-1 J_t^T``, 2 x 2: the friction impulse stops the sliding
where the cone allows, and is linear in ``v_t'`` there, so a head-on hit, v_t' = 0, has the
gradient of sticking friction, not the frictionless one an impulse along ``-v_t' / |v_t'|`` gave), so one impulse both bounces (restitution of the material pair,
``material_restitution``) and then takes the rest of the step's acceleration (a landing at
the end of one step and at the start of the next give the same state, so the gradient is
smooth across steps) and, when that acceleration presses into the surface, stops it
(resting contact).  ``H`` is the step's matrix (mass,
armature and the implicit drive terms), so the impulse moves the whole articulation with
its articulated inertia: a pendulum bob hitting a wall takes the pivot's reaction.  The
coordinates move with ``qd'`` up to the impact and with ``qd_out`` after it
(``qd_move = qd' + (1 - s) dqd``).  Because ``s`` is a smooth function of the initial
conditions, gradients through a bounce are those of the bounce (e.g. d(height after) /
d(height before) = -e for a ball dropped without gravity).

Box, capsule and mesh shapes on links are swept rigidly with their link's twist by the rigid
solver's queries (sim/featherstone_toi_shapes.py) and take the same impulse, at the centroid
of their contact manifold.  When the model has a static triangle mesh, which ``first_hit`` does
not see, the spheres take that solid path too (``spheres_solid``), against every static collider.

Several impacts per step (``max_impacts``, 4 by default): after an impact at ``s`` the rest of
the step is swept again over every swept shape of the articulation, from the links' places at
``s`` (the start of the step moved by the dof displacement so far, ``move``) with the new
velocities; each impact is one row of the per-step buffers (written once: the Tape replays
them).  The dof velocities of the motion are piecewise constant, ``qd'`` up to the first impact
and ``qd' + dqd_1 + ... + dqd_k`` after the k-th, and the coordinates move with their average
over the step.  Contacts hit at the same time (within ``SIMULTANEOUS`` of the rest of the step
of the earliest; up to ``MAX_SIMULTANEOUS``) are one impact, solved together by projected
Gauss-Seidel on their impulses ``lam`` in generalised coordinates, with the coupling
``y_i . y_j`` (``y = L^-1 J^T`` of each contact's normal and two tangent directions):

    v_n,i = v_n,i' + sum_j y_n,i . (y_n,j lam_n,j + y_t1,j lam_1,j + y_t2,j lam_2,j)  -> e |v_n,i(s)| (lam_n >= 0)
    v_tk,i = v_tk,i' + sum_j y_tk,i . (...)         -> 0 (|(lam_1, lam_2)| <= mu lam_n; a 2 x 2 block per contact)

so two feet landing together both rebound with ``e`` and a robot standing on several feet holds
every one of them each step.  One contact alone gets the single-impact formulas above (one
pass, exact).

Limits: at most MAX_SIMULTANEOUS contacts per impact and ``max_impacts`` impacts per step;
static capsules keep penalty contacts with the spheres
too (unless the model has static meshes: then the spheres' every static pair is swept); the sweep is linear in the step (a link's rotation over one step is linearised; later
sweeps start from the linearised pose at the impact).
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
from .toi import NO_HIT, SPHERE, first_hit, first_hit_material
from .toi_mesh_body import mesh_shape_info
from .toi_mesh_seams import static_mesh_seams
from .toi_shapes import pose_at, tangent_basis

#: impacts per articulation per step (a link in a narrow gap meets both walls; a second foot lands later)
MAX_IMPACTS = 4
#: contacts resolved together at one impact (the feet of a robot landing or standing at once)
MAX_SIMULTANEOUS = kc.constant(4)
#: shapes hit within this fraction of the rest of the step after the earliest join its impact
SIMULTANEOUS = kc.constant(1.0e-2)
#: projected Gauss-Seidel passes over the contacts of one impact (one when there is one contact)
CONTACT_PASSES = kc.constant(16)
#: [m/s] a contact approaching slower than this after an earlier impact of the step is settled (no new impact)
SETTLED_SPEED = kc.constant(1.0e-5)


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
def link_twist_at(b: int, joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
                  joint_S: kc.array(dtype=kc.spatial_vector), qd: kc.array(dtype=float), off: int) -> kc.spatial_vector:
    """:func:`link_twist` for the dof velocities ``qd[off + k]`` (a row of a per-impact buffer)."""
    v = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    j = body_joint[b]
    while j >= 0:
        for k in range(joint_table[j, 4], joint_table[j, 5]):
            v = v + joint_S[k] * qd[off + k]
        p = joint_table[j, 1]
        j = -1
        if p >= 0:
            j = body_joint[p]
    return v


@kc.func
def link_point_velocity_at(b: int, x: kc.vec3, origin: kc.vec3, joint_table: kc.array(dtype=int, ndim=2),
                           body_joint: kc.array(dtype=int), joint_S: kc.array(dtype=kc.spatial_vector),
                           qd: kc.array(dtype=float), off: int) -> kc.vec3:
    """:func:`link_point_velocity` for the dof velocities ``qd[off + k]``."""
    v = link_twist_at(b, joint_table, body_joint, joint_S, qd, off)
    return kc.spatial_bottom(v) + kc.cross(kc.spatial_top(v), x - origin)


@kc.func
def generalised_force_at(a: int, b: int, f: kc.spatial_vector, art_table: kc.array(dtype=int, ndim=2),
                         joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
                         joint_S: kc.array(dtype=kc.spatial_vector), tau: kc.array(dtype=float), off: int):
    """:func:`generalised_force` into ``tau[off + k]``."""
    for j in range(art_table[a, 0], art_table[a, 1]):
        on = joint_moves_body(j, b, joint_table, body_joint)
        for k in range(joint_table[j, 4], joint_table[j, 5]):
            tau[off + k] = on * kc.dot(joint_S[k], f)


@kc.func
def lower_solve_at(a: int, art_table: kc.array(dtype=int, ndim=2), L: kc.array(dtype=float),
                   b: kc.array(dtype=float), out: kc.array(dtype=float), off: int) -> float:
    """:func:`lower_solve` of ``b[off + k]`` into ``out[off + k]``; returns ``b^T H^-1 b``."""
    d0 = art_table[a, 2]
    n = art_table[a, 3] - d0
    h0 = art_table[a, 4]
    total = float(0.0)
    for i in range(n):
        s = b[off + d0 + i]
        for k in range(i):
            s = s - L[h0 + i * n + k] * out[off + d0 + k]
        y = s / L[h0 + i * n + i]
        out[off + d0 + i] = y
        total = total + y * y
    return total


@kc.func
def upper_solve_at(a: int, art_table: kc.array(dtype=int, ndim=2), L: kc.array(dtype=float),
                   b: kc.array(dtype=float), out: kc.array(dtype=float), off: int):
    """:func:`upper_solve` of ``b[off + k]`` into ``out[off + k]``."""
    d0 = art_table[a, 2]
    n = art_table[a, 3] - d0
    h0 = art_table[a, 4]
    for ii in range(n):
        i = n - 1 - ii
        s = b[off + d0 + i]
        for k in range(i + 1, n):
            s = s - L[h0 + k * n + i] * out[off + d0 + k]
        out[off + d0 + i] = s / L[h0 + i * n + i]


@kc.func
def link_twist(b: int, joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
               joint_S: kc.array(dtype=kc.spatial_vector), qd: kc.array(dtype=float)) -> kc.spatial_vector:
    """Spatial velocity of body ``b`` for the dof velocities ``qd`` (angular [rad/s], linear [m/s] of the
    point at the articulation's reference point): the motion subspaces of the joints from ``b`` to the root."""
    return link_twist_at(b, joint_table, body_joint, joint_S, qd, 0)


@kc.func
def link_point_velocity(b: int, x: kc.vec3, origin: kc.vec3, joint_table: kc.array(dtype=int, ndim=2),
                        body_joint: kc.array(dtype=int), joint_S: kc.array(dtype=kc.spatial_vector),
                        qd: kc.array(dtype=float)) -> kc.vec3:
    """World velocity [m/s] of the point ``x`` fixed to body ``b`` for the dof velocities ``qd``:
    ``J(x) qd``, summing the motion subspaces of the joints from ``b`` to the root."""
    return link_point_velocity_at(b, x, origin, joint_table, body_joint, joint_S, qd, 0)


@kc.func
def generalised_force(a: int, b: int, f: kc.spatial_vector, art_table: kc.array(dtype=int, ndim=2),
                      joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
                      joint_S: kc.array(dtype=kc.spatial_vector), tau: kc.array(dtype=float)):
    """``tau = J^T f`` of articulation ``a`` for the wrench ``f`` (torque about the articulation's
    reference point, force) on body ``b`` (every dof written once)."""
    generalised_force_at(a, b, f, art_table, joint_table, body_joint, joint_S, tau, 0)


@kc.func
def lower_solve(a: int, art_table: kc.array(dtype=int, ndim=2), L: kc.array(dtype=float),
                b: kc.array(dtype=float), out: kc.array(dtype=float)) -> float:
    """``out = L^-1 b`` for articulation ``a``'s Cholesky factor; returns ``|out|^2 = b^T H^-1 b``."""
    return lower_solve_at(a, art_table, L, b, out, 0)


@kc.func
def upper_solve(a: int, art_table: kc.array(dtype=int, ndim=2), L: kc.array(dtype=float),
                b: kc.array(dtype=float), out: kc.array(dtype=float)):
    """``out = L^-T b`` for articulation ``a``'s Cholesky factor."""
    upper_solve_at(a, art_table, L, b, out, 0)


@kc.func
def dof_dot(a: int, art_table: kc.array(dtype=int, ndim=2), x: kc.array(dtype=float), x_off: int,
            y: kc.array(dtype=float), y_off: int) -> float:
    """``sum_k x[x_off + k] y[y_off + k]`` over articulation ``a``'s dofs."""
    total = float(0.0)
    for k in range(art_table[a, 2], art_table[a, 3]):
        total = total + x[x_off + k] * y[y_off + k]
    return total


@kc.func
def contact_speed_change(a: int, art_table: kc.array(dtype=int, ndim=2), rows: kc.array(dtype=float), row_off: int,
                         first: int, count: int, y_n: kc.array(dtype=float), y_t: kc.array(dtype=float),
                         dof_count: int, lam_n: kc.vec4, lam_1: kc.vec4, lam_2: kc.vec4) -> float:
    """Change of the speed along the row of ``rows`` at ``row_off`` (its ``L^-1 J^T``) for the impulses
    ``lam_n`` (along the normals), ``lam_1`` and ``lam_2`` (along the tangents t1, t2: ``y_t``'s two rows
    per contact) of the event's contacts ``first .. first + count``:
    ``sum_j y_row . (y_n_j lam_n_j + y_t1_j lam_1_j + y_t2_j lam_2_j)``."""
    total = float(0.0)
    for c in range(count):
        slot = (first + c) * dof_count
        slot_t = 2 * slot
        total = total + dof_dot(a, art_table, rows, row_off, y_n, slot) * lam_n[c]
        total = total + dof_dot(a, art_table, rows, row_off, y_t, slot_t) * lam_1[c]
        total = total + dof_dot(a, art_table, rows, row_off, y_t, slot_t + dof_count) * lam_2[c]
    return total


@kc.func
def tangent_step(v1: float, v2: float, k11: float, k12: float, k22: float) -> kc.vec2:
    """Impulse change [N s] along (t1, t2) that stops the tangential velocity (``v1``, ``v2``) [m/s] of a
    contact whose tangent-plane contact mass (the point's velocity change per unit impulse along t1, t2,
    ``J_t H^-1 J_t^T``) is ``[[k11, k12], [k12, k22]]``: ``-K_t^-1 v``.  Linear in ``v`` (smooth
    through a head-on hit, v = 0, unlike an impulse along ``-v / |v|``).  A link that can move along one
    tangent direction only (a revolute pendulum bob: ``K_t`` of rank 1) has ``v`` in ``K_t``'s range, and
    one Gauss-Seidel sweep over t1 then t2 stops it exactly."""
    det = k11 * k22 - k12 * k12
    d = kc.vec2(0.0, 0.0)
    if det > 1.0e-4 * k11 * k22 and det > 0.0:
        d = kc.vec2(-(k22 * v1 - k12 * v2) / det, -(k11 * v2 - k12 * v1) / det)
    else:
        d1 = float(0.0)
        if k11 > 0.0:
            d1 = -v1 / k11
        d2 = float(0.0)
        if k22 > 0.0:
            d2 = -(v2 + k12 * d1) / k22
        d = kc.vec2(d1, d2)
    return d


@kc.func
def sweep_link(i: int, a: int, m: int, s_cur: float, origin: kc.vec3, art_table: kc.array(dtype=int, ndim=2),
               joint_table: kc.array(dtype=int, ndim=2), body_joint: kc.array(dtype=int),
               joint_S: kc.array(dtype=kc.spatial_vector), dt: float, body_q: kc.array(dtype=kc.transform),
               body_com: kc.array(dtype=kc.vec3), toi_shape: kc.array(dtype=int), ground: int,
               ground_normal: kc.vec3, ground_offset: float, ground_material: int, shape_count: int,
               shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
               shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
               shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
               shape_info: kc.array(dtype=kc.vec3), material_restitution: kc.array(dtype=float),
               material_mu: kc.array(dtype=float), dof_count: int,
               qd_path: kc.array(dtype=float), move: kc.array(dtype=float), spheres_solid: int,
               seams: kc.array(dtype=int)):
    """Swept shape ``toi_shape[i]`` of articulation ``a`` over the rest of the step from ``s_cur`` (its
    place there: the start of the step moved by ``move`` row ``m`` times ``dt``; its velocity the dof
    velocities ``qd_path`` row ``m``): (time of impact as a fraction of the rest, NO_HIT when none;
    the collider's normal, the contact's material point [m] at the start of the step, where the Jacobian is taken, the restitution and friction coefficient of the contact).  ``spheres_solid`` 1: spheres
    take the solid path too (the model has static triangle meshes, which sim/toi.py's first_hit does
    not see)."""
    sh = toi_shape[i]
    b = shape_body[sh]
    off = m * dof_count
    rest = (1.0 - s_cur) * dt
    u = float(NO_HIT)
    n_hit = kc.vec3(0.0, 1.0, 0.0)
    x_hit = kc.vec3(0.0, 0.0, 0.0)
    ma = shape_material[sh]
    e_hit = material_restitution[ma]
    mu_hit = material_mu[ma]
    if shape_type[sh] == SPHERE and spheres_solid == 0:
        r = shape_scale[sh][0]
        c0 = kc.transform_point(body_q[b], shape_pos[sh])
        c = c0 + link_point_velocity_at(b, c0, origin, joint_table, body_joint, joint_S, move, off) * dt
        d = link_point_velocity_at(b, c0, origin, joint_table, body_joint, joint_S, qd_path, off) * rest
        hit = first_hit(c, d, r, ground, ground_normal, ground_offset, ground_material, shape_count, shape_type,
                        shape_body, shape_pos, shape_rot, shape_scale, shape_material)
        u = hit[3]
        if u <= 1.0:
            n_hit = kc.vec3(hit[0], hit[1], hit[2])
            # the contact's material point where the step's Jacobian is taken (the start of the step),
            # not where the point is at the impact: the displacement up to the impact would lengthen
            # the lever (a ball dropped at 2 m/s with dt 0.02 by 20%) and give the normal impulse a
            # spurious torque (a sticking ball then kept 0.55 of its sideways speed, not 5/7)
            x_hit = c0 - n_hit * r
            mb = first_hit_material(c, d, r, ground, ground_normal, ground_offset, ground_material, shape_count,
                                    shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material)
            e_hit = 0.5 * (material_restitution[ma] + material_restitution[mb])
            mu_hit = 0.5 * (material_mu[ma] + material_mu[mb])
    else:  # a box, a capsule, a mesh (or a sphere among static meshes): swept rigidly with its link's twist (sim/featherstone_toi_shapes.py)
        com_0 = kc.transform_point(body_q[b], body_com[b])
        q_0 = kc.transform_get_rotation(body_q[b])
        offset = shape_pos[sh] - body_com[b]
        shift = link_twist_at(b, joint_table, body_joint, joint_S, move, off)  # [rad, m] per dt, so far
        w_shift = kc.spatial_top(shift)
        v_shift = kc.spatial_bottom(shift) + kc.cross(w_shift, com_0 - origin)
        com_w, q_b, pos_unused, rot_unused = pose_at(com_0, q_0, v_shift, w_shift, dt, offset, shape_rot[sh])
        twist = link_twist_at(b, joint_table, body_joint, joint_S, qd_path, off)
        w = kc.spatial_top(twist)
        v_com = kc.spatial_bottom(twist) + kc.cross(w, com_w - origin)
        u = sweep_link_shape_mesh(sh, com_w, q_b, v_com, w, offset, rest, ground, ground_normal, ground_offset,
                                  shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                  shape_info[sh], seams)
        if u <= 1.0:
            n_hit, x_hit, e_hit, mu_hit = link_shape_contact_mesh(
                i, toi_shape, com_w, q_b, v_com, w, u * rest, body_com[b], ground, ground_normal, ground_offset,
                ground_material, shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                shape_material, shape_mesh, material_restitution, material_mu, shape_info, seams)
            # back to the material point at the start of the step (as a sphere's, above)
            xs, qs, pos_unused2, rot_unused2 = pose_at(com_w, q_b, v_com, w, u * rest, offset, shape_rot[sh])
            x_hit = com_0 + kc.quat_rotate(q_0, kc.quat_rotate_inv(qs, x_hit - xs))
    return u, n_hit, x_hit, e_hit, mu_hit


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
                  shape_mesh: kc.array(dtype=kc.uint64), shape_info: kc.array(dtype=kc.vec3), max_impacts: int,
                  dof_count: int, toi_count: int, spheres_solid: int, seams: kc.array(dtype=int),
                  qd_path: kc.array(dtype=float),
                  move: kc.array(dtype=float), hit_u: kc.array(dtype=float),
                  hit_n: kc.array(dtype=kc.vec3), hit_x: kc.array(dtype=kc.vec3), hit_e: kc.array(dtype=float),
                  hit_mu: kc.array(dtype=float),
                  tau_n: kc.array(dtype=float), tau_t: kc.array(dtype=float), y_n: kc.array(dtype=float),
                  y_t: kc.array(dtype=float), impulse: kc.array(dtype=float), dqd: kc.array(dtype=float),
                  qd_move: kc.array(dtype=float), joint_qd_out: kc.array(dtype=float)):
    """The impacts of articulation ``a`` after its solve (module docstring): writes ``joint_qd_out`` and
    ``qd_move``, the velocities its coordinates move with (both ``qd'`` when nothing is hit).  Every
    per-impact buffer row is written once per step (the Tape's adjoint reads them back)."""
    d0 = art_table[a, 2]
    d1 = art_table[a, 3]
    for k in range(d0, d1):
        qd_path[k] = joint_qd[k] + qdd[k] * dt
        move[k] = 0.0
    origin = kc.transform_get_translation(joint_X_p[art_table[a, 0]])
    s_cur = float(0.0)  # the fraction of the step done
    last = int(0)  # the qd_path / move row of the motion after the latest impact
    going = int(1)
    for m in range(max_impacts):
        if going == 1 and s_cur < 1.0:
            off = m * dof_count
            # every swept shape over the rest of the step: the earliest impact
            u_best = float(NO_HIT)
            for i in range(art_toi_start[a], art_toi_start[a + 1]):
                u, n_i, x_i, e_i, mu_i = sweep_link(i, a, m, s_cur, origin, art_table, joint_table, body_joint, joint_S,
                                                dt, body_q, body_com, toi_shape, ground, ground_normal, ground_offset,
                                                ground_material, shape_count, shape_type, shape_body, shape_pos,
                                                shape_rot, shape_scale, shape_material, shape_mesh, shape_info,
                                                material_restitution, material_mu, dof_count, qd_path, move,
                                                spheres_solid, seams)
                if u <= 1.0:
                    if m > 0:
                        # a contact an earlier impact of this step has already stopped is no new impact
                        b_i = shape_body[toi_shape[i]]
                        vn_i = kc.dot(n_i, link_point_velocity_at(b_i, x_i, origin, joint_table, body_joint, joint_S,
                                                                  qd_path, off))
                        if vn_i > -SETTLED_SPEED:
                            u = float(NO_HIT)
                slot_i = m * toi_count + i
                hit_u[slot_i] = u
                hit_n[slot_i] = n_i
                hit_x[slot_i] = x_i
                hit_e[slot_i] = e_i
                hit_mu[slot_i] = mu_i
                if u < u_best:
                    u_best = u
            if u_best <= 1.0:
                s_hit = s_cur + u_best * (1.0 - s_cur)
                # the contacts of this impact: every shape hit within SIMULTANEOUS of the earliest
                first = m * MAX_SIMULTANEOUS
                count = int(0)
                target = kc.vec4(0.0, 0.0, 0.0, 0.0)
                vn_now = kc.vec4(0.0, 0.0, 0.0, 0.0)
                v1_now = kc.vec4(0.0, 0.0, 0.0, 0.0)
                v2_now = kc.vec4(0.0, 0.0, 0.0, 0.0)
                w_n = kc.vec4(0.0, 0.0, 0.0, 0.0)
                k11 = kc.vec4(0.0, 0.0, 0.0, 0.0)
                k12 = kc.vec4(0.0, 0.0, 0.0, 0.0)
                k22 = kc.vec4(0.0, 0.0, 0.0, 0.0)
                mu = kc.vec4(0.0, 0.0, 0.0, 0.0)
                for i in range(art_toi_start[a], art_toi_start[a + 1]):
                    slot_i = m * toi_count + i
                    if count < MAX_SIMULTANEOUS and hit_u[slot_i] <= u_best + SIMULTANEOUS:
                        sh = toi_shape[i]
                        b = shape_body[sh]
                        n = hit_n[slot_i]
                        x = hit_x[slot_i]
                        e = hit_e[slot_i]
                        mu[count] = hit_mu[slot_i]
                        # the point's velocity now (end of the step), and at the impact: the step's
                        # acceleration acts up to s_hit only
                        v_now = link_point_velocity_at(b, x, origin, joint_table, body_joint, joint_S, qd_path, off)
                        v_free = link_point_velocity_at(b, x, origin, joint_table, body_joint, joint_S, qd_path, 0)
                        v_start = link_point_velocity_at(b, x, origin, joint_table, body_joint, joint_S, joint_qd, 0)
                        vn_hit = kc.dot(n, v_now - (v_free - v_start) * (1.0 - s_hit))
                        vn = kc.dot(n, v_now)
                        vn_now[count] = vn
                        bounce = e
                        if -vn_hit < resting_speed:
                            bounce = 0.0
                        # the end-of-step speed: the bounce, then the rest of the step's acceleration (as the
                        # rigid solver: a hit at the end of one step and at the start of the next give the
                        # same state), never pressing into the surface (resting contact)
                        rest_acc = kc.dot(n, v_free - v_start) * (1.0 - s_hit)
                        target[count] = kc.max(bounce * kc.max(-vn_hit, 0.0) + rest_acc, 0.0)
                        arm = x - origin
                        # friction along a fixed tangent basis (no sliding direction: that has no
                        # derivative at a head-on hit, where the Tape then saw no friction)
                        t1 = tangent_basis(n)
                        t2 = kc.cross(n, t1)
                        v1_now[count] = kc.dot(t1, v_now)
                        v2_now[count] = kc.dot(t2, v_now)
                        slot = (first + count) * dof_count
                        slot_t = 2 * slot
                        generalised_force_at(a, b, kc.spatial_vector(kc.cross(arm, n), n), art_table, joint_table,
                                             body_joint, joint_S, tau_n, slot)
                        generalised_force_at(a, b, kc.spatial_vector(kc.cross(arm, t1), t1), art_table, joint_table,
                                             body_joint, joint_S, tau_t, slot_t)
                        generalised_force_at(a, b, kc.spatial_vector(kc.cross(arm, t2), t2), art_table, joint_table,
                                             body_joint, joint_S, tau_t, slot_t + dof_count)
                        w_n[count] = lower_solve_at(a, art_table, L, tau_n, y_n, slot)
                        k11[count] = lower_solve_at(a, art_table, L, tau_t, y_t, slot_t)
                        k22[count] = lower_solve_at(a, art_table, L, tau_t, y_t, slot_t + dof_count)
                        k12[count] = dof_dot(a, art_table, y_t, slot_t, y_t, slot_t + dof_count)
                        count = count + 1
                # projected Gauss-Seidel over the contacts together (one pass is exact for one contact):
                # normal impulses reach each contact's target speed (or leave it separating), friction
                # stops the tangential velocity (tangent_step) up to mu times the normal impulse
                lam_n = kc.vec4(0.0, 0.0, 0.0, 0.0)
                lam_1 = kc.vec4(0.0, 0.0, 0.0, 0.0)
                lam_2 = kc.vec4(0.0, 0.0, 0.0, 0.0)
                passes = 1
                if count > 1:
                    passes = CONTACT_PASSES
                for _pass in range(passes):
                    for c in range(count):
                        slot = (first + c) * dof_count
                        slot_t = 2 * slot
                        if w_n[c] > 0.0:
                            vn_c = vn_now[c] + contact_speed_change(a, art_table, y_n, slot, first, count, y_n, y_t,
                                                                    dof_count, lam_n, lam_1, lam_2)
                            lam_n[c] = kc.max(lam_n[c] + (target[c] - vn_c) / w_n[c], 0.0)
                        cap = mu[c] * lam_n[c]
                        l1 = float(0.0)
                        l2 = float(0.0)
                        if cap > 0.0 and k11[c] + k22[c] > 0.0:  # (mu = 0: no friction, in the adjoint too)
                            v1 = v1_now[c] + contact_speed_change(a, art_table, y_t, slot_t, first, count, y_n, y_t,
                                                                  dof_count, lam_n, lam_1, lam_2)
                            v2 = v2_now[c] + contact_speed_change(a, art_table, y_t, slot_t + dof_count, first, count,
                                                                  y_n, y_t, dof_count, lam_n, lam_1, lam_2)
                            step = tangent_step(v1, v2, k11[c], k12[c], k22[c])
                            l1 = lam_1[c] + step[0]
                            l2 = lam_2[c] + step[1]
                            sq = l1 * l1 + l2 * l2
                            if sq > cap * cap:  # sliding: the cone's edge
                                scale = cap / kc.sqrt(sq)
                                l1 = l1 * scale
                                l2 = l2 * scale
                        lam_1[c] = l1
                        lam_2[c] = l2
                for k in range(d0, d1):
                    total = float(0.0)
                    for c in range(count):
                        slot = (first + c) * dof_count
                        total = total + y_n[slot + k] * lam_n[c] + y_t[2 * slot + k] * lam_1[c]
                        total = total + y_t[2 * slot + dof_count + k] * lam_2[c]
                    impulse[off + k] = total
                upper_solve_at(a, art_table, L, impulse, dqd, off)
                nxt = off + dof_count
                for k in range(d0, d1):
                    qd_path[nxt + k] = qd_path[off + k] + dqd[off + k]
                    move[nxt + k] = move[off + k] + qd_path[off + k] * (s_hit - s_cur)
                s_cur = s_hit
                last = m + 1
            else:
                going = 0
    fin = last * dof_count
    for k in range(d0, d1):
        joint_qd_out[k] = qd_path[fin + k]
        qd_move[k] = move[fin + k] + qd_path[fin + k] * (1.0 - s_cur)


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
        shape_info: kc.array(dtype=kc.vec3), max_impacts: int, dof_count: int, toi_count: int, spheres_solid: int,
        seams: kc.array(dtype=int),
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
        qd_path: kc.array(dtype=float), move: kc.array(dtype=float), hit_u: kc.array(dtype=float),
        hit_n: kc.array(dtype=kc.vec3), hit_x: kc.array(dtype=kc.vec3), hit_e: kc.array(dtype=float),
        hit_mu: kc.array(dtype=float),
        tau_n: kc.array(dtype=float), tau_t: kc.array(dtype=float), y_n: kc.array(dtype=float),
        y_t: kc.array(dtype=float), impulse: kc.array(dtype=float), dqd: kc.array(dtype=float),
        qd_move: kc.array(dtype=float)):
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
                               shape_material, shape_mesh, shape_info, cohesion_reach, material_ke,
                               material_damping_ratio, material_mu, material_cohesion, material_cohesion_distance, dt,
                               wrenches)
    fs_assemble(a, art_table, joint_table, joint_X_p, body_joint, joint_q, joint_qd, joint_armature, joint_damping,
                joint_target_ke, joint_target_kd, joint_limit_lower, joint_limit_upper, joint_limit_ke, joint_limit_kd,
                joint_effort_limit, joint_f, target_pos, target_vel, body_q, body_com, wrenches, body_v, body_a,
                body_m, body_h, body_io, joint_S, gravity, dt, f_acc, ic_m, ic_h, ic_io, H, rhs)
    fs_solve(a, art_table, H, rhs, L, y, qdd)
    fs_toi_impact(a, art_table, joint_table, joint_X_p, body_joint, joint_qd, dt, body_q, joint_S, L, qdd,
                  art_toi_start, toi_shape, ground, ground_normal, ground_offset, ground_material, shape_count,
                  shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material, material_restitution,
                  material_mu, resting_speed, body_com, shape_mesh, shape_info, max_impacts, dof_count, toi_count,
                  spheres_solid, seams, qd_path, move, hit_u,
                  hit_n, hit_x, hit_e, hit_mu, tau_n, tau_t, y_n, y_t, impulse, dqd, qd_move, joint_qd_out)
    fs_integrate_coords(a, art_table, joint_table, joint_X_c, body_com, joint_q, qd_move, dt, joint_q_out)
    fk_articulation(a, art_table, joint_table, joint_X_p, joint_X_c, joint_axis, joint_q_out, joint_qd_out, body_com,
                    body_q_out, body_qd_out)


class ToiBuffers:
    """Per-step intermediates of the impacts, a row per impact (each element written once per step:
    the Tape's adjoint of a step needs that step's values).  ``qd_path``/``move``: dof-sized rows
    0..max_impacts (the velocities after each impact, the displacement up to it); ``hit_*``: one entry
    per swept shape and impact; ``tau_n``/``y_n``: a dof-sized row per contact slot
    (MAX_SIMULTANEOUS per impact), ``tau_t``/``y_t`` two (the tangents t1, t2); ``impulse``/``dqd``: a dof-sized row per impact."""

    def __init__(self, model, max_impacts: int, toi_count: int):
        d, m = model.joint_dof_count, max_impacts
        self.size = (max_impacts, toi_count)
        sizes = {"qd_path": ((m + 1) * d, float), "move": ((m + 1) * d, float), "hit_u": (m * toi_count, float),
                 "hit_n": (m * toi_count, kc.vec3), "hit_x": (m * toi_count, kc.vec3),
                 "hit_e": (m * toi_count, float),
                 "hit_mu": (m * toi_count, float), "tau_n": (m * MAX_SIMULTANEOUS * d, float),
                 "tau_t": (2 * m * MAX_SIMULTANEOUS * d, float), "y_n": (m * MAX_SIMULTANEOUS * d, float),
                 "y_t": (2 * m * MAX_SIMULTANEOUS * d, float), "impulse": (m * d, float), "dqd": (m * d, float),
                 "qd_move": (d, float)}
        self.names = tuple(sizes)
        for name, (size, dtype) in sizes.items():
            grad = model.requires_grad and dtype is not kc.int32
            setattr(self, name, kc.zeros(max(size, 1), dtype=dtype, device=model.device, requires_grad=grad))

    def outputs(self):
        return [getattr(self, name) for name in self.names]


def has_static_meshes(model) -> bool:
    """Whether the model has a static triangle mesh (then link spheres are swept on the solid path:
    sim/toi.py's first_hit does not see meshes)."""
    if model.shape_count == 0:
        return False
    return bool(np.any((model.shape_body.numpy() < 0) & (model.shape_type.numpy() == SHAPE_MESH)))


def swept_shapes_by_articulation(model, body_joint):
    """(sphere, box, capsule and mesh shape ids on links sorted by articulation, art_toi_start (A+1,)) as kc
    int arrays, the numpy sphere ids (body_static_pairs' swept_shapes: their pairs with the kinds of
    sim/toi.py's sweep) and the numpy box, capsule and mesh ids, spheres too when the model has static
    meshes (its swept_shapes_all: every static pair is swept)."""
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    on_link = shape_body >= 0
    swept_kinds = (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH)
    shapes = np.nonzero(on_link & np.isin(shape_type, swept_kinds))[0].astype(np.int32)
    solid_kinds = (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH) + ((SHAPE_SPHERE,) if has_static_meshes(model) else ())
    solids = shapes[np.isin(shape_type[shapes], solid_kinds)]
    spheres = shapes[~np.isin(shape_type[shapes], solid_kinds)]
    art = model.joint_articulation.numpy()[body_joint[shape_body[shapes]]] if len(shapes) else shapes
    order = np.argsort(art, kind="stable")
    start = np.searchsorted(art[order], np.arange(model.articulation_count + 1)).astype(np.int32)
    dev = model.device
    return (kc.array(np.ascontiguousarray(shapes[order]), dtype=kc.int32, device=dev),
            kc.array(start, dtype=kc.int32, device=dev), spheres, solids)


def fs_toi_inputs(model, toi_shape, art_toi_start, resting_speed: float, max_impacts: int):
    """The sweep's arguments of fs_step_toi_kernel, in order (after the contact arguments)."""
    # (vertices, triangles, radius) of the mesh shapes on links (sim/toi_mesh_body.py), zeros for the others
    info = mesh_shape_info(model).reshape(-1, 3) if model.shape_count else np.zeros((1, 3), np.float32)
    return [art_toi_start, toi_shape, int(bool(model.ground)), int(model.shape_count), model.material_restitution,
            float(resting_speed), model.shape_mesh, kc.array(info, dtype=kc.vec3, device=model.device), int(max_impacts), int(model.joint_dof_count),
            int(toi_shape.shape[0]), int(has_static_meshes(model)), static_mesh_seams(model)]

