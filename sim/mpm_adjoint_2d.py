"""Hand-written adjoints of the 2-D MLS-MPM transfers (kernels + launchers).

Why: a differentiated 2-D step's automatic adjoints replay each kernel's forward and reverse
every statement of the unrolled 3 x 3 stencil, recomputing weights, re-loading the grid and
writing each particle's gradients through the generic adjoint-array path.  Written by hand,
each adjoint is one gather (or one scatter) over the stencil with the B-spline weights and
their slopes computed once per particle.  SolverMPM.step records them on the Tape as one
``record_func`` per step (sim/solvers/mpm.py), in place of the launches' own adjoints.

Notation (grid units; node ``base + e``, e in {0,1,2}^2, particle at ``base + fx``):
``w_e = N(fx_x - e_x) N(fx_y - e_y)``, ``dpos_e = e - fx``, ``grad_w_e`` its slope in fx.

G2P forward (sim/mpm_transfer.g2p_2d_kernel)::

    v = sum w_e gv_e,  B = sum w_e gv_e dpos_e^T,  C = (4 / dx) B,  x' = x + dt v

adjoint, from a_x' (vec3), a_v' (vec3), a_C (mat33)::

    a_v = a_v'.xy + dt a_x'.xy,  a_B = (4 / dx) a_C[:2, :2],  h_e = a_v + a_B dpos_e
    a_gv_e += w_e h_e                                            (scatter to grid_v.grad)
    a_fx = sum (gv_e . h_e) grad_w_e - a_B^T v,  a_x += a_x' + a_fx / dx

P2G scatter forward (sim/mpm_scatter.scatter_apic_2d, dpos in metres there)::

    mv_e += w_e (m v + A dpos_e dx),  m_e += w_e m

adjoint, from the grid's G_e = mv_e.grad, g_e = m_e.grad::

    a_(m v) = sum w_e G_e,  a_A = dx sum w_e G_e dpos_e^T,  a_m += sum w_e g_e,
    a_fx = sum (G_e . (m v + A dpos_e dx) + g_e m) grad_w_e - dx A^T a_(m v)
"""
from __future__ import annotations

import kernelcore as kc

from .mpm_colliders import collide_node_velocity
from .mpm_scatter import bspline_weight_slopes, bspline_weights
from .mpm_transfer import collide_walls


@kc.func
def stencil_base_2d(xg: float, n: int):
    """Lowest node of a particle's stencil (as mpm_transfer.stencil_base)."""
    return kc.clamp(int(xg - 0.5), 0, n - 3)


@kc.kernel(simd=True)
def g2p_2d_adjoint_kernel(q: kc.array(dtype=kc.vec3), grid_v: kc.array(dtype=kc.vec2, ndim=2), grid_lower: kc.vec3,
                          dx: float, nx: int, ny: int, dt: float,
                          adj_q_out: kc.array(dtype=kc.vec3), adj_qd_out: kc.array(dtype=kc.vec3),
                          adj_C_out: kc.array(dtype=kc.mat33),
                          adj_q: kc.array(dtype=kc.vec3), adj_grid_v: kc.array(dtype=kc.vec2, ndim=2)):
    """The adjoint of g2p_2d_kernel: adds into ``adj_q`` (particles) and ``adj_grid_v`` (nodes)
    and clears the outputs' adjoints after reading them (the adjoint of a store)."""
    p = kc.tid()
    inv_dx = 1.0 / dx
    x = q[p]
    gx = (x[0] - grid_lower[0]) * inv_dx
    gy = (x[1] - grid_lower[1]) * inv_dx
    bx = stencil_base_2d(gx, nx)
    by = stencil_base_2d(gy, ny)
    fx = kc.vec2(gx - float(bx), gy - float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    sx = bspline_weight_slopes(fx[0])
    sy = bspline_weight_slopes(fx[1])
    aq = adj_q_out[p]
    av = adj_qd_out[p]
    aC = adj_C_out[p]
    adj_q_out[p] = kc.vec3(0.0, 0.0, 0.0)   # consumed, as by a store's adjoint
    adj_qd_out[p] = kc.vec3(0.0, 0.0, 0.0)
    adj_C_out[p] = kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    a_v = kc.vec2(av[0] + dt * aq[0], av[1] + dt * aq[1])
    c = 4.0 * inv_dx
    a_B = kc.mat22(c * aC[0, 0], c * aC[0, 1], c * aC[1, 0], c * aC[1, 1])
    v = kc.vec2(0.0, 0.0)
    a_fx = kc.vec2(0.0, 0.0)
    for i in range(3):
        for j in range(3):
            dpos = kc.vec2(float(i) - fx[0], float(j) - fx[1])
            w = wx[i] * wy[j]
            gv = grid_v[bx + i, by + j]
            h = a_v + a_B * dpos
            kc.atomic_add(adj_grid_v, bx + i, by + j, h * w)
            v += gv * w
            a_fx += kc.vec2(sx[i] * wy[j], wx[i] * sy[j]) * kc.dot(gv, h)
    a_fx -= kc.transpose(a_B) * v
    adj_q[p] = adj_q[p] + kc.vec3(aq[0] + a_fx[0] * inv_dx, aq[1] + a_fx[1] * inv_dx, aq[2])


@kc.kernel(simd=True)
def scatter_2d_adjoint_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float),
                              affine: kc.array(dtype=kc.mat33), grid_lower: kc.vec3, dx: float, nx: int, ny: int,
                              adj_grid_mv: kc.array(dtype=kc.vec2, ndim=2), adj_grid_m: kc.array(dtype=float, ndim=2),
                              adj_q: kc.array(dtype=kc.vec3), adj_qd: kc.array(dtype=kc.vec3),
                              adj_mass: kc.array(dtype=float), adj_affine: kc.array(dtype=kc.mat33)):
    """The adjoint of mpm_transfer.p2g_scatter_2d_kernel: a gather of the grid's adjoints into
    the particles' (``adj_mass``: a scratch array when the masses take no gradient)."""
    p = kc.tid()
    inv_dx = 1.0 / dx
    mp = mass[p]
    a = affine[p]
    A = kc.mat22(a[0, 0] * dx, a[0, 1] * dx, a[1, 0] * dx, a[1, 1] * dx)
    x = q[p]
    gx = (x[0] - grid_lower[0]) * inv_dx
    gy = (x[1] - grid_lower[1]) * inv_dx
    bx = stencil_base_2d(gx, nx)
    by = stencil_base_2d(gy, ny)
    fx = kc.vec2(gx - float(bx), gy - float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    sx = bspline_weight_slopes(fx[0])
    sy = bspline_weight_slopes(fx[1])
    vp = qd[p]
    mv = kc.vec2(vp[0], vp[1]) * mp
    a_mv = kc.vec2(0.0, 0.0)
    a_A = kc.mat22(0.0, 0.0, 0.0, 0.0)
    a_m = float(0.0)
    a_fx = kc.vec2(0.0, 0.0)
    for i in range(3):
        for j in range(3):
            G = adj_grid_mv[bx + i, by + j]
            g = adj_grid_m[bx + i, by + j]
            dpos = kc.vec2(float(i) - fx[0], float(j) - fx[1])
            w = wx[i] * wy[j]
            Gw = G * w
            a_mv += Gw
            a_A += kc.outer(Gw, dpos)
            a_m += g * w
            a_fx += kc.vec2(sx[i] * wy[j], wx[i] * sy[j]) * (kc.dot(G, mv + A * dpos) + g * mp)
    a_fx -= kc.transpose(A) * a_mv
    adj_q[p] = adj_q[p] + kc.vec3(a_fx[0] * inv_dx, a_fx[1] * inv_dx, 0.0)
    adj_qd[p] = adj_qd[p] + kc.vec3(a_mv[0] * mp, a_mv[1] * mp, 0.0)
    adj_mass[p] = adj_mass[p] + a_m + kc.dot(a_mv, kc.vec2(vp[0], vp[1]))
    adj_affine[p] = adj_affine[p] + kc.mat33(a_A[0, 0] * dx, a_A[0, 1] * dx, 0.0, a_A[1, 0] * dx, a_A[1, 1] * dx, 0.0,
                                             0.0, 0.0, 0.0)


# ------------------------------------------------------------------------------------------------
# grid update (domain walls and ground plane; no shapes, bodies or SDF volumes)
# ------------------------------------------------------------------------------------------------
@kc.func
def collide_node_velocity_adjoint(v: kc.vec3, n: kc.vec3, phi: float, boundary: int, friction: float,
                                  a_out: kc.vec3):
    """The adjoint of mpm_colliders.collide_node_velocity(v, n, phi, boundary, friction) with
    respect to v, given the adjoint ``a_out`` of its result (branch by branch, as the forward)."""
    a_v = a_out
    if phi < 0.0:
        vn = kc.dot(v, n)
        if boundary == 0:
            a_v = kc.vec3(0.0, 0.0, 0.0)
        else:
            if boundary == 1 or vn < 0.0:
                vt = v - n * vn
                a_vt = a_out
                a_vn = float(0.0)
                if vn < 0.0:
                    lt = kc.length(vt)
                    if lt <= -friction * vn:
                        a_vt = kc.vec3(0.0, 0.0, 0.0)
                    else:
                        # out = vt s, s = 1 + friction vn / lt (lt > 0 here)
                        s = 1.0 + friction * vn / lt
                        a_s = kc.dot(a_out, vt)
                        a_vn = a_s * friction / lt
                        a_vt = a_out * s - vt * (a_s * friction * vn / (lt * lt * lt))
                a_vn = a_vn - kc.dot(n, a_vt)
                a_v = a_vt + n * a_vn
    return a_v


@kc.func
def collide_walls_adjoint(v: kc.vec3, i: int, n: int, pad: int, axis: kc.vec3, boundary: int, friction: float,
                          a_out: kc.vec3):
    """The adjoint of mpm_transfer.collide_walls with respect to v (``v``: its input)."""
    mid = v
    if i <= pad:
        mid = collide_node_velocity(v, axis, float(i - pad) - 0.5, boundary, friction)
    a_mid = a_out
    if i >= n - 1 - pad:
        a_mid = collide_node_velocity_adjoint(mid, -axis, float(n - 1 - pad - i) - 0.5, boundary, friction, a_out)
    a_v = a_mid
    if i <= pad:
        a_v = collide_node_velocity_adjoint(v, axis, float(i - pad) - 0.5, boundary, friction, a_mid)
    return a_v


@kc.kernel
def grid_update_2d_adjoint_kernel(grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                                  min_mass: float, gravity: kc.vec3, dt: float, nx: int, ny: int, pad: int,
                                  boundary: int, friction: float, ground: int, ground_normal: kc.vec3,
                                  ground_offset: float, grid_lower: kc.vec3, dx: float, i0: int, j0: int,
                                  adj_grid_v: kc.array(dtype=kc.vec2, ndim=2),
                                  adj_grid_mv: kc.array(dtype=kc.vec2, ndim=2),
                                  adj_grid_m: kc.array(dtype=float, ndim=2)):
    """The adjoint of mpm_transfer's walls-only 2-D grid update on the box at (i0, j0): reads and
    clears ``adj_grid_v`` (a store's adjoint consumes it) and sets the momentum and mass adjoints
    (nothing else in a step adds into them)."""
    ti, tj = kc.tid()
    i = ti + i0
    j = tj + j0
    m = grid_m[i, j]
    a_out = adj_grid_v[i, j]
    adj_grid_v[i, j] = kc.vec2(0.0, 0.0)
    a_mv = kc.vec2(0.0, 0.0)
    a_m = float(0.0)
    if m > min_mass:
        mv = grid_mv[i, j]
        v0 = kc.vec3(mv[0] / m + gravity[0] * dt, mv[1] / m + gravity[1] * dt, 0.0)
        v1 = collide_walls(v0, i, nx, pad, kc.vec3(1.0, 0.0, 0.0), boundary, friction)
        v2 = collide_walls(v1, j, ny, pad, kc.vec3(0.0, 1.0, 0.0), boundary, friction)
        a = kc.vec3(a_out[0], a_out[1], 0.0)
        if ground != 0:
            xi = grid_lower + kc.vec3(float(i), float(j), 0.0) * dx
            phi_ground = kc.dot(xi, ground_normal) - ground_offset
            if phi_ground < 0.0:
                a = collide_node_velocity_adjoint(v2, ground_normal, phi_ground, boundary, friction, a)
        a = collide_walls_adjoint(v1, j, ny, pad, kc.vec3(0.0, 1.0, 0.0), boundary, friction, a)
        a = collide_walls_adjoint(v0, i, nx, pad, kc.vec3(1.0, 0.0, 0.0), boundary, friction, a)
        a_mv = kc.vec2(a[0], a[1]) / m
        a_m = -kc.dot(a_mv, mv) / m
    adj_grid_mv[i, j] = a_mv
    adj_grid_m[i, j] = a_m


# ------------------------------------------------------------------------------------------------
# the P2G stress kernel of a neo-Hookean plane-strain solid (straight-line code: simd=True vectorises it)
# ------------------------------------------------------------------------------------------------
@kc.kernel(simd=True)
def stress_neo_hookean_2d_adjoint_kernel(C: kc.array(dtype=kc.mat33), F: kc.array(dtype=kc.mat33),
                                         mass: kc.array(dtype=float), volume: kc.array(dtype=float),
                                         material: kc.array(dtype=kc.int32), mat_E: kc.array(dtype=float),
                                         mat_nu: kc.array(dtype=float), actuation: kc.array(dtype=float),
                                         act_axis: kc.vec3, dx: float, dt: float,
                                         adj_affine: kc.array(dtype=kc.mat33), adj_F_out: kc.array(dtype=kc.mat33),
                                         adj_Jp_out: kc.array(dtype=float),
                                         adj_C: kc.array(dtype=kc.mat33), adj_F: kc.array(dtype=kc.mat33),
                                         adj_Jp: kc.array(dtype=float), adj_mass: kc.array(dtype=float),
                                         adj_volume: kc.array(dtype=float), adj_actuation: kc.array(dtype=float),
                                         adj_E: kc.array(dtype=float), adj_nu: kc.array(dtype=float)):
    """The adjoint of mpm_transfer.p2g_stress_kernel with update_neo_hookean_plane for the 2-D
    scatter (which reads the affine matrix's upper-left 2 x 2 block only): from the adjoints of
    ``A = -dt V (4 / dx^2) tau + m C`` (``adj_affine``), F_out and Jp_out (all three consumed,
    as by a store's adjoint) to those of C, F, Jp, m, V, the actuation and E, nu."""
    p = kc.tid()
    inv_dx = 1.0 / dx
    mi = material[p]
    E = mat_E[mi]
    nu = mat_nu[mi]
    Fo = F[p]
    Cp = C[p]
    act = actuation[p]
    A00 = 1.0 + dt * Cp[0, 0]
    A01 = dt * Cp[0, 1]
    A10 = dt * Cp[1, 0]
    A11 = 1.0 + dt * Cp[1, 1]
    f00 = A00 * Fo[0, 0] + A01 * Fo[1, 0]
    f01 = A00 * Fo[0, 1] + A01 * Fo[1, 1]
    f10 = A10 * Fo[0, 0] + A11 * Fo[1, 0]
    f11 = A10 * Fo[0, 1] + A11 * Fo[1, 1]
    op = 1.0 + nu
    om = 1.0 - 2.0 * nu
    k_mu = 1.0 / (2.0 * op)
    k_la = nu / (op * om)
    mu = E * k_mu
    la = E * k_la
    J = f00 * f11 - f01 * f10
    Jc = kc.max(J, 1.0e-4)   # mpm_constitutive.MIN_STRETCH
    logJ = kc.log(Jc)
    a0 = f00 * act_axis[0] + f01 * act_axis[1]
    a1 = f10 * act_axis[0] + f11 * act_axis[1]
    s00 = f00 * f00 + f01 * f01 - 1.0
    s01 = f00 * f10 + f01 * f11
    s11 = f10 * f10 + f11 * f11 - 1.0
    t00 = mu * s00 + la * logJ + act * a0 * a0
    t01 = mu * s01 + act * a0 * a1
    t11 = mu * s11 + la * logJ + act * a1 * a1
    mp = mass[p]
    ks = -dt * 4.0 * inv_dx * inv_dx
    s = ks * volume[p]
    b = adj_affine[p]
    aF = adj_F_out[p]
    aJp = adj_Jp_out[p]
    zero = kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    adj_affine[p] = zero
    adj_F_out[p] = zero
    adj_Jp_out[p] = 0.0
    # affine = s tau + m C (the 2 x 2 block; tau symmetric: t01 feeds both off-diagonal entries)
    a_t00 = s * b[0, 0]
    a_t01 = s * (b[0, 1] + b[1, 0])
    a_t11 = s * b[1, 1]
    a_vol = ks * (b[0, 0] * t00 + (b[0, 1] + b[1, 0]) * t01 + b[1, 1] * t11)
    a_m = b[0, 0] * Cp[0, 0] + b[0, 1] * Cp[0, 1] + b[1, 0] * Cp[1, 0] + b[1, 1] * Cp[1, 1]
    # stress: mu, lambda log J and the actuation term
    a_mu = s00 * a_t00 + s01 * a_t01 + s11 * a_t11
    a_lj = a_t00 + a_t11
    a_la = logJ * a_lj
    a_J = kc.where(J > 1.0e-4, la * a_lj / Jc, 0.0)
    a_a0 = act * (2.0 * a0 * a_t00 + a1 * a_t01)
    a_a1 = act * (a0 * a_t01 + 2.0 * a1 * a_t11)
    a_act = a0 * a0 * a_t00 + a0 * a1 * a_t01 + a1 * a1 * a_t11
    a_f00 = aF[0, 0] + mu * (2.0 * f00 * a_t00 + f10 * a_t01) + a_J * f11 + act_axis[0] * a_a0
    a_f01 = aF[0, 1] + mu * (2.0 * f01 * a_t00 + f11 * a_t01) - a_J * f10 + act_axis[1] * a_a0
    a_f10 = aF[1, 0] + mu * (f00 * a_t01 + 2.0 * f10 * a_t11) - a_J * f01 + act_axis[0] * a_a1
    a_f11 = aF[1, 1] + mu * (f01 * a_t01 + 2.0 * f11 * a_t11) + a_J * f00 + act_axis[1] * a_a1
    # f = (I + dt C) F_old on the 2 x 2 blocks
    adj_C[p] = adj_C[p] + kc.mat33(mp * b[0, 0] + dt * (a_f00 * Fo[0, 0] + a_f01 * Fo[0, 1]),
                                   mp * b[0, 1] + dt * (a_f00 * Fo[1, 0] + a_f01 * Fo[1, 1]), 0.0,
                                   mp * b[1, 0] + dt * (a_f10 * Fo[0, 0] + a_f11 * Fo[0, 1]),
                                   mp * b[1, 1] + dt * (a_f10 * Fo[1, 0] + a_f11 * Fo[1, 1]), 0.0, 0.0, 0.0, 0.0)
    adj_F[p] = adj_F[p] + kc.mat33(A00 * a_f00 + A10 * a_f10, A00 * a_f01 + A10 * a_f11, 0.0,
                                   A01 * a_f00 + A11 * a_f10, A01 * a_f01 + A11 * a_f11, 0.0, 0.0, 0.0, 0.0)
    adj_Jp[p] = adj_Jp[p] + aJp
    adj_mass[p] = adj_mass[p] + a_m
    adj_volume[p] = adj_volume[p] + a_vol
    adj_actuation[p] = adj_actuation[p] + a_act
    # Lame parameters from E and nu
    kc.atomic_add(adj_E, mi, a_mu * k_mu + a_la * k_la)
    kc.atomic_add(adj_nu, mi, -a_mu * E * k_mu / op + a_la * E * (1.0 + 2.0 * nu * nu) / (op * op * om * om))


# ------------------------------------------------------------------------------------------------
# a taped 2-D step with these adjoints
# ------------------------------------------------------------------------------------------------
class _Buffers:
    """Stand-ins for gradient arrays that do not exist (an input without requires_grad):
    ``sink`` ones are only added into (never read), ``zeros`` ones are read and stay zero."""

    def __init__(self):
        self._arrays = {}

    def get(self, kind, like):
        key = (kind, like.shape, like.dtype, str(like.device))
        if key not in self._arrays:
            self._arrays[key] = kc.zeros(like.shape, dtype=like.dtype, device=like.device)
        return self._arrays[key]


_buffers = _Buffers()


def _adj_in(a):
    """``a.grad`` to read from (zeros when ``a`` has no gradient)."""
    return a.grad if a.grad is not None else _buffers.get("zeros", a)


def _adj_out(a):
    """``a.grad`` to add into (a sink when ``a`` has no gradient)."""
    return a.grad if a.grad is not None else _buffers.get("sink", a)


def record_step_2d(solver, model, state_in, state_out, actuation, grid, dt, box):
    """One differentiated 2-D SolverMPM step (no bodies, shapes or SDF volumes; ``box``: the
    active nodes, mpm_transfer.active_box): the forward launches run off the tape, and every
    enclosing Tape records one ``record_func`` whose backward runs this module's adjoints
    (G2P, grid update, the P2G scatter, then the stress kernel's: by hand for neo-Hookean,
    else its automatic adjoint)."""
    from kernelcore.device import get_runtime

    from .mpm_constitutive import MPM_NEO_HOOKEAN
    from .mpm_transfer import grid_to_particle, p2g_stress_kernel, particle_to_grid, update_grid, zero_grid

    device = model.device
    neo_hookean = solver.model_code == MPM_NEO_HOOKEAN
    materials = [model.particle_material, model.material_mpm_model, model.material_youngs_modulus,
                 model.material_poisson_ratio, model.material_hardening, model.material_critical_compression,
                 model.material_critical_stretch, model.material_friction_angle, model.material_viscosity,
                 actuation, solver.actuation_axis]
    colliders = (solver.mesh_reach, model.body_q, model.body_qd, grid.body_contact_mass, solver._no_body_f)
    rt = get_runtime()
    tapes = list(rt.tape_stack)
    rt.tape_stack.clear()   # the forward's launches are not recorded one by one (see backward below)
    try:
        zero_grid(grid, device, box)
        particle_to_grid(model, state_in, actuation, solver.actuation_axis, grid, dt, state_out, solver.model_code)
        update_grid(model, grid, solver.min_node_mass, solver.gravity, solver.boundary, solver.friction, dt,
                    colliders, None, box)
        grid_to_particle(model, state_in, grid, dt, state_out)
    finally:
        rt.tape_stack[:] = tapes
    lo, shape = box if box is not None else ((0, 0), tuple(grid.shape))
    n = model.particle_count
    nx, ny = grid.shape
    s_in, s_out = state_in, state_out

    def backward():
        kc.launch(g2p_2d_adjoint_kernel, dim=n,
                  inputs=[s_in.particle_q, grid.v, grid.lower, grid.dx, nx, ny, float(dt),
                          _adj_in(s_out.particle_q), _adj_in(s_out.particle_qd), _adj_in(s_out.particle_C),
                          _adj_out(s_in.particle_q), grid.v.grad], device=device, record_tape=False)
        kc.launch(grid_update_2d_adjoint_kernel, dim=shape,
                  inputs=[grid.mv, grid.m, float(solver.min_node_mass), solver.gravity, float(dt), nx, ny, grid.pad,
                          solver.boundary, float(solver.friction), int(model.ground), model.ground_normal,
                          float(model.ground_offset), grid.lower, grid.dx, *lo, grid.v.grad, grid.mv.grad,
                          grid.m.grad], device=device, record_tape=False)
        affine = grid.affine
        kc.launch(scatter_2d_adjoint_kernel, dim=n,
                  inputs=[s_in.particle_q, s_in.particle_qd, model.particle_mass, affine, grid.lower, grid.dx, nx, ny,
                          grid.mv.grad, grid.m.grad, _adj_out(s_in.particle_q), _adj_out(s_in.particle_qd),
                          _adj_out(model.particle_mass), affine.grad], device=device, record_tape=False)
        if neo_hookean:
            kc.launch(stress_neo_hookean_2d_adjoint_kernel, dim=n,
                      inputs=[s_in.particle_C, s_in.particle_F, model.particle_mass, model.particle_volume,
                              model.particle_material, model.material_youngs_modulus, model.material_poisson_ratio,
                              actuation, solver.actuation_axis, grid.dx, float(dt), affine.grad,
                              _adj_in(s_out.particle_F), _adj_in(s_out.particle_Jp), _adj_out(s_in.particle_C),
                              _adj_out(s_in.particle_F), _adj_out(s_in.particle_Jp), _adj_out(model.particle_mass),
                              _adj_out(model.particle_volume), _adj_out(actuation),
                              _adj_out(model.material_youngs_modulus), _adj_out(model.material_poisson_ratio)],
                      device=device, record_tape=False)
            return
        kc.launch(p2g_stress_kernel(solver.model_code, 2), dim=n,
                  inputs=[s_in.particle_C, s_in.particle_F, s_in.particle_Jp, model.particle_mass,
                          model.particle_volume, *materials, grid.dx, float(dt)],
                  outputs=[s_out.particle_F, s_out.particle_Jp, affine], device=device, adjoint=True,
                  record_tape=False)

    arrays = [s_in.particle_q, s_in.particle_qd, s_in.particle_C, s_in.particle_F, s_in.particle_Jp,
              s_out.particle_q, s_out.particle_qd, s_out.particle_C, s_out.particle_F, s_out.particle_Jp,
              grid.v, grid.mv, grid.m, model.particle_mass, model.particle_volume, model.material_youngs_modulus,
              model.material_poisson_ratio, actuation, grid.affine]
    seen = set()
    for tape in reversed(tapes):   # every enclosing tape records it, as it would the launches
        if id(tape) not in seen:
            seen.add(id(tape))
            tape.record_func(backward, arrays)
