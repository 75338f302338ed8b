"""The grid-fluid step of sim.SolverGridFluid written in vectorised NumPy (float32 fields, float64 CG).

Same algorithm (semi-Lagrangian midpoint back-trace with trilinear sampling, buoyancy,
closed free-slip box without solids, Jacobi-PCG to the same relative tolerance), used as the
NumPy peer of benchmarks/bench_smoke.py and as an independent check of the kernels.
Arrays are 3-D (a 2-D grid is one layer, nz = 1), u (nx+1, ny, nz), v (nx, ny+1, nz),
w (nx, ny, nz+1), cells (nx, ny, nz).
"""
from __future__ import annotations

import numpy as np


def sample(f, x, y, z):
    s = f.shape
    cx = np.clip(x, 0, s[0] - 1)
    cy = np.clip(y, 0, s[1] - 1)
    cz = np.clip(z, 0, s[2] - 1)
    i0 = np.minimum(cx.astype(np.int32), s[0] - 1)
    j0 = np.minimum(cy.astype(np.int32), s[1] - 1)
    k0 = np.minimum(cz.astype(np.int32), s[2] - 1)
    i1, j1, k1 = np.minimum(i0 + 1, s[0] - 1), np.minimum(j0 + 1, s[1] - 1), np.minimum(k0 + 1, s[2] - 1)
    tx, ty, tz = cx - i0, cy - j0, cz - k0
    c00 = f[i0, j0, k0] * (1 - tx) + f[i1, j0, k0] * tx
    c10 = f[i0, j1, k0] * (1 - tx) + f[i1, j1, k0] * tx
    c01 = f[i0, j0, k1] * (1 - tx) + f[i1, j0, k1] * tx
    c11 = f[i0, j1, k1] * (1 - tx) + f[i1, j1, k1] * tx
    return (c00 * (1 - ty) + c10 * ty) * (1 - tz) + (c01 * (1 - ty) + c11 * ty) * tz


def velocity(u, v, w, x, y, z):
    return (sample(u, x, y - 0.5, z - 0.5), sample(v, x - 0.5, y, z - 0.5), sample(w, x - 0.5, y - 0.5, z))


def advect(q, u, v, w, offset, h):
    i, j, k = np.meshgrid(*[np.arange(n, dtype=np.float32) for n in q.shape], indexing="ij")
    x, y, z = i + offset[0], j + offset[1], k + offset[2]
    a, b, c = velocity(u, v, w, x, y, z)
    a, b, c = velocity(u, v, w, x - 0.5 * h * a, y - 0.5 * h * b, z - 0.5 * h * c)
    return sample(q, x - h * a - offset[0], y - h * b - offset[1], z - h * c - offset[2]).astype(np.float32)


def laplace_apply(p, count):
    """(A p) = sum over in-domain neighbours of (p_c - p_n) (no solids)."""
    q = count * p
    q[1:] -= p[:-1]
    q[:-1] -= p[1:]
    q[:, 1:] -= p[:, :-1]
    q[:, :-1] -= p[:, 1:]
    q[:, :, 1:] -= p[:, :, :-1]
    q[:, :, :-1] -= p[:, :, 1:]
    return q


def neighbour_count(shape):
    c = np.zeros(shape)
    c[1:] += 1
    c[:-1] += 1
    c[:, 1:] += 1
    c[:, :-1] += 1
    c[:, :, 1:] += 1
    c[:, :, :-1] += 1
    return c


def pcg(b, tol, max_iter):
    count = neighbour_count(b.shape)
    inv = 1.0 / count
    r = b.astype(np.float64) - b.mean(dtype=np.float64)
    x = np.zeros_like(r)
    z = r * inv
    p = z.copy()
    rz = float((r * z).sum())
    rr0 = float((r * r).sum())
    it = 0
    while rr0 > 0 and it < max_iter:
        q = laplace_apply(p, count)
        alpha = rz / float((p * q).sum())
        x += alpha * p
        r -= alpha * q
        it += 1
        if float((r * r).sum()) <= tol * tol * rr0:
            break
        z = r * inv
        rz_new = float((r * z).sum())
        p = z + (rz_new / rz) * p
        rz = rz_new
    return (x - x.mean()).astype(np.float32), it


def step(u, v, w, rho, temp, dt, dx, heat_lift=0.0, smoke_weight=0.0, ambient=0.0, tol=1e-7, max_iter=2000,
         dim=3):
    h = np.float32(dt / dx)
    u1 = advect(u, u, v, w, (0.0, 0.5, 0.5), h)
    v1 = advect(v, u, v, w, (0.5, 0.0, 0.5), h)
    w1 = advect(w, u, v, w, (0.5, 0.5, 0.0), h) if dim == 3 else w
    rho1 = advect(rho, u, v, w, (0.5, 0.5, 0.5), h)
    temp1 = advect(temp, u, v, w, (0.5, 0.5, 0.5), h)
    f = heat_lift * (0.5 * (temp1[:, 1:] + temp1[:, :-1]) - ambient) - smoke_weight * 0.5 * (rho1[:, 1:] + rho1[:, :-1])
    v1[:, 1:-1] += np.float32(dt) * f.astype(np.float32)
    u1[0] = u1[-1] = 0.0
    v1[:, 0] = v1[:, -1] = 0.0
    if dim == 3:
        w1[:, :, 0] = w1[:, :, -1] = 0.0
    b = -(u1[1:] - u1[:-1] + v1[:, 1:] - v1[:, :-1] + w1[:, :, 1:] - w1[:, :, :-1])
    psi, iters = pcg(b, tol, max_iter)
    u1[1:-1] -= psi[1:] - psi[:-1]
    v1[:, 1:-1] -= psi[:, 1:] - psi[:, :-1]
    if dim == 3:
        w1[:, :, 1:-1] -= psi[:, :, 1:] - psi[:, :, :-1]
    return u1, v1, w1, rho1, temp1, iters
