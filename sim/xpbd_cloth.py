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

from .cloth_forces import dihedral_gradient, dihedral_theta
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


@kc.kernel
def xpbd_stretch_kernel(constraints: kc.array(dtype=int), pairs: kc.array(dtype=int, ndim=2),
                        rest: kc.array(dtype=float), compliance: kc.array(dtype=float), inv_mass: kc.array(dtype=float),
                        dt: float, lam: kc.array(dtype=float), q: kc.array(dtype=kc.vec3)):
    c = constraints[kc.tid()]
    i = pairs[c, 0]
    j = pairs[c, 1]
    wi = inv_mass[i]
    wj = inv_mass[j]
    d = q[i] - q[j]
    length = kc.length(d)
    if wi + wj > 0.0 and length > 1.0e-9:
        n = d / length
        a = compliance[c] / (dt * dt)
        dl = (rest[c] - length - a * lam[c]) / (wi + wj + a)
        lam[c] = lam[c] + dl
        q[i] = q[i] + n * (wi * dl)
        q[j] = q[j] - n * (wj * dl)


@kc.kernel
def xpbd_bending_kernel(constraints: kc.array(dtype=int), indices: kc.array(dtype=int, ndim=2),
                        rest: kc.array(dtype=float), props: kc.array(dtype=float, ndim=2),
                        inv_mass: kc.array(dtype=float), dt: float, lam: kc.array(dtype=float),
                        q: kc.array(dtype=kc.vec3)):
    e = constraints[kc.tid()]
    ke = props[e, 0]
    i0 = indices[e, 0]
    i1 = indices[e, 1]
    i2 = indices[e, 2]
    i3 = indices[e, 3]
    x0 = q[i0]
    x1 = q[i1]
    x2 = q[i2]
    x3 = q[i3]
    n1 = kc.cross(x2 - x0, x3 - x0)
    n2 = kc.cross(x3 - x1, x2 - x1)
    if ke > 0.0 and kc.dot(n1, n1) > 1.0e-20 and kc.dot(n2, n2) > 1.0e-20 and kc.length(x3 - x2) > 1.0e-10:
        g0 = dihedral_gradient(x0, x1, x2, x3, 0)
        g1 = dihedral_gradient(x0, x1, x2, x3, 1)
        g2 = dihedral_gradient(x0, x1, x2, x3, 2)
        g3 = dihedral_gradient(x0, x1, x2, x3, 3)
        w0 = inv_mass[i0]
        w1 = inv_mass[i1]
        w2 = inv_mass[i2]
        w3 = inv_mass[i3]
        denom = w0 * kc.dot(g0, g0) + w1 * kc.dot(g1, g1) + w2 * kc.dot(g2, g2) + w3 * kc.dot(g3, g3)
        if denom > 0.0:
            d = dihedral_theta(x0, x1, x2, x3) - rest[e]
            if d > 3.14159265:
                d = d - 6.28318531
            elif d < -3.14159265:
                d = d + 6.28318531
            a = 1.0 / (ke * dt * dt)
            dl = (-d - a * lam[e]) / (denom + a)
            lam[e] = lam[e] + dl
            q[i0] = x0 + g0 * (w0 * dl)
            q[i1] = x1 + g1 * (w1 * dl)
            q[i2] = x2 + g2 * (w2 * dl)
            q[i3] = x3 + g3 * (w3 * dl)


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
        x = q[i]
        r = radius[i]
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
                move = x - q0[i]
                tang = move - n * kc.dot(move, n)
                tl = kc.length(tang)
                if tl > 0.0:
                    x = x - tang * (kc.min(mu * (-gap), tl) / tl)
        q[i] = x


@kc.kernel
def xpbd_velocity_kernel(q0: kc.array(dtype=kc.vec3), q1: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3),
                         inv_mass: kc.array(dtype=float), inv_dt: float, qd1: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    if inv_mass[i] > 0.0:
        qd1[i] = (q1[i] - q0[i]) * inv_dt
    else:
        qd1[i] = qd0[i]


def xpbd_predict(model, state_in, control, state_out, dt):
    """Explicit prediction: gravity, drag and control forces, into ``state_out.particle_q``."""
    f_ext = control.particle_f_ext if control is not None and control.particle_f_ext is not None else state_out.particle_f
    kc.launch(xpbd_predict_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, f_ext, int(control is not None and
                      control.particle_f_ext is not None), model.particle_inv_mass, model.gravity,
                      model.particle_damping, float(dt)],
              outputs=[state_out.particle_q], device=model.device, record_tape=False)


def xpbd_project_stretch(model, colour, pairs, rest, compliance, lam, q, dt):
    """Project the stretch constraints listed in ``colour`` (int array) once."""
    kc.launch(xpbd_stretch_kernel, dim=colour.shape[0],
              inputs=[colour, pairs, rest, compliance, model.particle_inv_mass, float(dt)], outputs=[lam, q],
              device=model.device, record_tape=False)


def xpbd_project_bending(model, colour, lam, q, dt):
    """Project the bending constraints listed in ``colour`` (int array) once."""
    kc.launch(xpbd_bending_kernel, dim=colour.shape[0],
              inputs=[colour, model.edge_indices, model.edge_rest_angle, model.edge_bending_properties,
                      model.particle_inv_mass, float(dt)], outputs=[lam, q], device=model.device, record_tape=False)


def xpbd_project_contacts(model, state_in, ground_mu, shape_mu, q):
    """Move particles out of the ground and the static shapes (meshes excepted)."""
    kc.launch(xpbd_contact_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, model.particle_radius, model.particle_inv_mass, int(model.ground),
                      model.ground_normal, model.ground_offset, float(ground_mu),
                      model.shape_count, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, shape_mu],
              outputs=[q], device=model.device, record_tape=False)


def xpbd_velocities(model, state_in, state_out, dt):
    """v = (x1 - x0) / dt for moving particles; kinematic ones keep their velocity."""
    kc.launch(xpbd_velocity_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_out.particle_q, state_in.particle_qd, model.particle_inv_mass,
                      1.0 / float(dt)], outputs=[state_out.particle_qd], device=model.device, record_tape=False)
