"""XPBD constraint projections for cloth (kernels + launchers), used by sim.SolverXPBD.

Each constraint C(x) = 0 with compliance alpha [1/stiffness] keeps its Lagrange
multiplier lambda across the iterations of a step (zeroed at the start of the step):

    dlambda = (-C - alpha~ lambda) / (sum_k w_k |grad_k C|^2 + alpha~),   alpha~ = alpha / dt^2,
    lambda += dlambda,   x_k += w_k grad_k C dlambda.

At a fixed point every constraint satisfies C + alpha~ lambda = 0, the optimality
condition of one implicit-Euler step of the elastic energy; that does not depend on how
many iterations reached it (what plain PBD, which forgets lambda, gets wrong: its
stiffness grows with the iteration count).  Constraints are split into colours that
share no particle, and one launch projects one colour: a Gauss-Seidel sweep whose
result is the same whatever the thread count.
"""
from __future__ import annotations

import kernelcore as kc

from .cloth_forces import dihedral_angle_gradients
from .collide_shapes import shape_point_gap


@kc.kernel
def xpbd_predict_kernel(q0: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3), f_ext: kc.array(dtype=kc.vec3),
                        use_f_ext: int, inv_mass: kc.array(dtype=float), gravity: kc.vec3, damping: float, dt: float,
                        q1: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    w = inv_mass[i]
    v = qd0[i]
    if w > 0.0:
        a = gravity - v * damping
        if use_f_ext != 0:
            a = a + f_ext[i] * w
        v = v + a * dt
    q1[i] = q0[i] + v * dt


@kc.func
def stretch_dlambda(xi: kc.vec3, xj: kc.vec3, wi: float, wj: float, rest: float, compliance: float, lam: float,
                    dt: float) -> float:
    """Multiplier increment of one distance constraint |xi - xj| = rest (0 when it cannot act)."""
    length = kc.length(xi - xj)
    dl = float(0.0)
    if wi + wj > 0.0 and length > 1.0e-9:
        a = compliance / (dt * dt)
        dl = (rest - length - a * lam) / (wi + wj + a)
    return dl


@kc.func
def project_stretch(c: int, pairs: kc.array(dtype=int, ndim=2), rest: kc.array(dtype=float),
                    compliance: kc.array(dtype=float), inv_mass: kc.array(dtype=float), dt: float,
                    lam: kc.array(dtype=float), q: kc.array(dtype=kc.vec3)):
    """Project stretch constraint ``c`` in place (Gauss-Seidel)."""
    i = pairs[c, 0]
    j = pairs[c, 1]
    wi = inv_mass[i]
    wj = inv_mass[j]
    xi = q[i]
    xj = q[j]
    dl = stretch_dlambda(xi, xj, wi, wj, rest[c], compliance[c], lam[c], dt)
    if dl != 0.0:
        n = kc.normalize(xi - xj)
        lam[c] = lam[c] + dl
        q[i] = xi + n * (wi * dl)
        q[j] = xj - n * (wj * dl)


@kc.func
def bending_step(x0: kc.vec3, x1: kc.vec3, x2: kc.vec3, x3: kc.vec3, w0: float, w1: float, w2: float, w3: float,
                 rest: float, ke: float, lam: float, dt: float) -> kc.mat44:
    """One projection of the dihedral constraint theta = rest (compliance 1 / ke) of bending edge
    (o0=x0, o1=x1, e0=x2, e1=x3): row k holds (dx_k [m], dlambda); all zero when it cannot act.

    The angle and its four gradients come from one cloth_forces.dihedral_angle_gradients call
    (shared cross products): bending is most of an XPBD sweep.
    """
    n1 = kc.cross(x0 - x2, x0 - x3)
    n2 = kc.cross(x1 - x3, x1 - x2)
    out = kc.mat44(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if ke > 0.0 and kc.dot(n1, n1) > 1.0e-20 and kc.dot(n2, n2) > 1.0e-20 and kc.length(x3 - x2) > 1.0e-10:
        m = dihedral_angle_gradients(x0, x1, x2, x3)
        g0 = kc.vec3(m[0, 0], m[0, 1], m[0, 2])
        g1 = kc.vec3(m[1, 0], m[1, 1], m[1, 2])
        g2 = kc.vec3(m[2, 0], m[2, 1], m[2, 2])
        g3 = kc.vec3(m[3, 0], m[3, 1], m[3, 2])
        denom = w0 * kc.dot(g0, g0) + w1 * kc.dot(g1, g1) + w2 * kc.dot(g2, g2) + w3 * kc.dot(g3, g3)
        if denom > 0.0:
            d = m[0, 3] - rest
            if d > 3.14159265:
                d = d - 6.28318531
            elif d < -3.14159265:
                d = d + 6.28318531
            alpha = 1.0 / (ke * dt * dt)
            dl = (-d - alpha * lam) / (denom + alpha)
            d0 = g0 * (w0 * dl)
            d1 = g1 * (w1 * dl)
            d2 = g2 * (w2 * dl)
            d3 = g3 * (w3 * dl)
            out = kc.mat44(d0[0], d0[1], d0[2], dl, d1[0], d1[1], d1[2], dl, d2[0], d2[1], d2[2], dl,
                           d3[0], d3[1], d3[2], dl)
    return out


@kc.func
def project_bending(e: int, indices: kc.array(dtype=int, ndim=2), rest: kc.array(dtype=float),
                    props: kc.array(dtype=float, ndim=2), inv_mass: kc.array(dtype=float), dt: float,
                    lam: kc.array(dtype=float), q: kc.array(dtype=kc.vec3)):
    """Project bending constraint ``e`` in place (Gauss-Seidel)."""
    i0 = indices[e, 0]
    i1 = indices[e, 1]
    i2 = indices[e, 2]
    i3 = indices[e, 3]
    x0 = q[i0]
    x1 = q[i1]
    x2 = q[i2]
    x3 = q[i3]
    m = bending_step(x0, x1, x2, x3, inv_mass[i0], inv_mass[i1], inv_mass[i2], inv_mass[i3], rest[e], props[e, 0],
                     lam[e], dt)
    dl = m[0, 3]
    if dl != 0.0:
        lam[e] = lam[e] + dl
        q[i0] = x0 + kc.vec3(m[0, 0], m[0, 1], m[0, 2])
        q[i1] = x1 + kc.vec3(m[1, 0], m[1, 1], m[1, 2])
        q[i2] = x2 + kc.vec3(m[2, 0], m[2, 1], m[2, 2])
        q[i3] = x3 + kc.vec3(m[3, 0], m[3, 1], m[3, 2])


@kc.func
def contact_point(x: kc.vec3, x0: kc.vec3, r: float, ground: int, ground_normal: kc.vec3, ground_offset: float,
                  mu_ground: float, shape_count: int, shape_type: kc.array(dtype=int),
                  shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                  shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                  shape_mu: kc.array(dtype=float)) -> kc.vec3:
    """``x`` pushed out of the ground and static shapes; Coulomb friction on the step's motion from ``x0``."""
    for s in range(shape_count + 1):
        n = ground_normal
        gap = float(1.0e30)
        mu = mu_ground
        if s == shape_count:
            if ground != 0:
                gap = kc.dot(n, x) - ground_offset - r
        elif shape_body[s] < 0:
            mu = shape_mu[s]
            ng = shape_point_gap(shape_type[s], shape_pos[s], shape_rot[s], shape_scale[s], x, r, n)
            n = kc.vec3(ng[0], ng[1], ng[2])
            gap = ng[3]
        if gap < 0.0:
            x = x - n * gap
            # friction: the tangential motion of this step shrinks by up to mu times the push
            move = x - x0
            tang = move - n * kc.dot(move, n)
            tl = kc.length(tang)
            if tl > 0.0:
                x = x - tang * (kc.min(mu * (-gap), tl) / tl)
    return x


@kc.kernel
def xpbd_stretch_kernel(constraints: kc.array(dtype=int), pairs: kc.array(dtype=int, ndim=2),
                        rest: kc.array(dtype=float), compliance: kc.array(dtype=float), inv_mass: kc.array(dtype=float),
                        dt: float, lam: kc.array(dtype=float), q: kc.array(dtype=kc.vec3)):
    project_stretch(constraints[kc.tid()], pairs, rest, compliance, inv_mass, dt, lam, q)


@kc.kernel
def xpbd_bending_kernel(constraints: kc.array(dtype=int), indices: kc.array(dtype=int, ndim=2),
                        rest: kc.array(dtype=float), props: kc.array(dtype=float, ndim=2),
                        inv_mass: kc.array(dtype=float), dt: float, lam: kc.array(dtype=float),
                        q: kc.array(dtype=kc.vec3)):
    project_bending(constraints[kc.tid()], indices, rest, props, inv_mass, dt, lam, q)


@kc.kernel
def xpbd_contact_kernel(q0: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float), inv_mass: kc.array(dtype=float),
                        ground: int, ground_normal: kc.vec3, ground_offset: float, mu_ground: float,
                        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                        shape_scale: kc.array(dtype=kc.vec3), shape_mu: kc.array(dtype=float),
                        q: kc.array(dtype=kc.vec3)):
    """Push particles out of the ground and static shapes; Coulomb friction on the step's tangential motion."""
    i = kc.tid()
    if inv_mass[i] > 0.0:
        q[i] = contact_point(q[i], q0[i], radius[i], ground, ground_normal, ground_offset, mu_ground, shape_count,
                             shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mu)


@kc.kernel
def xpbd_sweeps_kernel(iterations: int, stretch_order: kc.array(dtype=int), pairs: kc.array(dtype=int, ndim=2),
                       stretch_rest: kc.array(dtype=float), compliance: kc.array(dtype=float),
                       bending_order: kc.array(dtype=int), indices: kc.array(dtype=int, ndim=2),
                       bending_rest: kc.array(dtype=float), props: kc.array(dtype=float, ndim=2),
                       inv_mass: kc.array(dtype=float), dt: float, q0: kc.array(dtype=kc.vec3),
                       radius: kc.array(dtype=float), ground: int, ground_normal: kc.vec3, ground_offset: float,
                       mu_ground: float, shape_count: int, shape_type: kc.array(dtype=int),
                       shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                       shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                       shape_mu: kc.array(dtype=float), stretch_lam: kc.array(dtype=float),
                       bending_lam: kc.array(dtype=float), q: kc.array(dtype=kc.vec3)):
    """All sweeps of one step in one thread: the colours' constraints in colour order, then the contacts.

    The same projections in the same order as one launch per colour (each colour's
    constraints share no moving particle, so their order within a colour does not matter),
    without a launch per colour: small cloths spend most of a step launching otherwise.
    """
    for it in range(iterations):
        for k in range(stretch_order.shape[0]):
            project_stretch(stretch_order[k], pairs, stretch_rest, compliance, inv_mass, dt, stretch_lam, q)
        for k in range(bending_order.shape[0]):
            project_bending(bending_order[k], indices, bending_rest, props, inv_mass, dt, bending_lam, q)
        for i in range(q.shape[0]):
            if inv_mass[i] > 0.0:
                q[i] = contact_point(q[i], q0[i], radius[i], ground, ground_normal, ground_offset, mu_ground,
                                     shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mu)


@kc.kernel
def xpbd_stretch_compliance_kernel(tri_start: kc.array(dtype=int), tris: kc.array(dtype=int),
                                   materials: kc.array(dtype=float, ndim=2), areas: kc.array(dtype=float),
                                   rest: kc.array(dtype=float), compliance: kc.array(dtype=float)):
    """compliance_e = 1 / sum_{t contains e} (2 tri_ke_t + tri_ka_t) A_t / (3 L_e^2) [m/N] (1e30: no stiffness)."""
    e = kc.tid()
    k = float(0.0)
    for n in range(tri_start[e], tri_start[e + 1]):
        t = tris[n]
        k = k + (2.0 * materials[t, 0] + materials[t, 1]) * areas[t] / (3.0 * rest[e] * rest[e])
    c = float(1.0e30)
    if k > 0.0:
        c = 1.0 / k
    compliance[e] = c


# Out-of-place projections for a kc.Tape: every colour reads (q_in, lam_in) and writes new
# arrays (q_out, lam_out), so that the tape keeps every intermediate state and replays the
# adjoint of each sweep.  One thread per particle moves that particle by its share of the
# one constraint of the colour that holds it (``slot``: constraint index, -1 for none), one
# thread per constraint updates the multipliers; both compute the same increment from the
# same inputs, so the result is that of the in-place sweep.


@kc.kernel
def xpbd_stretch_copy_kernel(slot: kc.array(dtype=int, ndim=2), colour: int, pairs: kc.array(dtype=int, ndim=2),
                             rest: kc.array(dtype=float), compliance: kc.array(dtype=float),
                             inv_mass: kc.array(dtype=float), dt: float, lam_in: kc.array(dtype=float),
                             q_in: kc.array(dtype=kc.vec3), q_out: kc.array(dtype=kc.vec3)):
    p = kc.tid()
    x = q_in[p]
    c = slot[colour, p]
    if c >= 0:
        i = pairs[c, 0]
        j = pairs[c, 1]
        wi = inv_mass[i]
        wj = inv_mass[j]
        xi = q_in[i]
        xj = q_in[j]
        dl = stretch_dlambda(xi, xj, wi, wj, rest[c], compliance[c], lam_in[c], dt)
        n = kc.normalize(xi - xj)
        if p == i:
            x = x + n * (wi * dl)
        else:
            x = x - n * (wj * dl)
    q_out[p] = x


@kc.kernel
def xpbd_stretch_lambda_copy_kernel(colour_of: kc.array(dtype=int), colour: int, pairs: kc.array(dtype=int, ndim=2),
                                    rest: kc.array(dtype=float), compliance: kc.array(dtype=float),
                                    inv_mass: kc.array(dtype=float), dt: float, lam_in: kc.array(dtype=float),
                                    q_in: kc.array(dtype=kc.vec3), lam_out: kc.array(dtype=float)):
    c = kc.tid()
    lam = lam_in[c]
    if colour_of[c] == colour:
        i = pairs[c, 0]
        j = pairs[c, 1]
        lam = lam + stretch_dlambda(q_in[i], q_in[j], inv_mass[i], inv_mass[j], rest[c], compliance[c], lam, dt)
    lam_out[c] = lam


@kc.func
def bending_step_at(e: int, indices: kc.array(dtype=int, ndim=2), rest: kc.array(dtype=float),
                    props: kc.array(dtype=float, ndim=2), inv_mass: kc.array(dtype=float), dt: float,
                    lam: kc.array(dtype=float), q: kc.array(dtype=kc.vec3)) -> kc.mat44:
    i0 = indices[e, 0]
    i1 = indices[e, 1]
    i2 = indices[e, 2]
    i3 = indices[e, 3]
    return bending_step(q[i0], q[i1], q[i2], q[i3], inv_mass[i0], inv_mass[i1], inv_mass[i2], inv_mass[i3], rest[e],
                        props[e, 0], lam[e], dt)


@kc.kernel
def xpbd_bending_copy_kernel(slot: kc.array(dtype=int, ndim=2), colour: int, indices: kc.array(dtype=int, ndim=2),
                             rest: kc.array(dtype=float), props: kc.array(dtype=float, ndim=2),
                             inv_mass: kc.array(dtype=float), dt: float, lam_in: kc.array(dtype=float),
                             q_in: kc.array(dtype=kc.vec3), q_out: kc.array(dtype=kc.vec3)):
    p = kc.tid()
    x = q_in[p]
    code = slot[colour, p]   # 4 * constraint + the particle's place in it
    if code >= 0:
        m = bending_step_at(code // 4, indices, rest, props, inv_mass, dt, lam_in, q_in)
        k = code - 4 * (code // 4)
        x = x + kc.vec3(m[k, 0], m[k, 1], m[k, 2])
    q_out[p] = x


@kc.kernel
def xpbd_bending_lambda_copy_kernel(colour_of: kc.array(dtype=int), colour: int, indices: kc.array(dtype=int, ndim=2),
                                    rest: kc.array(dtype=float), props: kc.array(dtype=float, ndim=2),
                                    inv_mass: kc.array(dtype=float), dt: float, lam_in: kc.array(dtype=float),
                                    q_in: kc.array(dtype=kc.vec3), lam_out: kc.array(dtype=float)):
    e = kc.tid()
    lam = lam_in[e]
    if colour_of[e] == colour:
        m = bending_step_at(e, indices, rest, props, inv_mass, dt, lam_in, q_in)
        lam = lam + m[0, 3]
    lam_out[e] = lam


@kc.kernel
def xpbd_contact_copy_kernel(q0: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
                             inv_mass: kc.array(dtype=float), ground: int, ground_normal: kc.vec3,
                             ground_offset: float, mu_ground: float, shape_count: int,
                             shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                             shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                             shape_scale: kc.array(dtype=kc.vec3), shape_mu: kc.array(dtype=float),
                             q_in: kc.array(dtype=kc.vec3), q_out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    x = q_in[i]
    if inv_mass[i] > 0.0:
        x = contact_point(x, q0[i], radius[i], ground, ground_normal, ground_offset, mu_ground, shape_count,
                          shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mu)
    q_out[i] = x


@kc.kernel
def xpbd_velocity_kernel(q0: kc.array(dtype=kc.vec3), q1: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3),
                         inv_mass: kc.array(dtype=float), inv_dt: float, qd1: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    if inv_mass[i] > 0.0:
        qd1[i] = (q1[i] - q0[i]) * inv_dt
    else:
        qd1[i] = qd0[i]


# The launchers below name no device: the arrays (all on model.device) give it, and kc.launch
# takes its cached fast path (launch.py FastLaunch) only for launches without ``device=``.


def xpbd_predict(model, state_in, control, state_out, dt, q=None, record=False):
    """Explicit prediction: gravity, drag and control forces, into ``q`` (default ``state_out.particle_q``)."""
    f_ext = control.particle_f_ext if control is not None and control.particle_f_ext is not None else state_out.particle_f
    kc.launch(xpbd_predict_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, f_ext, int(control is not None and
                      control.particle_f_ext is not None), model.particle_inv_mass, model.gravity,
                      model.particle_damping, float(dt)],
              outputs=[state_out.particle_q if q is None else q], record_tape=record)


def xpbd_project_stretch(model, colour, pairs, rest, compliance, lam, q, dt):
    """Project the stretch constraints listed in ``colour`` (int array) once."""
    kc.launch(xpbd_stretch_kernel, dim=colour.shape[0],
              inputs=[colour, pairs, rest, compliance, model.particle_inv_mass, float(dt)], outputs=[lam, q],
              record_tape=False)


def xpbd_project_bending(model, colour, lam, q, dt):
    """Project the bending constraints listed in ``colour`` (int array) once."""
    kc.launch(xpbd_bending_kernel, dim=colour.shape[0],
              inputs=[colour, model.edge_indices, model.edge_rest_angle, model.edge_bending_properties,
                      model.particle_inv_mass, float(dt)], outputs=[lam, q], record_tape=False)


def xpbd_project_contacts(model, state_in, ground_mu, shape_mu, q):
    """Move particles out of the ground and the static shapes (meshes excepted)."""
    kc.launch(xpbd_contact_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, model.particle_radius, model.particle_inv_mass, int(model.ground),
                      model.ground_normal, model.ground_offset, float(ground_mu),
                      model.shape_count, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, shape_mu],
              outputs=[q], record_tape=False)


def xpbd_velocities(model, state_in, state_out, dt, record=False):
    """v = (x1 - x0) / dt for moving particles; kinematic ones keep their velocity."""
    kc.launch(xpbd_velocity_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_out.particle_q, state_in.particle_qd, model.particle_inv_mass,
                      1.0 / float(dt)], outputs=[state_out.particle_qd], record_tape=record)


def xpbd_sweeps(model, solver, state_in, q, dt):
    """All ``solver.iterations`` sweeps of one step in one single-threaded launch (see xpbd_sweeps_kernel)."""
    kc.launch(xpbd_sweeps_kernel, dim=1,
              inputs=[solver.iterations, solver.stretch_order, solver.stretch_pairs, solver.stretch_rest,
                      solver.stretch_compliance, solver.bending_order, model.edge_indices, model.edge_rest_angle,
                      model.edge_bending_properties, model.particle_inv_mass, float(dt), state_in.particle_q,
                      model.particle_radius, int(model.ground), model.ground_normal, model.ground_offset,
                      float(solver.ground_mu), model.shape_count, model.shape_type, model.shape_body, model.shape_pos,
                      model.shape_rot, model.shape_scale, solver.shape_mu],
              outputs=[solver.stretch_lambda, solver.bending_lambda, q], record_tape=False)


def xpbd_stretch_compliance(model, tri_start, tris, rest, compliance, record=False):
    """Per-edge compliance [m/N] from the triangles' tri_ke, tri_ka and areas (recorded on a tape if asked)."""
    kc.launch(xpbd_stretch_compliance_kernel, dim=rest.shape[0],
              inputs=[tri_start, tris, model.tri_materials, model.tri_areas, rest], outputs=[compliance],
              record_tape=record)


def xpbd_stretch_copy(model, solver, colour, compliance, lam_in, q_in, lam_out, q_out, dt):
    """One stretch colour out of place, recorded: (lam_in, q_in) -> (lam_out, q_out)."""
    args = [solver.stretch_pairs, solver.stretch_rest, compliance, model.particle_inv_mass, float(dt), lam_in, q_in]
    kc.launch(xpbd_stretch_copy_kernel, dim=model.particle_count, inputs=[solver.stretch_slot, colour, *args],
              outputs=[q_out])
    kc.launch(xpbd_stretch_lambda_copy_kernel, dim=solver.stretch_count, inputs=[solver.stretch_colour_of, colour, *args],
              outputs=[lam_out])


def xpbd_bending_copy(model, solver, colour, lam_in, q_in, lam_out, q_out, dt):
    """One bending colour out of place, recorded: (lam_in, q_in) -> (lam_out, q_out)."""
    args = [model.edge_indices, model.edge_rest_angle, model.edge_bending_properties, model.particle_inv_mass,
            float(dt), lam_in, q_in]
    kc.launch(xpbd_bending_copy_kernel, dim=model.particle_count, inputs=[solver.bending_slot, colour, *args],
              outputs=[q_out])
    kc.launch(xpbd_bending_lambda_copy_kernel, dim=model.edge_count, inputs=[solver.bending_colour_of, colour, *args],
              outputs=[lam_out])


def xpbd_contacts_copy(model, state_in, ground_mu, shape_mu, q_in, q_out):
    """The contact projection out of place, recorded: q_in -> q_out."""
    kc.launch(xpbd_contact_copy_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, model.particle_radius, model.particle_inv_mass, int(model.ground),
                      model.ground_normal, model.ground_offset, float(ground_mu),
                      model.shape_count, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, shape_mu, q_in],
              outputs=[q_out])
