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
    flags = [f for f in toolchain.cpu_flags(cxx) if f != "-shared"]
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
