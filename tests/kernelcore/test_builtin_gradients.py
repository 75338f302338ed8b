"""Finite-difference check of every differentiable builtin, generated from the table.

For each differentiable row of ``registry.rows`` (those kernelcore registers) whose
arguments are float scalars/vectors/matrices/quaternions/transforms, the pattern is
instantiated in float64 (generic sizes take a few values), one kernel per overload
``out[i] = <builtin>(a0[i], a1[i], ...)`` is generated into a real .py file (one module
for all, so one compile; see _builtin_harness.load_module), and the
adjoint from kc.Tape, reduced with a random output adjoint w (loss = <w, f(x)>), is
compared with central differences of the same loss.  int32 arguments (indices) are held
at 1 and bool arguments (conditions) alternate; neither is differentiated.  Inputs are
drawn from a domain where each builtin is smooth (see DOMAINS).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import types as T
from kernelcore.builtins.registry import _resolve, registry
from _builtin_harness import load_module, to_kc, type_src

EPS = 1e-6
RTOL = 1e-5
BASE_POINTS = 3

# values for generic sizes (non-square, so transposed indexing shows): each generic row is
# checked under every distinct instantiation; every kernel costs compile time, so two sets
SIZES = [{"N": 3, "R": 2, "C": 3, "K": 4}, {"N": 4, "R": 3, "C": 2, "K": 3}]
T_CHOICES = [T.float64, kc.vec3d, kc.quatd, kc.transformd, kc.mat22d]   # for select/where(bool, T, T)
FIXED_INT = 1
FIXED_STATE = 2654435761

# rows deliberately not checked, with the reason
UNREACHABLE = {"pos": "unary + is the identity in the frontend; kc.pos is not exported"}
# rows declared for float32 and float64 separately (svd3, eig3, ...): the float64 row is checked
# here, the float32 one against it in test_builtins_linalg.py
FLOAT32_TWIN = "float32 twin of a float64 row (checked in float64)"


def _leaves(node):
    name, args = node
    if not args:
        yield name
    elif name == "array":
        yield "array"
    else:
        for a in args:
            yield from _leaves(a)


def instantiate(row):
    """Concrete float64 argument-type lists for a row, or a string saying why it is skipped."""
    if row.name in UNREACHABLE:
        return UNREACHABLE[row.name]
    leaves = {l for p in row.parsed for l in _leaves(p)}
    if "array" in leaves:
        return "array argument"
    if "float32" in leaves and "float64" not in leaves:
        return FLOAT32_TWIN
    bad = [l for l in leaves if l not in ("F", "S", "T", "int32", "uint32", "bool", "N", "R", "C", "K", "float64")
           and not l.isdigit()]
    if bad:
        return f"argument kinds {bad} are not differentiable inputs"
    out, seen = [], set()
    for sizes in SIZES:
        for tchoice in (T_CHOICES if "T" in leaves else [None]):
            b = dict(sizes, F=T.float64, S=T.float64)
            if tchoice is not None:
                b["T"] = tchoice
            types = [_resolve(p, b) for p in row.parsed]
            key = tuple(T.type_key(t) for t in types)
            if key in seen:
                continue
            seen.add(key)
            res = registry.resolve(row.name, types)
            if res is None or res[0] is not row:
                continue   # this instantiation reaches another overload (checked there)
            out.append(types)
    return out or "no float64 instantiation resolves to this row"


def _kc_rows():
    for name, rows in registry.rows.items():
        for k, row in enumerate(rows):
            if row.differentiable and row.module.startswith("kernelcore."):
                yield k, row


def _instances():
    inst, skipped = [], {}
    for k, row in _kc_rows():
        r = instantiate(row)
        if isinstance(r, str):
            skipped[f"{row.name}({', '.join(row.args)})"] = r
            continue
        for types in r:
            tag = "_".join(T.type_repr(t) for t in types)
            inst.append((f"{row.name}_{k}_{tag}", row, types))
    return inst, skipped


INSTANCES, SKIPPED = _instances()
KERNEL_NAME = {iid: f"g{n}" for n, (iid, _, _) in enumerate(INSTANCES)}


# ---- kernel text ------------------------------------------------------------------------------
def body_lines(row, nargs):
    a = [f"a{k}[i]" for k in range(nargs)]
    name = row.name
    if name == "floordiv":
        return [f"out[i] = {a[0]} // {a[1]}"]
    if name == "extract":
        return [f"out[i] = {a[0]}[{', '.join(a[1:])}]"]
    if name == "assign_copy":
        return ["v = " + a[0], f"v[{', '.join(a[1:-1])}] = {a[-1]}", "out[i] = v"]
    if name == "select":   # the frontend emits select() for the merge after an if
        return [f"r = {a[2]}", f"if {a[0]}:", f"    r = {a[1]}", "out[i] = r"]
    if name == "outer_scaled":  # made by the fuse_scaled_outer pass from this product
        return [f"out[i] = kc.outer({a[0]}, {a[1]}) * {a[2]}"]
    return [f"out[i] = kc.{name}({', '.join(a)})"]


def out_types_of(out_type):
    """The output arrays of a generated kernel: one per result (several for tuple results)."""
    return list(out_type.types) if isinstance(out_type, T.Tuple) else [out_type]


def kernel_text(kname, row, types, out_type):
    params = [f"a{k}: kc.array(dtype={type_src(t)})" for k, t in enumerate(types)]
    if isinstance(out_type, T.Tuple):   # r = f(...); out0[i] = r[0]; out1[i] = r[1]; ...
        params += [f"out{k}: kc.array(dtype={type_src(t)})" for k, t in enumerate(out_type.types)]
        body = [l.replace("out[i] =", "r =") for l in body_lines(row, len(types))]
        body += [f"out{k}[i] = r[{k}]" for k in range(len(out_type.types))]
    else:
        params.append(f"out: kc.array(dtype={type_src(out_type)})")
        body = body_lines(row, len(types))
    lines = ["@kc.kernel", f"def {kname}({', '.join(params)}):", "    i = kc.tid()"]
    lines += ["    " + l for l in body]
    return "\n\n" + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def gen():
    body = "".join(kernel_text(KERNEL_NAME[iid], row, types, registry.resolve(row.name, types)[1])
                   for iid, row, types in INSTANCES)
    return load_module("gen_gradients", body)


# ---- input domains ----------------------------------------------------------------------------
def shape(t):
    return tuple(getattr(t, "_shape", ()))


def normal(rng, t):
    return rng.normal(size=shape(t))


def uniform(lo, hi):
    return lambda rng, t: rng.uniform(lo, hi, size=shape(t))


def away_from_zero(lo=0.5, hi=2.0):
    return lambda rng, t: rng.uniform(lo, hi, size=shape(t)) * rng.choice([-1.0, 1.0], size=shape(t))


def off_integers(rng, t):
    """x = k + u with u in (0.1, 0.4): away from the jumps of floor/ceil/round/trunc/rint"""
    return rng.integers(-4, 4, size=shape(t)) + rng.uniform(0.1, 0.4, size=shape(t))


def well_conditioned(rng, t):
    n = t._shape[0]
    return 2.0 * np.eye(n) + 0.3 * rng.normal(size=(n, n))


def unit(q):
    return q / np.linalg.norm(q)


def rotation_from_quat(q):
    x, y, z, w = unit(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


# per builtin name: a function (rng, types, base_index) -> list of argument values, or a list of
# per-argument samplers (None: the default, a standard normal)
DOMAINS = {
    "log": [uniform(0.5, 3.0)], "log2": [uniform(0.5, 3.0)], "log10": [uniform(0.5, 3.0)],
    "sqrt": [uniform(0.5, 3.0)], "cbrt": [away_from_zero()], "tan": [uniform(-1.2, 1.2)],
    "asin": [uniform(-0.9, 0.9)], "acos": [uniform(-0.9, 0.9)],
    "pow": [uniform(0.5, 2.0), uniform(-2.0, 2.0)],
    "div": [None, away_from_zero()], "cw_div": [None, away_from_zero()],
    "floor": [off_integers], "ceil": [off_integers], "trunc": [off_integers], "round": [off_integers],
    "rint": [off_integers],
    "smoothstep": [uniform(-2.0, -0.5), uniform(0.5, 2.0), uniform(-3.0, 3.0)],
    "inverse": [well_conditioned], "determinant": [well_conditioned],
}


def _mod_args(rng, types, k):
    while True:   # a / b away from integers: mod and floordiv jump there
        a, b = rng.uniform(-5, 5), rng.uniform(0.5, 2.0) * rng.choice([-1.0, 1.0])
        if 0.05 < (a / b) % 1.0 < 0.95:
            return [np.array(a), np.array(b)]


def _quat_from_matrix_args(rng, types, k):
    # one base point per Shepperd branch: w, x, y or z the largest component
    big = k % 4
    q = rng.normal(scale=0.3, size=4)
    q[(big + 3) % 4] = 1.5     # index 3 is w: k=0 -> w, 1 -> x, 2 -> y, 3 -> z
    return [rotation_from_quat(q)]


def _slerp_args(rng, types, k):
    a = unit(rng.normal(size=4))
    if k % 2 == 0:   # nearly parallel: the normalised-lerp branch
        b = unit(a + 0.01 * rng.normal(size=4))
    else:
        while True:
            b = unit(rng.normal(size=4))
            if 0.1 < abs(a @ b) < 0.99:
                break
    return [a, b, np.array(rng.uniform(0.0, 1.0))]


def _noise_args(rng, types, k):
    """noise/pnoise/curlnoise: a field state, coordinates spanning several cells, periods 2-5,
    3 octaves, lacunarity and gain around 2 and 0.5 (arguments 3, 4 of curlnoise)."""
    vals = []
    for j, t in enumerate(types):
        if t is T.uint32:
            vals.append(np.array(FIXED_STATE + k, np.uint32))
        elif t is T.int32:
            vals.append(np.array(rng.integers(2, 6), np.int32))
        elif j >= 3:
            vals.append(np.array(rng.uniform(1.5, 2.5) if j == 3 else rng.uniform(0.3, 0.7)))
        else:
            vals.append(rng.uniform(-4.0, 4.0, size=shape(t)))
    return vals


DOMAINS.update({"noise": _noise_args, "pnoise": _noise_args, "curlnoise": _noise_args})
DOMAINS.update({"mod": _mod_args, "floordiv": _mod_args, "quat_from_matrix": _quat_from_matrix_args,
                "quat_slerp": _slerp_args})
POINTS = {"quat_from_matrix": 4, "quat_slerp": 4}


def sample_args(name, types, rng, k):
    dom = DOMAINS.get(name)
    if callable(dom):
        return dom(rng, types, k)
    vals = []
    for j, t in enumerate(types):
        if t is T.int32:
            vals.append(np.array(FIXED_INT, np.int32))
        elif t is T.uint32:   # a random state / noise field selector
            vals.append(np.array(FIXED_STATE, np.uint32))
        elif t is T.bool_:
            vals.append(np.array(k % 2 == 0))
        else:
            s = dom[j] if dom is not None and j < len(dom) and dom[j] is not None else normal
            vals.append(np.asarray(s(rng, t), dtype=np.float64))
    return vals


# ---- the check --------------------------------------------------------------------------------
def is_float_arg(t):
    return T.is_float(t) or (T.is_composite(t) and t._dtype._is_float)


def fd_and_adjoint(kernel, types, out_type, base_args, w):
    """Adjoint and central-difference gradients of <w, f(x)> at each base point.

    base_args: per base point, the list of argument values; w: (B, *out_shape).
    Returns (adjoint, fd), each (B, D): D = every float component of every float argument.
    """
    B = len(base_args)
    fl = [k for k, t in enumerate(types) if is_float_arg(t)]
    sizes = [int(np.prod(shape(types[k]), dtype=int)) for k in fl]
    D = sum(sizes)
    # forward batch: per base point, the point itself then +eps / -eps along each component
    batch = [[] for _ in types]
    for args in base_args:
        for sign in (0, 1, -1):
            for d in range(D if sign else 1):
                for k, a in enumerate(args):
                    batch[k].append(np.array(a, copy=True))
                if sign:
                    off = 0
                    for kk, sz in zip(fl, sizes):
                        if d < off + sz:
                            flat = batch[kk][-1].reshape(-1)
                            flat[d - off] += sign * EPS
                            break
                        off += sz
    M = B * (1 + 2 * D)
    outs_t = out_types_of(out_type)
    ws = w if isinstance(out_type, T.Tuple) else [w]    # one output adjoint per result
    arrays = [to_kc(np.stack(col), t) for col, t in zip(batch, types)]
    outs = [kc.zeros(M, dtype=t) for t in outs_t]
    kc.launch(kernel, dim=M, inputs=arrays + outs)
    loss = 0.0
    for out, wk in zip(outs, ws):
        f = out.numpy().reshape(B, 1 + 2 * D, -1)
        loss = loss + np.sum(f * wk.reshape(B, 1, -1), axis=-1)   # (B, 1 + 2D)
    fd = (loss[:, 1:1 + D] - loss[:, 1 + D:]) / (2 * EPS)
    # adjoint through the tape on the base points only
    arrays = [to_kc(np.stack([a[k] for a in base_args]), t, requires_grad=(k in fl)) for k, t in enumerate(types)]
    outs = [kc.zeros(B, dtype=t, requires_grad=True) for t in outs_t]
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, dim=B, inputs=arrays + outs)
    tape.backward(grads={out: to_kc(wk, t) for out, wk, t in zip(outs, ws, outs_t)})
    adj = np.concatenate([arrays[k].grad.numpy().reshape(B, -1) for k in fl], axis=1)
    return adj, fd


def assert_gradients_match(adj, fd, what):
    scale = max(1.0, float(np.max(np.abs(fd))))
    err = np.abs(adj - fd)
    bad = err > RTOL * np.abs(fd) + 1e-6 * scale
    if np.any(bad):
        b, c = np.argwhere(bad)[0]
        raise AssertionError(f"{what}: adjoint {adj[b, c]!r} != finite difference {fd[b, c]!r} "
                             f"(base point {b}, component {c}; max error {err.max():.3g})\nadjoint:\n{adj}\nfd:\n{fd}")


@pytest.mark.parametrize("iid,row,types", INSTANCES, ids=[i[0] for i in INSTANCES])
def test_builtin_adjoint_matches_finite_differences(gen, iid, row, types):
    kernel = getattr(gen, KERNEL_NAME[iid])
    out_type = registry.resolve(row.name, types)[1]
    rng = np.random.default_rng(zlib.crc32(iid.encode()))
    npts = POINTS.get(row.name, BASE_POINTS)
    base = [sample_args(row.name, types, rng, k) for k in range(npts)]
    if isinstance(out_type, T.Tuple):
        w = [rng.normal(size=(npts,) + shape(t)) for t in out_type.types]
    else:
        w = rng.normal(size=(npts,) + shape(out_type))
    adj, fd = fd_and_adjoint(kernel, types, out_type, base, w)
    assert_gradients_match(adj, fd, f"{row.name}({', '.join(T.type_repr(t) for t in types)})")


def test_every_differentiable_row_is_checked():
    """New rows are picked up automatically; a row that cannot be instantiated must say why."""
    allowed = {"array argument", FLOAT32_TWIN} | set(UNREACHABLE.values())
    assert {r for r in SKIPPED.values()} <= allowed, {k: v for k, v in SKIPPED.items() if v not in allowed}
    checked = {row.name for _, row, _ in INSTANCES}
    for name in ("sin", "pow", "smoothstep", "inverse", "determinant", "normalize", "quat_rotate", "quat_slerp",
                 "quat_from_matrix", "transform_inverse", "transform_point", "mul", "select", "where", "extract",
                 "assign_copy", "spatial_cross", "svd3", "eig3", "qr3", "polar", "matrix_from_rows",
                 "matrix_from_cols", "noise", "pnoise", "curlnoise", "quat_to_axis_angle"):
        assert name in checked, name
    assert len(INSTANCES) > 150


# ---- edges: points where the forward is finite but the derivative is not -------------------------
# Per builtin name: (arguments, expected adjoint of each float argument for an output adjoint of
# ones).  The adjoint must equal the value documented in the table (docs/builtins.md): the
# subgradient 0, the derivative where one exists, or +inf where the table documents the one-sided
# limit (sqrt, cbrt and pow at 0, as the seeds' safe_sqrt example); never NaN or -inf.  A callable
# gets the argument types.
def _zeros_of(types):
    return ([np.zeros(shape(types[0]))], [np.zeros(shape(types[0]))])


EDGES = {
    "acos": [([1.0], [0.0]), ([-1.0], [0.0]), ([1.0 + 1e-12], [0.0]), ([-1.0 - 1e-7], [0.0])],
    "asin": [([1.0], [0.0]), ([-1.0], [0.0]), ([1.0 + 1e-12], [0.0]), ([-1.0 - 1e-7], [0.0])],
    "atan2": [([0.0, 0.0], [0.0, 0.0])],
    "sqrt": [([0.0], [np.inf])],
    "cbrt": [([0.0], [np.inf])],
    "pow": [([0.0, 0.5], [np.inf, 0.0]), ([0.0, 0.0], [0.0, 0.0]), ([0.0, 1.0], [1.0, 0.0]),
            ([0.0, 2.0], [0.0, 0.0]), ([2.0, 0.0], [0.0, np.log(2.0)]), ([-2.0, 3.0], [12.0, 0.0])],
    "length": [_zeros_of], "normalize": [_zeros_of],
}
EDGE_INSTANCES = [(iid, row, types) for iid, row, types in INSTANCES if row.name in EDGES]


@pytest.mark.parametrize("iid,row,types", EDGE_INSTANCES, ids=[i[0] for i in EDGE_INSTANCES])
def test_builtin_adjoint_at_edges(gen, iid, row, types):
    kernel = getattr(gen, KERNEL_NAME[iid])
    out_type = registry.resolve(row.name, types)[1]
    for edge in EDGES[row.name]:
        args, expected = edge(types) if callable(edge) else edge
        arrays = [to_kc(np.asarray(a, dtype=np.float64)[None], t, requires_grad=True) for a, t in zip(args, types)]
        out = kc.zeros(1, dtype=out_type, requires_grad=True)
        with kc.Tape() as tape:
            kc.launch(kernel, dim=1, inputs=arrays + [out])
        assert np.all(np.isfinite(out.numpy())), f"{row.name}{tuple(args)}: the forward is not finite here"
        tape.backward(grads={out: to_kc(np.ones((1,) + shape(out_type)), out_type)})
        for k, (a, e) in enumerate(zip(arrays, expected)):
            g = a.grad.numpy()[0]
            assert not np.any(np.isnan(g) | (g == -np.inf)), f"{row.name}{tuple(args)}: adjoint of argument {k} is {g}"
            assert np.all(np.isfinite(g) == np.isfinite(e)), f"{row.name}{tuple(args)}: adjoint of argument {k} is {g}"
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=f"{row.name}{tuple(args)}, argument {k}")


def test_every_edge_is_checked():
    assert {row.name for _, row, _ in EDGE_INSTANCES} == set(EDGES)


# ---- the checker itself must catch a wrong adjoint ----------------------------------------------
@kc.func
def cube_with_wrong_grad(x: kc.float64):
    return x * x * x


@kc.func_grad(cube_with_wrong_grad)
def adj_cube_with_wrong_grad(x: kc.float64, adj_ret: kc.float64):
    kc.adjoint[x] += 3.0 * x * x * adj_ret * 1.001   # 0.1% too large


@kc.kernel
def wrong_grad_kernel(a0: kc.array(dtype=kc.float64), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    out[i] = cube_with_wrong_grad(a0[i])


def test_checker_detects_a_wrong_adjoint():
    rng = np.random.default_rng(0)
    base = [[np.array(rng.uniform(0.5, 2.0))] for _ in range(3)]
    w = rng.normal(size=3)
    adj, fd = fd_and_adjoint(wrong_grad_kernel, [T.float64], T.float64, base, w)
    np.testing.assert_allclose(adj, 1.001 * fd, rtol=1e-6)
    with pytest.raises(AssertionError, match="finite difference"):
        assert_gradients_match(adj, fd, "cube_with_wrong_grad")


@kc.kernel
def constructors(p: kc.array(dtype=kc.vec3d), q: kc.array(dtype=kc.quatd), s: kc.array(dtype=kc.float64),
                 out: kc.array(dtype=kc.transformd)):
    i = kc.tid()
    t = kc.transformd(p[i] * s[i], kc.quatd(kc.vec3d(q[i].x, q[i].y, s[i]), q[i].w))
    u = kc.transformd(t.p * t.q.x, kc.quatd(t.q.w, t.q.z, t.q.y, t[3]))
    out[i] = t * u


def test_constructor_adjoints_match_finite_differences():
    """kc.transform(p, q), kc.quat(v, w), kc.vector(...) and .p/.q/.x are frontend constructs, not rows."""
    rng = np.random.default_rng(1)
    types = [kc.vec3d, kc.quatd, T.float64]
    base = [[rng.normal(size=3), rng.normal(size=4), np.array(rng.uniform(0.5, 2.0))] for _ in range(3)]
    w = rng.normal(size=(3, 7))
    adj, fd = fd_and_adjoint(constructors, types, kc.transformd, base, w)
    assert_gradients_match(adj, fd, "transform constructor")


def test_docs_are_generated_from_the_table(tmp_path):
    import os
    from kernelcore.builtins import docgen

    path = docgen.write_docs(str(tmp_path / "builtins.md"), include=docgen.kernelcore_only)
    text = open(path).read()
    for name, rows in registry.rows.items():
        if any(docgen.kernelcore_only(r) for r in rows):
            assert f"| {name} | `{name}(" in text, name
    assert "| quat_slerp | `quat_slerp(quat(F), quat(F), F)` | `quat(F)` | yes |" in text
    committed = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "builtins.md")
    with open(committed) as f:
        assert f.read() == text, "docs/builtins.md is stale: run `python -m kernelcore.builtins.docgen`"


# ---- bilinear rows with a discarded adjoint ---------------------------------------------------
# A row marked adj_bilinear gets a default value in place of argument j when the other
# argument's adjoint goes nowhere (a kernel's value argument, a constant): emit_cpp.rev_Call.
# The array argument's gradient must then equal the one of the all-array kernel above (which
# the finite-difference test checks), with the same value broadcast to every thread.
BILINEAR = [(iid, row, types) for iid, row, types in INSTANCES if row.adj_bilinear]


def _bilinear_text(kname, row, types, fixed):
    params = []
    for k, t in enumerate(types):
        params.append(f"c{k}: {type_src(t)}" if k == fixed else f"a{k}: kc.array(dtype={type_src(t)})")
    out_type = registry.resolve(row.name, types)[1]
    params.append(f"out: kc.array(dtype={type_src(out_type)})")
    call = ", ".join(f"c{k}" if k == fixed else f"a{k}[i]" for k in range(len(types)))
    return (f"\n\n@kc.kernel\ndef {kname}({', '.join(params)}):\n"
            f"    i = kc.tid()\n    out[i] = kc.{row.name}({call})\n")


@pytest.fixture(scope="module")
def gen_bilinear():
    body = "".join(_bilinear_text(f"{KERNEL_NAME[iid]}_c{fixed}", row, types, fixed)
                   for iid, row, types in BILINEAR for fixed in (0, 1))
    return load_module("gen_bilinear", body)


def test_bilinear_rows_are_marked():
    names = {row.name for _, row, _ in BILINEAR}
    assert {"mul", "dot", "outer", "cw_mul"} <= names


@pytest.mark.parametrize("iid,row,types", BILINEAR, ids=[i[0] for i in BILINEAR])
def test_bilinear_adjoint_with_a_value_argument(gen, gen_bilinear, iid, row, types):
    out_type = registry.resolve(row.name, types)[1]
    rng = np.random.default_rng(zlib.crc32(iid.encode()) + 1)
    n = 4
    vals = [rng.normal(size=(n,) + shape(t)) for t in types]
    w = rng.normal(size=(n,) + shape(out_type))
    for fixed in (0, 1):
        other = 1 - fixed
        vals[fixed][:] = vals[fixed][0]   # the value argument: the same for every thread
        # reference: both arguments arrays
        ref = [to_kc(v, t, requires_grad=True) for v, t in zip(vals, types)]
        out = kc.zeros(n, dtype=out_type, requires_grad=True)
        with kc.Tape() as tape:
            kc.launch(getattr(gen, KERNEL_NAME[iid]), dim=n, inputs=ref + [out])
        tape.backward(grads={out: to_kc(w, out_type)})
        # argument `fixed` passed by value: its adjoint is discarded, the other's must not change
        a = to_kc(vals[other], types[other], requires_grad=True)
        c = np.asarray(vals[fixed][0])
        c = types[fixed](*c.reshape(-1)) if T.is_composite(types[fixed]) else float(c)
        inputs = [c, a] if fixed == 0 else [a, c]
        out = kc.zeros(n, dtype=out_type, requires_grad=True)
        with kc.Tape() as tape:
            kc.launch(getattr(gen_bilinear, f"{KERNEL_NAME[iid]}_c{fixed}"), dim=n, inputs=inputs + [out])
        tape.backward(grads={out: to_kc(w, out_type)})
        np.testing.assert_allclose(a.grad.numpy(), ref[other].grad.numpy(), rtol=1e-12, atol=1e-12)


# ---- rows on arrays: load, store, atomic_add/sub/min/max -----------------------------------------
# The elementwise check above cannot express them (their first argument is an array), so each
# (row, number of indices, element type) gets a kernel of its own here, and its Tape gradient is
# compared with central differences over every component of the differentiable inputs.
ARRAY_ROWS = ("load", "store", "atomic_add", "atomic_sub", "atomic_min", "atomic_max")
ARRAY_DTYPES = [T.float64, kc.vec3d]
ARRAY_SHAPE = (3, 2, 2, 2)   # the array a builtin reads or updates (first ndim axes)


def _array_kernel_text(kname, name, ndim, dt):
    ts = type_src(dt)
    idx = ", ".join(["i"] + ["1"] * (ndim - 1))
    if name == "load":   # out[i] = a[i, 1, ..]
        return (f"\n\n@kc.kernel\ndef {kname}(a: kc.array(dtype={ts}, ndim={ndim}), out: kc.array(dtype={ts})):\n"
                f"    i = kc.tid()\n    out[i] = a[{idx}]\n")
    if name == "store":  # b[i, 1, ..] = x[i]
        return (f"\n\n@kc.kernel\ndef {kname}(x: kc.array(dtype={ts}), b: kc.array(dtype={ts}, ndim={ndim})):\n"
                f"    i = kc.tid()\n    b[{idx}] = x[i]\n")
    # atomics: threads i and i + 1 (i // 2 after rounding) share an element, so updates collide
    shared = ", ".join(["i // 2"] + ["1"] * (ndim - 1))
    return (f"\n\n@kc.kernel\ndef {kname}(x: kc.array(dtype={ts}), b: kc.array(dtype={ts}, ndim={ndim})):\n"
            f"    i = kc.tid()\n    kc.{name}(b, {shared}, x[i])\n")


ARRAY_CASES = []
for _name in ARRAY_ROWS:
    for _rows in [registry.rows[_name]]:
        for _ndim in range(1, 5):
            for _dt in ARRAY_DTYPES:
                ARRAY_CASES.append((f"{_name}_{_ndim}d_{T.type_repr(_dt)}", _name, _ndim, _dt))


@pytest.fixture(scope="module")
def gen_arrays():
    body = "".join(_array_kernel_text(f"ga_{cid}", name, ndim, dt) for cid, name, ndim, dt in ARRAY_CASES)
    return load_module("gen_array_rows", body)


def _array_inputs(rng, name, ndim, dt):
    """(differentiable input arrays as numpy, names of those checked by differences)."""
    comp = shape(dt)
    a = rng.normal(size=ARRAY_SHAPE[:ndim] + comp)
    if name == "load":
        return {"a": a}, ["a"]
    x = rng.normal(size=((ARRAY_SHAPE[0] if name == "store" else 4),) + comp)   # store: one element per thread
    # store: the stored elements' old values are overwritten (the seeds' rule: their gradient is
    # not defined by the tape), so only x is differentiated; min/max: the same for the element
    # values that lose; add/sub: both
    return {"x": x, "b": a}, (["x", "b"] if name in ("atomic_add", "atomic_sub") else ["x"])


def _run_array_kernel(kernel, name, dt, vals, grads=None, w=None):
    arrays = {k: kc.array(v, dtype=dt, requires_grad=grads is not None) for k, v in vals.items()}
    if name == "load":
        out = kc.zeros(len(vals["a"]), dtype=dt, requires_grad=grads is not None)
        args, result = [arrays["a"], out], out
    else:
        args, result = [arrays["x"], arrays["b"]], arrays["b"]
    n = len(vals["a"]) if name == "load" else len(vals["x"])
    if grads is None:
        kc.launch(kernel, dim=n, inputs=args)
        return result.numpy()
    with kc.Tape() as tape:
        kc.launch(kernel, dim=n, inputs=args)
    tape.backward(grads={result: to_kc(w, dt)})
    return {k: arrays[k].grad.numpy() for k in grads}


@pytest.mark.parametrize("cid,name,ndim,dt", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_array_row_adjoint_matches_finite_differences(gen_arrays, cid, name, ndim, dt):
    kernel = getattr(gen_arrays, f"ga_{cid}")
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    vals, checked = _array_inputs(rng, name, ndim, dt)
    out_shape = _run_array_kernel(kernel, name, dt, vals).shape
    w = rng.normal(size=out_shape)
    adj = _run_array_kernel(kernel, name, dt, vals, grads=checked, w=w)
    for k in checked:
        fd = np.zeros(vals[k].size)
        for c in range(vals[k].size):
            f = []
            for sgn in (1.0, -1.0):
                pert = {kk: v.copy() for kk, v in vals.items()}
                pert[k].reshape(-1)[c] += sgn * EPS
                f.append(np.sum(_run_array_kernel(kernel, name, dt, pert) * w))
            fd[c] = (f[0] - f[1]) / (2 * EPS)
        np.testing.assert_allclose(adj[k].reshape(-1), fd, rtol=RTOL, atol=1e-6, err_msg=f"{cid}: gradient of {k}")


def test_every_differentiable_array_row_is_checked():
    differentiable = {row.name for rows in registry.rows.values() for row in rows
                      if row.differentiable and row.module.startswith("kernelcore.") and any("array" in a for a in row.args)}
    assert differentiable == set(ARRAY_ROWS)
