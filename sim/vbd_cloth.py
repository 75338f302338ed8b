"""Vertex block descent for cloth (kernels + launchers), used by sim.SolverVBD.

One implicit-Euler step minimises the incremental potential over the end positions x

    G(x) = sum_i m_i / (2 dt^2) |x_i - y_i|^2 + E_membrane(x) + E_bending(x) + E_contact(x),
    y = x0 + dt v0 + dt^2 (g - damping v0 + f_ext / m)    (the inertial target).

VBD (Chen et al. 2024) minimises G one vertex at a time with a 3x3 Newton step: the force
f_i = -dG/dx_i and the block H_i = d^2G/dx_i^2 (made positive semi-definite per energy
term) gathered from the triangles, bending edges and contacts around vertex i, then
x_i += H_i^-1 f_i.  Vertices are coloured so that no two of one colour share a triangle or
a bending edge; one launch updates one colour (Gauss-Seidel, the same result whatever the
thread count).  At a fixed point every moving vertex has f_i = 0, the optimality condition
of the implicit step: the converged result does not depend on the number of iterations.

Energies (the material meanings of sim/cloth_forces.py):
  membrane  StVK, A (mu |E|^2 + lambda/2 tr(E)^2), with F = [x1 - x0, x2 - x0] D^-1, and the
            damping stress tri_kd dE/dt, dE/dt from the step's velocity (x - x0)/dt;
            for corner a with weights c (F = sum_a x_a c_a^T), w = F c:
            grad = A F S c,  H_aa = A [max(c^T S c, 0) I + (mu + lambda) w w^T
                                       + mu |c|^2 (f0 f0^T + f1 f1^T)] + the damping's block;
  bending   edge_ke / 2 (theta - rest)^2 + damping edge_kd dtheta/dt, Gauss-Newton block
            (edge_ke + edge_kd / dt) g g^T with g = dtheta/dx_a;
  contact   with the ground, spheres, boxes, capsules and planes (static, or on bodies at the
            body's end-of-step pose: bodies are kinematic here) and static triangle meshes:
            penalty contact_ke / 2 gap^2 for gap < 0 (gap: distance minus the particle
            radius), block contact_ke n n^T; Coulomb friction on the tangential part of the
            step's motion u relative to the surface, mu f_n u / max(|u|, eps_u) (lagged
            normal force, IPC-style smoothing);
  attachment  ke / 2 |x - x_anchor|^2 plus damping kd on the velocity relative to the anchor,
            block (ke + kd / dt) I, the anchor fixed in a (kinematic) body's frame;
  self      vertex-triangle and edge-edge pairs (sim/vbd_self_contact.py), and a bound on each
            vertex's displacement over the step so that the cloth never passes through itself.
"""
from __future__ import annotations

import kernelcore as kc

import geometry  # noqa: F401  (adds the mesh_* builtins)

from .body_integrate import body_frame_from_com, rotate_by
from .cloth_self_contact import STEP_FRACTION
from .collide_mesh import mesh_surface_distance
from .collide_shapes import shape_point_gap
from .vbd_self_contact import self_contact_block, vbd_scatter_kernel


@kc.kernel
def vbd_inertia_kernel(q0: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3), f_ext: kc.array(dtype=kc.vec3),
                       use_f_ext: int, inv_mass: kc.array(dtype=float), gravity: kc.vec3, damping: float, dt: float,
                       inertia: kc.array(dtype=kc.vec3), q1: kc.array(dtype=kc.vec3)):
    """Inertial target y and the initial guess x = y; particles of mass 0 move with their velocity."""
    i = kc.tid()
    w = inv_mass[i]
    v = qd0[i]
    if w > 0.0:
        a = gravity - v * damping
        if use_f_ext != 0:
            a = a + f_ext[i] * w
        v = v + a * dt
    y = q0[i] + v * dt
    inertia[i] = y
    q1[i] = y


@kc.func
def corner_weights(Dinv: kc.mat22, a: int) -> kc.vec2:
    """c_a: F = sum_a x_a c_a^T for the corners a = 0, 1, 2 of a triangle with inverse rest matrix Dinv."""
    if a == 1:
        return kc.vec2(Dinv[0, 0], Dinv[0, 1])
    if a == 2:
        return kc.vec2(Dinv[1, 0], Dinv[1, 1])
    return kc.vec2(-(Dinv[0, 0] + Dinv[1, 0]), -(Dinv[0, 1] + Dinv[1, 1]))


@kc.func
def penalty_contact(nrm: kc.vec3, gap: float, u: kc.vec3, ke: float, mu: float, eps: float):
    """Force [N] and 3x3 block [N/m] of a penalty contact with outward normal ``nrm`` at ``gap`` [m] (active
    below 0): ke / 2 gap^2, and Coulomb friction on the tangential part of the step's relative motion ``u`` [m],
    smoothed below ``eps`` [m] (static friction as a stiff spring) so that the force is continuous."""
    f = kc.vec3(0.0, 0.0, 0.0)
    H = kc.diag(kc.vec3(0.0, 0.0, 0.0))
    if gap < 0.0:
        fn = -ke * gap
        f = nrm * fn
        H = kc.outer(nrm, nrm) * ke
        ut = u - nrm * kc.dot(u, nrm)
        ul = kc.max(kc.length(ut), eps)
        kf = mu * fn / ul
        f = f - ut * kf
        H = H + (kc.diag(kc.vec3(1.0, 1.0, 1.0)) - kc.outer(nrm, nrm)) * kf
    return f, H


@kc.func
def vbd_vertex_update(
        i: int, q: kc.array(dtype=kc.vec3), q_prev: kc.array(dtype=kc.vec3), inertia: kc.array(dtype=kc.vec3),
        mass: kc.array(dtype=float), radius: kc.array(dtype=float), dt: float,
        tri_start: kc.array(dtype=int), tri_adj: kc.array(dtype=int, ndim=2), tri_indices: kc.array(dtype=int, ndim=2),
        tri_poses: kc.array(dtype=kc.mat22), tri_areas: kc.array(dtype=float),
        tri_materials: kc.array(dtype=float, ndim=2),
        edge_start: kc.array(dtype=int), edge_adj: kc.array(dtype=int, ndim=2),
        edge_indices: kc.array(dtype=int, ndim=2), edge_rest: kc.array(dtype=float),
        edge_props: kc.array(dtype=float, ndim=2),
        contact_ke: float, friction_eps: float,
        ground: int, ground_normal: kc.vec3, ground_offset: float, mu_ground: float,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
        shape_scale: kc.array(dtype=kc.vec3), shape_mu: kc.array(dtype=float),
        body_q_end: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        mesh_count: int, mesh_shapes: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        att_start: kc.array(dtype=int), att_adj: kc.array(dtype=int, ndim=2), att_body: kc.array(dtype=int),
        att_anchor: kc.array(dtype=kc.vec3), att_props: kc.array(dtype=float, ndim=2),
        sc_on: int, sc_edges: kc.array(dtype=int, ndim=2), sc_slots: int, sc_count: kc.array(dtype=int),
        sc_pairs: kc.array(dtype=int, ndim=2), sc_thickness: float, sc_ke: float,
        step_bound: kc.array(dtype=float), step_fraction: float) -> kc.vec3:
    """Vertex ``i`` after one Newton step on its block, the other vertices at ``q`` [m]."""
    x = q[i]
    inv_dt = 1.0 / dt
    mh = mass[i] * inv_dt * inv_dt
    f = (inertia[i] - x) * mh
    H = kc.diag(kc.vec3(mh, mh, mh))
    for n in range(tri_start[i], tri_start[i + 1]):
        t = tri_adj[n, 0]
        a = tri_adj[n, 1]
        i0 = tri_indices[t, 0]
        i1 = tri_indices[t, 1]
        i2 = tri_indices[t, 2]
        Dinv = tri_poses[t]
        mu = tri_materials[t, 0]
        lam = tri_materials[t, 1]
        kd = tri_materials[t, 2]
        area = tri_areas[t]
        p0 = q_prev[i0]
        d1 = q[i1] - q[i0]
        d2 = q[i2] - q[i0]
        # deformation gradient F = [f0 f1] and its rate from the step's velocity (x - x_prev) / dt
        f0 = d1 * Dinv[0, 0] + d2 * Dinv[1, 0]
        f1 = d1 * Dinv[0, 1] + d2 * Dinv[1, 1]
        v1 = (d1 - (q_prev[i1] - p0)) * inv_dt
        v2 = (d2 - (q_prev[i2] - p0)) * inv_dt
        r0 = v1 * Dinv[0, 0] + v2 * Dinv[1, 0]
        r1 = v1 * Dinv[0, 1] + v2 * Dinv[1, 1]
        e00 = 0.5 * (kc.dot(f0, f0) - 1.0)
        e11 = 0.5 * (kc.dot(f1, f1) - 1.0)
        e01 = 0.5 * kc.dot(f0, f1)
        tr = e00 + e11
        S00 = 2.0 * mu * e00 + lam * tr + kd * kc.dot(f0, r0)
        S11 = 2.0 * mu * e11 + lam * tr + kd * kc.dot(f1, r1)
        S01 = 2.0 * mu * e01 + kd * 0.5 * (kc.dot(f0, r1) + kc.dot(f1, r0))
        c = corner_weights(Dinv, a)
        f = f - ((f0 * S00 + f1 * S01) * c[0] + (f0 * S01 + f1 * S11) * c[1]) * area
        w = f0 * c[0] + f1 * c[1]
        cc = kc.dot(c, c)
        # geometric term c^T S c I: negative under compression, dropped there to keep the block PSD
        g = kc.max(c[0] * c[0] * S00 + 2.0 * c[0] * c[1] * S01 + c[1] * c[1] * S11, 0.0)
        kdt = kd * inv_dt
        H = H + (kc.diag(kc.vec3(g, g, g)) + kc.outer(w, w) * (mu + lam + 0.5 * kdt)
                 + (kc.outer(f0, f0) + kc.outer(f1, f1)) * (cc * (mu + 0.5 * kdt))) * area
    for n in range(edge_start[i], edge_start[i + 1]):
        e_idx = edge_adj[n, 0]
        a = edge_adj[n, 1]
        j0 = edge_indices[e_idx, 0]
        j1 = edge_indices[e_idx, 1]
        j2 = edge_indices[e_idx, 2]
        j3 = edge_indices[e_idx, 3]
        x0 = q[j0]
        x1 = q[j1]
        x2 = q[j2]
        x3 = q[j3]
        n1 = kc.cross(x2 - x0, x3 - x0)
        n2 = kc.cross(x3 - x1, x2 - x1)
        ke = edge_props[e_idx, 0]
        kd = edge_props[e_idx, 1]
        if (ke > 0.0 or kd > 0.0) and kc.dot(n1, n1) > 1.0e-20 and kc.dot(n2, n2) > 1.0e-20 and kc.length(x3 - x2) > 1.0e-10:
            # d theta / d x_k of sim/cloth_forces.py's dihedral_gradient, its common factors computed once
            e = x3 - x2
            el = kc.length(e)
            na = kc.cross(x0 - x2, x0 - x3)
            nb = kc.cross(x1 - x3, x1 - x2)
            ua = na / kc.dot(na, na)
            ub = nb / kc.dot(nb, nb)
            g0 = -ua * el
            g1 = -ub * el
            g2 = -(ua * (kc.dot(x0 - x3, e) / el) + ub * (kc.dot(x1 - x3, e) / el))
            g3 = ua * (kc.dot(x0 - x2, e) / el) + ub * (kc.dot(x1 - x2, e) / el)
            rate = float(0.0)
            if kd > 0.0:
                rate = (kc.dot(g0, x0 - q_prev[j0]) + kc.dot(g1, x1 - q_prev[j1]) + kc.dot(g2, x2 - q_prev[j2])
                        + kc.dot(g3, x3 - q_prev[j3])) * inv_dt
            # the angle wraps at +-pi; the difference to the rest angle is taken the short way round
            d = kc.atan2(kc.dot(kc.cross(n1, n2), e) / el, kc.dot(n1, n2)) - edge_rest[e_idx]
            if d > 3.14159265:
                d = d - 6.28318531
            elif d < -3.14159265:
                d = d + 6.28318531
            ga = g0
            if a == 1:
                ga = g1
            elif a == 2:
                ga = g2
            elif a == 3:
                ga = g3
            f = f - ga * (ke * d + kd * rate)
            H = H + kc.outer(ga, ga) * (ke + kd * inv_dt)
    # contacts: ground (s == shape_count), static shapes and shapes on (kinematic) bodies at their end-of-step pose
    r = radius[i]
    u = x - q_prev[i]   # the step's motion, for friction
    for s in range(shape_count + 1):
        nrm = ground_normal
        gap = float(1.0e30)
        mu_s = mu_ground
        u_rel = u
        if s == shape_count:
            if ground != 0:
                gap = kc.dot(nrm, x) - ground_offset - r
        else:
            mu_s = shape_mu[s]
            b = shape_body[s]
            pos = shape_pos[s]
            rot = shape_rot[s]
            if b >= 0:
                tf = body_q_end[b]
                rot = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * rot
                pos = kc.transform_point(tf, pos)
                # friction acts on the motion relative to the body's surface over the step
                arm = x - kc.transform_point(tf, body_com[b])
                u_rel = u - (kc.spatial_top(body_qd[b]) + kc.cross(kc.spatial_bottom(body_qd[b]), arm)) * dt
            ng = shape_point_gap(shape_type[s], pos, rot, shape_scale[s], x, r, nrm)
            nrm = kc.vec3(ng[0], ng[1], ng[2])
            gap = ng[3]
        if gap < 0.0:
            fc, Hc = penalty_contact(nrm, gap, u_rel, contact_ke, mu_s, friction_eps)
            f = f + fc
            H = H + Hc
    # static triangle meshes: closest point, side from the pseudo-normal (sim/collide_mesh.py)
    for k in range(mesh_count):
        s = mesh_shapes[k]
        mesh = shape_mesh[s]
        g = mesh_surface_distance(mesh, x, 2.0 * r + kc.length(u))
        gap = g[3] - r   # FAR - r when no face is near: no contact
        if gap < 0.0:
            fc, Hc = penalty_contact(kc.vec3(g[0], g[1], g[2]), gap, u, contact_ke, shape_mu[s], friction_eps)
            f = f + fc
            H = H + Hc
    # attachments to bodies: zero-length damped springs to anchor points moving with the (kinematic) bodies
    for n in range(att_start[i], att_start[i + 1]):
        a = att_adj[n, 0]
        b = att_body[a]
        tf = body_q_end[b]
        xa = kc.transform_point(tf, att_anchor[a])
        va = kc.spatial_top(body_qd[b]) + kc.cross(kc.spatial_bottom(body_qd[b]), xa - kc.transform_point(tf, body_com[b]))
        ke = att_props[a, 0]
        kd = att_props[a, 1]
        f = f + (xa - x) * ke + (va - u * inv_dt) * kd
        kh = ke + kd * inv_dt
        H = H + kc.diag(kc.vec3(kh, kh, kh))
    x_new = x
    if sc_on != 0:
        fs, Hs = self_contact_block(i, q, tri_indices, sc_edges, sc_slots, sc_count, sc_pairs, sc_thickness, sc_ke)
        f = f + fs
        H = H + Hs
    if kc.abs(kc.determinant(H)) > 1.0e-30:
        x_new = x + kc.inverse(H) * f
    if sc_on != 0:
        # never farther from the step's start than a fraction of the distance to the nearest element: no crossing
        step = x_new - q_prev[i]
        length = kc.length(step)
        limit = step_fraction * step_bound[i]
        if length > limit:
            x_new = q_prev[i] + step * (limit / length)
    return x_new


@kc.kernel
def vbd_solve_colour_kernel(
        vertices: kc.array(dtype=int), colour_of: kc.array(dtype=int), colour: int, q_in: kc.array(dtype=kc.vec3),
        q_prev: kc.array(dtype=kc.vec3), inertia: kc.array(dtype=kc.vec3),
        mass: kc.array(dtype=float), radius: kc.array(dtype=float), dt: float,
        tri_start: kc.array(dtype=int), tri_adj: kc.array(dtype=int, ndim=2), tri_indices: kc.array(dtype=int, ndim=2),
        tri_poses: kc.array(dtype=kc.mat22), tri_areas: kc.array(dtype=float),
        tri_materials: kc.array(dtype=float, ndim=2),
        edge_start: kc.array(dtype=int), edge_adj: kc.array(dtype=int, ndim=2),
        edge_indices: kc.array(dtype=int, ndim=2), edge_rest: kc.array(dtype=float),
        edge_props: kc.array(dtype=float, ndim=2),
        contact_ke: float, friction_eps: float,
        ground: int, ground_normal: kc.vec3, ground_offset: float, mu_ground: float,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
        shape_scale: kc.array(dtype=kc.vec3), shape_mu: kc.array(dtype=float),
        body_q_end: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        mesh_count: int, mesh_shapes: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        att_start: kc.array(dtype=int), att_adj: kc.array(dtype=int, ndim=2), att_body: kc.array(dtype=int),
        att_anchor: kc.array(dtype=kc.vec3), att_props: kc.array(dtype=float, ndim=2),
        sc_on: int, sc_edges: kc.array(dtype=int, ndim=2), sc_slots: int, sc_count: kc.array(dtype=int),
        sc_pairs: kc.array(dtype=int, ndim=2), sc_thickness: float, sc_ke: float,
        step_bound: kc.array(dtype=float), step_fraction: float,
        q_out: kc.array(dtype=kc.vec3)):
    """One Newton step for the vertices of colour number ``colour`` read from ``q_in``, written to ``q_out``.

    In place (fast, off a Tape): ``vertices`` is the colour's own list and ``q_out`` is ``q_in``.
    Out of place (on a Tape, so that each sweep's positions stay recorded): ``vertices`` lists every
    particle, the colour's vertices are updated and the others copied."""
    i = vertices[kc.tid()]
    x = q_in[i]
    if colour_of[i] == colour:
        x = vbd_vertex_update(i, q_in, q_prev, inertia, mass, radius, dt, tri_start, tri_adj, tri_indices, tri_poses,
                              tri_areas, tri_materials, edge_start, edge_adj, edge_indices, edge_rest, edge_props,
                              contact_ke, friction_eps, ground, ground_normal, ground_offset, mu_ground, shape_count,
                              shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mu, body_q_end,
                              body_qd, body_com, mesh_count, mesh_shapes, shape_mesh, att_start, att_adj, att_body,
                              att_anchor, att_props, sc_on, sc_edges, sc_slots, sc_count, sc_pairs, sc_thickness,
                              sc_ke, step_bound, step_fraction)
    q_out[i] = x


@kc.kernel
def vbd_chebyshev_kernel(vertices: kc.array(dtype=int), start: kc.array(dtype=kc.vec3), omega: float,
                         prev: kc.array(dtype=kc.vec3), q: kc.array(dtype=kc.vec3)):
    """x <- omega (x - x_prev) + x_prev with x_prev the iterate before the last one; then x_prev <- start."""
    i = vertices[kc.tid()]
    x_prev = prev[i]
    q[i] = x_prev + (q[i] - x_prev) * omega
    prev[i] = start[i]


@kc.kernel
def vbd_chebyshev_copy_kernel(q_hat: kc.array(dtype=kc.vec3), prev: kc.array(dtype=kc.vec3),
                              inv_mass: kc.array(dtype=float), omega: float, q_out: kc.array(dtype=kc.vec3)):
    """Out-of-place Chebyshev step (for a Tape): moving particles prev + omega (q_hat - prev)."""
    i = kc.tid()
    x = q_hat[i]
    if inv_mass[i] > 0.0:
        x = prev[i] + (x - prev[i]) * omega
    q_out[i] = x


@kc.kernel
def vbd_velocity_kernel(q0: kc.array(dtype=kc.vec3), q1: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3),
                        inv_mass: kc.array(dtype=float), inv_dt: float, qd1: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    if inv_mass[i] > 0.0:
        qd1[i] = (q1[i] - q0[i]) * inv_dt
    else:
        qd1[i] = qd0[i]


def vbd_predict(model, state_in, control, q_out, inertia, dt, record=False):
    """Inertial target into ``inertia`` and the initial guess into ``q_out``."""
    has_f = control is not None and control.particle_f_ext is not None
    f_ext = control.particle_f_ext if has_f else state_in.particle_f
    kc.launch(vbd_inertia_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, f_ext, int(has_f), model.particle_inv_mass,
                      model.gravity, model.particle_damping, float(dt)],
              outputs=[inertia, q_out], device=model.device, record_tape=record)


@kc.kernel
def vbd_advance_bodies_kernel(body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
                              body_com: kc.array(dtype=kc.vec3), dt: float,
                              body_q1: kc.array(dtype=kc.transform), body_qd1: kc.array(dtype=kc.spatial_vector)):
    """Bodies are kinematic for SolverVBD: the centre of mass moves with its velocity and the frame turns by
    the Cayley rotation of the angular velocity (as sim/body_integrate.py with no force)."""
    b = kc.tid()
    tf = body_q0[b]
    qd = body_qd0[b]
    com = kc.transform_point(tf, body_com[b]) + kc.spatial_top(qd) * dt
    rot = rotate_by(kc.transform_get_rotation(tf), kc.spatial_bottom(qd), dt)
    body_q1[b] = body_frame_from_com(com, rot, body_com[b])
    body_qd1[b] = qd


def vbd_advance_bodies(model, state_in, state_out, dt, record=False):
    """``state_out``'s body poses: ``state_in``'s advanced by their velocities over ``dt`` [s] (kinematic)."""
    if model.body_count == 0:
        return
    kc.launch(vbd_advance_bodies_kernel, dim=model.body_count,
              inputs=[state_in.body_q, state_in.body_qd, model.body_com, float(dt)],
              outputs=[state_out.body_q, state_out.body_qd], device=model.device, record_tape=record)


def _solve_inputs(model, solver, q_prev, inertia, dt, ctx):
    """The inputs shared by the two sweep kernels, after their own leading ones (``ctx``: the step's
    :class:`sim.solvers.vbd.VBDStepContext`)."""
    return [q_prev, inertia, model.particle_mass, model.particle_radius, float(dt),
            solver.tri_start, solver.tri_adj, model.tri_indices, model.tri_poses, model.tri_areas,
            model.tri_materials, solver.edge_start, solver.edge_adj, model.edge_indices,
            model.edge_rest_angle, model.edge_bending_properties, float(solver.contact_ke),
            float(solver.friction_eps), int(model.ground), model.ground_normal, model.ground_offset,
            float(solver.ground_mu), model.shape_count, model.shape_type, model.shape_body, model.shape_pos,
            model.shape_rot, model.shape_scale, solver.shape_mu, ctx.body_q_end, ctx.body_qd, solver.body_com,
            solver.mesh_count, solver.mesh_shapes, solver.shape_mesh, solver.att_start, solver.att_adj,
            solver.att_body, solver.att_anchor, solver.att_props, int(ctx.pairs is not None), solver.sc_edges,
            ctx.slots, ctx.count, ctx.pairs_array, solver.sc_thickness, solver.sc_ke, ctx.bound, STEP_FRACTION]


def vbd_solve_colour(model, solver, colour, q_prev, q, dt, ctx):
    """One Newton step for every vertex of colour number ``colour``, in place in ``q`` (not recorded).

    With self-contact, vertices of one colour may be each other's contact partners: their new
    positions go to a scratch array first and are copied back after the sweep, so that no thread
    reads a position another thread is writing (the result does not depend on the thread count)."""
    vertices = solver.colours[colour]
    out = q if ctx.pairs is None else solver.scratch
    kc.launch(vbd_solve_colour_kernel, dim=vertices.shape[0],
              inputs=[vertices, solver.colour_of, int(colour), q] + _solve_inputs(model, solver, q_prev,
                                                                                   solver.inertia, dt, ctx),
              outputs=[out], device=model.device, record_tape=False)
    if out is not q:
        kc.launch(vbd_scatter_kernel, dim=vertices.shape[0], inputs=[vertices, out], outputs=[q],
                  device=model.device, record_tape=False)


def vbd_solve_colour_copy(model, solver, colour, q_prev, inertia, q_in, q_out, dt, ctx):
    """The sweep of colour number ``colour`` from ``q_in`` into ``q_out`` (recorded on an active Tape)."""
    kc.launch(vbd_solve_colour_kernel, dim=model.particle_count,
              inputs=[solver.all_particles, solver.colour_of, int(colour), q_in]
              + _solve_inputs(model, solver, q_prev, inertia, dt, ctx),
              outputs=[q_out], device=model.device)


def vbd_chebyshev_copy(model, q_hat, prev, omega, q_out):
    """Out-of-place Chebyshev step (recorded on an active Tape)."""
    kc.launch(vbd_chebyshev_copy_kernel, dim=model.particle_count,
              inputs=[q_hat, prev, model.particle_inv_mass, float(omega)], outputs=[q_out], device=model.device)


def vbd_chebyshev(model, movers, start, omega, prev, q):
    """Chebyshev over-relaxation of the moving particles' iterate (see vbd_chebyshev_kernel)."""
    kc.launch(vbd_chebyshev_kernel, dim=movers.shape[0], inputs=[movers, start, float(omega)], outputs=[prev, q],
              device=model.device, record_tape=False)


def vbd_velocities(model, state_in, state_out, dt, record=False):
    """v = (x1 - x0) / dt for moving particles; kinematic ones keep their velocity."""
    kc.launch(vbd_velocity_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_out.particle_q, state_in.particle_qd, model.particle_inv_mass,
                      1.0 / float(dt)], outputs=[state_out.particle_qd], device=model.device, record_tape=record)
