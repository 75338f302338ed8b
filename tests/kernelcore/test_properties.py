"""Property-based tests (hypothesis): random expressions as kernels vs numpy, random
differentiable kernels with branches and dynamic loops vs float64 finite differences, and
random control flow (early exits, short-circuit conditions, ternaries) vs Python and float64
finite differences."""
import importlib
import sys
import uuid

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kernelcore as kc
from _control_flow_programs import N_DYN, N_THREADS, N_X, control_flow_program, python_jacobian, python_programs, run_python

# ---------------------------------------------------------------------------- expressions
SCALAR_LEAVES = ["a", "b", "c", "0.5", "2.0", "1.5"]
VECTOR_LEAVES = ["u", "v", "kc.vec3(0.25, -1.0, 2.0)"]


def scalar_expr(depth):
    if depth == 0:
        return st.sampled_from(SCALAR_LEAVES)
    s, v = scalar_expr(depth - 1), vector_expr(depth - 1)
    return st.one_of(
        st.sampled_from(SCALAR_LEAVES),
        st.tuples(s, st.sampled_from(["+", "-", "*"]), s).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["kc.sin", "kc.cos", "kc.tanh", "kc.abs", "kc.atan"]), s).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(["kc.min", "kc.max"]), s, s).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(v, v).map(lambda t: f"kc.dot({t[0]}, {t[1]})"),
        v.map(lambda e: f"kc.length({e})"),
        s.map(lambda e: f"kc.sqrt(1.0 + {e} * {e})"),
    )


def vector_expr(depth):
    if depth == 0:
        return st.sampled_from(VECTOR_LEAVES)
    s, v = scalar_expr(depth - 1), vector_expr(depth - 1)
    return st.one_of(
        st.sampled_from(VECTOR_LEAVES),
        st.tuples(v, st.sampled_from(["+", "-"]), v).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(v, s).map(lambda t: f"({t[0]} * {t[1]})"),
        st.tuples(v, v).map(lambda t: f"kc.cross({t[0]}, {t[1]})"),
        st.tuples(v, v).map(lambda t: f"kc.cw_mul({t[0]}, {t[1]})"),
    )


class NumpyKC:
    """The same expression text evaluated with numpy in float64."""
    sin, cos, tanh, abs, atan, sqrt = np.sin, np.cos, np.tanh, np.abs, np.arctan, np.sqrt
    min, max = staticmethod(np.minimum), staticmethod(np.maximum)

    @staticmethod
    def dot(x, y):
        return np.sum(x * y, axis=-1, keepdims=True)

    @staticmethod
    def cross(x, y):
        return np.cross(x, y)

    @staticmethod
    def cw_mul(x, y):
        return x * y

    @staticmethod
    def length(x):
        return np.linalg.norm(x, axis=-1, keepdims=True)

    @staticmethod
    def vec3(*c):
        return np.array(c, dtype=np.float64)


def _import_source(tmp_path, text):
    name = "gen_" + uuid.uuid4().hex[:10]
    (tmp_path / f"{name}.py").write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(scalar_expr(3), min_size=12, max_size=12), st.lists(vector_expr(2), min_size=6, max_size=6))
def test_random_expressions_match_numpy(tmp_path, sexprs, vexprs):
    lines = ["import kernelcore as kc", "", "@kc.kernel",
             "def k(A: kc.array(dtype=float), B: kc.array(dtype=float), C: kc.array(dtype=float),",
             "      U: kc.array(dtype=kc.vec3), V: kc.array(dtype=kc.vec3),",
             "      S: kc.array2d(dtype=float), W: kc.array2d(dtype=kc.vec3)):",
             "    i = kc.tid()", "    a = A[i]", "    b = B[i]", "    c = C[i]", "    u = U[i]", "    v = V[i]"]
    lines += [f"    S[i, {k}] = {e}" for k, e in enumerate(sexprs)]
    lines += [f"    W[i, {k}] = {e}" for k, e in enumerate(vexprs)]
    mod = _import_source(tmp_path, "\n".join(lines) + "\n")
    rng = np.random.default_rng(len(sexprs[0]))
    n = 64
    a, b, c = (rng.uniform(-2, 2, n).astype(np.float32) for _ in range(3))
    u, v = (rng.uniform(-1, 1, (n, 3)).astype(np.float32) for _ in range(2))
    S = kc.zeros((n, len(sexprs)), dtype=float)
    W = kc.zeros((n, len(vexprs)), dtype=kc.vec3)
    kc.launch(mod.k, dim=n, inputs=[a, b, c, kc.array(u, dtype=kc.vec3), kc.array(v, dtype=kc.vec3), S, W])
    # scalars as (n, 1) columns so they broadcast against (n, 3) vectors like the kernel does
    env = {"kc": NumpyKC, "a": a.astype(np.float64)[:, None], "b": b.astype(np.float64)[:, None], "c": c.astype(np.float64)[:, None],
           "u": u.astype(np.float64), "v": v.astype(np.float64)}
    for k, e in enumerate(sexprs):
        ref = np.broadcast_to(eval(e, env), (n, 1))[:, 0]
        np.testing.assert_allclose(S.numpy()[:, k], ref, rtol=2e-4, atol=2e-4, err_msg=e)
    for k, e in enumerate(vexprs):
        ref = np.broadcast_to(eval(e, env), (n, 3))
        np.testing.assert_allclose(W.numpy()[:, k], ref, rtol=2e-4, atol=2e-4, err_msg=e)


# ---------------------------------------------------------------------------- autodiff
SMOOTH = ["acc * a", "acc + a * b", "kc.sin(acc) + b", "acc * 0.5 + kc.cos(a)", "kc.tanh(acc) * b",
          "acc * acc * 0.1 + a", "acc - b * b", "kc.sqrt(1.0 + acc * acc)"]
CONDS = ["a > 0.0", "j % 2 == 0", "b < a", "j > 1"]


@st.composite
def diff_kernel(draw, idx):
    body = []
    body.append(f"    acc = {draw(st.sampled_from(['a', 'b', 'a * b', 'kc.sin(a)']))}")
    body.append("    for j in range(n):")
    body.append(f"        acc = {draw(st.sampled_from(SMOOTH))}")
    if draw(st.booleans()):
        body.append(f"        if {draw(st.sampled_from(CONDS))}:")
        body.append(f"            acc = {draw(st.sampled_from(SMOOTH))}")
        body.append("        else:")
        body.append(f"            acc = {draw(st.sampled_from(SMOOTH))}")
    if draw(st.booleans()):
        body.append("        if j == 3:")
        body.append("            break")
    body.append(f"    for j in range({draw(st.integers(1, 3))}):")  # static, unrolled
    body.append(f"        acc = {draw(st.sampled_from(SMOOTH))}")
    if draw(st.booleans()):  # a scatter per iteration: its value only the reverse sweep reads (sunk there)
        body.append(f"        z[i] += ({draw(st.sampled_from(SMOOTH))}) * kc.float64(j + 1)")
    body.append(f"    w = int(0)")
    body.append(f"    while w < {draw(st.integers(0, 3))}:")
    body.append(f"        acc = {draw(st.sampled_from(SMOOTH)).replace('j', 'w')}")
    body.append("        w += 1")
    body.append("    y[i] = acc")
    head = [f"@kc.kernel", f"def k{idx}(x: kc.array(dtype=kc.float64), n: int, y: kc.array(dtype=kc.float64), "
            "z: kc.array(dtype=kc.float64)):",
            "    i = kc.tid()", "    a = x[i]", "    b = x[(i + 1) % len(x)]"]
    return "\n".join(head + body)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.integers(0, 10**6), min_size=6, max_size=6).flatmap(
    lambda seeds: st.tuples(*[diff_kernel(k) for k in range(len(seeds))])))
def test_random_differentiable_kernels_pass_gradcheck(tmp_path, kernels):
    mod = _import_source(tmp_path, "import kernelcore as kc\n\n" + "\n\n".join(kernels) + "\n")
    rng = np.random.default_rng(0)
    for k in range(len(kernels)):
        x0 = rng.uniform(0.3, 0.9, 4) * rng.choice([-1.0, 1.0], 4)
        x = kc.array(x0, dtype=kc.float64, requires_grad=True)
        y = kc.zeros(4, dtype=kc.float64, requires_grad=True)
        z = kc.zeros(4, dtype=kc.float64, requires_grad=True)
        r = kc.autograd.gradcheck(getattr(mod, f"k{k}"), dim=4, inputs=[x, 5], outputs=[y, z], eps=1e-6,
                                  atol=1e-5, rtol=1e-4, raise_exception=False, show_summary=False)
        assert r, kernels[k] + "\n" + r.summary()


# ---------------------------------------------------------------------------- control flow
# Random programs with break / continue / return in static, dynamic and while loops, short-circuit
# conditions and ternaries whose needless side would be NaN or read out of bounds (see
# _control_flow_programs.py). Many programs share one module (one compile per example); half the
# examples build in debug mode, where a needless out-of-bounds read raises.
CF_PROGRAMS_PER_MODULE = 16
# test_cuda_ptx_all compiles every module of the session with NVRTC (~8 s per module here): two
# modules of programs (not the first, hypothesis' simplest) are enough for the CUDA emitter;
# the others are dropped from the runtime once checked
CF_MODULES_FOR_CUDA = (1, 2)
_cf_examples_run = []


# 8 examples (128 programs, both modes): each example is one g++ build of its module, about 3 s
# CPU in release and 7 s in debug (a 5x larger source), the bulk of this test's time
@settings(max_examples=8, derandomize=True, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(["release", "debug"]),
       st.tuples(*[control_flow_program(k) for k in range(CF_PROGRAMS_PER_MODULE)]))
def test_random_control_flow_programs_match_python_and_finite_differences(tmp_path, monkeypatch, mode, programs):
    monkeypatch.setattr(kc.config, "mode", mode)
    mod = _import_source(tmp_path, "import kernelcore as kc\n\n\n" + "\n\n\n".join(programs) + "\n")
    ns = python_programs(programs)
    rng = np.random.default_rng(7)
    for k, text in enumerate(programs):
        x0 = rng.uniform(0.3, 0.9, N_X) * rng.choice([-1.0, 1.0], N_X)
        ref, _ = run_python(ns, k, x0)
        kernel = getattr(mod, f"k{k}")
        x = kc.array(x0, dtype=kc.float64, requires_grad=True)
        y = kc.zeros(N_THREADS, dtype=kc.float64, requires_grad=True)
        kc.launch(kernel, dim=N_THREADS, inputs=[x, N_DYN], outputs=[y])
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-10, err_msg=f"forward of {mode} build\n{text}")
        jac = kc.autograd.jacobian(kernel, N_THREADS, inputs=[x, N_DYN], outputs=[y])[("x", "y")]
        assert np.all(np.isfinite(jac)), f"non-finite adjoint ({mode} build)\n{text}\n{jac}"
        fd, valid = python_jacobian(ns, k, x0)
        np.testing.assert_allclose(jac[valid], fd[valid], rtol=1e-5, atol=1e-6, err_msg=f"gradient of {mode} build\n{text}")
    _cf_examples_run.append(mod.__name__)
    if len(_cf_examples_run) - 1 not in CF_MODULES_FOR_CUDA:
        from kernelcore.device import get_runtime

        get_runtime().modules.pop(mod.__name__, None)
