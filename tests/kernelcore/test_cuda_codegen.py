"""CUDA code generation without a GPU: a representative set of kernels compiles to PTX.

NVRTC (cuda-bindings + nvidia-cuda-nvrtc) runs without a driver, so this checks on every
machine that the CUDA translation unit of each construct (loops, branches, structs,
vectors, matrices, quaternions, atomics, functions with custom grads, random numbers,
printf, adjoints) is valid CUDA for sm_80 and sm_90.  The same kernels run on the CPU
here too, so the test also checks that the CUDA emitter did not change what they mean.
"""
import re

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import nvrtc
from kernelcore.emit_cuda import ERROR_STATE_KERNEL, entry_name

pytestmark = pytest.mark.skipif(not nvrtc.is_available(), reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")


@kc.struct
class Particle:
    x: kc.vec3
    m: float
    alive: int


@kc.func
def spring_energy(a: kc.vec3, b: kc.vec3, rest: float):
    d = kc.length(a - b) - rest
    return 0.5 * d * d


@kc.func
def clamp_step(x: float, lo: float, hi: float):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@kc.func
def safe_sqrt(x: float):
    return kc.sqrt(kc.max(x, 0.0))


@kc.func_grad(safe_sqrt)
def adj_safe_sqrt(x: float, adj_ret: float):
    if x > 0.0:
        kc.adjoint[x] += adj_ret / (2.0 * kc.sqrt(x))


@kc.func
def pair(x: float):
    return x * 2.0, x + 1.0


@kc.kernel
def k_loops_branches(x: kc.array(dtype=float), n: int, out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    for k in range(n):                      # dynamic loop (checkpointed in the adjoint)
        s = s + kc.sin(x[i] * float(k))
    for k in range(3):                      # static loop (unrolled)
        s = s * 0.5
    j = int(0)
    while j < n:
        if j % 2 == 0:
            s = s + 1.0
        elif j == 3:
            break
        else:
            s = s - kc.exp(-x[i])
        j = j + 1
    out[i] = s if s > 0.0 else -s


@kc.kernel
def k_vectors(p: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat33), q: kc.array(dtype=kc.quat),
              out: kc.array(dtype=kc.vec3), e: kc.array(dtype=float)):
    i = kc.tid()
    a = p[i]
    b = m[i] * a + kc.cross(a, kc.vec3(0.0, 1.0, 0.0)) + kc.outer(a, a) * a
    c = kc.normalize(b) * kc.dot(a, b)
    t = kc.transpose(m[i]) * kc.inverse(m[i] + kc.diag(a))
    c = c + kc.vec3(t[0, 0], t[1, 1], kc.determinant(t) + kc.trace(t))
    c = kc.min(c, kc.vec3(10.0))
    r = q[i]
    q[i] = r
    c[1] = c[1] + 1.0
    out[i] = c
    e[i] = spring_energy(a, c, 1.0) + clamp_step(c.x, -1.0, 1.0) + safe_sqrt(c.z)


@kc.kernel
def k_structs(ps: kc.array(dtype=Particle), g: kc.vec3, dt: float, out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    p = ps[i]
    if p.alive != 0:
        p.x = p.x + g * (dt * p.m)
    out[i] = p.x
    ps[i] = p


@kc.kernel
def k_atomics(x: kc.array(dtype=float), xd: kc.array(dtype=kc.float64), xi: kc.array(dtype=int),
              xl: kc.array(dtype=kc.int64), xu: kc.array(dtype=kc.uint32), v: kc.array(dtype=kc.vec3),
              lo: kc.array(dtype=float), hi: kc.array(dtype=float), sum_f: kc.array(dtype=float),
              sum_d: kc.array(dtype=kc.float64), cnt: kc.array(dtype=int), cnt_l: kc.array(dtype=kc.int64),
              cnt_u: kc.array(dtype=kc.uint32), sum_v: kc.array(dtype=kc.vec3), mx_i: kc.array(dtype=int),
              mn_d: kc.array(dtype=kc.float64), flag: kc.array(dtype=int)):
    i = kc.tid()
    kc.atomic_add(sum_f, 0, x[i] * x[i])
    kc.atomic_sub(sum_d, 0, xd[i])
    kc.atomic_add(cnt, 0, xi[i])
    kc.atomic_add(cnt_l, 0, xl[i])
    kc.atomic_add(cnt_u, 0, xu[i])
    kc.atomic_add(sum_v, 0, v[i])
    kc.atomic_min(lo, 0, x[i])
    kc.atomic_max(hi, 0, x[i])
    kc.atomic_max(mx_i, 0, xi[i])
    kc.atomic_min(mn_d, 0, xd[i])
    kc.atomic_cas(flag, 0, 0, i + 1)
    kc.atomic_exch(flag, 1, i)
    sum_f[1] += x[i]


@kc.kernel
def k_narrow_atomics(b: kc.array(dtype=kc.int8), ub: kc.array(dtype=kc.uint8), s: kc.array(dtype=kc.int16),
                     us: kc.array(dtype=kc.uint16), h: kc.array(dtype=kc.float16), l: kc.array(dtype=kc.int64),
                     f: kc.array(dtype=float), d: kc.array(dtype=kc.float64)):
    i = kc.tid()
    kc.atomic_add(b, 1, kc.int8(1))          # index 1: not word-aligned
    kc.atomic_max(ub, 3, kc.uint8(i))
    kc.atomic_add(s, 1, kc.int16(2))
    kc.atomic_min(us, 0, kc.uint16(i + 5))
    kc.atomic_add(h, 1, kc.float16(1.0))
    kc.atomic_cas(l, 0, kc.int64(0), kc.int64(i + 1))
    kc.atomic_exch(d, 0, kc.float64(i))
    kc.atomic_cas(f, 0, 0.0, float(i + 1))


@kc.kernel
def k_f64_math(x: kc.array(dtype=kc.float64)):
    i = kc.tid()
    x[i] = kc.sin(x[i]) + kc.sqrt(x[i]) + kc.pow(x[i], 1.5)


@kc.kernel
def k_random_print(seed: int, out: kc.array(dtype=float), verbose: int):
    i = kc.tid()
    state = kc.rand_init(seed, i)
    a = kc.randf(state)
    b = kc.randn(state)
    c = kc.sample_unit_sphere(state)
    d = kc.randi(state, 0, 10)
    out[i] = a + b + kc.length(c) + float(d)
    if verbose != 0:
        kc.printf("thread %d: %f\n", i, a)
        print(c)


@kc.kernel
def k_grid(a: kc.array2d(dtype=float), b: kc.array(dtype=float, ndim=3), h: kc.array(dtype=kc.float16),
           d: kc.array(dtype=kc.float64)):
    i, j = kc.tid()
    row = a[i]
    s = row[j] + b[i, j, 0] + float(h[j]) + float(d[i])
    x, y = pair(s)
    a[i, j] = x * y + float(a.shape[1]) + float(len(b))
    h[j] = kc.float16(s)


CODEGEN_KERNELS = [k_loops_branches, k_vectors, k_structs, k_atomics, k_narrow_atomics, k_f64_math, k_random_print, k_grid]


def _module_source(kernels):
    return kernels[0].module.generate(kernels, "cuda")


@pytest.mark.parametrize("arch", ["compute_80", "sm_90"])
def test_representative_kernels_compile_to_ptx(arch):
    src = _module_source(CODEGEN_KERNELS)
    ptx = nvrtc.compile_ptx(src, "test_cuda_codegen.cu", arch=arch)
    assert f".target {nvrtc.normalize_arch(arch).replace('compute', 'sm')}" in ptx
    entries = set(re.findall(r"\.entry\s+(\w+)\(", ptx))
    for k in CODEGEN_KERNELS:
        assert entry_name(k.cname, "fwd") in entries
        assert entry_name(k.cname, "bwd") in entries
    assert ERROR_STATE_KERNEL in entries
    # float64 math reaches CUDA's functions (kc::sqrt(double) once called itself, and the
    # optimiser turned that into a constant store)
    assert "sqrt.rn.f64" in ptx


def test_cuda_source_differs_only_in_entry_points():
    cpu = k_loops_branches.module.generate([k_loops_branches], "cpu")
    cuda = k_loops_branches.module.generate([k_loops_branches], "cuda")
    assert "#pragma omp" in cpu and "#pragma omp" not in cuda
    assert '__global__' in cuda and '__global__' not in cpu
    body = lambda s: s[s.index("static KC_FUNC"):s.index('extern "C"')]  # noqa: E731
    assert body(cpu) == body(cuda)
    assert f"void {entry_name(k_loops_branches.cname, 'fwd')}(kc::launch_bounds_t b, " in cuda
    assert "t += stride" in cuda  # grid-stride loop


def test_debug_mode_source_compiles(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")
    src = k_grid.module.generate([k_grid, k_atomics], "cuda")
    assert "kc::bounds_check" in src
    nvrtc.compile_ptx(src, "debug.cu")


def test_nvrtc_error_is_clear():
    with pytest.raises(kc.NativeBuildError) as e:
        nvrtc.compile_ptx('#include "kc_base.h"\n__global__ void f() { undefined_thing(); }\n', "bad.cu")
    assert "undefined_thing" in e.value.log
    assert "bad.cu" in str(e.value) and "undefined" in str(e.value)


def test_ptx_cache_hits(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(tmp_path))
    src = _module_source([k_loops_branches])
    calls = []
    real = nvrtc.compile_ptx
    monkeypatch.setattr(nvrtc, "compile_ptx", lambda *a, **k: calls.append(1) or real(*a, **k))
    p1 = nvrtc.cached_ptx("cuda_test", src, "m.cu")
    p2 = nvrtc.cached_ptx("cuda_test", src, "m.cu")
    assert p1 == p2 and len(calls) == 1
    assert any(n.endswith(".ptx") for n in map(str, tmp_path.iterdir()))
    # a corrupted entry is rebuilt
    ptx_file = next(p for p in tmp_path.iterdir() if p.suffix == ".ptx")
    ptx_file.write_text("garbage")
    assert nvrtc.cached_ptx("cuda_test", src, "m.cu") == p1 and len(calls) == 2


def test_arch_names():
    assert nvrtc.normalize_arch("sm_90") == "compute_90"
    assert nvrtc.normalize_arch((8, 6)) == "compute_86"
    assert nvrtc.normalize_arch(80) == "compute_80"
    with pytest.raises(ValueError):
        nvrtc.normalize_arch("gfx90a")


# -- the same kernels on the CPU: the code the CUDA TU shares with the CPU TU is right -----------
def test_codegen_kernels_run_on_cpu():
    n = 8
    rng = np.random.default_rng(0)
    x = kc.array(rng.random(n).astype(np.float32), requires_grad=True)
    out = kc.zeros(n, requires_grad=True)
    kc.launch(k_loops_branches, dim=n, inputs=[x, 5, out])
    xs = x.numpy()
    ref = np.zeros(n, np.float32)
    for i in range(n):
        s = sum(np.sin(xs[i] * k) for k in range(5)) * 0.125
        for j in range(5):
            if j % 2 == 0:
                s += 1.0
            elif j == 3:
                break
            else:
                s -= np.exp(-xs[i])
        ref[i] = abs(s)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
    # atomics
    xi = np.arange(n, dtype=np.int32)
    args = [kc.array(rng.random(n).astype(np.float32)), kc.array(rng.random(n)), kc.array(xi),
            kc.array(xi.astype(np.int64)), kc.array(xi.astype(np.uint32)), kc.array(np.ones((n, 3), np.float32), dtype=kc.vec3),
            kc.full(1, 10.0), kc.full(1, -10.0), kc.zeros(2), kc.zeros(1, dtype=kc.float64), kc.zeros(1, dtype=int),
            kc.zeros(1, dtype=kc.int64), kc.zeros(1, dtype=kc.uint32), kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=int),
            kc.full(1, 10.0, dtype=kc.float64), kc.zeros(2, dtype=int)]
    kc.launch(k_atomics, dim=n, inputs=args)
    xf, xd = args[0].numpy(), args[1].numpy()
    np.testing.assert_allclose(args[8].numpy(), [np.sum(xf * xf), np.sum(xf)], rtol=1e-5)
    np.testing.assert_allclose(args[9].numpy(), [-np.sum(xd)])
    assert args[10].numpy()[0] == xi.sum() and args[11].numpy()[0] == xi.sum() and args[12].numpy()[0] == xi.sum()
    np.testing.assert_allclose(args[13].numpy(), [[n, n, n]])
    assert args[6].numpy()[0] == xf.min() and args[7].numpy()[0] == xf.max()
    assert args[14].numpy()[0] == n - 1 and args[15].numpy()[0] == xd.min()
    assert 1 <= args[16].numpy()[0] <= n and 0 <= args[16].numpy()[1] < n
    # 1- and 2-byte atomics (a compare-and-swap of the containing word on CUDA)
    small = [kc.zeros(4, dtype=t) for t in (kc.int8, kc.uint8, kc.int16, kc.uint16, kc.float16, kc.int64)]
    f, d = kc.zeros(1), kc.zeros(1, dtype=kc.float64)
    kc.launch(k_narrow_atomics, dim=n, inputs=small + [f, d])
    assert small[0].numpy().tolist() == [0, n, 0, 0] and small[1].numpy()[3] == n - 1
    assert small[2].numpy()[1] == 2 * n and small[3].numpy()[0] == 0  # min(0, ...) stays 0
    assert small[4].numpy()[1] == n and 1 <= small[5].numpy()[0] <= n
    assert 1.0 <= f.numpy()[0] <= n and 0.0 <= d.numpy()[0] < n
