"""Kernels of SolverFeatherstone: articulated dynamics in generalised coordinates.

One thread per articulation.  The three stages below are functions; ``fs_step_kernel`` runs
them and the forward kinematics of the new state in one launch, and with contacts
``fs_step_contacts_kernel`` (sim/featherstone_contacts.py) does the same with the
articulation's own body-static contacts between stages 1 and 2.

1. ``fs_kinematics_kernel`` — forward kinematics of ``state_in``: body frames and API
   velocities (for contacts), the twist V of each body, its velocity-product
   acceleration (the bias acceleration with qdd = 0) and its spatial inertia, and the
   motion subspace S of every dof.
2. ``fs_assemble_kernel`` — recursive Newton–Euler with qdd = 0 gives the bias forces
   ``C = S^T f`` (gravity, Coriolis/centrifugal terms, external wrenches of contacts and
   ``Control.body_f``, which is how they reach the dofs: ``J^T w``); the composite-rigid-
   body algorithm gives the joint-space mass matrix ``H``; drives, damping and limits are
   added, their stiff parts implicitly (see below).
3. ``fs_solve_integrate_kernel`` — dense Cholesky of the articulation's H (n x n, n its
   dofs), two triangular solves for qdd, then semi-implicit Euler in generalised
   coordinates (ball and free quaternions turned by the Cayley rotation of ``w dt``).

Spatial vectors (sim/articulation.py): twists (w, v_O), wrenches (torque about O, force),
with O an articulation's reference point (its root joint's world-side frame origin,
fixed), so that environments far from the world origin lose no float32 precision.
A spatial inertia is kept as (m, h = m c, I_O = inertia about O), which adds linearly:
``I V = (I_O w + h x v, m v + w x h)``.

Implicit drives: a dof with PD gains (ke, kd), viscous damping d, armature a, gets the
force at the *end* of the step, ``f = ke (q_t - q - dt qd') + kd (v_t - qd') - d qd'`` with
``qd' = qd + dt qdd``; moving the qdd terms to the left gives
``(H + a + dt (kd + d) + dt^2 ke) qdd = tau - ke (q + dt qd - q_t) - kd (qd - v_t) - d qd``,
unconditionally stable for any gain.  Limits are the same with their own (ke, kd) while
the coordinate is outside [lower, upper].
"""
from __future__ import annotations

import kernelcore as kc

from .articulation import (BALL, D6, FREE, PRISMATIC, REVOLUTE, fk_articulation, joint_subspace, joint_transform,
                           parent_joint_frame)
from .body_integrate import unit_quat


@kc.func
def motion_cross(a: kc.spatial_vector, b: kc.spatial_vector) -> kc.spatial_vector:
    """a x b of two twists (w, v): (wa x wb, wa x vb + va x wb)."""
    wa = kc.spatial_top(a)
    va = kc.spatial_bottom(a)
    wb = kc.spatial_top(b)
    vb = kc.spatial_bottom(b)
    return kc.spatial_vector(kc.cross(wa, wb), kc.cross(wa, vb) + kc.cross(va, wb))


@kc.func
def force_cross(a: kc.spatial_vector, f: kc.spatial_vector) -> kc.spatial_vector:
    """a x* f of a twist a = (w, v) and a wrench f = (t, F): (w x t + v x F, w x F)."""
    w = kc.spatial_top(a)
    v = kc.spatial_bottom(a)
    t = kc.spatial_top(f)
    F = kc.spatial_bottom(f)
    return kc.spatial_vector(kc.cross(w, t) + kc.cross(v, F), kc.cross(w, F))


@kc.func
def inertia_times(m: float, h: kc.vec3, i_o: kc.mat33, v: kc.spatial_vector) -> kc.spatial_vector:
    """The spatial inertia (m, h, I_O) applied to twist v: a wrench (momentum)."""
    w = kc.spatial_top(v)
    lin = kc.spatial_bottom(v)
    return kc.spatial_vector(i_o * w + kc.cross(h, lin), lin * m + kc.cross(w, h))


@kc.func
def shifted_frame(x: kc.transform, origin: kc.vec3) -> kc.transform:
    """``x`` with its translation measured from ``origin``."""
    return kc.transform(kc.transform_get_translation(x) - origin, kc.transform_get_rotation(x))


@kc.func
def fs_kinematics(a: int, art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                  joint_X_p: kc.array(dtype=kc.transform), joint_X_c: kc.array(dtype=kc.transform),
                         joint_axis: kc.array(dtype=kc.vec3),
                         joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float),
                         body_com: kc.array(dtype=kc.vec3), body_mass: kc.array(dtype=float),
                         body_inertia: kc.array(dtype=kc.mat33),
                         body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                         body_v: kc.array(dtype=kc.spatial_vector), body_a: kc.array(dtype=kc.spatial_vector),
                         body_m: kc.array(dtype=float), body_h: kc.array(dtype=kc.vec3),
                         body_io: kc.array(dtype=kc.mat33), joint_S: kc.array(dtype=kc.spatial_vector)):
    """Step 1 for articulation ``a`` (see the module docstring)."""
    first = art_table[a, 0]
    origin = kc.transform_get_translation(joint_X_p[first])
    for j in range(first, art_table[a, 1]):
        jtype = joint_table[j, 0]
        parent = joint_table[j, 1]
        child = joint_table[j, 2]
        qs = joint_table[j, 3]
        ds = joint_table[j, 4]
        nlin = joint_table[j, 6]
        nang = joint_table[j, 7]
        x_wj = parent_joint_frame(parent, body_q, joint_X_p[j])
        x_child = kc.transform_multiply(kc.transform_multiply(x_wj, joint_transform(jtype, qs, ds, nlin, nang,
                                                                                    joint_q, joint_axis)),
                                        kc.transform_inverse(joint_X_c[j]))
        x_rel = shifted_frame(x_wj, origin)
        c = kc.transform_point(x_child, body_com[child]) - origin
        v_parent = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        a_parent = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        if parent >= 0:
            v_parent = body_v[parent]
            a_parent = body_a[parent]
        v = v_parent
        bias = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for k in range(joint_table[j, 5] - ds):
            s = joint_subspace(jtype, k, qs, ds, nlin, joint_q, joint_axis, x_rel, c)
            joint_S[ds + k] = s
            vs = s * joint_qd[ds + k]
            # d/dt (S_k qd_k) with qdd = 0: axes fixed in the parent frame turn with it; a d6 axis
            # turns with the dofs before it (v so far)
            if jtype == D6:
                bias = bias + motion_cross(v, vs)
            else:
                bias = bias + motion_cross(v_parent, vs)
            v = v + vs
        if jtype == FREE:
            # the free joint turns about the centre of mass, which moves with the linear dofs
            w_rel = kc.spatial_top(v - v_parent)
            lin_rel = kc.quat_rotate(kc.transform_get_rotation(x_wj),
                                     kc.vec3(joint_qd[ds], joint_qd[ds + 1], joint_qd[ds + 2]))
            bias = bias + kc.spatial_vector(kc.vec3(0.0, 0.0, 0.0), kc.cross(lin_rel, w_rel))
        body_q[child] = x_child
        body_qd[child] = kc.spatial_vector(kc.spatial_bottom(v) + kc.cross(kc.spatial_top(v), c), kc.spatial_top(v))
        body_v[child] = v
        body_a[child] = a_parent + bias
        # spatial inertia about the reference point: I_O = R I R^T + m (|c|^2 1 - c c^T)
        m = body_mass[child]
        rot = kc.quat_to_matrix(kc.transform_get_rotation(x_child))
        body_m[child] = m
        body_h[child] = c * m
        body_io[child] = (rot * body_inertia[child] * kc.transpose(rot)
                          + (kc.identity(3, dtype=float) * kc.dot(c, c) - kc.outer(c, c)) * m)


@kc.func
def drive_dof(jtype: int) -> int:
    """1 when the dof's coordinate is the dof itself (drives and limits apply), else 0."""
    r = int(0)
    if jtype == REVOLUTE or jtype == PRISMATIC or jtype == D6:
        r = 1
    return r


@kc.func
def fs_assemble(a: int, art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                joint_X_p: kc.array(dtype=kc.transform), body_joint: kc.array(dtype=int),
                       joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float),
                       joint_armature: kc.array(dtype=float), joint_damping: kc.array(dtype=float),
                       joint_target_ke: kc.array(dtype=float), joint_target_kd: kc.array(dtype=float),
                       joint_limit_lower: kc.array(dtype=float), joint_limit_upper: kc.array(dtype=float),
                       joint_limit_ke: kc.array(dtype=float), joint_limit_kd: kc.array(dtype=float),
                       joint_effort_limit: kc.array(dtype=float),
                       joint_f: kc.array(dtype=float), target_pos: kc.array(dtype=float),
                       target_vel: kc.array(dtype=float), body_q: kc.array(dtype=kc.transform),
                       body_com: kc.array(dtype=kc.vec3), body_f: kc.array(dtype=kc.spatial_vector),
                       body_v: kc.array(dtype=kc.spatial_vector), body_a: kc.array(dtype=kc.spatial_vector),
                       body_m: kc.array(dtype=float), body_h: kc.array(dtype=kc.vec3),
                       body_io: kc.array(dtype=kc.mat33), joint_S: kc.array(dtype=kc.spatial_vector),
                       gravity: kc.vec3, dt: float,
                       f_acc: kc.array(dtype=kc.spatial_vector), ic_m: kc.array(dtype=float),
                       ic_h: kc.array(dtype=kc.vec3), ic_io: kc.array(dtype=kc.mat33),
                       H: kc.array(dtype=float), rhs: kc.array(dtype=float)):
    """Step 2 for articulation ``a``: bias forces, composite inertias, H and the right-hand side."""
    first = art_table[a, 0]
    last = art_table[a, 1]
    origin = kc.transform_get_translation(joint_X_p[first])
    d0 = art_table[a, 2]
    n = art_table[a, 3] - d0
    h0 = art_table[a, 4]
    # Newton-Euler with qdd = 0: each body's force I a + V x* I V, less gravity and external wrenches
    for j in range(first, last):
        b = joint_table[j, 2]
        m = body_m[b]
        h = body_h[b]
        io = body_io[b]
        v = body_v[b]
        f = inertia_times(m, h, io, body_a[b]) + force_cross(v, inertia_times(m, h, io, v))
        c = kc.transform_point(body_q[b], body_com[b]) - origin
        ext = body_f[b]  # (force at the COM, torque about it), world
        f_ext = kc.spatial_vector(kc.spatial_bottom(ext) + kc.cross(c, kc.spatial_top(ext)), kc.spatial_top(ext))
        f_grav = kc.spatial_vector(kc.cross(h, gravity), gravity * m)
        f_acc[b] = f - f_ext - f_grav
        ic_m[b] = m
        ic_h[b] = h
        ic_io[b] = io
    # leaves to root: the subtree sums of forces and of inertias (composite bodies)
    for i in range(last - first):
        j = last - 1 - i
        b = joint_table[j, 2]
        p = joint_table[j, 1]
        if p >= 0:
            f_acc[p] = f_acc[p] + f_acc[b]
            ic_m[p] = ic_m[p] + ic_m[b]
            ic_h[p] = ic_h[p] + ic_h[b]
            ic_io[p] = ic_io[p] + ic_io[b]
    for k in range(n * n):
        H[h0 + k] = 0.0
    for j in range(first, last):
        b = joint_table[j, 2]
        ds = joint_table[j, 4]
        jtype = joint_table[j, 0]
        qs = joint_table[j, 3]
        for k in range(joint_table[j, 5] - ds):
            dof = ds + k
            s = joint_S[dof]
            # generalised force: control, minus the bias forces, plus drives, damping and limits
            qd = joint_qd[dof]
            tau = joint_f[dof] - kc.dot(s, f_acc[b]) - joint_damping[dof] * qd
            diag = joint_armature[dof] + dt * joint_damping[dof]
            if drive_dof(jtype) != 0:
                q = joint_q[qs + k]
                ke = joint_target_ke[dof]
                kd = joint_target_kd[dof]
                drive = ke * (target_pos[dof] - q - dt * qd) + kd * (target_vel[dof] - qd)
                effort = joint_effort_limit[dof]
                if drive > effort:  # a saturated drive pushes with its limit, explicitly
                    tau = tau + effort
                elif drive < -effort:
                    tau = tau - effort
                else:
                    tau = tau + drive
                    diag = diag + dt * kd + dt * dt * ke
                lke = joint_limit_ke[dof]
                lkd = joint_limit_kd[dof]
                if q < joint_limit_lower[dof]:
                    tau = tau + lke * (joint_limit_lower[dof] - q - dt * qd) - lkd * qd
                    diag = diag + dt * lkd + dt * dt * lke
                elif q > joint_limit_upper[dof]:
                    tau = tau + lke * (joint_limit_upper[dof] - q - dt * qd) - lkd * qd
                    diag = diag + dt * lkd + dt * dt * lke
            rhs[dof] = tau
            # column of H: S_l^T Ic_b S_k for dofs l of this joint and of every joint above it
            row = dof - d0
            fk = inertia_times(ic_m[b], ic_h[b], ic_io[b], s)
            H[h0 + row * n + row] = kc.dot(s, fk) + diag
            for l in range(k):
                col = ds + l - d0
                hv = kc.dot(joint_S[ds + l], fk)
                H[h0 + row * n + col] = hv
                H[h0 + col * n + row] = hv
            up = joint_table[j, 1]
            while up >= 0:
                ju = body_joint[up]
                for l in range(joint_table[ju, 5] - joint_table[ju, 4]):
                    col = joint_table[ju, 4] + l - d0
                    hv = kc.dot(joint_S[joint_table[ju, 4] + l], fk)
                    H[h0 + row * n + col] = hv
                    H[h0 + col * n + row] = hv
                up = joint_table[ju, 1]


@kc.func
def fs_solve(a: int, art_table: kc.array(dtype=int, ndim=2), H: kc.array(dtype=float), rhs: kc.array(dtype=float),
             L: kc.array(dtype=float), y: kc.array(dtype=float), qdd: kc.array(dtype=float)):
    """qdd = H^-1 rhs for articulation ``a`` by Cholesky (its factor L is kept: sim/featherstone_toi.py
    solves with it again)."""
    d0 = art_table[a, 2]
    n = art_table[a, 3] - d0
    h0 = art_table[a, 4]
    # H = L L^T (H is symmetric positive definite: a mass matrix plus non-negative diagonal terms)
    for i in range(n):
        for j in range(i + 1):
            s = H[h0 + i * n + j]
            for k in range(j):
                s = s - L[h0 + i * n + k] * L[h0 + j * n + k]
            if i == j:
                L[h0 + i * n + i] = kc.sqrt(kc.max(s, 1.0e-20))
            else:
                L[h0 + i * n + j] = s / L[h0 + j * n + j]
    for i in range(n):
        s = rhs[d0 + i]
        for k in range(i):
            s = s - L[h0 + i * n + k] * y[d0 + k]
        y[d0 + i] = s / L[h0 + i * n + i]
    for ii in range(n):
        i = n - 1 - ii
        s = y[d0 + i]
        for k in range(i + 1, n):
            s = s - L[h0 + k * n + i] * qdd[d0 + k]
        qdd[d0 + i] = s / L[h0 + i * n + i]


@kc.func
def fs_integrate_coords(a: int, art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                        joint_X_c: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3),
                        joint_q: kc.array(dtype=float), qd_move: kc.array(dtype=float), dt: float,
                        joint_q_out: kc.array(dtype=float)):
    """Articulation ``a``'s coordinates moved for ``dt`` with the dof velocities ``qd_move``
    (ball and free quaternions turned by the Cayley rotation of ``w dt``)."""
    for j in range(art_table[a, 0], art_table[a, 1]):
        jtype = joint_table[j, 0]
        qs = joint_table[j, 3]
        ds = joint_table[j, 4]
        nd = joint_table[j, 5] - ds
        if jtype == BALL:
            w = kc.vec3(qd_move[ds], qd_move[ds + 1], qd_move[ds + 2]) * (0.5 * dt)
            r = unit_quat(kc.quat(w[0], w[1], w[2], 1.0) * kc.quat(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2],
                                                                     joint_q[qs + 3]))
            for k in range(4):
                joint_q_out[qs + k] = r[k]
        elif jtype == FREE:
            r0 = kc.normalize(kc.quat(joint_q[qs + 3], joint_q[qs + 4], joint_q[qs + 5], joint_q[qs + 6]))
            # the centre of mass in the child joint frame; it moves with the linear velocity
            c_j = kc.transform_point(kc.transform_inverse(joint_X_c[j]), body_com[joint_table[j, 2]])
            p0 = kc.vec3(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2])
            c1 = p0 + kc.quat_rotate(r0, c_j) + kc.vec3(qd_move[ds], qd_move[ds + 1], qd_move[ds + 2]) * dt
            w = kc.vec3(qd_move[ds + 3], qd_move[ds + 4], qd_move[ds + 5]) * (0.5 * dt)
            r1 = unit_quat(kc.quat(w[0], w[1], w[2], 1.0) * r0)
            p1 = c1 - kc.quat_rotate(r1, c_j)
            for k in range(3):
                joint_q_out[qs + k] = p1[k]
            for k in range(4):
                joint_q_out[qs + 3 + k] = r1[k]
        else:
            for k in range(nd):
                joint_q_out[qs + k] = joint_q[qs + k] + qd_move[ds + k] * dt


@kc.func
def fs_solve_integrate(a: int, art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                       joint_X_c: kc.array(dtype=kc.transform),
                              body_com: kc.array(dtype=kc.vec3), H: kc.array(dtype=float),
                              rhs: kc.array(dtype=float), joint_q: kc.array(dtype=float),
                              joint_qd: kc.array(dtype=float), dt: float,
                              L: kc.array(dtype=float), y: kc.array(dtype=float), qdd: kc.array(dtype=float),
                              joint_q_out: kc.array(dtype=float), joint_qd_out: kc.array(dtype=float)):
    """Step 3 for articulation ``a``: qdd = H^-1 rhs by Cholesky, then semi-implicit Euler."""
    fs_solve(a, art_table, H, rhs, L, y, qdd)
    # semi-implicit Euler: velocities first, coordinates with the new velocities
    for k in range(art_table[a, 2], art_table[a, 3]):
        joint_qd_out[k] = joint_qd[k] + qdd[k] * dt
    fs_integrate_coords(a, art_table, joint_table, joint_X_c, body_com, joint_q, joint_qd_out, dt, joint_q_out)


@kc.kernel
def fs_kinematics_kernel(art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                         joint_X_p: kc.array(dtype=kc.transform), joint_X_c: kc.array(dtype=kc.transform),
                         joint_axis: kc.array(dtype=kc.vec3),
                         joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float),
                         body_com: kc.array(dtype=kc.vec3), body_mass: kc.array(dtype=float),
                         body_inertia: kc.array(dtype=kc.mat33), control_body_f: kc.array(dtype=kc.spatial_vector),
                         body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                         body_v: kc.array(dtype=kc.spatial_vector), body_a: kc.array(dtype=kc.spatial_vector),
                         body_m: kc.array(dtype=float), body_h: kc.array(dtype=kc.vec3),
                         body_io: kc.array(dtype=kc.mat33), joint_S: kc.array(dtype=kc.spatial_vector),
                         wrenches: kc.array(dtype=kc.spatial_vector)):
    """Stage 1, and the step's wrenches start as the control's (contacts add to them)."""
    a = kc.tid()
    fs_kinematics(a, art_table, joint_table,
                  joint_X_p, joint_X_c, joint_axis, joint_q, joint_qd, body_com, body_mass, body_inertia,
                  body_q, body_qd, body_v, body_a, body_m, body_h, body_io, joint_S)
    for j in range(art_table[a, 0], art_table[a, 1]):
        wrenches[joint_table[j, 2]] = control_body_f[joint_table[j, 2]]


@kc.kernel
def fs_step_kernel(art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                   joint_X_p: kc.array(dtype=kc.transform), joint_X_c: kc.array(dtype=kc.transform),
                   joint_axis: kc.array(dtype=kc.vec3),
                   body_joint: kc.array(dtype=int), joint_q: kc.array(dtype=float),
                   joint_qd: kc.array(dtype=float), joint_armature: kc.array(dtype=float),
                   joint_damping: kc.array(dtype=float), joint_target_ke: kc.array(dtype=float),
                   joint_target_kd: kc.array(dtype=float), joint_limit_lower: kc.array(dtype=float),
                   joint_limit_upper: kc.array(dtype=float), joint_limit_ke: kc.array(dtype=float),
                   joint_limit_kd: kc.array(dtype=float), joint_effort_limit: kc.array(dtype=float),
                       joint_f: kc.array(dtype=float),
                   target_pos: kc.array(dtype=float), target_vel: kc.array(dtype=float),
                   body_com: kc.array(dtype=kc.vec3), body_mass: kc.array(dtype=float),
                   body_inertia: kc.array(dtype=kc.mat33), control_body_f: kc.array(dtype=kc.spatial_vector),
                   gravity: kc.vec3, dt: float,
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
    """A whole step without contacts: stages 1-3 and the bodies of the new state, one launch."""
    a = kc.tid()
    fs_kinematics(a, art_table, joint_table,
                  joint_X_p, joint_X_c, joint_axis, joint_q, joint_qd, body_com, body_mass, body_inertia,
                  body_q, body_qd, body_v, body_a, body_m, body_h, body_io, joint_S)
    for j in range(art_table[a, 0], art_table[a, 1]):
        wrenches[joint_table[j, 2]] = control_body_f[joint_table[j, 2]]
    fs_assemble(a, art_table, joint_table, joint_X_p, body_joint, joint_q, joint_qd, joint_armature,
                joint_damping, joint_target_ke, joint_target_kd, joint_limit_lower, joint_limit_upper,
                joint_limit_ke, joint_limit_kd, joint_effort_limit, joint_f, target_pos, target_vel, body_q, body_com,
                wrenches, body_v,
                body_a, body_m, body_h, body_io, joint_S, gravity, dt, f_acc, ic_m, ic_h, ic_io, H, rhs)
    fs_solve_integrate(a, art_table, joint_table, joint_X_c, body_com, H, rhs, joint_q, joint_qd, dt, L, y, qdd,
                       joint_q_out, joint_qd_out)
    fk_articulation(a, art_table, joint_table,
                    joint_X_p, joint_X_c, joint_axis, joint_q_out, joint_qd_out, body_com, body_q_out,
                    body_qd_out)


@kc.kernel
def fs_assemble_kernel(art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                       joint_X_p: kc.array(dtype=kc.transform), body_joint: kc.array(dtype=int),
                       joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float),
                       joint_armature: kc.array(dtype=float), joint_damping: kc.array(dtype=float),
                       joint_target_ke: kc.array(dtype=float), joint_target_kd: kc.array(dtype=float),
                       joint_limit_lower: kc.array(dtype=float), joint_limit_upper: kc.array(dtype=float),
                       joint_limit_ke: kc.array(dtype=float), joint_limit_kd: kc.array(dtype=float),
                       joint_effort_limit: kc.array(dtype=float),
                       joint_f: kc.array(dtype=float), target_pos: kc.array(dtype=float),
                       target_vel: kc.array(dtype=float), body_q: kc.array(dtype=kc.transform),
                       body_com: kc.array(dtype=kc.vec3), body_f: kc.array(dtype=kc.spatial_vector),
                       body_v: kc.array(dtype=kc.spatial_vector), body_a: kc.array(dtype=kc.spatial_vector),
                       body_m: kc.array(dtype=float), body_h: kc.array(dtype=kc.vec3),
                       body_io: kc.array(dtype=kc.mat33), joint_S: kc.array(dtype=kc.spatial_vector),
                       gravity: kc.vec3, dt: float,
                       f_acc: kc.array(dtype=kc.spatial_vector), ic_m: kc.array(dtype=float),
                       ic_h: kc.array(dtype=kc.vec3), ic_io: kc.array(dtype=kc.mat33),
                       H: kc.array(dtype=float), rhs: kc.array(dtype=float)):
    """Stage 2 alone (SolverFeatherstone.mass_matrix)."""
    fs_assemble(kc.tid(), art_table, joint_table, joint_X_p, body_joint, joint_q, joint_qd, joint_armature,
                joint_damping, joint_target_ke, joint_target_kd, joint_limit_lower, joint_limit_upper,
                joint_limit_ke, joint_limit_kd, joint_effort_limit, joint_f, target_pos, target_vel, body_q, body_com,
                body_f, body_v,
                body_a, body_m, body_h, body_io, joint_S, gravity, dt, f_acc, ic_m, ic_h, ic_io, H, rhs)
