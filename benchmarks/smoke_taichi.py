"""The NumPy peer's smoke step (benchmarks/smoke_numpy.py) written for Taichi's CPU backend.

Run in a subprocess by bench_smoke.py (``ti.init`` sets flush-to-zero for the whole
process, which would change the other libraries' numbers): semi-Lagrangian MAC advection,
buoyancy, closed free-slip box, Jacobi-PCG (float64 vectors) to relative residual 1e-7,
cold start.  Prints one JSON line: {"step_s": median seconds, "iterations": last CG count}.

Usage: python smoke_taichi.py NX NY [NZ] --steps-warm 3 --repeats 3
"""
import argparse
import json
import statistics
import time

import numpy as np
import taichi as ti

HEAT, DT, TOL = 4.0, 0.01, 1e-7


def build(res):
    dim = len(res)
    nx, ny, nz = tuple(res) if dim == 3 else tuple(res) + (1,)
    dx = 1.0 / res[0]
    h = DT / dx
    f32, f64 = ti.f32, ti.f64
    u, u1 = ti.field(f32, (nx + 1, ny, nz)), ti.field(f32, (nx + 1, ny, nz))
    v, v1 = ti.field(f32, (nx, ny + 1, nz)), ti.field(f32, (nx, ny + 1, nz))
    wz = nz + 1 if dim == 3 else 2
    w, w1 = ti.field(f32, (nx, ny, wz)), ti.field(f32, (nx, ny, wz))
    rho, rho1 = ti.field(f32, (nx, ny, nz)), ti.field(f32, (nx, ny, nz))
    tmp, tmp1 = ti.field(f32, (nx, ny, nz)), ti.field(f32, (nx, ny, nz))
    x, r, z, p, q, b = (ti.field(f64, (nx, ny, nz)) for _ in range(6))

    @ti.func
    def sample(f: ti.template(), px, py, pz):
        sx, sy, sz = f.shape
        cx = ti.min(ti.max(px, 0.0), sx - 1.0)
        cy = ti.min(ti.max(py, 0.0), sy - 1.0)
        cz = ti.min(ti.max(pz, 0.0), sz - 1.0)
        i0 = ti.min(ti.cast(cx, ti.i32), sx - 1)
        j0 = ti.min(ti.cast(cy, ti.i32), sy - 1)
        k0 = ti.min(ti.cast(cz, ti.i32), sz - 1)
        i1, j1, k1 = ti.min(i0 + 1, sx - 1), ti.min(j0 + 1, sy - 1), ti.min(k0 + 1, sz - 1)
        tx, ty, tz = cx - i0, cy - j0, cz - k0
        c00 = f[i0, j0, k0] * (1 - tx) + f[i1, j0, k0] * tx
        c10 = f[i0, j1, k0] * (1 - tx) + f[i1, j1, k0] * tx
        c01 = f[i0, j0, k1] * (1 - tx) + f[i1, j0, k1] * tx
        c11 = f[i0, j1, k1] * (1 - tx) + f[i1, j1, k1] * tx
        return (c00 * (1 - ty) + c10 * ty) * (1 - tz) + (c01 * (1 - ty) + c11 * ty) * tz

    @ti.func
    def vel(px, py, pz):
        return ti.Vector([sample(u, px, py - 0.5, pz - 0.5), sample(v, px - 0.5, py, pz - 0.5),
                          sample(w, px - 0.5, py - 0.5, pz)])

    @ti.kernel
    def advect(qf: ti.template(), qo: ti.template(), ox: f32, oy: f32, oz: f32):
        for i, j, k in qf:
            pos = ti.Vector([i + ox, j + oy, k + oz])
            mid = pos - 0.5 * h * vel(pos[0], pos[1], pos[2])
            back = pos - h * vel(mid[0], mid[1], mid[2])
            qo[i, j, k] = sample(qf, back[0] - ox, back[1] - oy, back[2] - oz)

    @ti.kernel
    def forces_walls():
        for i, j, k in v1:
            val = v1[i, j, k]
            if j == 0 or j == ny:
                val = 0.0
            else:
                val += DT * HEAT * 0.5 * (tmp1[i, j, k] + tmp1[i, j - 1, k])
            v1[i, j, k] = val
        for i, j, k in u1:
            if i == 0 or i == nx:
                u1[i, j, k] = 0.0
        for i, j, k in w1:
            if k == 0 or k == nz or ti.static(dim == 2):
                w1[i, j, k] = 0.0

    @ti.kernel
    def rhs() -> f64:
        s = ti.cast(0.0, f64)
        for i, j, k in b:
            val = -(u1[i + 1, j, k] - u1[i, j, k] + v1[i, j + 1, k] - v1[i, j, k] + w1[i, j, k + 1] - w1[i, j, k])
            b[i, j, k] = val
            s += ti.cast(val, f64)
        return s

    @ti.func
    def count(i, j, k):
        return (ti.cast(i > 0, f64) + ti.cast(i < nx - 1, f64) + ti.cast(j > 0, f64) + ti.cast(j < ny - 1, f64)
                + ti.cast(k > 0, f64) + ti.cast(k < nz - 1, f64))

    @ti.kernel
    def init(mean: f64) -> f64:
        rz = ti.cast(0.0, f64)
        for i, j, k in r:
            ri = b[i, j, k] - mean
            zi = ri / count(i, j, k)
            x[i, j, k] = 0.0
            r[i, j, k] = ri
            z[i, j, k] = zi
            p[i, j, k] = zi
            rz += ri * zi
        return rz

    @ti.kernel
    def rr() -> f64:
        s = ti.cast(0.0, f64)
        for I in ti.grouped(r):
            s += r[I] * r[I]
        return s

    @ti.kernel
    def apply() -> f64:
        s = ti.cast(0.0, f64)
        for i, j, k in p:
            pc = p[i, j, k]
            val = count(i, j, k) * pc
            if i > 0:
                val -= p[i - 1, j, k]
            if i < nx - 1:
                val -= p[i + 1, j, k]
            if j > 0:
                val -= p[i, j - 1, k]
            if j < ny - 1:
                val -= p[i, j + 1, k]
            if k > 0:
                val -= p[i, j, k - 1]
            if k < nz - 1:
                val -= p[i, j, k + 1]
            q[i, j, k] = val
            s += pc * val
        return s

    @ti.kernel
    def update(alpha: f64) -> f64:
        rz = ti.cast(0.0, f64)
        for i, j, k in r:
            x[i, j, k] += alpha * p[i, j, k]
            ri = r[i, j, k] - alpha * q[i, j, k]
            r[i, j, k] = ri
            zi = ri / count(i, j, k)
            z[i, j, k] = zi
            rz += ri * zi
        return rz

    @ti.kernel
    def direction(beta: f64):
        for I in ti.grouped(p):
            p[I] = z[I] + beta * p[I]

    @ti.kernel
    def project():
        for i, j, k in u1:
            if 0 < i < nx:
                u1[i, j, k] -= ti.cast(x[i, j, k] - x[i - 1, j, k], f32)
        for i, j, k in v1:
            if 0 < j < ny:
                v1[i, j, k] -= ti.cast(x[i, j, k] - x[i, j - 1, k], f32)
        for i, j, k in w1:
            if 0 < k < nz:
                w1[i, j, k] -= ti.cast(x[i, j, k] - x[i, j, k - 1], f32)

    @ti.kernel
    def swap():
        for I in ti.grouped(u):
            u[I] = u1[I]
        for I in ti.grouped(v):
            v[I] = v1[I]
        for I in ti.grouped(w):
            w[I] = w1[I]
        for I in ti.grouped(rho):
            rho[I] = rho1[I]
            tmp[I] = tmp1[I]

    n_cells = nx * ny * nz
    state = {"iterations": 0}

    def step():
        advect(u, u1, 0.0, 0.5, 0.5)
        advect(v, v1, 0.5, 0.0, 0.5)
        if dim == 3:
            advect(w, w1, 0.5, 0.5, 0.0)
        advect(rho, rho1, 0.5, 0.5, 0.5)
        advect(tmp, tmp1, 0.5, 0.5, 0.5)
        forces_walls()
        mean = rhs() / n_cells
        rz = init(mean)
        rr0 = rr()
        it = 0
        while rr0 > 0 and it < 2000:
            alpha = rz / apply()
            rz_new = update(alpha)
            it += 1
            if rr() <= TOL * TOL * rr0:
                break
            direction(rz_new / rz)
            rz = rz_new
        state["iterations"] = it
        project()
        swap()

    blob = np.zeros((nx, ny, nz), np.float32)
    blob[nx // 2 - nx // 8: nx // 2 + nx // 8, ny // 8: ny // 4] = 1.0
    if dim == 3:
        blob[:, :, : nz // 2 - nz // 8] = 0.0
        blob[:, :, nz // 2 + nz // 8:] = 0.0
    rho.from_numpy(blob)
    tmp.from_numpy(blob)
    return step, state


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("res", type=int, nargs="+")
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    ti.init(arch=ti.cpu, default_fp=ti.f32, offline_cache=True, log_level=ti.WARN)
    step, state = build(a.res)
    for _ in range(a.warm):
        step()
    ti.sync()
    samples = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        step()
        ti.sync()
        samples.append(time.perf_counter() - t0)
    print(json.dumps({"step_s": statistics.median(samples), "iterations": state["iterations"],
                      "taichi_version": ".".join(map(str, ti.__version__))}))


if __name__ == "__main__":
    main()
