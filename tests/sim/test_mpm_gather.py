"""The 3-D G2P gather's hand-written adjoint (sim/mpm_gather.py, used by mpm_transfer.g2p_3d_kernel)
against the automatic adjoint of the same gather written as three constant loops, and against
float64 central finite differences of a numpy gather."""
import re

import numpy as np

import kernelcore as kc
from sim.mpm_scatter import bspline_weights
from sim.mpm_transfer import g2p_3d_kernel, stencil_base

N = 30   # particles
G = 10   # nodes per axis
DX = 1.0 / G
DT = 1e-3


@kc.kernel
def automatic_g2p(q: kc.array(dtype=kc.vec3), grid_v: kc.array(dtype=kc.vec3, ndim=3), grid_lower: kc.vec3,
                  dx: float, nx: int, ny: int, nz: int, dt: float,
                  q_out: kc.array(dtype=kc.vec3), qd_out: kc.array(dtype=kc.vec3), C_out: kc.array(dtype=kc.mat33)):
    p = kc.tid()
    inv_dx = 1.0 / dx
    x = q[p]
    g = (x - grid_lower) * inv_dx
    bx = stencil_base(g[0], nx)
    by = stencil_base(g[1], ny)
    bz = stencil_base(g[2], nz)
    fx = g - kc.vec3(float(bx), float(by), float(bz))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    new_v = kc.vec3(0.0, 0.0, 0.0)
    new_B = kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for i in range(3):
        for j in range(3):
            for k in range(3):
                dpos = kc.vec3(float(i), float(j), float(k)) - fx
                w = wx[i] * wy[j] * wz[k]
                gv = grid_v[bx + i, by + j, bz + k]
                new_v += gv * w
                new_B += kc.outer(gv, dpos) * w
    qd_out[p] = new_v
    C_out[p] = new_B * (4.0 * inv_dx)
    q_out[p] = x + new_v * dt


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.2, 0.8, (N, 3))
    grid_v = rng.normal(size=(G, G, G, 3))
    seeds = [rng.normal(size=(N, 3)), rng.normal(size=(N, 3)), rng.normal(size=(N, 3, 3))]
    return q, grid_v, seeds


def run(kernel, q, grid_v, seeds):
    """Outputs (q_out, qd_out, C_out) and the gradients (q, grid_v) of sum(seed . outputs)."""
    qa = kc.array(q.astype(np.float32), dtype=kc.vec3, requires_grad=True)
    gva = kc.array(grid_v.astype(np.float32), dtype=kc.vec3, requires_grad=True)
    outs = [kc.zeros(N, dtype=kc.vec3, requires_grad=True), kc.zeros(N, dtype=kc.vec3, requires_grad=True),
            kc.zeros(N, dtype=kc.mat33, requires_grad=True)]
    grids = [gva, gva.grad] if kernel is g2p_3d_kernel else [gva]
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, dim=N, inputs=[qa, *grids, kc.vec3(0.0, 0.0, 0.0), DX, G, G, G, DT], outputs=outs)
    tape.backward(grads={o: s.astype(np.float32) for o, s in zip(outs, seeds)})
    return [o.numpy() for o in outs], [qa.grad.numpy().astype(np.float64), gva.grad.numpy().astype(np.float64)]


def host_loss(q, grid_v, seeds):
    """float64 numpy sum(seed . (q_out, qd_out, C_out)) of the same G2P."""
    g = q / DX
    base = np.clip(np.floor(g - 0.5).astype(int), 0, G - 3)
    fx = g - base
    w = np.stack([0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2], axis=1)   # (N, 3, 3)
    v = np.zeros((N, 3))
    B = np.zeros((N, 3, 3))
    for e in np.ndindex(3, 3, 3):
        we = w[:, e[0], 0] * w[:, e[1], 1] * w[:, e[2], 2]
        gv = grid_v[tuple((base + np.array(e)).T)]
        v += gv * we[:, None]
        B += np.einsum("pi,pj->pij", gv, np.array(e) - fx) * we[:, None, None]
    return (seeds[0] * (q + v * DT)).sum() + (seeds[1] * v).sum() + (seeds[2] * B * (4.0 / DX)).sum()


def test_custom_gather_adjoint_matches_automatic_and_fd():
    q, grid_v, seeds = inputs()
    outs_c, custom = run(g2p_3d_kernel, q, grid_v, seeds)
    outs_a, auto = run(automatic_g2p, q, grid_v, seeds)
    for c, a in zip(outs_c, outs_a):   # the same sums in the same order
        np.testing.assert_array_equal(c, a)
    for name, c, a in zip(("q", "grid_v"), custom, auto):
        np.testing.assert_allclose(c, a, rtol=0, atol=2e-6 * np.abs(a).max(), err_msg=f"d/d{name}")
    rng = np.random.default_rng(3)
    for k, name in enumerate(("q", "grid_v")):
        direction = rng.normal(size=(q, grid_v)[k].shape)
        eps = 1e-7

        def f(h):
            moved = [q, grid_v]
            moved[k] = moved[k] + h * direction
            return host_loss(*moved, seeds)

        fd = (f(eps) - f(-eps)) / (2 * eps)
        got = float((custom[k] * direction).sum())
        assert abs(got - fd) <= 1e-4 * max(1.0, abs(fd)), (name, got, fd)


def test_3d_gather_is_not_unrolled_27_times():
    # with three constant range(3) loops the gather and its adjoint were unrolled into 27 copies of the
    # node body in g2p_3d_kernel (most of sim.mpm_transfer's NVRTC time).  The i, j loops have runtime
    # bounds: one copy per k, 3 grid reads in the forward, 3 reads and 3 gradient adds in the adjoint.
    from kernelcore import cuda_check

    text = cuda_check.source(g2p_3d_kernel.module, [g2p_3d_kernel])[1]
    for name, adds in (("f_gather_apic_3d", 0), ("adj_f_gather_apic_3d", 3)):
        body = re.search(r"\nstatic [^\n]*\b" + name + r"_[0-9a-f]+\(.*?\n}\n", text, re.S).group(0)
        assert body.count("atomic") == adds, (name, body.count("atomic"))
        assert body.count("wrap_array_index") <= 3 * (1 + (adds > 0)) * 3, (name, body.count("wrap_array_index"))
