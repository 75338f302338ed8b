"""The 3-D G2P gather of MLS-MPM (a kc.func) with a hand-written adjoint.

A particle at stencil coordinates ``base + fx`` (grid units, fx in [0.5, 1.5)^3) reads the
velocities v_e [m/s] of the nodes ``base + e`` of its 3 x 3 x 3 quadratic B-spline stencil:

    v = sum_e w_e v_e,   B = sum_e w_e v_e (e - fx)^T,   w_e = prod_d N(fx_d - e_d)

(B in grid units [m/s]; the caller scales it by 4 / dx into the APIC matrix C [1/s]).

Why a custom adjoint (kc.func_grad): the loops over i and j have runtime bounds (only k is
unrolled), because three constant range(3) loops unroll into 27 copies of the body, and of its
automatic adjoint, in the kernel (most of the NVRTC time of sim.mpm_transfer).  Runtime loops
that sum into locals (v, B) are differentiated through the loop checkpoints (kc_loop.h), which
ran the taped g2p ~3x slower.  The adjoint needs no checkpoints: with the result adjoints
(a_v, a_B) fixed,

    adj v_e = w_e (a_v + a_B (e - fx)),
    adj fx  = sum_e (v_e . (a_v + a_B (e - fx))) grad_fx w_e  -  a_B^T v.

The grid's adjoint is not reachable from a kc.func_grad (it sees array values, not their .grad),
so the kernel passes it as one more array (``grid_v_grad``: the grid array's ``.grad``, any
vec3 array when the run is not differentiated: it is then never touched), as the P2G scatter
does (sim/mpm_scatter.py).
"""
from __future__ import annotations

import kernelcore as kc

from .mpm_scatter import bspline_weight_slopes, bspline_weights


@kc.func
def gather_apic_3d(grid_v: kc.array(dtype=kc.vec3, ndim=3), grid_v_grad: kc.array(dtype=kc.vec3, ndim=3),
                   bx: int, by: int, bz: int, fx: kc.vec3):
    """(v [m/s], B [m/s] in grid units) of one particle from its 3 x 3 x 3 nodes (see the module)."""
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    new_v = kc.vec3(0.0, 0.0, 0.0)
    new_B = kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    rows = int(3)   # runtime bounds on i and j (see the module); same nodes in the same order
    for i in range(rows):
        for j in range(rows):
            for k in range(3):
                dpos = kc.vec3(float(i), float(j), float(k)) - fx
                w = wx[i] * wy[j] * wz[k]
                gv = grid_v[bx + i, by + j, bz + k]
                new_v += gv * w
                new_B += kc.outer(gv, dpos) * w
    return new_v, new_B


@kc.func_grad(gather_apic_3d)
def adj_gather_apic_3d(grid_v: kc.array(dtype=kc.vec3, ndim=3), grid_v_grad: kc.array(dtype=kc.vec3, ndim=3),
                       bx: int, by: int, bz: int, fx: kc.vec3, adj_ret):
    a_v, a_B = adj_ret   # the adjoints of (v, B)
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    sx = bspline_weight_slopes(fx[0])
    sy = bspline_weight_slopes(fx[1])
    sz = bspline_weight_slopes(fx[2])
    v = kc.vec3(0.0, 0.0, 0.0)
    a_fx = kc.vec3(0.0, 0.0, 0.0)
    rows = int(3)   # runtime bounds on i and j, as in the forward
    for i in range(rows):
        for j in range(rows):
            for k in range(3):
                dpos = kc.vec3(float(i), float(j), float(k)) - fx
                w = wx[i] * wy[j] * wz[k]
                gv = grid_v[bx + i, by + j, bz + k]
                a_node = a_v + a_B * dpos
                grid_v_grad[bx + i, by + j, bz + k] += a_node * w
                v += gv * w
                a_fx += kc.vec3(sx[i] * wy[j] * wz[k], wx[i] * sy[j] * wz[k], wx[i] * wy[j] * sz[k]) * kc.dot(gv, a_node)
    kc.adjoint[fx] += a_fx - kc.transpose(a_B) * v
