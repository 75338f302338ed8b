"""MLS-MPM transfers on a dense grid (kernels + launchers), 2-D and 3-D.

One step is three launches (Hu et al. 2018, moving-least-squares MPM with APIC):

* ``p2g``: update each particle's deformation gradient and stress (sim/mpm_constitutive.py),
  then scatter mass and affine momentum ``m v + (m C - dt V (4 / dx^2) tau) (x_i - x_p)``
  to the 3^d grid nodes of its quadratic B-spline stencil (atomic adds, sim/mpm_scatter.py);
  a differentiated step runs it as two launches, stress then scatter (see p2g_stress_kernel);
* ``grid_update``: velocity = momentum / mass + dt g, then walls and colliders (ground plane,
  static sphere/box/capsule/plane/mesh shapes and shapes on rigid bodies, sim/mpm_colliders.py,
  static SDF volumes, sim/mpm_volume_colliders.py; a node inside one keeps only what the
  boundary rule allows, bodies get the reaction);
* ``g2p``: gather velocity and the APIC affine matrix ``C = (4 / dx^2) sum w v (x_i - x_p)^T``
  and move the particle, ``x += dt v``.

Grid node (i, j[, k]) sits at ``grid_lower + dx (i, j[, k])``.  Particles always carry
vec3 positions/velocities and mat33 F and C; the 2-D kernels read and write only the x, y
parts (and keep C's third row/column zero and F's (2, 2) entry at 1, plane strain).
"""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc
from kernelcore.device import get_runtime

from .mpm_colliders import body_contact_mass_2d_kernel, collide_node_shapes, collide_node_velocity
from .mpm_constitutive import MODEL_UPDATES, MODEL_UPDATES_PLANE, update_particle_material
from .mpm_gather import gather_apic_3d
from .mpm_scatter import bspline_weights, scatter_apic_2d, scatter_apic_3d
from .mpm_volume_colliders import collide_node_volumes

#: the wall rule of a grid node (sim/mpm_colliders.py)
collide_plane = collide_node_velocity

BOUNDARY_STICKY = 0
BOUNDARY_SLIP = 1
BOUNDARY_SEPARATE = 2
BOUNDARY_CODES = {"sticky": BOUNDARY_STICKY, "slip": BOUNDARY_SLIP, "separate": BOUNDARY_SEPARATE}


@kc.func
def stencil_base(xg: float, n: int):
    """Lowest node of a particle's stencil, kept inside the grid (escaped particles are clamped, never written out of bounds)."""
    return kc.clamp(int(xg - 0.5), 0, n - 3)


#: The 2-D solver's one switch for threads: every kernel of a 2-D step (forward and adjoint:
#: clear, P2G, grid update, G2P, the taped path's stress kernels and hand adjoints) runs a
#: launch of fewer than this many threads (particles, or nodes of the active box) on one
#: thread.  A 2-D step is many small launches (the diffmpm size: 6.4K particles, 135^2 nodes,
#: ~10 launches of 40-600 us a step), and a second thread's fork/join and the scatters'
#: per-thread grid copies cost more than it saves there: 2-D diffmpm fwd+bwd at 6.4K particles
#: was faster on one thread than on two in 6 of 7 idle runs (session 16).  Larger 2-D runs
#: and every 3-D kernel keep all cores.  (The shared any-material stress kernel, 3-D's too,
#: keeps kernelcore's grain.)
SERIAL_2D_GRAIN = 1 << 15


def serial_2d(kernel):
    """``kernel`` (a 2-D step's) with launches below SERIAL_2D_GRAIN threads kept on one thread."""
    kernel.parallel_grain = SERIAL_2D_GRAIN
    return kernel


serial_2d(body_contact_mass_2d_kernel)


# ------------------------------------------------------------------------------------------------
# 2-D
# ------------------------------------------------------------------------------------------------
def make_p2g_2d_kernel(update, name):
    """The 2-D P2G kernel around one particle-update kc.func (mpm_constitutive.update_*); ``name`` tags its code."""
    def p2g_2d_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), C: kc.array(dtype=kc.mat33),
                      F: kc.array(dtype=kc.mat33), Jp: kc.array(dtype=float), mass: kc.array(dtype=float),
                      volume: kc.array(dtype=float), material: kc.array(dtype=kc.int32),
                      mat_kind: kc.array(dtype=kc.int32), mat_E: kc.array(dtype=float), mat_nu: kc.array(dtype=float),
                      mat_hardening: kc.array(dtype=float), mat_theta_c: kc.array(dtype=float),
                      mat_theta_s: kc.array(dtype=float), mat_friction: kc.array(dtype=float),
                      mat_viscosity: kc.array(dtype=float), actuation: kc.array(dtype=float), act_axis: kc.vec3,
                      grid_lower: kc.vec3, dx: float, nx: int, ny: int, dt: float,
                      F_out: kc.array(dtype=kc.mat33), Jp_out: kc.array(dtype=float),
                      grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                      grid_mv_grad: kc.array(dtype=kc.vec2, ndim=2), grid_m_grad: kc.array(dtype=float, ndim=2)):
        p = kc.tid()
        m = material[p]
        Fn, Jn, tau = update(mat_kind[m], F[p], C[p], Jp[p], dt, mat_E[m], mat_nu[m], mat_hardening[m], mat_theta_c[m],
                             mat_theta_s[m], mat_friction[m], mat_viscosity[m], actuation[p], act_axis)
        F_out[p] = Fn
        Jp_out[p] = Jn
        inv_dx = 1.0 / dx
        mp = mass[p]
        Cp = C[p]
        s = -dt * volume[p] * 4.0 * inv_dx * inv_dx
        affine = kc.mat22(s * tau[0, 0] + mp * Cp[0, 0], s * tau[0, 1] + mp * Cp[0, 1],
                          s * tau[1, 0] + mp * Cp[1, 0], s * tau[1, 1] + mp * Cp[1, 1])
        xp = q[p] - grid_lower
        gx = xp[0] * inv_dx
        gy = xp[1] * inv_dx
        bx = stencil_base(gx, nx)
        by = stencil_base(gy, ny)
        fx = kc.vec2(gx - float(bx), gy - float(by))
        vp = qd[p]
        mv = kc.vec2(vp[0], vp[1]) * mp
        scatter_apic_2d(grid_mv, grid_m, grid_mv_grad, grid_m_grad, bx, by, fx, mv, affine, mp, dx)

    p2g_2d_kernel.__qualname__ = f"p2g_2d_kernel_{name}"
    return serial_2d(kc.kernel(p2g_2d_kernel))


@kc.func
def collide_walls(v: kc.vec3, i: int, n: int, pad: int, axis: kc.vec3, boundary: int, friction: float):
    """The two domain walls across ``axis``: nodes 0..pad lie at or beyond the lower bound, n-1-pad.. the upper."""
    # collide_plane leaves v alone outside a wall (phi >= 0): interior nodes skip it, which
    # makes the adjoint of a node carrying mass about 2x cheaper (nothing to reverse there)
    out = v
    if i <= pad:
        out = collide_plane(out, axis, float(i - pad) - 0.5, boundary, friction)
    if i >= n - 1 - pad:
        out = collide_plane(out, -axis, float(n - 1 - pad - i) - 0.5, boundary, friction)
    return out


def make_grid_update_2d_kernel(shapes: bool, volumes: bool = False):
    """The 2-D grid update, with (``shapes``) or without the model's shapes and bodies."""
    def grid_update_2d_kernel(grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                              min_mass: float, gravity: kc.vec3, dt: float, nx: int, ny: int, pad: int, boundary: int,
                              friction: float,
                              ground: int, ground_normal: kc.vec3, ground_offset: float, grid_lower: kc.vec3, dx: float,
                              reach: float, shape_count: int, shape_type: kc.array(dtype=kc.int32),
                              shape_body: kc.array(dtype=kc.int32), shape_pos: kc.array(dtype=kc.vec3),
                              shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                              shape_mesh: kc.array(dtype=kc.uint64), body_q: kc.array(dtype=kc.transform),
                              body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                              body_mass: kc.array(dtype=float), contact_mass: kc.array(dtype=float),
                              volume_count: int, volume_ids: kc.array(dtype=kc.uint64),
                              volume_grad_xform: kc.array(dtype=kc.mat33), i0: int, j0: int,
                              grid_v: kc.array(dtype=kc.vec2, ndim=2), body_f: kc.array(dtype=kc.spatial_vector)):
        ti, tj = kc.tid()
        i = ti + i0   # the launch covers the box of nodes the particles touch (see active_box)
        j = tj + j0
        m = grid_m[i, j]
        v = kc.vec3(0.0, 0.0, 0.0)
        # a node without mass keeps v = 0 (every collider leaves 0 alone on a static wall, and no
        # particle reads it with a weight that matters), so colliders are only tested where there is mass
        if m > min_mass:
            mv = grid_mv[i, j]
            v = kc.vec3(mv[0] / m + gravity[0] * dt, mv[1] / m + gravity[1] * dt, 0.0)
            v = collide_walls(v, i, nx, pad, kc.vec3(1.0, 0.0, 0.0), boundary, friction)
            v = collide_walls(v, j, ny, pad, kc.vec3(0.0, 1.0, 0.0), boundary, friction)
            xi = grid_lower + kc.vec3(float(i), float(j), 0.0) * dx
            if ground != 0:
                phi_ground = kc.dot(xi, ground_normal) - ground_offset
                if phi_ground < 0.0:   # (see collide_walls)
                    v = collide_plane(v, ground_normal, phi_ground, boundary, friction)
            if shapes:   # static: a model without shapes gets a kernel without their (adjoint) code
                v = collide_node_shapes(v, m, xi, boundary, friction, dt, reach, shape_count, shape_type, shape_body,
                                        shape_pos, shape_rot, shape_scale, shape_mesh, body_q, body_qd, body_com,
                                        body_mass, contact_mass, body_f)
            if volumes:   # static, as shapes: SDF colliders (sim/mpm_volume_colliders.py)
                v = collide_node_volumes(v, xi, boundary, friction, 1, volume_count, volume_ids, volume_grad_xform)
        grid_v[i, j] = kc.vec2(v[0], v[1])

    grid_update_2d_kernel.__qualname__ = f"grid_update_2d_kernel_{'shapes' if shapes else 'walls'}{'_sdf' if volumes else ''}"
    return serial_2d(kc.kernel(grid_update_2d_kernel))


grid_update_2d_kernel = make_grid_update_2d_kernel(True)
grid_update_2d_walls_kernel = make_grid_update_2d_kernel(False)



@serial_2d
@kc.kernel(simd=True)
def g2p_2d_kernel(q: kc.array(dtype=kc.vec3), grid_v: kc.array(dtype=kc.vec2, ndim=2), grid_lower: kc.vec3,
                  dx: float, nx: int, ny: int, dt: float,
                  q_out: kc.array(dtype=kc.vec3), qd_out: kc.array(dtype=kc.vec3), C_out: kc.array(dtype=kc.mat33)):
    p = kc.tid()
    inv_dx = 1.0 / dx
    x = q[p]
    xp = x - grid_lower
    gx = xp[0] * inv_dx
    gy = xp[1] * inv_dx
    bx = kc.max(stencil_base(gx, nx), 0)   # known >= 0: no negative-index wrap per grid read
    by = kc.max(stencil_base(gy, ny), 0)
    fx = kc.vec2(gx - float(bx), gy - float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    new_v = kc.vec2(0.0, 0.0)
    new_B = kc.mat22(0.0, 0.0, 0.0, 0.0)
    for i in range(3):
        for j in range(3):
            dpos = kc.vec2(float(i), float(j)) - fx
            w = wx[i] * wy[j]
            gv = grid_v[bx + i, by + j]
            new_v += gv * w
            new_B += kc.outer(gv, dpos) * w
    c = 4.0 * inv_dx
    qd_out[p] = kc.vec3(new_v[0], new_v[1], 0.0)
    C_out[p] = kc.mat33(c * new_B[0, 0], c * new_B[0, 1], 0.0, c * new_B[1, 0], c * new_B[1, 1], 0.0, 0.0, 0.0, 0.0)
    q_out[p] = kc.vec3(x[0] + dt * new_v[0], x[1] + dt * new_v[1], x[2])


# ------------------------------------------------------------------------------------------------
# 3-D
# ------------------------------------------------------------------------------------------------
def make_p2g_3d_kernel(update, name):
    """The 3-D P2G kernel around one particle-update kc.func; see make_p2g_2d_kernel."""
    def p2g_3d_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), C: kc.array(dtype=kc.mat33),
                      F: kc.array(dtype=kc.mat33), Jp: kc.array(dtype=float), mass: kc.array(dtype=float),
                      volume: kc.array(dtype=float), material: kc.array(dtype=kc.int32),
                      mat_kind: kc.array(dtype=kc.int32), mat_E: kc.array(dtype=float), mat_nu: kc.array(dtype=float),
                      mat_hardening: kc.array(dtype=float), mat_theta_c: kc.array(dtype=float),
                      mat_theta_s: kc.array(dtype=float), mat_friction: kc.array(dtype=float),
                      mat_viscosity: kc.array(dtype=float), actuation: kc.array(dtype=float), act_axis: kc.vec3,
                      grid_lower: kc.vec3, dx: float, nx: int, ny: int, nz: int, dt: float,
                      F_out: kc.array(dtype=kc.mat33), Jp_out: kc.array(dtype=float),
                      grid_mv: kc.array(dtype=kc.vec3, ndim=3), grid_m: kc.array(dtype=float, ndim=3),
                      grid_mv_grad: kc.array(dtype=kc.vec3, ndim=3), grid_m_grad: kc.array(dtype=float, ndim=3)):
        p = kc.tid()
        m = material[p]
        Fn, Jn, tau = update(mat_kind[m], F[p], C[p], Jp[p], dt, mat_E[m], mat_nu[m], mat_hardening[m], mat_theta_c[m],
                             mat_theta_s[m], mat_friction[m], mat_viscosity[m], actuation[p], act_axis)
        F_out[p] = Fn
        Jp_out[p] = Jn
        inv_dx = 1.0 / dx
        mp = mass[p]
        affine = tau * (-dt * volume[p] * 4.0 * inv_dx * inv_dx) + C[p] * mp
        g = (q[p] - grid_lower) * inv_dx
        bx = stencil_base(g[0], nx)
        by = stencil_base(g[1], ny)
        bz = stencil_base(g[2], nz)
        fx = g - kc.vec3(float(bx), float(by), float(bz))
        mv = qd[p] * mp
        scatter_apic_3d(grid_mv, grid_m, grid_mv_grad, grid_m_grad, bx, by, bz, fx, mv, affine, mp, dx)

    p2g_3d_kernel.__qualname__ = f"p2g_3d_kernel_{name}"
    return kc.kernel(p2g_3d_kernel)


def make_grid_update_3d_kernel(shapes: bool, volumes: bool = False):
    """The 3-D grid update, with (``shapes``) or without the model's shapes and bodies."""
    def grid_update_3d_kernel(grid_mv: kc.array(dtype=kc.vec3, ndim=3), grid_m: kc.array(dtype=float, ndim=3),
                              min_mass: float, gravity: kc.vec3, dt: float, nx: int, ny: int, nz: int, pad: int,
                              boundary: int, friction: float,
                              ground: int, ground_normal: kc.vec3, ground_offset: float, grid_lower: kc.vec3, dx: float,
                              reach: float, shape_count: int, shape_type: kc.array(dtype=kc.int32),
                              shape_body: kc.array(dtype=kc.int32), shape_pos: kc.array(dtype=kc.vec3),
                              shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                              shape_mesh: kc.array(dtype=kc.uint64), body_q: kc.array(dtype=kc.transform),
                              body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                              body_mass: kc.array(dtype=float), contact_mass: kc.array(dtype=float),
                              volume_count: int, volume_ids: kc.array(dtype=kc.uint64),
                              volume_grad_xform: kc.array(dtype=kc.mat33), i0: int, j0: int, k0: int,
                              grid_v: kc.array(dtype=kc.vec3, ndim=3), body_f: kc.array(dtype=kc.spatial_vector)):
        ti, tj, tk = kc.tid()
        i = ti + i0   # the launch covers the box of nodes the particles touch (see active_box)
        j = tj + j0
        k = tk + k0
        m = grid_m[i, j, k]
        v = kc.vec3(0.0, 0.0, 0.0)
        if m > min_mass:   # colliders only where there is mass (see grid_update_2d_kernel)
            v = grid_mv[i, j, k] / m + gravity * dt
            v = collide_walls(v, i, nx, pad, kc.vec3(1.0, 0.0, 0.0), boundary, friction)
            v = collide_walls(v, j, ny, pad, kc.vec3(0.0, 1.0, 0.0), boundary, friction)
            v = collide_walls(v, k, nz, pad, kc.vec3(0.0, 0.0, 1.0), boundary, friction)
            xi = grid_lower + kc.vec3(float(i), float(j), float(k)) * dx
            if ground != 0:
                phi_ground = kc.dot(xi, ground_normal) - ground_offset
                if phi_ground < 0.0:   # (see collide_walls)
                    v = collide_plane(v, ground_normal, phi_ground, boundary, friction)
            if shapes:   # static: a model without shapes gets a kernel without their (adjoint) code
                v = collide_node_shapes(v, m, xi, boundary, friction, dt, reach, shape_count, shape_type, shape_body,
                                        shape_pos, shape_rot, shape_scale, shape_mesh, body_q, body_qd, body_com,
                                        body_mass, contact_mass, body_f)
            if volumes:
                v = collide_node_volumes(v, xi, boundary, friction, 0, volume_count, volume_ids, volume_grad_xform)
        grid_v[i, j, k] = v

    grid_update_3d_kernel.__qualname__ = f"grid_update_3d_kernel_{'shapes' if shapes else 'walls'}{'_sdf' if volumes else ''}"
    return kc.kernel(grid_update_3d_kernel)


grid_update_3d_kernel = make_grid_update_3d_kernel(True)
grid_update_3d_walls_kernel = make_grid_update_3d_kernel(False)


@kc.kernel
def g2p_3d_kernel(q: kc.array(dtype=kc.vec3), grid_v: kc.array(dtype=kc.vec3, ndim=3),
                  grid_v_grad: kc.array(dtype=kc.vec3, ndim=3), grid_lower: kc.vec3,
                  dx: float, nx: int, ny: int, nz: int, dt: float,
                  q_out: kc.array(dtype=kc.vec3), qd_out: kc.array(dtype=kc.vec3), C_out: kc.array(dtype=kc.mat33)):
    """``grid_v_grad``: ``grid_v.grad`` in a differentiated run, else any vec3 3-D array (never touched);
    the gather's hand-written adjoint adds into it (sim/mpm_gather.py)."""
    p = kc.tid()
    inv_dx = 1.0 / dx
    x = q[p]
    g = (x - grid_lower) * inv_dx
    bx = stencil_base(g[0], nx)
    by = stencil_base(g[1], ny)
    bz = stencil_base(g[2], nz)
    fx = g - kc.vec3(float(bx), float(by), float(bz))
    new_v, new_B = gather_apic_3d(grid_v, grid_v_grad, bx, by, bz, fx)
    qd_out[p] = new_v
    C_out[p] = new_B * (4.0 * inv_dx)
    q_out[p] = x + new_v * dt


# ------------------------------------------------------------------------------------------------
# P2G in two launches, for differentiated runs
# ------------------------------------------------------------------------------------------------
# The fused P2G kernels above are the fastest forward.  Differentiated, their adjoint replays the
# constitutive update and the scatter together, and the scatter's hand-written adjoint
# (sim/mpm_scatter.py) inlined into that large adjoint ran slower than the automatic one
# (2.5 vs 1.9 ms, 2-D diffmpm size, one thread).  Split, the stress kernel's adjoint is the
# constitutive update's alone and the scatter kernel's adjoint is the hand-written gather
# (1.4 + 0.4 ms); the price is one mat33 per particle per state (``MPMGrid.affine``).
def make_p2g_stress_kernel(update, name):
    """Per particle: new F, Jp and the APIC affine matrix ``m C - dt V (4 / dx^2) tau`` [kg/s] (3 x 3;
    the 2-D scatter reads its upper-left 2 x 2 block)."""
    def p2g_stress_kernel(C: kc.array(dtype=kc.mat33), F: kc.array(dtype=kc.mat33), Jp: kc.array(dtype=float),
                          mass: kc.array(dtype=float), volume: kc.array(dtype=float),
                          material: kc.array(dtype=kc.int32), mat_kind: kc.array(dtype=kc.int32),
                          mat_E: kc.array(dtype=float), mat_nu: kc.array(dtype=float),
                          mat_hardening: kc.array(dtype=float), mat_theta_c: kc.array(dtype=float),
                          mat_theta_s: kc.array(dtype=float), mat_friction: kc.array(dtype=float),
                          mat_viscosity: kc.array(dtype=float), actuation: kc.array(dtype=float), act_axis: kc.vec3,
                          dx: float, dt: float,
                          F_out: kc.array(dtype=kc.mat33), Jp_out: kc.array(dtype=float),
                          affine_out: kc.array(dtype=kc.mat33)):
        p = kc.tid()
        m = material[p]
        Fn, Jn, tau = update(mat_kind[m], F[p], C[p], Jp[p], dt, mat_E[m], mat_nu[m], mat_hardening[m], mat_theta_c[m],
                             mat_theta_s[m], mat_friction[m], mat_viscosity[m], actuation[p], act_axis)
        F_out[p] = Fn
        Jp_out[p] = Jn
        inv_dx = 1.0 / dx
        affine_out[p] = tau * (-dt * volume[p] * 4.0 * inv_dx * inv_dx) + C[p] * mass[p]

    p2g_stress_kernel.__qualname__ = f"p2g_stress_kernel_{name}"
    return kc.kernel(p2g_stress_kernel)


@serial_2d
@kc.kernel
def p2g_scatter_2d_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float),
                          affine: kc.array(dtype=kc.mat33), grid_lower: kc.vec3, dx: float, nx: int, ny: int,
                          grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                          grid_mv_grad: kc.array(dtype=kc.vec2, ndim=2), grid_m_grad: kc.array(dtype=float, ndim=2)):
    p = kc.tid()
    inv_dx = 1.0 / dx
    mp = mass[p]
    a = affine[p]
    xp = q[p] - grid_lower
    gx = xp[0] * inv_dx
    gy = xp[1] * inv_dx
    bx = stencil_base(gx, nx)
    by = stencil_base(gy, ny)
    fx = kc.vec2(gx - float(bx), gy - float(by))
    vp = qd[p]
    scatter_apic_2d(grid_mv, grid_m, grid_mv_grad, grid_m_grad, bx, by, fx, kc.vec2(vp[0], vp[1]) * mp,
                    kc.mat22(a[0, 0], a[0, 1], a[1, 0], a[1, 1]), mp, dx)


@kc.kernel
def p2g_scatter_3d_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float),
                          affine: kc.array(dtype=kc.mat33), grid_lower: kc.vec3, dx: float, nx: int, ny: int, nz: int,
                          grid_mv: kc.array(dtype=kc.vec3, ndim=3), grid_m: kc.array(dtype=float, ndim=3),
                          grid_mv_grad: kc.array(dtype=kc.vec3, ndim=3), grid_m_grad: kc.array(dtype=float, ndim=3)):
    p = kc.tid()
    inv_dx = 1.0 / dx
    mp = mass[p]
    g = (q[p] - grid_lower) * inv_dx
    bx = stencil_base(g[0], nx)
    by = stencil_base(g[1], ny)
    bz = stencil_base(g[2], nz)
    fx = g - kc.vec3(float(bx), float(by), float(bz))
    scatter_apic_3d(grid_mv, grid_m, grid_mv_grad, grid_m_grad, bx, by, bz, fx, qd[p] * mp, affine[p], mp, dx)


# ------------------------------------------------------------------------------------------------
# launchers
# ------------------------------------------------------------------------------------------------
@serial_2d
@kc.kernel
def zero_grid_2d_kernel(i0: int, j0: int, grid_mv: kc.array(dtype=kc.vec2, ndim=2),
                        grid_m: kc.array(dtype=float, ndim=2)):
    ti, tj = kc.tid()
    grid_mv[ti + i0, tj + j0] = kc.vec2(0.0, 0.0)
    grid_m[ti + i0, tj + j0] = 0.0



@kc.kernel
def zero_grid_3d_kernel(i0: int, j0: int, k0: int, grid_mv: kc.array(dtype=kc.vec3, ndim=3),
                        grid_m: kc.array(dtype=float, ndim=3)):
    ti, tj, tk = kc.tid()
    grid_mv[ti + i0, tj + j0, tk + k0] = kc.vec3(0.0, 0.0, 0.0)
    grid_m[ti + i0, tj + j0, tk + k0] = 0.0


def full_box(grid):
    """The whole grid as a box: (lowest node (d,), nodes per axis (d,))."""
    return (0,) * len(grid.shape), tuple(grid.shape)


def active_box(q, grid):
    """The box of grid nodes that particles at ``q`` (n, 3) [m] can touch: (lowest node, nodes per axis).

    Every particle's stencil (sim/mpm_scatter.py) lies inside it, with one node to spare on each
    side for float32 rounding of the stencil base (computed here in float64).  The step clears,
    updates and reads only these nodes; the rest of the grid is never read that step.
    """
    lo, size = [], []
    # on a contiguous (d, n) copy: numpy reduces a strided (n, d) slice along axis 0 ~25x slower,
    # and strided columns ~3x slower than copy + contiguous rows (6.4K particles: 36 -> 13 us); the
    # rest in Python floats (float64), as numpy's per-call cost on 2- or 3-element arrays was ~50 us a step
    cols = q[:, :len(grid.shape)].T.copy()
    lows, highs = cols.min(axis=1), cols.max(axis=1)
    for k, n in enumerate(grid.shape):
        x_min, x_max = float(lows[k]), float(highs[k])
        if not (math.isfinite(x_min) and math.isfinite(x_max)):
            return full_box(grid)   # (the step's non-finite check reports such particles)
        lower = float(grid.lower[k])
        # the stencil base is monotone in the position: the extreme particles give the extreme bases
        a = min(max(math.floor((x_min - lower) / grid.dx - 0.5) - 1, 0), n - 3)
        b = min(max(math.floor((x_max - lower) / grid.dx - 0.5) + 1, 0), n - 3) + 3
        lo.append(a)
        size.append(b - a)
    return tuple(lo), tuple(size)


def zero_grid(grid, device, box=None):
    """Clear a step's grid momentum and mass in ``box`` (active_box; None: everywhere), as a launch
    so that a Tape records it."""
    lo, shape = box if box is not None else full_box(grid)
    kernel = zero_grid_2d_kernel if len(grid.shape) == 2 else zero_grid_3d_kernel
    kc.launch(kernel, dim=shape, inputs=[*lo, grid.mv, grid.m], device=device)


#: P2G kernels for any mix of materials (they dispatch on the material's model code per particle)
p2g_2d_kernel = make_p2g_2d_kernel(update_particle_material, "any")
p2g_3d_kernel = make_p2g_3d_kernel(update_particle_material, "any")
_p2g_kernels = {(2, None): p2g_2d_kernel, (3, None): p2g_3d_kernel}


_p2g_stress_kernels = {(3, None): make_p2g_stress_kernel(update_particle_material, "any")}


def model_update(dim, model_code):
    """The particle update kc.func of one material model code for a ``dim``-D solver."""
    if dim == 2 and model_code in MODEL_UPDATES_PLANE:
        return MODEL_UPDATES_PLANE[model_code], f"model{model_code}_plane"
    return MODEL_UPDATES[model_code], f"model{model_code}"


def p2g_stress_kernel(model_code=None, dim=3):
    """The stress kernel of the split P2G, specialised to one material model code (None: any mix)
    and, where that is cheaper, to the 2-D solver's plane strain."""
    key = (3 if model_code is None else dim, model_code)
    if key not in _p2g_stress_kernels:
        kernel = make_p2g_stress_kernel(*model_update(dim, model_code))
        _p2g_stress_kernels[key] = serial_2d(kernel) if key[0] == 2 else kernel
    return _p2g_stress_kernels[key]


def p2g_kernel(dim, model_code=None):
    """The P2G kernel for ``dim``, specialised to one material model code (None: any mix).

    A run whose particles all share one model gets a kernel without the other models' code:
    its forward is ~1.8x and its adjoint ~2.7x faster (2-D neo-Hookean, 6.4K particles).
    """
    key = (dim, model_code)
    if key not in _p2g_kernels:
        make = make_p2g_2d_kernel if dim == 2 else make_p2g_3d_kernel
        _p2g_kernels[key] = make(*model_update(dim, model_code))
    return _p2g_kernels[key]


def particle_to_grid(model, state_in, actuation, act_axis, grid, dt, state_out, model_code=None):
    """P2G: new F, Jp into ``state_out``; mass [kg] and momentum [kg m/s] into ``grid``.

    ``model_code``: the material model every particle uses (a faster kernel), or None for a mix.
    A grid with gradients (a differentiated run) takes the split P2G (stress, then scatter with
    its hand-written adjoint, sim/mpm_scatter.py), the affine matrices kept in ``grid.affine``.
    """
    materials = [model.particle_material, model.material_mpm_model, model.material_youngs_modulus,
                 model.material_poisson_ratio, model.material_hardening, model.material_critical_compression,
                 model.material_critical_stretch, model.material_friction_angle, model.material_viscosity,
                 actuation, act_axis]
    dim = len(grid.shape)
    if grid.mv.grad is None:
        inputs = [state_in.particle_q, state_in.particle_qd, state_in.particle_C, state_in.particle_F,
                  state_in.particle_Jp, model.particle_mass, model.particle_volume, *materials,
                  grid.lower, grid.dx, *grid.shape, float(dt)]
        # the scatter's gradient arrays are never read in a run without gradients: empty ones will do (not
        # the grid's own arrays again, which would make the launch see one array updated two ways and keep
        # it on one thread, kernelcore/launch.py)
        # a Tape must not record this launch: its adjoint would read those empty stand-ins (a crash).  That
        # loses nothing when no input wants a gradient; when one does, the grid needed gradients too.
        taped = bool(get_runtime().tape_stack)
        if taped:
            _refuse_gradients_without_grid(inputs, state_in)
        kc.launch(p2g_kernel(dim, model_code), dim=model.particle_count, inputs=inputs,
                  outputs=[state_out.particle_F, state_out.particle_Jp, grid.mv, grid.m,
                           *no_scatter_gradients(dim, model.device)],
                  device=model.device, record_tape=not taped)
        return
    affine = grid.particle_affine(model.particle_count)
    kc.launch(p2g_stress_kernel(model_code, dim), dim=model.particle_count,
              inputs=[state_in.particle_C, state_in.particle_F, state_in.particle_Jp, model.particle_mass,
                      model.particle_volume, *materials, grid.dx, float(dt)],
              outputs=[state_out.particle_F, state_out.particle_Jp, affine], device=model.device)
    scatter = p2g_scatter_2d_kernel if dim == 2 else p2g_scatter_3d_kernel
    kc.launch(scatter, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, model.particle_mass, affine, grid.lower, grid.dx,
                      *grid.shape],
              outputs=[grid.mv, grid.m, grid.mv.grad, grid.m.grad], device=model.device)


def _refuse_gradients_without_grid(inputs, state_in):
    """A clear error instead of gradients that would silently miss P2G: an input of a taped step wants a
    gradient but the step's grid has none (its output state was made without ``requires_grad``)."""
    names = {id(state_in.particle_q): "state_in.particle_q", id(state_in.particle_qd): "state_in.particle_qd",
             id(state_in.particle_C): "state_in.particle_C", id(state_in.particle_F): "state_in.particle_F"}
    wanted = [names.get(id(a), "a model or control array") for a in inputs
              if isinstance(a, kc.array) and a.requires_grad]
    if wanted:
        raise ValueError(f"SolverMPM.step: {wanted[0]} requires gradients but state_out does not, so the step's "
                         f"grid has none: make the output states with requires_grad too (model.state(requires_grad="
                         f"True) or finalize(requires_grad=True))")


_grid_update_kernels = {}
_no_volumes = {}   # device -> empty (ids, inv(A)^T) arrays
_no_scatter_gradients = {}   # (dim, device) -> empty (momentum, mass) grid gradient arrays


def no_scatter_gradients(dim, device):
    """Empty stand-ins for the scatter's grid gradient arrays in a run without gradients (never read)."""
    key = (dim, str(device))
    if key not in _no_scatter_gradients:
        shape = (0,) * dim
        _no_scatter_gradients[key] = (kc.zeros(shape, dtype=kc.vec2 if dim == 2 else kc.vec3, device=device),
                                      kc.zeros(shape, dtype=float, device=device))
    return _no_scatter_gradients[key]


def no_volumes(device):
    """Empty SDF-collider arrays on ``device`` (a model without SDF colliders)."""
    key = str(device)
    if key not in _no_volumes:
        _no_volumes[key] = (kc.zeros(0, dtype=kc.uint64, device=device), kc.zeros(0, dtype=kc.mat33, device=device))
    return _no_volumes[key]


def grid_update_kernel(dim, shapes, volumes):
    """The grid update kernel with (or without) shape colliders and SDF volume colliders."""
    key = (dim, bool(shapes), bool(volumes))
    if key not in _grid_update_kernels:
        make = make_grid_update_2d_kernel if dim == 2 else make_grid_update_3d_kernel
        _grid_update_kernels[key] = make(bool(shapes), bool(volumes))
    return _grid_update_kernels[key]


def update_grid(model, grid, min_mass, gravity, boundary, friction, dt, colliders, volumes=None, box=None):
    """Grid velocities [m/s]: momentum / mass + dt g, then domain walls, the ground plane and the
    model's shapes (a node inside a collider loses its velocity as the wall ``boundary`` rule says);
    ``colliders``: (reach [m], body_q, body_qd, contact_mass, body_f) — body poses and velocities at
    the step's start, the contact node mass per body [kg] (sim/mpm_colliders.body_contact_mass) and
    the wrench array (B,) the material's reaction is added to.  ``volumes``: (ids, inv(A)^T) of
    static SDF colliders (sim/mpm_volume_colliders.volume_collider_arrays), or None.  ``box``: the
    nodes to update (active_box; None: all).

    Nodes lighter than ``min_mass`` [kg] (touched only by the far tail of a B-spline) get zero
    velocity: dividing by such a mass is ill-conditioned, and the adjoint of mv / m needs m^2,
    which underflows float32 (inf * 0 = NaN gradients, always so when denormals are flushed).
    """
    if volumes is not None:
        kernel = grid_update_kernel(len(grid.shape), model.shape_count > 0, True)
    elif model.shape_count:
        kernel = grid_update_2d_kernel if len(grid.shape) == 2 else grid_update_3d_kernel
    else:
        kernel = grid_update_2d_walls_kernel if len(grid.shape) == 2 else grid_update_3d_walls_kernel
    reach, body_q, body_qd, contact_mass, body_f = colliders
    volume_ids, volume_xform = volumes if volumes is not None else no_volumes(model.device)
    lo, shape = box if box is not None else full_box(grid)
    kc.launch(kernel, dim=shape,
              inputs=[grid.mv, grid.m, float(min_mass), gravity, float(dt), *grid.shape, grid.pad, boundary, float(friction),
                      int(model.ground), model.ground_normal, float(model.ground_offset), grid.lower, grid.dx,
                      float(reach), model.shape_count, model.shape_type, model.shape_body, model.shape_pos,
                      model.shape_rot, model.shape_scale, model.shape_mesh, body_q, body_qd, model.body_com, model.body_mass, contact_mass,
                      volume_ids.shape[0], volume_ids, volume_xform, *lo],
              outputs=[grid.v, body_f], device=model.device)


def grid_to_particle(model, state_in, grid, dt, state_out):
    """G2P: velocities, APIC matrices C [1/s] and advected positions into ``state_out``."""
    kernel = g2p_2d_kernel if len(grid.shape) == 2 else g2p_3d_kernel
    grid_v = [grid.v]
    record = True
    if len(grid.shape) == 3:   # the 3-D gather's hand-written adjoint adds into grid.v.grad (sim/mpm_gather.py)
        if grid.v.grad is not None:
            grid_v.append(grid.v.grad)
        else:
            # a grid without gradients: an empty stand-in, never touched by the forward; a Tape must not
            # record the launch (its adjoint would write into the stand-in), which loses nothing: a taped
            # step whose inputs want gradients needs a grid with gradients (particle_to_grid refuses it)
            grid_v.append(no_scatter_gradients(3, model.device)[0])
            record = False
    kc.launch(kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, *grid_v, grid.lower, grid.dx, *grid.shape, float(dt)],
              outputs=[state_out.particle_q, state_out.particle_qd, state_out.particle_C], device=model.device,
              record_tape=record)
