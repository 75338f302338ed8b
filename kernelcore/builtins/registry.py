"""The builtin table: one row per overload, with its native forward and adjoint.

A row names the kernel-visible function, its argument patterns, its result rule and the
native symbol; ``adj_<symbol>`` is the adjoint beside it in the native header.  Adding a
builtin is one row plus two C++ functions — the frontend never changes.

Pattern language (strings):
    float32, int32, uint32, bool, ...   a concrete scalar type
    F / I / S                            a float / integer / any numeric scalar, bound once
    T                                    any value type, bound once
    vec(N,S)  mat(R,C,S)  quat(F)  transform(F)   composites with bound sizes and dtype
    array(T)                             an array of element type T (any ndim)
Result: a pattern resolved with the bindings, or a callable(arg_types, bindings) -> type.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from .. import hooks
from .. import types as T
from ..array import ArrayType


class WeakLiteral:
    """Type of an untyped numeric literal: adapts to the scalar type it meets."""

    def __init__(self, is_float: bool):
        self.is_float = is_float
        self.default = T.float32 if is_float else T.int32

    def __repr__(self):
        return "float literal" if self.is_float else "int literal"


WEAK_INT = WeakLiteral(False)
WEAK_FLOAT = WeakLiteral(True)


@dataclass
class Builtin:
    name: str
    args: list
    result: object
    native: str
    differentiable: bool = True
    side_effect: bool = False     # skipped when the adjoint replays the forward
    array_access: bool = False    # arg 0 is an array indexed by the int args after it
    mutates: tuple = ()           # indices of arguments updated in place (random state, query iterators)
    adj_ignores: tuple = ()       # indices of arguments whose values the adjoint never reads (linear ops)
    adj_bilinear: bool = False    # two arguments; each one's adjoint reads only the other's value
    doc: str = ""
    parsed: list = field(default_factory=list, repr=False)
    module: str = ""              # Python module that registered the row (groups the generated docs)


_TOKEN = re.compile(r"\s*([A-Za-z_0-9]+|\(|\)|,)")


def _parse(pat: str):
    toks = _TOKEN.findall(pat)
    pos = 0

    def node():
        nonlocal pos
        name = toks[pos]
        pos += 1
        args = []
        if pos < len(toks) and toks[pos] == "(":
            pos += 1
            while toks[pos] != ")":
                args.append(node())
                if toks[pos] == ",":
                    pos += 1
            pos += 1
        return (name, args)

    return node()


_SCALARS = {t._name: t for t in T.scalar_types}
_SCALARS.update({"int": T.int32, "float": T.float32})


def _is_var(name):
    return name[0].isupper()


def _match(node, t, b):
    """Match type t against a parsed pattern, extending bindings b. Returns bool."""
    name, args = node
    if isinstance(t, WeakLiteral):
        return _match_weak(node, t, b)
    if not args:
        if name in _SCALARS:
            return t is _SCALARS[name]
        if name in T.opaque_types:
            return t is T.opaque_types[name]
        if not _is_var(name):
            return False
        if name in b:
            return b[name] == t
        if name == "F" and not T.is_float(t):
            return False
        if name == "I" and not T.is_int(t):
            return False
        if name in ("S", "F", "I") and (not T.is_scalar(t) or t is T.bool_):
            return False
        if name.startswith("T") and not (T.is_scalar(t) or T.is_composite(t) or T.is_struct(t) or T.is_opaque(t)):
            return False
        b[name] = t
        return True
    kind = {"vec": "vector", "mat": "matrix", "quat": "quat", "transform": "transform"}.get(name)
    if kind is not None:
        if not (T.is_composite(t) and t._kind == kind):
            return False
        dims = list(t._shape) if kind in ("vector", "matrix") else []
        for sub, d in zip(args[:-1], dims):
            if _is_var(sub[0]):
                if sub[0] in b and b[sub[0]] != d:
                    return False
                b[sub[0]] = d
            elif int(sub[0]) != d:
                return False
        return _match(args[-1], t._dtype, b)
    if name == "array":
        return isinstance(t, ArrayType) and _match(args[0], t.dtype, b)
    return False


def _match_weak(node, w, b):
    name, args = node
    if args:
        return False
    if name in _SCALARS:
        target = _SCALARS[name]
        return T.is_scalar(target) and target is not T.bool_ and (target._is_float or not w.is_float)
    if not _is_var(name):
        return False
    if name in b:
        bound = b[name]
        return T.is_scalar(bound) and bound is not T.bool_ and (bound._is_float or not w.is_float)
    if name == "I" and w.is_float:
        return False
    # an int literal where a float is required is a float, as in Python (sqrt(2), 2 ** -1)
    b[name] = T.float32 if name == "F" else w.default
    return True


def _resolve(node, b):
    """Build the concrete type (or int size) a pattern denotes under bindings b."""
    name, args = node
    if name.isdigit():
        return int(name)
    if not args:
        if name in _SCALARS:
            return _SCALARS[name]
        if name in T.opaque_types:
            return T.opaque_types[name]
        return b[name]
    vals = [_resolve(a, b) for a in args]
    if name == "vec":
        return T.vector(vals[0], vals[1])
    if name == "mat":
        return T.matrix((vals[0], vals[1]), vals[2])
    if name == "quat":
        return T.quaternion(vals[0])
    if name == "transform":
        return T.transformation(vals[0])
    raise ValueError(f"cannot build result type {name}")


class Registry:
    def __init__(self):
        self.rows: dict[str, list[Builtin]] = {}
        self.headers: list[str] = []   # extra native headers (absolute paths) added by extensions

    def add(self, row: Builtin):
        row.parsed = [_parse(a) for a in row.args]
        self.rows.setdefault(row.name, []).append(row)
        _export_stub(row.name)
        return row

    def resolve(self, name: str, arg_types: list):
        """Pick the overload matching arg_types; returns (row, result_type, concrete arg types) or None."""
        for row in self.rows.get(name, ()):
            if len(row.parsed) != len(arg_types):
                continue
            b: dict = {}
            order = sorted(range(len(arg_types)), key=lambda i: isinstance(arg_types[i], WeakLiteral))
            if all(_match(row.parsed[i], arg_types[i], b) for i in order):
                concrete = []
                for p, t in zip(row.parsed, arg_types):
                    concrete.append(_resolve(p, b) if isinstance(t, WeakLiteral) else t)
                if callable(row.result):
                    res = row.result(concrete, b)
                elif row.result is None:
                    res = None
                else:
                    res = _resolve(_parse(row.result), b)
                return row, res, concrete
        return None

    def mutated_args(self, name) -> set:
        return {i for r in self.rows.get(name, ()) for i in r.mutates}

    def signatures(self, name):
        return [f"{name}({', '.join(r.args)})" for r in self.rows.get(name, ())]


registry = Registry()


def register(name, args, result, native=None, differentiable=True, side_effect=False, array_access=False,
             mutates=(), doc="", adj_ignores=(), adj_bilinear=False):
    """Add one overload row to the table.

    ``mutates``: indices of arguments the native function takes by reference and updates;
    the frontend gives each such named local a fresh SSA value before the call.
    ``adj_ignores`` / ``adj_bilinear``: what the adjoint does not read (see emit_cpp.rev_Call):
    the adjoint sweep then passes a default value instead, so the replay need not keep (or
    compute) it.  A wrong entry gives wrong gradients; the builtin gradient tests check every row.
    """
    row = Builtin(name, list(args), result, native or f"kc::{name}", differentiable, side_effect,
                  array_access, tuple(mutates), adj_ignores=tuple(adj_ignores), adj_bilinear=adj_bilinear, doc=doc)
    row.module = sys._getframe(1).f_globals.get("__name__", "")
    return registry.add(row)


def add_native_header(path: str):
    """Register an extra native header included in every generated module (extensions)."""
    if path not in registry.headers:
        registry.headers.append(path)


class BuiltinStub:
    """``kc.<name>`` for a builtin: resolved by the frontend inside kernels; in Python scope it
    runs the same compiled native function on host values (kernelcore.host_call)."""

    def __init__(self, name):
        self.__name__ = name
        self.name = name

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"kc.{self.name}() takes no keyword arguments")
        return hooks.call_builtin(self.name, args)

    def __repr__(self):
        return f"<kernelcore builtin {self.name}>"


# Operator rows the frontend reaches through Python syntax; add/sub/mul/div/mod/neg are also
# exported as kc.mul(...) etc. (the seeds use wp.mul for quaternion/transform products), and
# load/store as kc.load(a, i) / kc.store(a, i, v) (the seeds' mesh example uses wp.load).
# outer_scaled is made by a compiler pass (passes.fuse_scaled_outer), not written by users.
_OPERATOR_NAMES = {"floordiv", "pos", "lt", "le", "gt", "ge",
                   "eq", "ne", "logical_and", "logical_or", "logical_not", "truth", "bit_and", "bit_or",
                   "bit_xor", "lshift", "rshift", "invert", "select", "view", "extract",
                   "assign_copy", "cast", "array_len", "array_shape", "outer_scaled"}


def _export_stub(name):
    """Make kc.<name> resolvable; existing module attributes (types, functions) win."""
    mod = sys.modules.get("kernelcore")
    if mod is None or name in _OPERATOR_NAMES:
        return
    if not hasattr(mod, name):
        setattr(mod, name, BuiltinStub(name))


def export_all_stubs():
    for name in registry.rows:
        _export_stub(name)
