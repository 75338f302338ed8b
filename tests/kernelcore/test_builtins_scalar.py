"""Scalar builtins (operators and the math library) against numpy, float16/32/64 and ints."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import kernelcore as kc
from _builtin_harness import call_expr, kernel_source, load_module, reference_inputs, result_type, run, tolerance

FLOATS = (kc.float16, kc.float32, kc.float64)
INTS = (kc.int32, kc.int64)
N = 257


def U(lo, hi):
    return lambda rng, n, dt: rng.uniform(lo, hi, n).astype(dt._np)


def away(lo, hi, gap=0.2):
    """uniform in [lo, hi] with |x| >= gap (divisors)."""
    def f(rng, n, dt):
        x = rng.uniform(gap, max(abs(lo), abs(hi)), n)
        return (x * rng.choice([-1.0, 1.0], n)).clip(lo, hi).astype(dt._np)
    return f


def with_specials(sampler, specials):
    def f(rng, n, dt):
        x = sampler(rng, n, dt)
        x[:len(specials)] = specials
        return x
    return f


def py_round(x):
    """C round(): halves away from zero (numpy's round is half-to-even, like rint)."""
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


def py_mod(a, b):
    """% as in Warp: truncated (the sign of the dividend), C's fmod."""
    return np.fmod(a, b).astype(a.dtype)


def smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0, 1)
    return t * t * (3 - 2 * t)


HALVES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0, -3.0]

# name -> (reference, sampler per argument, expression or None for kc.<name>(...))
FLOAT_CASES = {
    "sin": (np.sin, [U(-6, 6)]), "cos": (np.cos, [U(-6, 6)]), "tan": (np.tan, [U(-1.3, 1.3)]),
    "asin": (np.arcsin, [U(-0.99, 0.99)]), "acos": (np.arccos, [U(-0.99, 0.99)]), "atan": (np.arctan, [U(-10, 10)]),
    "sinh": (np.sinh, [U(-3, 3)]), "cosh": (np.cosh, [U(-3, 3)]), "tanh": (np.tanh, [U(-3, 3)]),
    "exp": (np.exp, [U(-5, 5)]), "log": (np.log, [U(0.01, 10)]), "log2": (np.log2, [U(0.01, 10)]),
    "log10": (np.log10, [U(0.01, 10)]), "sqrt": (np.sqrt, [U(0, 10)]), "cbrt": (np.cbrt, [U(-10, 10)]),
    "floor": (np.floor, [with_specials(U(-5, 5), HALVES)]), "ceil": (np.ceil, [with_specials(U(-5, 5), HALVES)]),
    "trunc": (np.trunc, [with_specials(U(-5, 5), HALVES)]), "round": (py_round, [with_specials(U(-5, 5), HALVES)]),
    "rint": (np.rint, [with_specials(U(-5, 5), HALVES)]),
    "degrees": (np.degrees, [U(-4, 4)]), "radians": (np.radians, [U(-400, 400)]),
    "abs": (np.abs, [U(-5, 5)]), "sign": (lambda x: np.where(x < 0, -1, 1).astype(x.dtype), [U(-5, 5)]),
    "step": (lambda x: np.where(x < 0, 1, 0).astype(x.dtype), [U(-5, 5)]),
    "atan2": (np.arctan2, [U(-3, 3), U(-3, 3)]), "pow": (np.power, [U(0.1, 3), U(-2.5, 2.5)]),
    "min": (np.minimum, [U(-5, 5), U(-5, 5)]), "max": (np.maximum, [U(-5, 5), U(-5, 5)]),
    "clamp": (lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), [U(-5, 5), U(-3, -0.5), U(0.5, 3)]),
    "lerp": (lambda a, b, t: a + (b - a) * t, [U(-5, 5), U(-5, 5), U(-0.5, 1.5)]),
    "smoothstep": (smoothstep, [U(-2, -0.5), U(0.5, 2), U(-3, 3)]),
    # operators (Python syntax and the exported kc.add/sub/mul/div/mod/neg)
    "op_add": (np.add, [U(-5, 5), U(-5, 5)], "{0} + {1}"), "op_sub": (np.subtract, [U(-5, 5), U(-5, 5)], "{0} - {1}"),
    "op_mul": (np.multiply, [U(-5, 5), U(-5, 5)], "{0} * {1}"), "op_div": (np.divide, [U(-5, 5), away(-5, 5)], "{0} / {1}"),
    "op_mod": (py_mod, [U(-5, 5), away(-3, 3, 0.3)], "{0} % {1}"),
    "op_floordiv": (lambda a, b: np.floor(a / b), [U(-5, 5), away(-3, 3, 0.3)], "{0} // {1}"),
    "op_neg": (np.negative, [U(-5, 5)], "-{0}"), "op_pos": (lambda x: x, [U(-5, 5)], "+{0}"),
    "op_pow": (np.power, [U(0.1, 3), U(-2, 2)], "{0} ** {1}"), "op_square": (np.square, [U(-3, 3)], "{0} ** 2.0"),
    "kc_add": (np.add, [U(-5, 5), U(-5, 5)], "kc.add({0}, {1})"), "kc_mul": (np.multiply, [U(-5, 5), U(-5, 5)], "kc.mul({0}, {1})"),
    "kc_sub": (np.subtract, [U(-5, 5), U(-5, 5)], "kc.sub({0}, {1})"), "kc_div": (np.divide, [U(-5, 5), away(-5, 5)], "kc.div({0}, {1})"),
    "kc_mod": (py_mod, [U(-5, 5), away(-3, 3, 0.3)], "kc.mod({0}, {1})"), "kc_neg": (np.negative, [U(-5, 5)], "kc.neg({0})"),
    "py_abs": (np.abs, [U(-5, 5)], "abs({0})"), "py_min": (np.minimum, [U(-5, 5), U(-5, 5)], "min({0}, {1})"),
    "py_max": (np.maximum, [U(-5, 5), U(-5, 5)], "max({0}, {1})"),
    "literal_mix": (lambda x: 2.0 * x + 1.0, [U(-5, 5)], "2.0 * {0} + 1"),
    "where": (lambda a, b: np.where(a > b, a, b), [U(-5, 5), U(-5, 5)], "kc.where({0} > {1}, {0}, {1})"),
    "ternary": (lambda a, b: np.where(a < b, a * 2, b), [U(-5, 5), U(-5, 5)], "{0} * 2.0 if {0} < {1} else {1}"),
}
BOOL_CASES = {
    "isnan": (np.isnan, [with_specials(U(-5, 5), [np.nan, np.inf, -np.inf, 0.0])]),
    "isinf": (np.isinf, [with_specials(U(-5, 5), [np.nan, np.inf, -np.inf, 0.0])]),
    "isfinite": (np.isfinite, [with_specials(U(-5, 5), [np.nan, np.inf, -np.inf, 0.0])]),
    "op_lt": (np.less, [U(-2, 2), U(-2, 2)], "{0} < {1}"), "op_le": (np.less_equal, [U(-2, 2), U(-2, 2)], "{0} <= {1}"),
    "op_gt": (np.greater, [U(-2, 2), U(-2, 2)], "{0} > {1}"), "op_ge": (np.greater_equal, [U(-2, 2), U(-2, 2)], "{0} >= {1}"),
    "op_eq": (np.equal, [with_specials(U(-2, 2), [1.0]), with_specials(U(-2, 2), [1.0])], "{0} == {1}"),
    "op_ne": (np.not_equal, [with_specials(U(-2, 2), [1.0]), with_specials(U(-2, 2), [1.0])], "{0} != {1}"),
    "op_chain": (lambda a, b: (a < b) & (b < 1.0), [U(-2, 2), U(-2, 2)], "{0} < {1} < 1.0"),
    "op_and_or": (lambda a, b: ((a > 0) & (b > 0)) | (a < -1), [U(-2, 2), U(-2, 2)], "({0} > 0.0 and {1} > 0.0) or {0} < -1.0"),
    "op_not": (lambda a: ~(a > 0), [U(-2, 2)], "not {0} > 0.0"),
}


def I(lo, hi):
    return lambda rng, n, dt: rng.integers(lo, hi, n).astype(dt._np)


def Inz(lo, hi):
    def f(rng, n, dt):
        x = rng.integers(lo, hi, n)
        x[x == 0] = 1
        return x.astype(dt._np)
    return f


INT_CASES = {
    "op_add": (np.add, [I(-1000, 1000), I(-1000, 1000)], "{0} + {1}"),
    "op_sub": (np.subtract, [I(-1000, 1000), I(-1000, 1000)], "{0} - {1}"),
    "op_mul": (np.multiply, [I(-1000, 1000), I(-1000, 1000)], "{0} * {1}"),
    "op_mod": (np.fmod, [I(-100, 100), Inz(-9, 9)], "{0} % {1}"),           # truncated, as in Warp
    "op_floordiv": (np.floor_divide, [I(-100, 100), Inz(-9, 9)], "{0} // {1}"),
    "op_neg": (np.negative, [I(-100, 100)], "-{0}"),
    "abs": (np.abs, [I(-100, 100)]), "sign": (lambda x: np.where(x < 0, -1, 1).astype(x.dtype), [I(-100, 100)]),
    "min": (np.minimum, [I(-100, 100), I(-100, 100)]), "max": (np.maximum, [I(-100, 100), I(-100, 100)]),
    "clamp": (lambda x, lo, hi: np.clip(x, lo, hi), [I(-100, 100), I(-50, -1), I(0, 50)]),
    "bit_and": (np.bitwise_and, [I(0, 1 << 20), I(0, 1 << 20)], "{0} & {1}"),
    "bit_or": (np.bitwise_or, [I(0, 1 << 20), I(0, 1 << 20)], "{0} | {1}"),
    "bit_xor": (np.bitwise_xor, [I(0, 1 << 20), I(0, 1 << 20)], "{0} ^ {1}"),
    "lshift": (np.left_shift, [I(0, 1 << 10), I(0, 8)], "{0} << {1}"),
    "rshift": (np.right_shift, [I(-(1 << 20), 1 << 20), I(0, 8)], "{0} >> {1}"),
    "invert": (np.invert, [I(-1000, 1000)], "~{0}"),
    "int_literal": (lambda x: 3 * x - 7, [I(-100, 100)], "3 * {0} - 7"),
}


def _cases():
    out = []
    for table, dtypes, kind in ((FLOAT_CASES, FLOATS, "f"), (BOOL_CASES, FLOATS, "b"), (INT_CASES, INTS, "i")):
        for name, spec in table.items():
            ref, samplers = spec[0], spec[1]
            expr = spec[2] if len(spec) > 2 else call_expr(name, len(samplers))
            for dt in dtypes:
                out.append((f"{kind}_{name}_{dt._name}", name, dt, ref, samplers, expr))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def kernels():
    body = []
    for cid, name, dt, ref, samplers, expr in CASES:
        body.append(kernel_source("k_" + cid, [dt] * len(samplers), _out_type(cid, dt), expr))
    return load_module("gen_scalar", "".join(body))


def _out_type(cid, dt):
    return kc.bool if cid.startswith("b_") else dt


@pytest.mark.parametrize("cid,name,dt,ref,samplers,expr", CASES, ids=[c[0] for c in CASES])
def test_scalar_builtin_matches_numpy(kernels, cid, name, dt, ref, samplers, expr):
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    inputs = [s(rng, N, dt) for s in samplers]
    got = run(getattr(kernels, "k_" + cid), [dt] * len(inputs), _out_type(cid, dt), inputs)
    with np.errstate(all="ignore"):
        want = ref(*reference_inputs(inputs, dt))
    if cid.startswith(("b_", "i_")):
        np.testing.assert_array_equal(got, want)
    else:
        rtol, atol = tolerance(dt)
        np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def test_result_types_follow_the_argument_dtype():
    for dt in FLOATS:
        assert result_type("sin", [dt]) is dt
        assert result_type("atan2", [dt, dt]) is dt
        assert result_type("lerp", [dt, dt, dt]) is dt
    assert result_type("abs", [kc.int32]) is kc.int32
    from kernelcore.builtins.registry import registry
    assert registry.resolve("sqrt", [kc.int32]) is None
    assert registry.resolve("atan2", [kc.float32, kc.float64]) is None
