"""Several threads per SIMD lane on the CPU (emit_cpp.emit_streaming_entry) for heavy kernels.

Kernels with constant-bound range loops, gathers at computed indices, clamps and int -> float
conversions (the MPM G2P pattern) take the vectorised forward; `kc.kernel(simd=...)` turns it
off or requires it. Results must be bit-identical to the generic entry point (simd=False) for
every thread count, and right against a float64 numpy reference.
"""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore import config
from kernelcore.emit_cpp import streamable
from kernelcore.errors import KernelCompileError


def _g2p_like(u: kc.array(dtype=float, ndim=2), x: kc.array(dtype=kc.vec2), inv_dx: float,
              out_v: kc.array(dtype=float), out_g: kc.array(dtype=kc.vec2)):
    """Quadratic B-spline gather of u around each point x (grid units 1/inv_dx), with its gradient."""
    p = kc.tid()
    g = x[p] * inv_dx
    bx = kc.clamp(int(g[0] - 0.5), 0, u.shape[0] - 3)
    by = kc.clamp(int(g[1] - 0.5), 0, u.shape[1] - 3)
    f = kc.vec2(g[0] - float(bx), g[1] - float(by))
    wx = kc.vec3(0.5 * (1.5 - f[0]) * (1.5 - f[0]), 0.75 - (f[0] - 1.0) * (f[0] - 1.0), 0.5 * (f[0] - 0.5) * (f[0] - 0.5))
    wy = kc.vec3(0.5 * (1.5 - f[1]) * (1.5 - f[1]), 0.75 - (f[1] - 1.0) * (f[1] - 1.0), 0.5 * (f[1] - 0.5) * (f[1] - 0.5))
    v = float(0.0)
    grad = kc.vec2(0.0, 0.0)
    for i in range(3):
        for j in range(3):
            d = kc.vec2(float(i), float(j)) - f
            w = wx[i] * wy[j]
            s = u[bx + i, by + j]
            v += w * s
            grad += d * (w * s)
    out_v[p] = v
    out_g[p] = grad


g2p_auto = kc.kernel(_g2p_like, enable_backward=False)
g2p_simd = kc.kernel(_g2p_like, enable_backward=False, simd=True, module="test_simd_entry_required_ok")
g2p_scalar = kc.kernel(_g2p_like, enable_backward=False, simd=False, module="test_simd_entry_scalar")


def _wrap_negative(u: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = u[i - 1] * 2.0 + u[-1]  # i - 1 = -1 wraps to the last element (Python indexing)


wrap_auto = kc.kernel(_wrap_negative, enable_backward=False)
wrap_scalar = kc.kernel(_wrap_negative, enable_backward=False, simd=False, module="test_simd_entry_scalar")


def _clamp_all(x: kc.array(dtype=float), lo: kc.array(dtype=float), hi: kc.array(dtype=float),
               k: kc.array(dtype=int), out: kc.array(dtype=float), out_i: kc.array(dtype=int)):
    i = kc.tid()
    out[i] = kc.clamp(x[i], lo[i], hi[i])
    out_i[i] = kc.clamp(k[i], -3, 4)


clamp_auto = kc.kernel(_clamp_all, enable_backward=False)
clamp_scalar = kc.kernel(_clamp_all, enable_backward=False, simd=False, module="test_simd_entry_scalar")


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(config, "parallel_grain", 16)
    return lambda n: monkeypatch.setenv("KERNELCORE_NUM_THREADS", str(n))


def _g2p_reference(u, x, inv_dx):
    """float64 numpy: the same quadratic B-spline gather."""
    g = x.astype(np.float64) * inv_dx
    base = np.clip((g - 0.5).astype(np.int64), 0, np.array(u.shape) - 3)
    f = g - base
    weights = [0.5 * (1.5 - f) ** 2, 0.75 - (f - 1.0) ** 2, 0.5 * (f - 0.5) ** 2]  # node 0, 1, 2; per axis
    v = np.zeros(len(x))
    grad = np.zeros((len(x), 2))
    for i in range(3):
        for j in range(3):
            d = np.array([i, j]) - f
            w = np.stack([weights[i][:, 0], weights[j][:, 1]], axis=1)
            s = u[base[:, 0] + i, base[:, 1] + j].astype(np.float64)
            v += w[:, 0] * w[:, 1] * s
            grad += d * (w[:, 0] * w[:, 1] * s)[:, None]
    return v, grad


def test_constant_range_loops_stay_streamable_dynamic_ones_do_not():
    assert streamable(g2p_auto.ir())

    @kc.kernel(enable_backward=False, module="test_simd_entry_dyn")
    def dynamic_trip(x: kc.array(dtype=float), n: int):
        i = kc.tid()
        s = float(0.0)
        for k in range(n):
            s += x[i]
        x[i] = s

    assert not streamable(dynamic_trip.ir())


@pytest.mark.parametrize("n", [1, 7, 1001])
def test_g2p_like_identical_to_generic_entry_and_right(threads, n):
    rng = np.random.default_rng(n)
    un = rng.standard_normal((24, 20)).astype(np.float32)
    # a few points outside the grid: the clamp keeps their stencil inside
    xn = rng.uniform(-0.1, 1.1, (n, 2)).astype(np.float32)
    u, x = kc.array(un), kc.array(xn, dtype=kc.vec2)
    inv_dx = 16.0
    ref_v, ref_g = _g2p_reference(un, xn, inv_dx)
    results = []
    for t in (1, 2, 3):
        threads(t)
        for k in (g2p_auto, g2p_simd, g2p_scalar):
            v, g = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.vec2)
            kc.launch(k, dim=n, inputs=[u, x, inv_dx, v, g])
            results.append((v.numpy(), g.numpy()))
    for v, g in results[1:]:
        assert np.array_equal(v, results[0][0]) and np.array_equal(g, results[0][1])
    np.testing.assert_allclose(results[0][0], ref_v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(results[0][1], ref_g, rtol=1e-5, atol=1e-5)


def test_negative_index_wraps_on_both_entry_points(threads):
    threads(2)
    un = np.arange(1, 41, dtype=np.float32)
    u = kc.array(un)
    expect = np.roll(un, 1) * 2.0 + un[-1]
    for k in (wrap_auto, wrap_scalar):
        out = kc.zeros(40, dtype=float)
        kc.launch(k, dim=40, inputs=[u, out])
        np.testing.assert_array_equal(out.numpy(), expect)


def test_clamp_matches_its_definition_nan_and_empty_range_included(threads):
    threads(2)
    rng = np.random.default_rng(3)
    n = 64
    xn = rng.uniform(-3, 3, n).astype(np.float32)
    lo = rng.uniform(-2, 0.5, n).astype(np.float32)
    hi = rng.uniform(-0.5, 2, n).astype(np.float32)  # some lo > hi: lo wins below lo, hi above hi
    xn[:4] = np.nan
    xn[4:8], lo[4:8], hi[4:8] = (-2.0, 0.0, 0.5, 3.0), 1.0, -1.0  # lo > hi: below lo -> lo, else above hi -> hi
    kn = rng.integers(-10, 10, n).astype(np.int32)
    expect = np.where(xn < lo, lo, np.where(xn > hi, hi, xn))
    expect_i = np.where(kn < -3, -3, np.where(kn > 4, 4, kn))
    for k in (clamp_auto, clamp_scalar):
        out, out_i = kc.zeros(n, dtype=float), kc.zeros(n, dtype=int)
        kc.launch(k, dim=n, inputs=[kc.array(xn), kc.array(lo), kc.array(hi), kc.array(kn), out, out_i])
        np.testing.assert_array_equal(out.numpy(), expect)
        np.testing.assert_array_equal(out_i.numpy(), expect_i)


def test_simd_true_inlines_simd_false_emits_no_vectorised_entry_point():
    assert f"{g2p_auto.cname}_fwd_stream" in g2p_auto.source and "flatten" not in g2p_auto.source
    assert "flatten" in g2p_simd.source
    assert f"{g2p_scalar.cname}_fwd_stream" not in g2p_scalar.source


def test_simd_true_on_a_kernel_with_atomics_names_the_line():
    # (atomic_add/atomic_sub are recorded per lane, tests/kernelcore/test_simd_lanes.py; atomic_max is not)
    def scatter(x: kc.array(dtype=float), idx: kc.array(dtype=int), out: kc.array(dtype=float)):
        i = kc.tid()
        kc.atomic_max(out, idx[i], x[i])

    k = kc.kernel(scatter, enable_backward=False, simd=True, module="test_simd_entry_required")
    with pytest.raises(KernelCompileError, match=r"simd=True.*atomic_max") as e:
        kc.launch(k, dim=3, inputs=[kc.zeros(3, dtype=float), kc.zeros(3, dtype=int), kc.zeros(3, dtype=float)])
    assert e.value.lineno == scatter.__code__.co_firstlineno + 2


def test_simd_option_is_checked():
    with pytest.raises(TypeError, match="simd must be None"):
        kc.kernel(_wrap_negative, simd="yes")
