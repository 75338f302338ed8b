"""kc.kernel(simd=True) on the CPU: what GCC actually vectorises, and what the lanes compute.

The vectorised entry points (emit_cpp.emit_streaming_entry) only pay when GCC vectorises the
`omp simd` loop; these tests compile the generated C++ with -fopt-info-vec-optimized and look
for it, and compare results with the generic entry point (simd=False) and numpy.
"""
import os
import shutil
import subprocess

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import config, toolchain


def _vectorised_loops(kernel, tmp_path):
    """Loops GCC reports vectorised in the module holding only ``kernel`` (the loop vectoriser
    is off outside the vectorised entry points, so these are theirs)."""
    cxx = config.cxx
    if shutil.which(cxx) is None or "clang" in os.path.basename(cxx):
        pytest.skip("needs g++ (GCC's -fopt-info)")
    src = tmp_path / "m.cpp"
    src.write_text(kernel.module.generate([kernel], "cpu"))
    flags = [f for f in toolchain.cpu_flags(cxx) + toolchain.SIMD_FLAGS if f != "-shared"]   # (a simd=True module's)
    proc = subprocess.run([cxx, *flags, f"-I{toolchain.NATIVE_DIR}", "-c", str(src), "-o", str(tmp_path / "m.o"),
                           "-fopt-info-vec-optimized"], capture_output=True, text=True, check=True)
    return proc.stderr.count("loop vectorized")


@kc.func
def _bspline_pair(f: kc.vec2):
    """Quadratic B-spline weights along x and y (two vec3: a tuple result, as bench_autodiff's G2P)."""
    wx = kc.vec3(0.5 * (1.5 - f[0]) * (1.5 - f[0]), 0.75 - (f[0] - 1.0) * (f[0] - 1.0), 0.5 * (f[0] - 0.5) * (f[0] - 0.5))
    wy = kc.vec3(0.5 * (1.5 - f[1]) * (1.5 - f[1]), 0.75 - (f[1] - 1.0) * (f[1] - 1.0), 0.5 * (f[1] - 0.5) * (f[1] - 0.5))
    return wx, wy


def _g2p_tuple(x: kc.array(dtype=kc.vec2), grid_v: kc.array(dtype=kc.vec2, ndim=2), inv_dx: float,
               v_out: kc.array(dtype=kc.vec2), C_out: kc.array(dtype=kc.mat22)):
    p = kc.tid()
    xg = x[p] * inv_dx
    bx = int(xg[0] - 0.5)
    by = int(xg[1] - 0.5)
    fx = xg - kc.vec2(float(bx), float(by))
    wx, wy = _bspline_pair(fx)
    new_v = kc.vec2(0.0, 0.0)
    new_C = kc.mat22(0.0, 0.0, 0.0, 0.0)
    for i in range(3):
        for j in range(3):
            w = wx[i] * wy[j]
            gv = grid_v[bx + i, by + j]
            new_v += gv * w
            new_C += kc.outer(gv, kc.vec2(float(i), float(j)) - fx) * (4.0 * inv_dx * w)
    v_out[p] = new_v
    C_out[p] = new_C


g2p_tuple_simd = kc.kernel(_g2p_tuple, enable_backward=False, simd=True, module="test_simd_lanes_g2p_simd")
g2p_tuple_scalar = kc.kernel(_g2p_tuple, enable_backward=False, simd=False, module="test_simd_lanes_g2p_scalar")


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(config, "parallel_grain", 16)
    return lambda n: monkeypatch.setenv("KERNELCORE_NUM_THREADS", str(n))


def test_function_with_tuple_result_is_inlined_and_vectorised(tmp_path):
    # bench_autodiff's G2P ran 0.6-0.8x with simd=True: its B-spline function (floating point,
    # built with trapping math) was not inlined into the loop built with no-trapping-math
    assert _vectorised_loops(g2p_tuple_simd, tmp_path) >= 1


def test_g2p_with_tuple_function_identical_to_generic_entry(threads):
    rng = np.random.default_rng(5)
    n, g = 203, 16
    xn = rng.uniform(0.1, 0.9, (n, 2)).astype(np.float32)
    gvn = rng.standard_normal((g, g, 2)).astype(np.float32)
    x, gv = kc.array(xn, dtype=kc.vec2), kc.array(gvn, dtype=kc.vec2)
    out = {}
    for t in (1, 2, 3):
        threads(t)
        for name, k in (("simd", g2p_tuple_simd), ("scalar", g2p_tuple_scalar)):
            v, C = kc.zeros(n, dtype=kc.vec2), kc.zeros(n, dtype=kc.mat22)
            kc.launch(k, dim=n, inputs=[x, gv, float(g), v, C])
            out[name, t] = (v.numpy(), C.numpy())
    for key, (v, C) in out.items():
        assert np.array_equal(v, out["scalar", 1][0]) and np.array_equal(C, out["scalar", 1][1]), key
    # float64 reference of the velocity gather
    xg = xn.astype(np.float64) * g
    base = (xg - 0.5).astype(np.int64)
    f = xg - base
    w = [0.5 * (1.5 - f) ** 2, 0.75 - (f - 1.0) ** 2, 0.5 * (f - 0.5) ** 2]
    ref = sum((w[i][:, 0] * w[j][:, 1])[:, None] * gvn[base[:, 0] + i, base[:, 1] + j] for i in range(3) for j in range(3))
    np.testing.assert_allclose(out["simd", 1][0], ref, rtol=1e-5, atol=1e-5)


# ---- lanes with accumulations (emit_cpp.emit_lane_entry): atomics in the forward, gradient scatters in the adjoint
def _springs(x: kc.array(dtype=kc.vec2), ids: kc.array(dtype=int), rest: kc.array(dtype=float), ke: float,
             f: kc.array(dtype=kc.vec2)):
    s = kc.tid()
    a = ids[2 * s]
    b = ids[2 * s + 1]
    d = x[b] - x[a]
    l = kc.length(d)
    fs = d / l * (ke * (l - rest[s]))
    f[a] += fs
    f[b] -= fs


springs_simd = kc.kernel(_springs, simd=True, module="test_simd_lanes_springs_simd")
springs_scalar = kc.kernel(_springs, simd=False, module="test_simd_lanes_springs_scalar")


def _integrate(x: kc.array(dtype=kc.vec2), v: kc.array(dtype=kc.vec2), w: kc.array(dtype=float), dt: float,
               x_out: kc.array(dtype=kc.vec2)):
    i = kc.tid()
    x_out[i] = x[i] + v[i] * (dt * kc.sin(w[i]))


integrate_simd = kc.kernel(_integrate, simd=True, module="test_simd_lanes_integrate_simd")
integrate_scalar = kc.kernel(_integrate, simd=False, module="test_simd_lanes_integrate_scalar")


def _spring_problem(rng, n=61, ns=397):
    ids = rng.integers(0, n, (ns, 2)).astype(np.int32)
    ids[:, 1] = np.where(ids[:, 1] == ids[:, 0], (ids[:, 0] + 1) % n, ids[:, 1])
    ids[:40] = ids[0]  # many springs on one pair: lanes of one block hit the same elements
    xn = rng.uniform(0, 1, (n, 2)).astype(np.float32)
    rest = rng.uniform(0.1, 0.5, ns).astype(np.float32)
    return xn, ids, rest


def _spring_run(k, xn, ids, rest, seed):
    x = kc.array(xn, dtype=kc.vec2, requires_grad=True)
    r = kc.array(rest, requires_grad=True)
    f = kc.zeros(len(xn), dtype=kc.vec2, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k, dim=len(rest), inputs=[x, kc.array(ids.ravel()), r, 3.0, f])
    tape.backward(grads={f: kc.array(seed, dtype=kc.vec2)})
    return f.numpy(), x.grad.numpy(), r.grad.numpy()


@pytest.mark.parametrize("nthreads", [1, 3])
def test_atomic_scatter_lanes_match_generic_entry_and_numpy(threads, monkeypatch, nthreads):
    monkeypatch.setattr(config, "scatter_parallel_grain", 16)   # atomics on several threads too,
    monkeypatch.setattr(config, "private_copy_ratio", 0)        # not private copies (the generic entry's)
    threads(nthreads)
    rng = np.random.default_rng(4)
    xn, ids, rest = _spring_problem(rng)
    seed = rng.standard_normal((len(xn), 2)).astype(np.float32)
    got = _spring_run(springs_simd, xn, ids, rest, seed)
    ref = _spring_run(springs_scalar, xn, ids, rest, seed)
    for g, r in zip(got, ref):
        if nthreads == 1:
            assert np.array_equal(g, r)   # the generic entry point's order of additions
        else:
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)   # atomics add in another order
    # float64 numpy: forces and the gradient w.r.t. rest lengths (d f_a / d rest = -ke * n, f_b = -f_a)
    d = xn[ids[:, 1]].astype(np.float64) - xn[ids[:, 0]]
    l = np.linalg.norm(d, axis=1)
    n = d / l[:, None]
    fs = n * (3.0 * (l - rest))[:, None]
    f = np.zeros((len(xn), 2))
    np.add.at(f, ids[:, 0], fs)
    np.add.at(f, ids[:, 1], -fs)
    np.testing.assert_allclose(got[0], f, rtol=1e-4, atol=1e-4)
    grad_rest = np.sum(-3.0 * n * (seed[ids[:, 0]] - seed[ids[:, 1]]), axis=1)
    np.testing.assert_allclose(got[2], grad_rest, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_adjoint_lanes_bit_identical_without_atomics(threads, nthreads):
    # every gradient element is the thread's own (x[i], v[i], w[i]): plain adds at any thread count
    threads(nthreads)
    rng = np.random.default_rng(9)
    n = 1003
    xn, vn = rng.standard_normal((n, 2)).astype(np.float32), rng.standard_normal((n, 2)).astype(np.float32)
    wn, seed = rng.standard_normal(n).astype(np.float32), rng.standard_normal((n, 2)).astype(np.float32)
    out = []
    for k in (integrate_simd, integrate_scalar):
        x, v, w = (kc.array(a, dtype=t, requires_grad=True) for a, t in ((xn, kc.vec2), (vn, kc.vec2), (wn, float)))
        y = kc.zeros(n, dtype=kc.vec2, requires_grad=True)
        tape = kc.Tape()
        with tape:
            kc.launch(k, dim=n, inputs=[x, v, w, 0.25, y])
        tape.backward(grads={y: kc.array(seed, dtype=kc.vec2)})
        out.append([y.numpy(), x.grad.numpy(), v.grad.numpy(), w.grad.numpy()])
    for g, r in zip(*out):
        assert np.array_equal(g, r)
    s = np.sin(wn.astype(np.float64)) * 0.25
    np.testing.assert_allclose(out[0][2], seed * s[:, None], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[0][3], np.sum(seed * vn, axis=1) * 0.25 * np.cos(wn), rtol=1e-4, atol=1e-5)


def test_gather_adjoint_lanes_scatter_like_generic_entry(threads):
    threads(1)
    rng = np.random.default_rng(2)
    n, g = 150, 12
    xn = rng.uniform(0.1, 0.8, (n, 2)).astype(np.float32)   # stencils inside the grid
    gvn = rng.standard_normal((g, g, 2)).astype(np.float32)
    seeds = rng.standard_normal((n, 2)).astype(np.float32), rng.standard_normal((n, 2, 2)).astype(np.float32)
    grads = []
    for k in (kc.kernel(_g2p_tuple, simd=True, module="test_simd_lanes_g2p_bwd_simd"),
              kc.kernel(_g2p_tuple, simd=False, module="test_simd_lanes_g2p_bwd_scalar")):
        x, gv = kc.array(xn, dtype=kc.vec2, requires_grad=True), kc.array(gvn, dtype=kc.vec2, requires_grad=True)
        v, C = kc.zeros(n, dtype=kc.vec2, requires_grad=True), kc.zeros(n, dtype=kc.mat22, requires_grad=True)
        tape = kc.Tape()
        with tape:
            kc.launch(k, dim=n, inputs=[x, gv, float(g), v, C])
        tape.backward(grads={v: kc.array(seeds[0], dtype=kc.vec2), C: kc.array(seeds[1], dtype=kc.mat22)})
        grads.append((x.grad.numpy(), gv.grad.numpy()))
    assert np.array_equal(grads[0][0], grads[1][0]) and np.array_equal(grads[0][1], grads[1][1])
    assert np.count_nonzero(grads[0][1]) > 0


def test_spring_lanes_are_vectorised(tmp_path):
    # forward and adjoint: both `omp simd` loops of the lanes (the scatter happens after them)
    assert _vectorised_loops(springs_simd, tmp_path) >= 2


def test_lanes_refuse_accumulations_they_cannot_record():
    def used_result(f: kc.array(dtype=float), out: kc.array(dtype=float)):
        i = kc.tid()
        out[i] = kc.atomic_add(f, 0, 1.0)

    def read_and_add(f: kc.array(dtype=float)):
        i = kc.tid()
        kc.atomic_add(f, 0, f[i])

    for fn in (used_result, read_and_add):
        k = kc.kernel(fn, simd=True, enable_backward=False, module=f"test_simd_lanes_refuse_{fn.__name__}")
        with pytest.raises(kc.KernelCompileError, match="simd=True.*cannot record"):
            kc.launch(k, dim=4, inputs=[kc.zeros(4, dtype=float)] * (2 if fn is used_result else 1))


@kc.func
def _read_through(a: kc.array(dtype=float), i: int):
    return a[i] * 2.0


def test_adjoint_lanes_only_where_every_scatter_is_recorded():
    from kernelcore.emit_cpp import lane_accumulations

    def via_function(x: kc.array(dtype=float), w: kc.array(dtype=float), y: kc.array(dtype=float)):
        i = kc.tid()
        y[i] = _read_through(x, i) * w[i]   # the function's adjoint would scatter into x.grad unrecorded

    def in_place(x: kc.array(dtype=float)):
        i = kc.tid()
        x[i] = x[i] * 2.0            # x.grad is read (store) and added to (load)

    def plain(x: kc.array(dtype=float), w: kc.array(dtype=float), y: kc.array(dtype=float)):
        i = kc.tid()
        y[i] = x[i] * w[i]

    ir = {f.__name__: kc.kernel(f, module=f"test_simd_lanes_q_{f.__name__}").ir() for f in (via_function, in_place, plain)}
    assert lane_accumulations(ir["via_function"], "bwd") is None
    assert lane_accumulations(ir["in_place"], "bwd") is None
    recorded = lane_accumulations(ir["plain"], "bwd")
    assert [s.args[0].label for s in recorded] == ["w", "x"]   # the reverse sweep's order
    assert lane_accumulations(springs_simd.ir(), "fwd") is not None and len(lane_accumulations(springs_simd.ir(), "fwd")) == 2
