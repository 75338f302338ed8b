"""The P2G scatter's hand-written adjoint (sim/mpm_scatter.py) against the automatic adjoint of
the same scatter written as a plain loop, and against float64 central finite differences."""
import re

import numpy as np
import pytest

import kernelcore as kc
from sim.mpm_scatter import bspline_weights, scatter_apic_2d, scatter_apic_3d

N = 40   # particles
G = 12   # nodes per axis
DX = 0.05


@kc.kernel
def custom_2d(xg: kc.array(dtype=kc.vec2), mv: kc.array(dtype=kc.vec2), A: kc.array(dtype=kc.mat22),
              mp: kc.array(dtype=float), dx: float, grid_mv: kc.array(dtype=kc.vec2, ndim=2),
              grid_m: kc.array(dtype=float, ndim=2), grid_mv_grad: kc.array(dtype=kc.vec2, ndim=2),
              grid_m_grad: kc.array(dtype=float, ndim=2)):
    p = kc.tid()
    g = xg[p]
    bx = int(g[0] - 0.5)
    by = int(g[1] - 0.5)
    fx = g - kc.vec2(float(bx), float(by))
    scatter_apic_2d(grid_mv, grid_m, grid_mv_grad, grid_m_grad, bx, by, fx, mv[p], A[p], mp[p], dx)


@kc.kernel
def automatic_2d(xg: kc.array(dtype=kc.vec2), mv: kc.array(dtype=kc.vec2), A: kc.array(dtype=kc.mat22),
                 mp: kc.array(dtype=float), dx: float, grid_mv: kc.array(dtype=kc.vec2, ndim=2),
                 grid_m: kc.array(dtype=float, ndim=2)):
    p = kc.tid()
    g = xg[p]
    bx = int(g[0] - 0.5)
    by = int(g[1] - 0.5)
    fx = g - kc.vec2(float(bx), float(by))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    for i in range(3):
        for j in range(3):
            dpos = (kc.vec2(float(i), float(j)) - fx) * dx
            w = wx[i] * wy[j]
            grid_mv[bx + i, by + j] += (mv[p] + A[p] * dpos) * w
            grid_m[bx + i, by + j] += w * mp[p]


@kc.kernel
def custom_3d(xg: kc.array(dtype=kc.vec3), mv: kc.array(dtype=kc.vec3), A: kc.array(dtype=kc.mat33),
              mp: kc.array(dtype=float), dx: float, grid_mv: kc.array(dtype=kc.vec3, ndim=3),
              grid_m: kc.array(dtype=float, ndim=3), grid_mv_grad: kc.array(dtype=kc.vec3, ndim=3),
              grid_m_grad: kc.array(dtype=float, ndim=3)):
    p = kc.tid()
    g = xg[p]
    bx = int(g[0] - 0.5)
    by = int(g[1] - 0.5)
    bz = int(g[2] - 0.5)
    fx = g - kc.vec3(float(bx), float(by), float(bz))
    scatter_apic_3d(grid_mv, grid_m, grid_mv_grad, grid_m_grad, bx, by, bz, fx, mv[p], A[p], mp[p], dx)


@kc.kernel
def automatic_3d(xg: kc.array(dtype=kc.vec3), mv: kc.array(dtype=kc.vec3), A: kc.array(dtype=kc.mat33),
                 mp: kc.array(dtype=float), dx: float, grid_mv: kc.array(dtype=kc.vec3, ndim=3),
                 grid_m: kc.array(dtype=float, ndim=3)):
    p = kc.tid()
    g = xg[p]
    bx = int(g[0] - 0.5)
    by = int(g[1] - 0.5)
    bz = int(g[2] - 0.5)
    fx = g - kc.vec3(float(bx), float(by), float(bz))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    # one loop over the 27 nodes (more than config.max_unroll, so not unrolled): three nested
    # range(3) loops unroll into 27 copies of the body and its adjoint, which took NVRTC 96 s
    for n in range(27):
        i = n // 9
        j = (n // 3) % 3
        k = n % 3
        dpos = (kc.vec3(float(i), float(j), float(k)) - fx) * dx
        w = wx[i] * wy[j] * wz[k]
        grid_mv[bx + i, by + j, bz + k] += (mv[p] + A[p] * dpos) * w
        grid_m[bx + i, by + j, bz + k] += w * mp[p]


def inputs(dim, seed=0):
    rng = np.random.default_rng(seed)
    xg = rng.uniform(1.6, G - 2.6, (N, dim))
    mv = rng.normal(size=(N, dim))
    A = rng.normal(size=(N, dim, dim)) * 10.0
    mp = rng.uniform(0.5, 2.0, N)
    return xg, mv, A, mp


def gradients(dim, custom, values, seed_mv, seed_m):
    """Gradients (xg, mv, A, mp) of sum(seed_mv . grid_mv) + sum(seed_m grid_m), and the grid."""
    vec, mat = (kc.vec2, kc.mat22) if dim == 2 else (kc.vec3, kc.mat33)
    args = [kc.array(values[0], dtype=vec, requires_grad=True), kc.array(values[1], dtype=vec, requires_grad=True),
            kc.array(values[2], dtype=mat, requires_grad=True), kc.array(values[3], dtype=float, requires_grad=True)]
    grid_mv = kc.zeros((G,) * dim, dtype=vec, requires_grad=True)
    grid_m = kc.zeros((G,) * dim, dtype=float, requires_grad=True)
    outs = [grid_mv, grid_m]
    if custom:
        kernel = custom_2d if dim == 2 else custom_3d
        outs += [grid_mv.grad, grid_m.grad]
    else:
        kernel = automatic_2d if dim == 2 else automatic_3d
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, dim=N, inputs=args + [DX], outputs=outs)
    tape.backward(grads={grid_mv: seed_mv.astype(np.float32), grid_m: seed_m.astype(np.float32)})
    return [a.grad.numpy().astype(np.float64) for a in args], grid_mv.numpy(), grid_m.numpy()


def host_scatter(dim, xg, mv, A, mp, seed_mv, seed_m):
    """float64 numpy loss sum(seed_mv . grid_mv) + sum(seed_m grid_m) of the same scatter."""
    base = np.floor(xg - 0.5).astype(int)
    fx = xg - base
    w = np.stack([0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2], axis=1)   # (N, 3, dim)
    total = 0.0
    for e in np.ndindex(*([3] * dim)):
        node = base + np.array(e)
        we = np.prod([w[:, e[d], d] for d in range(dim)], axis=0)
        dpos = (np.array(e) - fx) * DX
        val = (mv + np.einsum("pij,pj->pi", A, dpos)) * we[:, None]
        idx = tuple(node.T)
        total += (seed_mv[idx] * val).sum() + (seed_m[idx] * we * mp).sum()
    return total


@pytest.mark.parametrize("dim", [2, 3])
def test_custom_scatter_adjoint_matches_automatic_and_fd(dim):
    values = inputs(dim)
    rng = np.random.default_rng(5)
    seed_mv = rng.normal(size=(G,) * dim + (dim,))
    seed_m = rng.normal(size=(G,) * dim)
    custom, mv_c, m_c = gradients(dim, True, values, seed_mv, seed_m)
    auto, mv_a, m_a = gradients(dim, False, values, seed_mv, seed_m)
    # same forward (the scatter itself is unchanged)
    np.testing.assert_allclose(mv_c, mv_a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m_c, m_a, rtol=1e-6, atol=1e-6)
    for name, c, a in zip(("xg", "mv", "A", "mp"), custom, auto):
        scale = np.abs(a).max()
        np.testing.assert_allclose(c, a, rtol=0, atol=2e-6 * scale, err_msg=f"d/d{name}")
    # and float64 finite differences of every input along a random direction
    for k, name in enumerate(("xg", "mv", "A", "mp")):
        direction = rng.normal(size=values[k].shape)
        eps = 1e-6

        def f(h):
            moved = list(values)
            moved[k] = values[k] + h * direction
            return host_scatter(dim, *moved, seed_mv, seed_m)

        fd = (f(eps) - f(-eps)) / (2 * eps)
        got = float((custom[k] * direction).sum())
        assert abs(got - fd) <= 1e-4 * max(1.0, abs(fd)), (name, got, fd)


def test_3d_scatter_is_not_unrolled_27_times():
    # every kernel that scatters carries scatter_apic_3d and its adjoint; with three constant range(3)
    # loops both were unrolled into 27 copies of the node body (the suite's NVRTC check spent ~70 s on
    # them).  The i, j loops have runtime bounds: one copy per k, 3 nodes' atomic adds of 2 arrays.
    from kernelcore import cuda_check

    text = cuda_check.source(custom_3d.module, [custom_3d])[1]
    for name, adds in (("f_scatter_apic_3d", 6), ("adj_f_scatter_apic_3d", 0)):
        body = re.search(r"\nstatic [^\n]*\b" + name + r"_[0-9a-f]+\(.*?\n}\n", text, re.S).group(0)
        assert body.count("atomic") == adds, (name, body.count("atomic"))
        # index wraps: 3 copies x 2 grid arrays (forward: adds; adjoint: gradient reads) x 3 axes
        assert body.count("wrap_array_index") <= 18, (name, body.count("wrap_array_index"))
