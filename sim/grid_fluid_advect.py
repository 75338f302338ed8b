"""Vectorised semi-Lagrangian advection kernels of the grid fluid (sim/grid_fluid_kernels.py's layout).

Same arithmetic as ``grid_fluid_kernels.advect_kernel`` / ``advect_pair_kernel`` (identical
statements, so identical float32 results), arranged so that the CPU backend runs them as
vectorised loops (kc.kernel(simd=True)):

* each velocity component has its own kernel that samples the array it advects: the generic
  kernel is launched with the same array as ``q`` and as ``u`` (or ``v``, ``w``), and two
  arguments that alias each other keep a launch off the vectorised entry point;
* the launch is 1-D over the flat output and the thread splits its index into (i, j, k) itself:
  the vectorised entry point of a 3-D launch loops over rows of the last axis, which a 2-D grid
  (run as nz = 1) makes one element long.  The split uses float64 reciprocals of the row sizes
  (exact for any index below 2^40 after the +0.5 offset) instead of an integer division, which
  would not vectorise.

Sampling is branch-free (clamps, min/max) in ``sample_field``, so each thread runs the same
straight-line code.
"""
from __future__ import annotations

import kernelcore as kc

from .grid_fluid_kernels import F3, sample_field, velocity_at


@kc.func
def back_trace(u: F3, v: F3, w: F3, p: kc.vec3, h: float):
    """Midpoint back-trace from cell-unit position p over one step (h = dt / dx [s/m])."""
    v1 = velocity_at(u, v, w, p)
    mid = p - v1 * (0.5 * h)
    v2 = velocity_at(u, v, w, mid)
    return p - v2 * h


@kc.func
def flat_position(t: int, sy: int, sz: int, inv_yz: kc.float64, inv_z: kc.float64, offset: kc.vec3):
    """Cell-unit position (i, j, k) + offset of flat index t in a C-ordered (., sy, sz) array."""
    i = int((kc.float64(t) + kc.float64(0.5)) * inv_yz)
    r = t - i * sy * sz
    j = int((kc.float64(r) + kc.float64(0.5)) * inv_z)
    k = r - j * sz
    return kc.vec3(float(i), float(j), float(k)) + offset


@kc.kernel(simd=True)
def advect_u_kernel(u: F3, v: F3, w: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                    u_out: kc.array(dtype=float)):
    """Advect the x-velocity (faces at offset (0, 1/2, 1/2)); u_out is u's flat shape."""
    t = kc.tid()
    off = kc.vec3(0.0, 0.5, 0.5)
    p = flat_position(t, u.shape[1], u.shape[2], inv_yz, inv_z, off)
    back = back_trace(u, v, w, p, h) - off
    u_out[t] = sample_field(u, back[0], back[1], back[2])


@kc.kernel(simd=True)
def advect_v_kernel(u: F3, v: F3, w: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                    v_out: kc.array(dtype=float)):
    """Advect the y-velocity (faces at offset (1/2, 0, 1/2)); v_out is v's flat shape."""
    t = kc.tid()
    off = kc.vec3(0.5, 0.0, 0.5)
    p = flat_position(t, v.shape[1], v.shape[2], inv_yz, inv_z, off)
    back = back_trace(u, v, w, p, h) - off
    v_out[t] = sample_field(v, back[0], back[1], back[2])


@kc.kernel(simd=True)
def advect_w_kernel(u: F3, v: F3, w: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                    w_out: kc.array(dtype=float)):
    """Advect the z-velocity (faces at offset (1/2, 1/2, 0)); w_out is w's flat shape."""
    t = kc.tid()
    off = kc.vec3(0.5, 0.5, 0.0)
    p = flat_position(t, w.shape[1], w.shape[2], inv_yz, inv_z, off)
    back = back_trace(u, v, w, p, h) - off
    w_out[t] = sample_field(w, back[0], back[1], back[2])


@kc.kernel(simd=True)
def advect_cells_kernel(q1: F3, q2: F3, u: F3, v: F3, w: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                        q1_out: kc.array(dtype=float), q2_out: kc.array(dtype=float)):
    """Advect two cell-centred fields (density, temperature) with one back-trace."""
    t = kc.tid()
    off = kc.vec3(0.5, 0.5, 0.5)
    p = flat_position(t, q1.shape[1], q1.shape[2], inv_yz, inv_z, off)
    back = back_trace(u, v, w, p, h) - off
    q1_out[t] = sample_field(q1, back[0], back[1], back[2])
    q2_out[t] = sample_field(q2, back[0], back[1], back[2])


# 2-D grids (nz = 1, a zero w): bilinear sampling of the one layer.  The trilinear sample of
# sample_field there blends c0 (1 - tz) + c1 tz with tz = 0 and c1 from the same layer, which is
# c0 exactly, and the zero w adds nothing to the trace: the 2-D kernels give the same numbers
# with half the loads per sample and no w samples.
@kc.func
def sample_layer(f: F3, x: float, y: float):
    """sample_field of a one-layer (sx, sy, 1) array at index-space (x, y, 0): bilinear, clamped."""
    sx = f.shape[0]
    sy = f.shape[1]
    cx = kc.clamp(x, 0.0, float(sx - 1))
    cy = kc.clamp(y, 0.0, float(sy - 1))
    i0 = kc.max(kc.min(int(cx), sx - 1), 0)
    j0 = kc.max(kc.min(int(cy), sy - 1), 0)
    i1 = kc.min(i0 + 1, sx - 1)
    j1 = kc.min(j0 + 1, sy - 1)
    tx = cx - float(i0)
    ty = cy - float(j0)
    c00 = f[i0, j0, 0] * (1.0 - tx) + f[i1, j0, 0] * tx
    c10 = f[i0, j1, 0] * (1.0 - tx) + f[i1, j1, 0] * tx
    return c00 * (1.0 - ty) + c10 * ty


@kc.func
def back_trace_layer(u: F3, v: F3, p: kc.vec3, h: float):
    """back_trace on a 2-D grid (w = 0)."""
    v1 = kc.vec3(sample_layer(u, p[0], p[1] - 0.5), sample_layer(v, p[0] - 0.5, p[1]), 0.0)
    mid = p - v1 * (0.5 * h)
    v2 = kc.vec3(sample_layer(u, mid[0], mid[1] - 0.5), sample_layer(v, mid[0] - 0.5, mid[1]), 0.0)
    return p - v2 * h


@kc.kernel(simd=True)
def advect_u_layer_kernel(u: F3, v: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                          u_out: kc.array(dtype=float)):
    """advect_u_kernel on a 2-D grid."""
    t = kc.tid()
    off = kc.vec3(0.0, 0.5, 0.5)
    p = flat_position(t, u.shape[1], 1, inv_yz, inv_z, off)
    back = back_trace_layer(u, v, p, h) - off
    u_out[t] = sample_layer(u, back[0], back[1])


@kc.kernel(simd=True)
def advect_v_layer_kernel(u: F3, v: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                          v_out: kc.array(dtype=float)):
    """advect_v_kernel on a 2-D grid."""
    t = kc.tid()
    off = kc.vec3(0.5, 0.0, 0.5)
    p = flat_position(t, v.shape[1], 1, inv_yz, inv_z, off)
    back = back_trace_layer(u, v, p, h) - off
    v_out[t] = sample_layer(v, back[0], back[1])


@kc.kernel(simd=True)
def advect_cells_layer_kernel(q1: F3, q2: F3, u: F3, v: F3, h: float, inv_yz: kc.float64, inv_z: kc.float64,
                              q1_out: kc.array(dtype=float), q2_out: kc.array(dtype=float)):
    """advect_cells_kernel on a 2-D grid."""
    t = kc.tid()
    off = kc.vec3(0.5, 0.5, 0.5)
    p = flat_position(t, q1.shape[1], 1, inv_yz, inv_z, off)
    back = back_trace_layer(u, v, p, h) - off
    q1_out[t] = sample_layer(q1, back[0], back[1])
    q2_out[t] = sample_layer(q2, back[0], back[1])


_FACE_KERNELS = (advect_u_kernel, advect_v_kernel, advect_w_kernel)
_LAYER_KERNELS = (advect_u_layer_kernel, advect_v_layer_kernel)


def _is_layer(u, v, w):
    """u and v one cell thick (a 2-D grid, or a 3-D one with nz = 1): every sample of u, v and the cell
    fields then clamps z to the one layer, so w's value cannot change them and the layer kernels apply."""
    return int(u.shape[2]) == 1 and int(v.shape[2]) == 1


def _flat(a):
    n = 1
    for s in a.shape:
        n *= int(s)
    return a.reshape((n,)), n


def _split(shape):
    """The float64 reciprocals flat_position divides by, for a (., sy, sz) array."""
    return kc.float64(1.0 / (int(shape[1]) * int(shape[2]))), kc.float64(1.0 / int(shape[2]))


def advect_face(axis, u, v, w, h, q_out):
    """Semi-Lagrangian advection of velocity component ``axis`` (0, 1, 2: u, v, w; 3-D views) into
    ``q_out`` (that component's shape), as ``grid_fluid_kernels.advect`` with q = (u, v, w)[axis]."""
    q = (u, v, w)[axis]
    flat, n = _flat(q_out)
    inv_yz, inv_z = _split(q.shape)
    if _is_layer(u, v, w) and axis < 2:
        kc.launch(_LAYER_KERNELS[axis], dim=n, inputs=[u, v, float(h), inv_yz, inv_z], outputs=[flat],
                  device=q.device)
        return
    kc.launch(_FACE_KERNELS[axis], dim=n, inputs=[u, v, w, float(h), inv_yz, inv_z], outputs=[flat], device=q.device)


def advect_cells(q1, q2, u, v, w, h, q1_out, q2_out):
    """Semi-Lagrangian advection of two cell fields of one shape (3-D views) with one back-trace,
    as ``grid_fluid_kernels.advect_pair`` with offset (1/2, 1/2, 1/2)."""
    f1, n = _flat(q1_out)
    f2, _ = _flat(q2_out)
    inv_yz, inv_z = _split(q1.shape)
    if _is_layer(u, v, w):
        kc.launch(advect_cells_layer_kernel, dim=n, inputs=[q1, q2, u, v, float(h), inv_yz, inv_z],
                  outputs=[f1, f2], device=q1.device)
        return
    kc.launch(advect_cells_kernel, dim=n, inputs=[q1, q2, u, v, w, float(h), inv_yz, inv_z], outputs=[f1, f2],
              device=q1.device)
