"""Hand-written adjoints of the 2-D MLS-MPM transfers (kernels + launchers).

Why: a differentiated 2-D step's automatic adjoints replay each kernel's forward and reverse
every statement of the unrolled 3 x 3 stencil, recomputing weights, re-loading the grid and
writing each particle's gradients through the generic adjoint-array path.  Written by hand,
each adjoint is one gather (or one scatter) over the stencil with the B-spline weights and
their slopes computed once per particle.  For neo-Hookean solids the P2G stress and scatter run
as one kernel each way (p2g_neo_hookean_2d_kernel and its adjoint: the adjoint forms the affine
matrix again instead of keeping it per step).  SolverMPM.step records them on the Tape as one
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

import weakref

import kernelcore as kc

from .mpm_colliders import collide_node_velocity
from .mpm_constitutive import lame_lambda, lame_mu
from .mpm_scatter import bspline_weight_slopes, bspline_weights
from .mpm_transfer import collide_walls, serial_2d


@kc.func
def stencil_base_2d(xg: float, n: int):
    """Lowest node of a particle's stencil (as mpm_transfer.stencil_base)."""
    return kc.clamp(int(xg - 0.5), 0, n - 3)


@kc.func
def stencil_weights_slopes_2d(x: kc.vec3, grid_lower: kc.vec3, inv_dx: float, nx: int, ny: int):
    """A particle at ``x`` [m] on an nx x ny grid: its stencil's lowest node (bx, by), its offset
    fx (vec2, grid units) from that node, and per axis the B-spline weights of nodes
    base + 0, 1, 2 (wx, wy) and their slopes d/dfx (sx, sy), as the transfers compute them."""
    gx = (x[0] - grid_lower[0]) * inv_dx
    gy = (x[1] - grid_lower[1]) * inv_dx
    bx = stencil_base_2d(gx, nx)
    by = stencil_base_2d(gy, ny)
    fx = kc.vec2(gx - float(bx), gy - float(by))
    return bx, by, fx, bspline_weights(fx[0]), bspline_weights(fx[1]), \
        bspline_weight_slopes(fx[0]), bspline_weight_slopes(fx[1])


@serial_2d
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
    bx, by, fx, wx, wy, sx, sy = stencil_weights_slopes_2d(q[p], grid_lower, inv_dx, nx, ny)
    bx = kc.max(bx, 0)   # known >= 0: no negative-index wrap per grid access
    by = kc.max(by, 0)
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


@serial_2d
@kc.kernel(simd=True)
def scatter_2d_adjoint_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float),
                              affine: kc.array(dtype=float, ndim=2), grid_lower: kc.vec3, dx: float, nx: int, ny: int,
                              adj_grid_mv: kc.array(dtype=kc.vec2, ndim=2), adj_grid_m: kc.array(dtype=float, ndim=2),
                              adj_q: kc.array(dtype=kc.vec3), adj_qd: kc.array(dtype=kc.vec3),
                              adj_mass: kc.array(dtype=float), adj_affine: kc.array(dtype=float, ndim=2)):
    """The adjoint of mpm_transfer.p2g_scatter_2d_kernel: a gather of the grid's adjoints into
    the particles' (``adj_mass``: a scratch array when the masses take no gradient).  The affine
    matrices and their adjoints come as (n, 9) float rows (``float_rows``: GCC vectorises those
    loads across particles, not mat33 ones); their 2 x 2 blocks are overwritten (the scatter is
    the affine matrix's only reader, so its adjoint is this kernel's alone)."""
    p = kc.tid()
    inv_dx = 1.0 / dx
    mp = mass[p]
    A = kc.mat22(affine[p, 0] * dx, affine[p, 1] * dx, affine[p, 3] * dx, affine[p, 4] * dx)
    bx, by, fx, wx, wy, sx, sy = stencil_weights_slopes_2d(q[p], grid_lower, inv_dx, nx, ny)
    bx = kc.max(bx, 0)   # known >= 0: no negative-index wrap per grid access
    by = kc.max(by, 0)
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
    # set, not added: the scatter is the affine matrix's only reader in a step
    adj_affine[p, 0] = a_A[0, 0] * dx
    adj_affine[p, 1] = a_A[0, 1] * dx
    adj_affine[p, 3] = a_A[1, 0] * dx
    adj_affine[p, 4] = a_A[1, 1] * dx


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


@serial_2d
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
# the P2G of a neo-Hookean plane-strain solid (stress and scatter) and its adjoint
# ------------------------------------------------------------------------------------------------
@kc.kernel
def material_gradients_kernel(material: kc.array(dtype=kc.int32), adj_E_p: kc.array(dtype=float),
                              adj_nu_p: kc.array(dtype=float), adj_E: kc.array(dtype=float),
                              adj_nu: kc.array(dtype=float)):
    """Adds each particle's share of the E and nu adjoints into its material's, and clears the shares."""
    p = kc.tid()
    mi = material[p]
    kc.atomic_add(adj_E, mi, adj_E_p[p])
    kc.atomic_add(adj_nu, mi, adj_nu_p[p])
    adj_E_p[p] = 0.0
    adj_nu_p[p] = 0.0


# one thread: a few adds per particle into one entry per material, for which a second thread's
# wake-up, private copies and merge cost more than the work (83 -> 348 us per 6.4K-particle
# launch on two threads of a loaded 2-core VM)
material_gradients_kernel.parallel_grain = 1 << 30


@kc.func
def neo_hookean_plane_tau(f00: float, f01: float, f10: float, f11: float, E: float, nu: float, log_j: float,
                          act: float, act_axis: kc.vec3):
    """The 2 x 2 block (t00, t01, t11; symmetric) of the neo-Hookean plane-strain Kirchhoff stress
    [Pa] with actuation, of the updated F's block f and log_j = log(max(det f, 1e-4)), formed as
    mpm_constitutive.update_neo_hookean_plane forms it (the same operations in the same order)."""
    mu = lame_mu(E, nu)
    lj = lame_lambda(E, nu) * log_j
    a0 = f00 * act_axis[0] + f01 * act_axis[1]
    a1 = f10 * act_axis[0] + f11 * act_axis[1]
    t00 = mu * (f00 * f00 + f01 * f01 - 1.0) + lj + act * a0 * a0
    t01 = mu * (f00 * f10 + f01 * f11) + act * a0 * a1
    t11 = mu * (f10 * f10 + f11 * f11 - 1.0) + lj + act * a1 * a1
    return t00, t01, t11


@serial_2d
@kc.kernel(simd=True, enable_backward=False)
def p2g_neo_hookean_2d_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                              C: kc.array(dtype=float, ndim=2), F: kc.array(dtype=float, ndim=2),
                              Jp: kc.array(dtype=float), mass: kc.array(dtype=float), volume: kc.array(dtype=float),
                              material: kc.array(dtype=kc.int32), mat_E: kc.array(dtype=float),
                              mat_nu: kc.array(dtype=float), actuation: kc.array(dtype=float), act_axis: kc.vec3,
                              grid_lower: kc.vec3, dx: float, nx: int, ny: int, dt: float,
                              log_J: kc.array(dtype=float), F_out: kc.array(dtype=float, ndim=2),
                              Jp_out: kc.array(dtype=float), grid_mv: kc.array(dtype=kc.vec2, ndim=2),
                              grid_m: kc.array(dtype=float, ndim=2)):
    """The split P2G of a neo-Hookean plane-strain 2-D step in one launch, as SIMD lanes: the
    stress (mpm_transfer.p2g_stress_kernel with update_neo_hookean_plane; the mat33 arrays as
    (n, 9) float rows) and then the scatter (mpm_transfer.p2g_scatter_2d_kernel), the same
    operations in the same order, so the same F_out, Jp_out and grid mass [kg] and momentum
    [kg m/s] (added in the same order on one thread).  ``log_J`` (n,): log(max(J, 1e-4)) of the
    updated F, written for the adjoint.  The affine matrix stays in registers: the adjoint forms
    it again.  Only a taped step runs it (record_step_2d: off the tape, its backward is
    p2g_neo_hookean_2d_adjoint_kernel).  GCC keeps its lane loop scalar (records of 18 scattered
    adds per particle), and it still runs ~6% faster than the three launches it replaces (log J,
    stress as vectorised lanes, scalar scatter)."""
    p = kc.tid()
    mi = kc.max(material[p], 0)   # known >= 0: indexes without the negative-index wrap's branch
    C00 = C[p, 0]
    C01 = C[p, 1]
    C10 = C[p, 3]
    C11 = C[p, 4]
    A00 = 1.0 + dt * C00
    A01 = dt * C01
    A10 = dt * C10
    A11 = 1.0 + dt * C11
    f00 = A00 * F[p, 0] + A01 * F[p, 3]
    f01 = A00 * F[p, 1] + A01 * F[p, 4]
    f10 = A10 * F[p, 0] + A11 * F[p, 3]
    f11 = A10 * F[p, 1] + A11 * F[p, 4]
    # log J here (not a kernel of its own: GCC keeps this lane loop scalar anyway, a log costs it
    # nothing more), kept for the adjoint, which must stay free of logs to vectorise
    lj = kc.log(kc.max(f00 * f11 - f01 * f10, 1.0e-4))
    log_J[p] = lj
    t00, t01, t11 = neo_hookean_plane_tau(f00, f01, f10, f11, mat_E[mi], mat_nu[mi], lj, actuation[p], act_axis)
    F_out[p, 0] = f00
    F_out[p, 1] = f01
    F_out[p, 2] = 0.0
    F_out[p, 3] = f10
    F_out[p, 4] = f11
    F_out[p, 5] = 0.0
    F_out[p, 6] = 0.0
    F_out[p, 7] = 0.0
    F_out[p, 8] = 1.0
    Jp_out[p] = Jp[p]
    inv_dx = 1.0 / dx
    s = -dt * volume[p] * 4.0 * inv_dx * inv_dx
    mp = mass[p]
    affine = kc.mat22(t00 * s + C00 * mp, t01 * s + C01 * mp, t01 * s + C10 * mp, t11 * s + C11 * mp)
    bx, by, fx, wx, wy, sx, sy = stencil_weights_slopes_2d(q[p], grid_lower, inv_dx, nx, ny)
    bx = kc.max(bx, 0)   # known >= 0: no negative-index wrap per grid access
    by = kc.max(by, 0)
    vp = qd[p]
    mv = kc.vec2(vp[0], vp[1]) * mp
    for i in range(3):
        for j in range(3):
            dpos = (kc.vec2(float(i), float(j)) - fx) * dx
            w = wx[i] * wy[j]
            kc.atomic_add(grid_mv, bx + i, by + j, (mv + affine * dpos) * w)
            kc.atomic_add(grid_m, bx + i, by + j, w * mp)


@serial_2d
@kc.kernel(simd=True, enable_backward=False)
def p2g_neo_hookean_2d_adjoint_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                                      C: kc.array(dtype=float, ndim=2), F: kc.array(dtype=float, ndim=2),
                                      mass: kc.array(dtype=float), volume: kc.array(dtype=float),
                                      material: kc.array(dtype=kc.int32), mat_E: kc.array(dtype=float),
                                      mat_nu: kc.array(dtype=float), actuation: kc.array(dtype=float),
                                      act_axis: kc.vec3, grid_lower: kc.vec3, dx: float, nx: int, ny: int, dt: float,
                                      log_J: kc.array(dtype=float), adj_grid_mv: kc.array(dtype=kc.vec2, ndim=2),
                                      adj_grid_m: kc.array(dtype=float, ndim=2),
                                      adj_F_out: kc.array(dtype=float, ndim=2), adj_Jp_out: kc.array(dtype=float),
                                      adj_q: kc.array(dtype=kc.vec3), adj_qd: kc.array(dtype=kc.vec3),
                                      adj_C: kc.array(dtype=float, ndim=2), adj_F: kc.array(dtype=float, ndim=2),
                                      adj_Jp: kc.array(dtype=float), adj_mass: kc.array(dtype=float),
                                      adj_volume: kc.array(dtype=float), adj_actuation: kc.array(dtype=float),
                                      adj_E_p: kc.array(dtype=float), adj_nu_p: kc.array(dtype=float)):
    """The adjoint of p2g_neo_hookean_2d_kernel: the scatter's (as scatter_2d_adjoint_kernel: a
    gather of the grid's adjoints ``adj_grid_mv``, ``adj_grid_m``), then the stress's, in one
    straight-line pass per particle (SIMD lanes over float rows).  The affine matrix is formed
    again as the forward formed it, and its adjoint passes to the stress's in registers.  From
    the adjoints of the grid, F_out and Jp_out (the last two consumed, as by a store's adjoint)
    to those of q, qd, C, F, Jp, m, V, the actuation, and each particle's share of E's and nu's
    (``adj_E_p``, ``adj_nu_p``: added into, summed per material once per backward pass by
    material_gradients_kernel).  ``log_J``: the forward's log(max(J, 1e-4)) per particle
    (p2g_neo_hookean_2d_kernel; GCC has no vector log without -ffast-math, so a log here would
    keep the loop scalar).  Only the 2 x 2 blocks of the (n, 9) float rows (entries 0, 1, 3, 4)
    are read or written."""
    p = kc.tid()
    inv_dx = 1.0 / dx
    mi = kc.max(material[p], 0)   # known >= 0: indexes without the negative-index wrap's branch
    E = mat_E[mi]
    nu = mat_nu[mi]
    F00 = F[p, 0]
    F01 = F[p, 1]
    F10 = F[p, 3]
    F11 = F[p, 4]
    C00 = C[p, 0]
    C01 = C[p, 1]
    C10 = C[p, 3]
    C11 = C[p, 4]
    act = actuation[p]
    A00 = 1.0 + dt * C00
    A01 = dt * C01
    A10 = dt * C10
    A11 = 1.0 + dt * C11
    f00 = A00 * F00 + A01 * F10
    f01 = A00 * F01 + A01 * F11
    f10 = A10 * F00 + A11 * F10
    f11 = A10 * F01 + A11 * F11
    logJ = log_J[p]   # log(Jc), the forward's (a log in this loop keeps GCC from vectorising it)
    mp = mass[p]
    # ---- the scatter's adjoint, on the forward's affine matrix (times dx, as the scatter uses it)
    u00, u01, u11 = neo_hookean_plane_tau(f00, f01, f10, f11, E, nu, logJ, act, act_axis)
    su = -dt * volume[p] * 4.0 * inv_dx * inv_dx
    Ag = kc.mat22((u00 * su + C00 * mp) * dx, (u01 * su + C01 * mp) * dx, (u01 * su + C10 * mp) * dx,
                  (u11 * su + C11 * mp) * dx)
    bx, by, fx, wx, wy, sx, sy = stencil_weights_slopes_2d(q[p], grid_lower, inv_dx, nx, ny)
    bx = kc.max(bx, 0)   # known >= 0: no negative-index wrap per grid access
    by = kc.max(by, 0)
    vp = qd[p]
    mv = kc.vec2(vp[0], vp[1]) * mp
    a_mv = kc.vec2(0.0, 0.0)
    a_A = kc.mat22(0.0, 0.0, 0.0, 0.0)
    a_mg = float(0.0)
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
            a_mg += g * w
            a_fx += kc.vec2(sx[i] * wy[j], wx[i] * sy[j]) * (kc.dot(G, mv + Ag * dpos) + g * mp)
    a_fx -= kc.transpose(Ag) * a_mv
    adj_q[p] = adj_q[p] + kc.vec3(a_fx[0] * inv_dx, a_fx[1] * inv_dx, 0.0)
    adj_qd[p] = adj_qd[p] + kc.vec3(a_mv[0] * mp, a_mv[1] * mp, 0.0)
    # ---- the stress's adjoint, from the affine matrix's: b = dA
    b00 = a_A[0, 0] * dx
    b01 = a_A[0, 1] * dx
    b10 = a_A[1, 0] * dx
    b11 = a_A[1, 1] * dx
    op = 1.0 + nu
    om = 1.0 - 2.0 * nu
    k_mu = 1.0 / (2.0 * op)
    k_la = nu / (op * om)
    mu = E * k_mu
    la = E * k_la
    J = f00 * f11 - f01 * f10
    Jc = kc.max(J, 1.0e-4)   # mpm_constitutive.MIN_STRETCH
    a0 = f00 * act_axis[0] + f01 * act_axis[1]
    a1 = f10 * act_axis[0] + f11 * act_axis[1]
    s00 = f00 * f00 + f01 * f01 - 1.0
    s01 = f00 * f10 + f01 * f11
    s11 = f10 * f10 + f11 * f11 - 1.0
    t00 = mu * s00 + la * logJ + act * a0 * a0
    t01 = mu * s01 + act * a0 * a1
    t11 = mu * s11 + la * logJ + act * a1 * a1
    ks = -dt * 4.0 * inv_dx * inv_dx
    s = ks * volume[p]
    aF00 = adj_F_out[p, 0]
    aF01 = adj_F_out[p, 1]
    aF10 = adj_F_out[p, 3]
    aF11 = adj_F_out[p, 4]
    aJp = adj_Jp_out[p]
    # consumed, as by a store's adjoint (nothing else in the step writes the other entries' adjoints)
    adj_F_out[p, 0] = 0.0
    adj_F_out[p, 1] = 0.0
    adj_F_out[p, 3] = 0.0
    adj_F_out[p, 4] = 0.0
    adj_Jp_out[p] = 0.0
    # affine = s tau + m C (the 2 x 2 block; tau symmetric: t01 feeds both off-diagonal entries)
    a_t00 = s * b00
    a_t01 = s * (b01 + b10)
    a_t11 = s * b11
    a_vol = ks * (b00 * t00 + (b01 + b10) * t01 + b11 * t11)
    a_ms = b00 * C00 + b01 * C01 + b10 * C10 + b11 * C11
    # stress: mu, lambda log J and the actuation term
    a_mu = s00 * a_t00 + s01 * a_t01 + s11 * a_t11
    a_lj = a_t00 + a_t11
    a_la = logJ * a_lj
    a_J = kc.where(J > 1.0e-4, la * a_lj / Jc, 0.0)
    a_a0 = act * (2.0 * a0 * a_t00 + a1 * a_t01)
    a_a1 = act * (a0 * a_t01 + 2.0 * a1 * a_t11)
    a_act = a0 * a0 * a_t00 + a0 * a1 * a_t01 + a1 * a1 * a_t11
    a_f00 = aF00 + mu * (2.0 * f00 * a_t00 + f10 * a_t01) + a_J * f11 + act_axis[0] * a_a0
    a_f01 = aF01 + mu * (2.0 * f01 * a_t00 + f11 * a_t01) - a_J * f10 + act_axis[1] * a_a0
    a_f10 = aF10 + mu * (f00 * a_t01 + 2.0 * f10 * a_t11) - a_J * f01 + act_axis[0] * a_a1
    a_f11 = aF11 + mu * (f01 * a_t01 + 2.0 * f11 * a_t11) + a_J * f00 + act_axis[1] * a_a1
    # f = (I + dt C) F_old on the 2 x 2 blocks
    adj_C[p, 0] = adj_C[p, 0] + mp * b00 + dt * (a_f00 * F00 + a_f01 * F01)
    adj_C[p, 1] = adj_C[p, 1] + mp * b01 + dt * (a_f00 * F10 + a_f01 * F11)
    adj_C[p, 3] = adj_C[p, 3] + mp * b10 + dt * (a_f10 * F00 + a_f11 * F01)
    adj_C[p, 4] = adj_C[p, 4] + mp * b11 + dt * (a_f10 * F10 + a_f11 * F11)
    adj_F[p, 0] = adj_F[p, 0] + A00 * a_f00 + A10 * a_f10
    adj_F[p, 1] = adj_F[p, 1] + A00 * a_f01 + A10 * a_f11
    adj_F[p, 3] = adj_F[p, 3] + A01 * a_f00 + A11 * a_f10
    adj_F[p, 4] = adj_F[p, 4] + A01 * a_f01 + A11 * a_f11
    adj_Jp[p] = adj_Jp[p] + aJp
    # (the scatter's share first: the order in which the two launches added them)
    adj_mass[p] = adj_mass[p] + a_mg + kc.dot(a_mv, kc.vec2(vp[0], vp[1])) + a_ms
    adj_volume[p] = adj_volume[p] + a_vol
    adj_actuation[p] = adj_actuation[p] + a_act
    # Lame parameters from E and nu: this particle's share, summed per material by
    # material_gradients_kernel (atomics in this loop would keep GCC from vectorising it)
    adj_E_p[p] = adj_E_p[p] + a_mu * k_mu + a_la * k_la
    adj_nu_p[p] = adj_nu_p[p] - a_mu * E * k_mu / op + a_la * E * (1.0 + 2.0 * nu * nu) / (op * op * om * om)


# ------------------------------------------------------------------------------------------------
# a taped 2-D step with these adjoints
# ------------------------------------------------------------------------------------------------
class _Buffers:
    """Stand-ins for gradient arrays that do not exist (an input without requires_grad):
    ``sink`` ones are only added into (never read), ``zeros`` ones are read and stay zero; and
    scratch arrays a step's backward uses and leaves (the grid's adjoints, kinds ``adj_*``)."""

    def __init__(self):
        self._arrays = {}

    def get(self, kind, like):
        key = (kind, like.shape, like.dtype, str(like.device))
        if key not in self._arrays:
            self._arrays[key] = kc.zeros(like.shape, dtype=like.dtype, device=like.device)
        return self._arrays[key]


_buffers = _Buffers()


class _FloatRows:
    """Float32 views of vector / matrix CPU arrays, sharing their storage, made once per array
    (weakly keyed: a view lives as long as its array): (n,) mat33 -> (n, 9) row-major entries,
    (nx, ny) vec2 -> (nx, ny, 2)."""

    def __init__(self):
        self._views = weakref.WeakKeyDictionary()

    def __call__(self, a):
        view = self._views.get(a)
        if view is None:
            rows = a.numpy().reshape(tuple(a.shape) + (-1,))
            view = kc.array(rows, dtype=kc.float32, device=a.device, copy=False)
            assert view.numpy().ctypes.data == rows.ctypes.data, "float_rows must share the mat33 storage"
            self._views[a] = view
        return view


float_rows = _FloatRows()


def _adj_in(a):
    """``a.grad`` to read from (zeros when ``a`` has no gradient)."""
    return a.grad if a.grad is not None else _buffers.get("zeros", a)


def _adj_out(a):
    """``a.grad`` to add into (a sink when ``a`` has no gradient)."""
    return a.grad if a.grad is not None else _buffers.get("sink", a)


def step_log_j(grid, like):
    """The step's log J per particle (n,) (p2g_neo_hookean_2d_kernel), kept with the step's grid:
    the stress adjoint reads the forward's values instead of launching the log again
    (4 bytes per particle and step: 26 MB for a 1024-step 6.4K-particle rollout)."""
    log_J = getattr(grid, "log_J", None)
    if log_J is None or log_J.shape != like.shape:
        log_J = grid.log_J = kc.zeros(like.shape, dtype=float, device=like.device)
    return log_J


def p2g_neo_hookean_2d(model, state_in, actuation, act_axis, grid, dt, state_out):
    """mpm_transfer.particle_to_grid's split P2G for a neo-Hookean 2-D step with gradients in
    one launch: stress (log J kept for the adjoint) and scatter together as SIMD lanes
    (p2g_neo_hookean_2d_kernel)."""
    n, device = model.particle_count, model.device
    C_rows, F_rows = float_rows(state_in.particle_C), float_rows(state_in.particle_F)
    log_J = step_log_j(grid, model.particle_mass)
    kc.launch(p2g_neo_hookean_2d_kernel, dim=n,
              inputs=[state_in.particle_q, state_in.particle_qd, C_rows, F_rows, state_in.particle_Jp,
                      model.particle_mass, model.particle_volume, model.particle_material,
                      model.material_youngs_modulus, model.material_poisson_ratio, actuation, act_axis, grid.lower,
                      grid.dx, *grid.shape, float(dt), log_J],
              outputs=[float_rows(state_out.particle_F), state_out.particle_Jp, grid.mv, grid.m], device=device)


def record_step_2d(solver, model, state_in, state_out, actuation, grid, dt, box):
    """One differentiated 2-D SolverMPM step (no bodies, shapes or SDF volumes; ``box``: the
    active nodes, mpm_transfer.active_box): the forward launches run off the tape, and every
    enclosing Tape records one ``record_func`` whose backward runs this module's adjoints
    (G2P, grid update, then P2G's: neo-Hookean stress and scatter in one kernel by hand, other
    materials the hand scatter adjoint and the stress kernel's automatic one)."""
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
        if neo_hookean:
            p2g_neo_hookean_2d(model, state_in, actuation, solver.actuation_axis, grid, dt, state_out)
        else:
            particle_to_grid(model, state_in, actuation, solver.actuation_axis, grid, dt, state_out,
                             solver.model_code)
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
        # the grid's adjoints live only inside this call: scratch arrays shared by every step
        # (warm in cache, and never left for Tape.zero to clear), used in the box only.  adj_v
        # is zero between calls: made so, the G2P adjoint adds into it and the grid update's
        # clears what it read (the same box); a launch that fails in between clears it all
        adj_v, adj_mv, adj_m = (_buffers.get(kind, a) for kind, a in
                                (("adj_grid_v", grid.v), ("adj_grid_mv", grid.mv), ("adj_grid_m", grid.m)))
        try:
            adjoints(adj_v, adj_mv, adj_m)
        except BaseException:
            adj_v.zero_()
            for a in material_shares(model):
                a.zero_()
            raise

    def adjoints(adj_v, adj_mv, adj_m):
        kc.launch(g2p_2d_adjoint_kernel, dim=n,
                  inputs=[s_in.particle_q, grid.v, grid.lower, grid.dx, nx, ny, float(dt),
                          _adj_in(s_out.particle_q), _adj_in(s_out.particle_qd), _adj_in(s_out.particle_C),
                          _adj_out(s_in.particle_q), adj_v], device=device, record_tape=False)
        kc.launch(grid_update_2d_adjoint_kernel, dim=shape,
                  inputs=[grid.mv, grid.m, float(solver.min_node_mass), solver.gravity, float(dt), nx, ny, grid.pad,
                          solver.boundary, float(solver.friction), int(model.ground), model.ground_normal,
                          float(model.ground_offset), grid.lower, grid.dx, *lo, adj_v, adj_mv, adj_m],
                  device=device, record_tape=False)
        if neo_hookean:
            log_J = step_log_j(grid, model.particle_mass)   # the forward's, from the same C and F
            adj_E_p, adj_nu_p = material_shares(model)
            kc.launch(p2g_neo_hookean_2d_adjoint_kernel, dim=n,
                      inputs=[s_in.particle_q, s_in.particle_qd, float_rows(s_in.particle_C),
                              float_rows(s_in.particle_F), model.particle_mass, model.particle_volume,
                              model.particle_material, model.material_youngs_modulus, model.material_poisson_ratio,
                              actuation, solver.actuation_axis, grid.lower, grid.dx, nx, ny, float(dt), log_J,
                              adj_mv, adj_m, float_rows(_adj_in(s_out.particle_F)), _adj_in(s_out.particle_Jp),
                              _adj_out(s_in.particle_q), _adj_out(s_in.particle_qd),
                              float_rows(_adj_out(s_in.particle_C)), float_rows(_adj_out(s_in.particle_F)),
                              _adj_out(s_in.particle_Jp), _adj_out(model.particle_mass),
                              _adj_out(model.particle_volume), _adj_out(actuation), adj_E_p, adj_nu_p],
                      device=device, record_tape=False)
            return
        affine = grid.affine
        kc.launch(scatter_2d_adjoint_kernel, dim=n,
                  inputs=[s_in.particle_q, s_in.particle_qd, model.particle_mass, float_rows(affine), grid.lower,
                          grid.dx, nx, ny, adj_mv, adj_m, _adj_out(s_in.particle_q),
                          _adj_out(s_in.particle_qd), _adj_out(model.particle_mass), float_rows(affine.grad)],
                  device=device, record_tape=False)
        kc.launch(p2g_stress_kernel(solver.model_code, 2), dim=n,
                  inputs=[s_in.particle_C, s_in.particle_F, s_in.particle_Jp, model.particle_mass,
                          model.particle_volume, *materials, grid.dx, float(dt)],
                  outputs=[s_out.particle_F, s_out.particle_Jp, affine], device=device, adjoint=True,
                  record_tape=False)

    # the grid's arrays are not listed: backward never writes their gradients (scratch above), so
    # Tape.zero need not clear them (~0.55 MB a step at the diffmpm size)
    arrays = [s_in.particle_q, s_in.particle_qd, s_in.particle_C, s_in.particle_F, s_in.particle_Jp,
              s_out.particle_q, s_out.particle_qd, s_out.particle_C, s_out.particle_F, s_out.particle_Jp,
              model.particle_mass, model.particle_volume, model.material_youngs_modulus,
              model.material_poisson_ratio, actuation] + ([] if neo_hookean else [grid.affine])
    sum_shares = neo_hookean and (model.material_youngs_modulus.grad is not None or
                                  model.material_poisson_ratio.grad is not None)
    seen = set()
    for tape in reversed(tapes):   # every enclosing tape records it, as it would the launches
        if id(tape) not in seen:
            seen.add(id(tape))
            if sum_shares:
                _record_material_sum(tape, model)
            tape.record_func(backward, arrays)


_material_shares = weakref.WeakKeyDictionary()


def material_shares(model):
    """The model's per-particle shares of the E and nu adjoints (n,) each, added into by every
    taped step's stress adjoint and summed per material once per backward pass (zero between passes)."""
    shares = _material_shares.get(model)
    if shares is None:
        n, device = model.particle_count, model.device
        shares = _material_shares[model] = (kc.zeros(n, dtype=float, device=device),
                                            kc.zeros(n, dtype=float, device=device))
    return shares


def _record_material_sum(tape, model):
    """Before a tape's first taped 2-D step of ``model``: a record_func whose backward, the last
    of the pass, sums the steps' shares of the E and nu adjoints per material (one launch per
    pass instead of one per step: 35-45 us of one-thread work each at 6.4K particles)."""
    mark = tape.__dict__.get("_mpm2d_material_sums")
    if mark is None or mark[0] is not tape.launches:   # (Tape.reset starts a new list)
        mark = tape._mpm2d_material_sums = (tape.launches, weakref.WeakSet())
    if model in mark[1]:
        return
    mark[1].add(model)
    E, nu = model.material_youngs_modulus, model.material_poisson_ratio

    def backward():
        adj_E_p, adj_nu_p = material_shares(model)
        kc.launch(material_gradients_kernel, dim=model.particle_count,
                  inputs=[model.particle_material, adj_E_p, adj_nu_p, _adj_out(E), _adj_out(nu)],
                  device=model.device, record_tape=False)

    tape.record_func(backward, [E, nu])
