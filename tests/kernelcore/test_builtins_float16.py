"""Every builtin overload of the table, instantiated for float16.

The walk takes each row of ``registry`` whose argument patterns can hold a float
(``F``, ``S``, ``T`` and composites of them), binds that variable to float16 (vectors of
3, matrices 2x3 / 3x3 / 3x4 as the pattern asks), and generates one kernel calling it,
plus the same kernel in float32.  Both run on the same inputs (rounded to half first):
the float16 result must compile (g++ here, NVRTC to a CUBIN when it is installed) and
match the float32 one within half precision.  A row added to the table is covered
without touching this file; rows that cannot be called as one expression are listed in
SKIPPED with the reason.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import types as T
from kernelcore.builtins.registry import _parse, _resolve, registry
from _builtin_harness import kernel_source, load_module, run

N = 64
SIZES = {"N": 3, "R": 3, "C": 4, "K": 2}  # vec(N,S), mat(R,C,S), mat(R,K,S) x mat(K,C,S), ...

# operators reached through Python syntax rather than kc.<name>(...)
SYNTAX = {"lt": "{0} < {1}", "le": "{0} <= {1}", "gt": "{0} > {1}", "ge": "{0} >= {1}", "eq": "{0} == {1}",
          "ne": "{0} != {1}", "floordiv": "{0} // {1}", "pos": "+{0}", "extract": None,
          "outer_scaled": "kc.outer({0}, {1}) * {2}"}  # made by a compiler pass from this product
# Not walked: rows on arrays (load/store/atomics, view, len), random draws (they update their
# state argument), integer-only and bool-only rows, and these:
SKIPPED = {
    "select": "the phi of a branch, emitted by the frontend only (covered by if/else kernels)",
    "truth": "the test of `if x:` (not an expression)",
    "assign_copy": "the SSA form of `v[i] = x` (a statement)",
}


def _row_types(row, dt):
    """Concrete argument types of ``row`` with its float variable bound to dt, or None."""
    if row.array_access or row.mutates or any("array" in a for a in row.args):
        return None  # array access, atomics and random draws: not value builtins
    b = dict(SIZES, F=dt, S=dt, T=dt)
    try:
        types = [_resolve(p, b) for p in row.parsed]
    except (KeyError, ValueError):
        return None  # an integer-only (I) or opaque pattern
    if not any(t is dt or getattr(t, "_dtype", None) is dt for t in types):
        return None
    return types


def _expr(name, types):
    """Expression text with {k} for the k-th non-index argument, and the list of those types."""
    params, parts = [], []
    for t in types:
        if t is T.int32:  # an index (extract): a literal in range for every size above
            parts.append("1")
        else:
            parts.append("{%d}" % len(params))
            params.append(t)
    if name == "extract":
        return f"{parts[0]}[{', '.join(parts[1:])}]", params
    fmt = SYNTAX.get(name)
    if fmt:
        return fmt.format(*parts), params
    return f"kc.{name}({', '.join(parts)})", params


def _cases():
    cases = []
    for name, rows in registry.rows.items():
        if name in SKIPPED:
            continue
        for k, row in enumerate(rows):
            t16 = _row_types(row, kc.float16)
            if t16 is None:
                continue
            t32 = _row_types(row, kc.float32)
            hit = registry.resolve(name, t16)
            assert hit is not None and hit[0] is row, f"{name}{row.args}: float16 arguments resolve to another row"
            if hit[1] is None:
                continue  # no result to compare
            expr, p16 = _expr(name, t16)
            _, p32 = _expr(name, t32)
            out32 = registry.resolve(name, t32)[1]
            if isinstance(hit[1], T.Tuple):   # several results (axis, angle = ...): one case per result
                for j, (o16, o32) in enumerate(zip(hit[1].types, out32.types)):
                    cases.append((f"{name}_{k}_{j}", name, row.args, f"{expr}[{j}]", p16, o16, p32, o32))
                continue
            cases.append((f"{name}_{k}", name, row.args, expr, p16, hit[1], p32, out32))
    return cases


CASES = _cases()


def test_the_walk_covers_the_float_builtins():
    names = {c[1] for c in CASES}
    # the families the audit found broken, and the rest of the float math
    assert {"smoothstep", "length", "quat_rotate", "normalize", "inverse", "determinant", "quat_slerp",
            "transform_point", "spatial_cross", "lerp", "clamp", "atan2", "cross", "outer"} <= names
    assert len(CASES) > 120


@pytest.fixture(scope="module")
def kernels():
    body = []
    for cid, name, args, expr, p16, out16, p32, out32 in CASES:
        body.append(kernel_source("h_" + cid, p16, out16, expr))
        body.append(kernel_source("f_" + cid, p32, out32, expr))
    return load_module("gen_float16", "".join(body))


def _sample(rng, t):
    """float64 data for one argument type, in domains every builtin accepts."""
    if t is T.bool_:
        return rng.random(N) < 0.5
    if T.is_scalar(t):
        return rng.uniform(0.3, 0.9, N)  # positive, below 1: log, sqrt, asin, pow, divisors
    kind, shape = t._kind, tuple(t._shape)
    if kind == "quat":
        q = rng.normal(size=(N, 4))
        return q / np.linalg.norm(q, axis=-1, keepdims=True)
    if kind == "transform":
        q = rng.normal(size=(N, 4))
        return np.concatenate([rng.uniform(-1, 1, (N, 3)), q / np.linalg.norm(q, axis=-1, keepdims=True)], -1)
    if kind == "matrix" and shape[0] == shape[1]:  # well conditioned: inverse, quat_from_matrix
        return 2.0 * np.eye(shape[0]) + rng.uniform(-0.3, 0.3, (N,) + shape)
    x = rng.uniform(0.3, 0.9, (N,) + shape)  # components away from zero (cw_div, normalize)
    return x * rng.choice([-1.0, 1.0], x.shape)


@pytest.mark.parametrize("cid,name,args,expr,p16,out16,p32,out32", CASES, ids=[c[0] for c in CASES])
def test_float16_builtin_matches_float32(kernels, cid, name, args, expr, p16, out16, p32, out32):
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    data = [_sample(rng, t) for t in p16]
    halves = [x.astype(np.float16) if x.dtype.kind == "f" else x for x in data]
    got = run(getattr(kernels, "h_" + cid), p16, out16, halves)
    want = run(getattr(kernels, "f_" + cid), p32, out32, [x.astype(np.float32) if x.dtype.kind == "f" else x
                                                          for x in halves])
    assert got.shape == want.shape
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    assert got.dtype == np.float16
    # each operation rounds to half (eps 2**-10); a builtin is a short chain of them
    tol = 5e-3 * np.maximum(1.0, np.abs(want))
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(np.isfinite(got) == np.isfinite(want)), cid
    worst = np.nanmax(np.where(np.isfinite(want), err / tol, 0.0))
    assert worst <= 1.0, f"{cid} ({expr}): float16 differs from float32 by {np.nanmax(err):.3g}"


def test_float16_builtins_compile_for_cuda(kernels):
    """The same float16 kernels as one CUDA translation unit, through NVRTC to a CUBIN (as the
    end-of-worker check compiles it, which then finds these kernels passed and compiles only the
    float32 references of the module)."""
    from kernelcore import cuda_check, nvrtc

    if not nvrtc.is_available():
        pytest.skip("NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
    half_kernels = [getattr(kernels, "h_" + c[0]) for c in CASES]
    module = half_kernels[0].module
    err = cuda_check.check_module(module, half_kernels)
    assert err is None, err.log
