"""The P2G scatter of MLS-MPM (kc.funcs) with a hand-written adjoint.

A particle at stencil coordinates ``base + fx`` (grid units, fx in [0.5, 1.5)^d) adds to each
node ``base + e`` of its 3^d quadratic B-spline stencil

    grid_mv[base + e] += w_e (mv + A dpos_e),   grid_m[base + e] += w_e mp,
    dpos_e = (e - fx) dx,   w_e = prod_d N(fx_d - e_d)

(mv = m v [kg m/s], A the APIC affine matrix [kg/s], mp the mass [kg]).

Why a custom adjoint (kc.func_grad): the automatic one replays the 3^d unrolled forward and
reverses every product in it (5.6 ms of a 10.8 ms 2-D diffmpm adjoint step).  The adjoint is a
gather of the grid's adjoints G_e (momentum) and g_e (mass) over the same stencil:

    adj_mv = sum w_e G_e,   adj_A = sum w_e G_e dpos_e^T,   adj_mp = sum w_e g_e,
    adj_fx = sum (G_e . (mv + A dpos_e) + g_e mp) grad_fx w_e  -  dx A^T adj_mv,

with the weights computed once.  The grid's adjoints are not reachable from a kc.func_grad
(it sees array values, not their .grad), so the kernel passes them as two more arrays
(``grid_mv_grad``, ``grid_m_grad``: the grid arrays' ``.grad``; any array of the right shape
when the run is not differentiated, they are then never read).  ``dx`` gets no adjoint (a
kernel's value arguments have none).
"""
from __future__ import annotations

import kernelcore as kc


@kc.func
def bspline_weights(f: float):
    """Quadratic B-spline weights of nodes base + 0, 1, 2 for a particle at base + f, f in [0.5, 1.5)."""
    return kc.vec3(0.5 * (1.5 - f) * (1.5 - f), 0.75 - (f - 1.0) * (f - 1.0), 0.5 * (f - 0.5) * (f - 0.5))


@kc.func
def bspline_weight_slopes(f: float):
    """d/df of bspline_weights(f)."""
    return kc.vec3(f - 1.5, 2.0 * (1.0 - f), f - 0.5)


# ------------------------------------------------------------------------------------------------
# 2-D
# ------------------------------------------------------------------------------------------------
@kc.func
def scatter_apic_2d(grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                    grid_mv_grad: kc.array(dtype=kc.vec2, ndim=2), grid_m_grad: kc.array(dtype=float, ndim=2),
                    bx: int, by: int, fx: kc.vec2, mv: kc.vec2, affine: kc.mat22, mp: float, dx: float):
    """Add one particle's mass and APIC momentum to its 3 x 3 nodes (atomic adds)."""
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    i0 = kc.max(bx, 0)   # the callers' stencil base is >= 0; said so, the adds skip the negative-index wrap
    j0 = kc.max(by, 0)
    for i in range(3):
        for j in range(3):
            dpos = (kc.vec2(float(i), float(j)) - fx) * dx
            w = wx[i] * wy[j]
            grid_mv[i0 + i, j0 + j] += (mv + affine * dpos) * w
            grid_m[i0 + i, j0 + j] += w * mp


@kc.func_grad(scatter_apic_2d)
def adj_scatter_apic_2d(grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                        grid_mv_grad: kc.array(dtype=kc.vec2, ndim=2), grid_m_grad: kc.array(dtype=float, ndim=2),
                        bx: int, by: int, fx: kc.vec2, mv: kc.vec2, affine: kc.mat22, mp: float, dx: float):
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    sx = bspline_weight_slopes(fx[0])
    sy = bspline_weight_slopes(fx[1])
    a_mv = kc.vec2(0.0, 0.0)
    a_affine = kc.mat22(0.0, 0.0, 0.0, 0.0)
    a_mp = float(0.0)
    a_fx = kc.vec2(0.0, 0.0)
    for i in range(3):
        for j in range(3):
            G = grid_mv_grad[bx + i, by + j]
            g = grid_m_grad[bx + i, by + j]
            dpos = (kc.vec2(float(i), float(j)) - fx) * dx
            w = wx[i] * wy[j]
            Gw = G * w
            a_mv += Gw
            a_affine += kc.outer(Gw, dpos)
            a_mp += g * w
            a_w = kc.dot(G, mv + affine * dpos) + g * mp
            a_fx += kc.vec2(sx[i] * wy[j], wx[i] * sy[j]) * a_w
    kc.adjoint[mv] += a_mv
    kc.adjoint[affine] += a_affine
    kc.adjoint[mp] += a_mp
    kc.adjoint[fx] += a_fx - kc.transpose(affine) * a_mv * dx


# ------------------------------------------------------------------------------------------------
# 3-D
# ------------------------------------------------------------------------------------------------
@kc.func
def scatter_apic_3d(grid_mv: kc.array(dtype=kc.vec3, ndim=3), grid_m: kc.array(dtype=float, ndim=3),
                    grid_mv_grad: kc.array(dtype=kc.vec3, ndim=3), grid_m_grad: kc.array(dtype=float, ndim=3),
                    bx: int, by: int, bz: int, fx: kc.vec3, mv: kc.vec3, affine: kc.mat33, mp: float, dx: float):
    """Add one particle's mass and APIC momentum to its 3 x 3 x 3 nodes (atomic adds)."""
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    # runtime bounds on i and j (only k unrolled): three constant range(3) loops unroll into 27
    # copies of the body in every kernel that scatters, and of its adjoint (the NVRTC check took
    # ~70 s); one runtime 27-node loop instead ran the taped CPU scatter ~1.5x slower (runtime
    # vector indices), this one as fast as the unrolled loops.  Same nodes in the same order.
    rows = int(3)
    for i in range(rows):
        for j in range(rows):
            for k in range(3):
                dpos = (kc.vec3(float(i), float(j), float(k)) - fx) * dx
                w = wx[i] * wy[j] * wz[k]
                grid_mv[bx + i, by + j, bz + k] += (mv + affine * dpos) * w
                grid_m[bx + i, by + j, bz + k] += w * mp


@kc.func_grad(scatter_apic_3d)
def adj_scatter_apic_3d(grid_mv: kc.array(dtype=kc.vec3, ndim=3), grid_m: kc.array(dtype=float, ndim=3),
                        grid_mv_grad: kc.array(dtype=kc.vec3, ndim=3), grid_m_grad: kc.array(dtype=float, ndim=3),
                        bx: int, by: int, bz: int, fx: kc.vec3, mv: kc.vec3, affine: kc.mat33, mp: float, dx: float):
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    sx = bspline_weight_slopes(fx[0])
    sy = bspline_weight_slopes(fx[1])
    sz = bspline_weight_slopes(fx[2])
    a_mv = kc.vec3(0.0, 0.0, 0.0)
    a_affine = kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    a_mp = float(0.0)
    a_fx = kc.vec3(0.0, 0.0, 0.0)
    rows = int(3)   # runtime bounds on i and j, as in the forward
    for i in range(rows):
        for j in range(rows):
            for k in range(3):
                G = grid_mv_grad[bx + i, by + j, bz + k]
                g = grid_m_grad[bx + i, by + j, bz + k]
                dpos = (kc.vec3(float(i), float(j), float(k)) - fx) * dx
                w = wx[i] * wy[j] * wz[k]
                Gw = G * w
                a_mv += Gw
                a_affine += kc.outer(Gw, dpos)
                a_mp += g * w
                a_w = kc.dot(G, mv + affine * dpos) + g * mp
                a_fx += kc.vec3(sx[i] * wy[j] * wz[k], wx[i] * sy[j] * wz[k], wx[i] * wy[j] * sz[k]) * a_w
    kc.adjoint[mv] += a_mv
    kc.adjoint[affine] += a_affine
    kc.adjoint[mp] += a_mp
    kc.adjoint[fx] += a_fx - kc.transpose(affine) * a_mv * dx
