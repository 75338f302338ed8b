"""Frontend: Python AST of a @kernel / @func -> typed IR (see ir.py).

Locals become SSA values; ``if`` merges become ``select`` calls; ``break``,
``continue`` and ``return`` become boolean flags guarding the statements after them,
so every loop body is a straight region.  Static ``range`` loops with constant bounds
are unrolled up to ``config.max_unroll`` iterations.  Errors carry the user's
file:line and source line.
"""
from __future__ import annotations

import ast
import builtins as pybuiltins
import inspect
import textwrap

import numpy as np

from . import config
from . import types as T
from .array import ArrayType
from .builtins.registry import BuiltinStub
from .builtins.registry import WEAK_FLOAT, WEAK_INT, Builtin, WeakLiteral, registry
from .errors import KernelCompileError, register_assertion
from .ir import (AdjointAccumulate, Block, Call, Carried, Const, Construct, Copy, FuncCall, GetAttr, If, Loop,
                 Print, SetAttr, Tid, Var)

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod",
           ast.FloorDiv: "floordiv", ast.Pow: "pow", ast.MatMult: "mul", ast.BitAnd: "bit_and",
           ast.BitOr: "bit_or", ast.BitXor: "bit_xor", ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PY_BUILTIN_FUNCS = {pybuiltins.abs: "abs", pybuiltins.min: "min", pybuiltins.max: "max",
                     pybuiltins.round: "round", pybuiltins.pow: "pow"}


# a[i] on a vector/matrix with a non-constant i: negative i counts from the end (not in the
# public builtin table: the frontend alone emits it)
_WRAP_INDEX = Builtin("wrap_index", ["int32", "int32"], T.int32, "kc::wrap_index", differentiable=False)
# arr[i] with an i that may be negative: counts from the end of dimension d
_WRAP_ARRAY_INDEX = Builtin("wrap_array_index", ["array(T)", "int32", "int32"], T.int32, "kc::wrap_array_index",
                            differentiable=False)
# integer results known to be >= 0, and operations that keep values >= 0 (see _Builder._nonneg)
_NONNEG_RESULTS = ("array_len", "array_shape")
_NONNEG_PRESERVING = ("add", "mul", "floordiv", "mod", "div", "rshift", "min", "max")
# kc.indexedarray: the view's length along a dimension, and its index mapped to the data's
# (kc_array.h; an indexedarray argument arrives as its data array and one int32 index array
# per dimension, see build())
_INDEXED_SHAPE = Builtin("indexed_shape", ["array(int32)", "array(T)", "int32"], T.int32, "kc::indexed_shape",
                         differentiable=False)
_INDEXED_INDEX = Builtin("indexed_index", ["array(int32)", "array(T)", "int32", "int32"], T.int32, "kc::indexed_index",
                         differentiable=False)
_ARRAY_LIKE = (ArrayType, T.IndexedArrayType)
_ASSERT = Builtin("assert", ["bool", "int32"], None, "kc::assert_check", differentiable=False, side_effect=True)
# Warp's out-argument forms of the decompositions: svd3(A, U, sigma, V) writes into existing
# locals what U, sigma, V = svd3(A) returns (names of the outputs, for error messages)
_OUT_ARGUMENT_FORMS = {"svd3": ("U", "sigma", "V"), "eig3": ("Q", "d"), "qr3": ("Q", "R")}
# p[i].vel = v, a[i][k] = x: the field/component of every element as an array of its own
_FIELD_VIEW = Builtin("field_view", ["array(T)", "int32"], None, "kc::field_view", differentiable=False)


def _target_names(t) -> set:
    """Local names an assignment target rebinds: ``x``, ``a, b``, and the base of ``v[k] = ..``
    or ``s.f = ..`` (not names read in the indices, e.g. ``i`` in ``out[i] = ..``)."""
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(e) for e in t.elts))
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    while isinstance(t, (ast.Subscript, ast.Attribute)):
        t = t.value
    return {t.id} if isinstance(t, ast.Name) else set()


def _trunc_div(a: int, b: int) -> int:
    """Integer quotient rounded toward zero (C's a / b)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


class FuncDef:
    """Parsed source of one Python function decorated as a kernel or kernel function."""

    def __init__(self, pyfunc, kind: str):
        self.pyfunc = pyfunc
        self.kind = kind
        self.name = pyfunc.__name__
        self.module = pyfunc.__module__
        try:
            lines, first = inspect.getsourcelines(pyfunc)
        except (OSError, TypeError) as e:
            raise KernelCompileError(f"cannot read the source of '{self.name}': {e}", self.name) from None
        self.source = textwrap.dedent("".join(lines))
        self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
        self.firstline = first
        self.source_lines = self.source.splitlines()
        tree = ast.parse(self.source)
        self.fdef = tree.body[0]
        if not isinstance(self.fdef, ast.FunctionDef):
            raise KernelCompileError("expected a function definition", self.name, self.file, first)
        self.arg_names = [a.arg for a in self.fdef.args.args]
        fargs = self.fdef.args
        if fargs.vararg or fargs.kwarg or fargs.kwonlyargs or fargs.posonlyargs:
            raise self.error("kernels and kernel functions take plain named arguments only (no *args, **kwargs, "
                             "keyword-only or positional-only arguments)", self.fdef)
        # default values (Python objects, turned into kernel constants at each call that omits them)
        defaults = pyfunc.__defaults__ or ()
        self.defaults = dict(zip(self.arg_names[len(self.arg_names) - len(defaults):], defaults))
        self.globals = pyfunc.__globals__
        ann = dict(getattr(pyfunc, "__annotations__", {}))
        self.arg_types = {}
        for a in self.fdef.args.args:
            if a.arg not in ann:
                if kind == "func_native" or kind == "grad":
                    continue
                raise self.error(f"argument '{a.arg}' has no type annotation", a)
            self.arg_types[a.arg] = self._eval_annotation(ann[a.arg], a)
        self.return_type = None
        if "return" in ann and ann["return"] is not None:
            r = self._eval_annotation(ann["return"], self.fdef)
            self.return_type = tuple(T.type_from_annotation(x) for x in r) if isinstance(r, tuple) else (T.type_from_annotation(r),)

    @property
    def nonlocals(self) -> dict:
        """Names the function captures from enclosing functions, read when the function is
        compiled (not when it is decorated), so a local @kc.func may call one defined after it."""
        cells = self.pyfunc.__closure__ or ()
        out = {}
        for name, cell in zip(self.pyfunc.__code__.co_freevars, cells):
            try:
                out[name] = cell.cell_contents
            except ValueError:   # assigned later in the enclosing function (not yet, or never)
                pass
        return out

    def unassigned_free_name(self, name) -> bool:
        return name in self.pyfunc.__code__.co_freevars and name not in self.nonlocals

    def _eval_annotation(self, a, node):
        if isinstance(a, str):
            try:
                a = eval(a, self.globals, self.nonlocals)  # annotations postponed by __future__
            except Exception as e:
                raise self.error(f"cannot evaluate annotation '{a}': {e}", node) from None
        t = T.type_from_annotation(a)
        if (isinstance(t, type) and t.__module__ == "builtins") or isinstance(t, (int, float, str, bytes)):
            # str, list, complex, ... (float, int and bool became kernel types above): no kernel type
            # holds them; found at launch before, as "unsupported argument type"
            raise self.error(f"annotation {a!r} is not a kernel type (float, int, bool, kc.vec3, kc.array(...), "
                             f"a @kc.struct, ...)", node)
        return t

    def lineno(self, node) -> int:
        return self.firstline + getattr(node, "lineno", 1) - 1

    def error(self, msg, node=None):
        ln = getattr(node, "lineno", 1) if node is not None else 1
        src = self.source_lines[ln - 1] if 0 < ln <= len(self.source_lines) else ""
        return KernelCompileError(msg, self.name, self.file, self.firstline + ln - 1, src)

    def is_generic(self):
        from typing import Any

        def generic(t):
            return t is Any or (isinstance(t, ArrayType) and t.dtype is Any)

        return any(generic(t) for t in self.arg_types.values())


class FunctionIR:
    """Result of the frontend for one kernel or one function specialisation."""

    def __init__(self, defn, args, block):
        self.defn = defn
        self.args = args              # list of Var (arguments, in order)
        self.block = block
        self.ret_vars = []            # SSA values returned (functions)
        self.ret_types = ()
        self.funcs = []               # FuncInstances called
        self.tid_arity = 0
        self.array_reads = set()      # argument names read through load
        self.array_writes = set()     # argument names written through store/atomics
        # (argument, field, ...) paths of struct fields that are arrays, read / written (the
        # launcher refuses None there: a null array's load or store would segfault)
        self.field_reads = set()
        self.field_writes = set()
        self.has_print = False
        self.loops = []


class _RetryWithReturnTypes(Exception):
    def __init__(self, types):
        self.types = types


class _Attr:
    """Static (compile-time) attribute chain value, e.g. an array's .shape."""

    def __init__(self, kind, var):
        self.kind, self.var = kind, var


def build_ir(defn: FuncDef, arg_types: list, kind: str, ret_hint=None) -> FunctionIR:
    """Run the frontend; retries once when a function's return type is first learnt."""
    hint = ret_hint if ret_hint is not None else defn.return_type
    for _ in range(3):
        try:
            ir = _Builder(defn, arg_types, kind, hint).build()
            _run_passes(ir)
            _renumber(ir)
            return ir
        except _RetryWithReturnTypes as r:
            hint = r.types
    raise defn.error("could not infer the return type")


def _run_passes(ir: FunctionIR):
    """The named IR passes after the frontend (KERNELCORE_DUMP_IR=<pass name> prints the result)."""
    import sys

    from .ir import format_block
    from .passes import PASSES

    for name, fn in PASSES:
        fn(ir)
        if name in config.dump_ir.split(","):
            print(f"== IR of {ir.defn.name} after {name} ==\n{format_block(ir.block)}", file=sys.stderr)


def _renumber(ir: FunctionIR):
    """Number values per function, in order of appearance, so generated code (and so the
    cache key) does not depend on what else the process compiled before."""
    from .ir import Carried

    seen = {}

    def visit(v):
        if isinstance(v, Var) and id(v) not in seen:
            seen[id(v)] = v
            v.id = len(seen)
        elif isinstance(v, Carried):
            for x in (v.init, v.entry, v.exit, v.result):
                visit(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)

    visit(ir.args)
    for s in ir.block.walk():
        for value in vars(s).values():
            visit(value)
    visit(ir.ret_vars)


_TRAPPING = {"div", "mod", "floordiv"}   # integer division by zero traps


def _literal_zero(v) -> bool:
    """Is ``v`` an integer literal 0 (written so, or folded from literals)?"""
    return isinstance(v.type, WeakLiteral) and not v.type.is_float and v.const is not None and v.const == 0


def _harmless(st) -> bool:
    """A statement that may run although Python would not evaluate it: no effect, no trap,
    no memory access and no adjoint (so no NaN can reach a gradient)."""
    if isinstance(st, Const):
        return True
    if not isinstance(st, Call):
        return False
    row = st.builtin
    if row.side_effect or row.array_access or row.mutates or row.name in _TRAPPING:
        return False
    typed = [a.type for a in st.args] + ([st.out.type] if st.out is not None else [])
    return not row.differentiable or not any(T.is_differentiable_type(t) for t in typed)


class _Builder:
    def __init__(self, defn: FuncDef, arg_types, kind, ret_hint):
        self.defn = defn
        self.kind = kind              # "kernel", "func", "grad" or "replay"
        self.arg_types = arg_types
        self.ret_types = ret_hint
        self.symtab: dict[str, Var] = {}
        self.blocks: list[Block] = []
        self.loop_stack: list[dict] = []
        self.node = defn.fdef
        self.has_return = any(isinstance(n, ast.Return) and (n.value is not None) for n in ast.walk(defn.fdef))
        self.loop_counter = 0
        self.hidden_counter = 0
        self.grad_params = {}
        self._view_root = {}          # view of an array element's field -> the array it views
        self._field_path = {}         # struct field (or struct argument) value -> (argument, field, ...)
        self._nonneg_ids = set()      # ids of integer values known to be >= 0 (array indices need no wrap)
        self._indexed = {}            # indexedarray argument -> (data array, [index array per dimension])

    # -- plumbing ------------------------------------------------------------------------
    def error(self, msg, node=None):
        return self.defn.error(msg, node or self.node)

    @property
    def block(self):
        return self.blocks[-1]

    def emit(self, stmt):
        stmt.line = self.defn.lineno(self.node)
        self.block.stmts.append(stmt)
        return stmt

    def const(self, value, type_=None):
        """A compile-time constant; numeric literals stay weak until used."""
        if type_ is None:
            if isinstance(value, (bool, np.bool_)):
                type_ = T.bool_
            elif isinstance(value, (int, np.integer)):
                return Var(WEAK_INT, const=int(value))
            elif isinstance(value, (float, np.floating)):
                return Var(WEAK_FLOAT, const=float(value))
            else:
                raise self.error(f"unsupported constant {value!r}")
        v = Var(type_, const=value)
        self.emit(Const(v, value))
        return v

    def materialize(self, v: Var, type_=None, wrap=False) -> Var:
        """Give a weak literal a concrete type (its default if none is asked for).  An integer
        literal outside the type's range is an error, or with ``wrap`` (an explicit cast such as
        kc.uint32(-1)) wraps around as the C cast does."""
        if isinstance(v.type, WeakLiteral):
            t = type_ or v.type.default
            val = v.const
            if T.is_int(t):
                if isinstance(val, float) and not float(val).is_integer():
                    raise self.error(f"float literal {val} used where {T.type_repr(t)} is expected")
                val = int(val)
                info = np.iinfo(t._np)
                if wrap:
                    val = (val - info.min) % (info.max - info.min + 1) + info.min
                elif not info.min <= val <= info.max:
                    # C would wrap it silently (10**11 as int32 is 1215752192)
                    raise self.error(f"integer literal {val} does not fit {T.type_repr(t)} [{info.min}, {info.max}]; "
                                     f"write kc.int64({val}) or use a float")
            elif t is T.bool_:
                val = bool(val)
            else:
                val = float(val)
            return self.const(val, t)
        return v

    def call(self, name, args, node=None):
        """Resolve a builtin overload and emit the call; constant-folds integer arithmetic."""
        if args and isinstance(args[0].type, T.IndexedArrayType):
            return self._indexed_builtin(name, args, node)
        types = [a.type for a in args]
        folded = self._fold(name, args)
        if folded is not None:
            return folded
        res = registry.resolve(name, types)
        if res is None:
            shown = ", ".join(T.type_repr(t) if not isinstance(t, WeakLiteral) else repr(t) for t in types)
            sigs = registry.signatures(name)
            hint = ("\n  candidates: " + "; ".join(sigs[:8])) if sigs else ""
            raise self.error(f"no overload of '{name}' accepts ({shown}){hint}", node)
        row, rtype, concrete = res
        if row.name in _TRAPPING and len(args) == 2 and _literal_zero(args[1]) and T.is_int(concrete[1]):
            # 1 / 0 or i % 0: an integer division by a literal zero is always one (it gave 0 at run time)
            raise self.error("integer division or modulo by zero", node)
        args = [self.materialize(a, t) for a, t in zip(args, concrete)]
        if (row.array_access or row.name == "view") and isinstance(args[0].type, ArrayType):
            args = self._wrap_array_indices(args)
        out = Var(rtype) if rtype is not None else None
        self.emit(Call(out, row, args))
        if row.array_access:
            self._note_array_access(row, args[0])
        if out is not None and (row.name in _NONNEG_RESULTS or
                                (row.name in _NONNEG_PRESERVING and all(self._nonneg(a) for a in args)) or
                                # max(j, 0) >= 0 whatever j is: an index clamped so is used as it is (no
                                # wrap select in the address, which keeps GCC from vectorising a gather)
                                (row.name == "max" and T.is_int(out.type) and any(self._nonneg(a) for a in args))):
            self._nonneg_ids.add(out.id)
        return out

    def _nonneg(self, v) -> bool:
        """Is integer value v known to be >= 0 here (a thread index, a count, ...)?"""
        if v.id in self._nonneg_ids:
            return True
        return v.const is not None and not isinstance(v.const, bool) and v.const >= 0

    def _wrap_array_indices(self, args):
        """A negative array index counts from the end of its dimension (as in Python and Warp):
        indices not known to be >= 0 go through kc::wrap_array_index (no cost for thread indices)."""
        arr, out = args[0], list(args)
        for d in range(min(arr.type.ndim, len(args) - 1)):
            i = out[1 + d]
            if T.is_int(i.type) and not self._nonneg(i):
                r = Var(T.int32)
                self.emit(Call(r, _WRAP_ARRAY_INDEX, [arr, self.const(d, T.int32), i]))
                out[1 + d] = r
        return out

    def _fold(self, name, args):
        if name not in ("add", "sub", "mul", "floordiv", "mod", "neg") or not all(a.const is not None for a in args):
            return None
        if not all(isinstance(a.type, WeakLiteral) and not a.type.is_float for a in args):
            return None
        vals = [a.const for a in args]
        if name in ("floordiv", "mod") and vals[1] == 0:
            raise self.error("integer division or modulo by zero")
        # % truncates (the sign of the dividend) and // rounds down, as at run time (kc_scalar.h)
        r = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "floordiv": lambda a, b: a // b, "mod": lambda a, b: a - b * _trunc_div(a, b), "neg": lambda a: -a}[name](*vals)
        return Var(WEAK_INT, const=r)

    def _note_array_access(self, row, arr):
        arr = self._view_root.get(arr, arr)
        path = self._field_path.get(arr)
        if path is not None and len(path) > 1:
            (self.ir.field_reads if row.name == "load" else self.ir.field_writes).add(path)
        name = arr.label if arr in self.arg_vars else None
        if name is None:
            return
        if row.name == "load":
            self.ir.array_reads.add(name)
        else:
            self.ir.array_writes.add(name)

    def assign(self, name, v: Var):
        if v is None:
            raise self.error(f"cannot assign to '{name}': the call on the right gives no value")
        v = self.materialize(v)
        if v.label is None:
            v.label = name
        self.symtab[name] = v

    # -- entry ------------------------------------------------------------------------------
    def build(self) -> FunctionIR:
        root = Block()
        self.blocks.append(root)
        self.arg_vars = []
        for name, t in zip(self.defn.arg_names, self.arg_types):
            if isinstance(t, T.IndexedArrayType):
                self._indexed_argument(name, t)
                continue
            v = Var(t, name)
            self.arg_vars.append(v)
            self.symtab[name] = v
        self.ir = FunctionIR(self.defn, self.arg_vars, root)
        if self.kind != "grad":
            self.assign("__ret", self.const(False, T.bool_))
        if self.kind in ("func", "replay") and self.has_return and self.ret_types is not None:
            # (when the types are not known yet, the first return statement raises a retry)
            for k, t in enumerate(self.ret_types):
                zero = Var(t, f"__retval{k}")
                self.emit(Construct(zero, []) if not T.is_scalar(t) else Const(zero, False if t is T.bool_ else 0))
                self.symtab[f"__retval{k}"] = zero
        self.stmts(self.defn.fdef.body)
        if self.kind in ("func", "replay") and self.has_return:
            self.ir.ret_vars = [self.symtab[f"__retval{k}"] for k in range(len(self.ret_types))]
            self.ir.ret_types = tuple(self.ret_types)
        return self.ir

    # -- kc.indexedarray ----------------------------------------------------------------------
    def _indexed_argument(self, name, t):
        """An indexedarray argument becomes the kernel arguments ``name`` (the data array) and
        ``name__indices<k>`` (int32 index arrays, empty where dimension k is not indexed);
        the name stands for the pair, every access goes through _indexed_access."""
        if self.kind != "kernel":
            raise self.error(f"argument '{name}': indexedarray arguments are supported in kernels only; index the "
                             f"indexedarray in the kernel and pass elements (or the underlying array) to the function")
        data = Var(ArrayType(t.dtype, t.ndim), name)
        idx = [Var(ArrayType(T.int32, 1), f"{name}__indices{k}") for k in range(t.ndim)]
        self.arg_vars += [data] + idx
        v = Var(t, name)
        self._indexed[v] = (data, idx)
        self.symtab[name] = v

    def _indexed_access(self, base, idx, node=None):
        """(data array, data indices) for the element ``base[idx]`` of an indexedarray."""
        data, index_arrays = self._indexed[base]
        if len(idx) != base.type.ndim:
            raise self.error(f"an indexedarray of {base.type.ndim} dimension(s) takes {base.type.ndim} indices, "
                             f"got {len(idx)}", node)
        out = []
        for d, i in enumerate(idx):
            r = Var(T.int32)
            self.emit(Call(r, _INDEXED_INDEX, [index_arrays[d], data, self.const(d, T.int32),
                                               self._convert(i, T.int32, what="index")]))
            self.ir.array_reads.add(index_arrays[d].label)
            out.append(r)
        return data, out

    def _indexed_shape(self, base, d):
        data, index_arrays = self._indexed[base]
        if not 0 <= d < base.type.ndim:
            raise self.error(f"shape[{d}] of an indexedarray of {base.type.ndim} dimension(s)")
        r = Var(T.int32)
        self.emit(Call(r, _INDEXED_SHAPE, [index_arrays[d], data, self.const(d, T.int32)]))
        self._nonneg_ids.add(r.id)
        return r

    def _indexed_builtin(self, name, args, node):
        """A builtin given an indexedarray first (kc.atomic_add(a, i, v), len(a), a.shape[k])."""
        base = args[0]
        if name == "array_len":
            return self._indexed_shape(base, 0)
        if name == "array_shape":
            return self._indexed_shape(base, int(args[1].const))
        if not (name in ("load", "store") or name.startswith("atomic_")):
            raise self.error(f"'{name}' does not take an indexedarray (loads, stores, atomics, len() and .shape do)",
                             node)
        n = base.type.ndim
        data, idx = self._indexed_access(base, list(args[1:1 + n]), node)
        return self.call(name, [data] + idx + list(args[1 + n:]), node)

    # -- statements -------------------------------------------------------------------------
    def stmts(self, body):
        for i, s in enumerate(body):
            self.stmt(s)
            if i + 1 < len(body) and self._may_exit(s):
                cond = self._continue_cond()
                if cond is not None:
                    rest = body[i + 1:]
                    self.emit_if(cond, lambda: self.stmts(rest), None)
                return

    def _may_exit(self, s) -> bool:
        for n in ast.walk(s):
            if isinstance(n, ast.Return):
                return True
        return self._has_loop_exit(s)

    @staticmethod
    def _has_loop_exit(s) -> bool:
        """break/continue that leaves the current loop (not one nested inside an inner loop)."""
        stack = [s]
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.Break, ast.Continue)):
                return True
            if isinstance(n, (ast.For, ast.While)) and n is not s:
                stack.extend(n.orelse)
                continue
            if isinstance(n, (ast.For, ast.While)) and n is s:
                continue
            stack.extend(ast.iter_child_nodes(n))
        return False

    def _continue_cond(self):
        """Condition under which execution continues: no flag set."""
        flags = ["__ret"]
        if self.loop_stack:
            ctx = self.loop_stack[-1]
            flags += [f for f in (ctx.get("brk"), ctx.get("cont")) if f]
        vars_ = [self.symtab[f] for f in flags if f in self.symtab]
        if not vars_:
            return None
        acc = vars_[0]
        for v in vars_[1:]:
            acc = self.call("logical_or", [acc, v])
        return self.call("logical_not", [acc])

    def stmt(self, s):
        prev, self.node = self.node, s
        try:
            meth = getattr(self, "stmt_" + type(s).__name__, None)
            if meth is None:
                raise self.error(f"unsupported statement '{type(s).__name__}' in a kernel")
            meth(s)
        finally:
            self.node = prev

    def stmt_Pass(self, s):
        pass

    def stmt_Assert(self, s):
        """``assert cond[, "message"]``: checked in debug mode (a failure stops that thread and
        raises KernelRuntimeError naming the kernel, file:line, thread and message), compiled
        out in release mode as in Warp; the condition is still evaluated, the adjoint ignores it."""
        if s.msg is not None and not (isinstance(s.msg, ast.Constant) and isinstance(s.msg.value, str)):
            raise self.error("the message of an assert in a kernel must be a string literal, e.g. "
                             "assert x > 0.0, \"x must be positive\"", s.msg)
        cond = self.truth(self.expr(s.test))
        if cond.const is True:
            return
        text = "assert " + ast.unparse(s.test)
        aid = register_assertion(self.defn.file, self.defn.lineno(s), text, s.msg.value if s.msg is not None else None)
        self.emit(Call(None, _ASSERT, [self.materialize(cond, T.bool_), self.const(aid, T.int32)]))

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # docstring
        self.expr(s.value)

    def stmt_Assign(self, s):
        for target in s.targets:
            if isinstance(target, ast.Tuple):
                self._assign_tuple(target, s.value)
            else:
                self._assign_target(target, self.expr(s.value))

    def stmt_AnnAssign(self, s):
        t = self.defn._eval_annotation(self._static_value(s.annotation), s)
        v = self.expr(s.value)
        self._assign_target(s.target, self._convert(v, t))

    def _assign_tuple(self, target, value_node):
        n = len(target.elts)
        if self._is_tid_call(value_node):
            if self.kind != "kernel":
                raise self.error("kc.tid() is only available in a @kc.kernel; pass the thread indices to the function as arguments")
            self.ir.tid_arity = n
            for k, t in enumerate(target.elts):
                out = Var(T.int32)
                self.emit(Tid(out, k))
                self._nonneg_ids.add(out.id)
                self._assign_target(t, out)
            return
        if isinstance(value_node, ast.Tuple):
            vals = [self.expr(e) for e in value_node.elts]
        else:
            v = self.expr(value_node)
            if isinstance(v.type, T.Tuple):
                vals = []
                for k, t in enumerate(v.type.types):
                    out = Var(t)
                    self.emit(GetAttr(out, v, f"f{k}"))
                    vals.append(out)
            elif T.is_vector(v.type) or T.is_quat(v.type):
                vals = [self.call("extract", [v, self.const(k, T.int32)]) for k in range(v.type._length)]
            else:
                raise self.error("cannot unpack a value of type " + T.type_repr(v.type))
        if len(vals) != n:
            raise self.error(f"cannot unpack {len(vals)} values into {n} names")
        for t, v in zip(target.elts, vals):
            self._assign_target(t, v)

    def _assign_target(self, target, v):
        if isinstance(target, ast.Name):
            if target.id in self.symtab and isinstance(self.symtab[target.id].type, ArrayType) and target.id in self.defn.arg_names and not isinstance(v.type, ArrayType):
                raise self.error(f"cannot assign a {T.type_repr(v.type)} to array argument '{target.id}'")
            self.assign(target.id, v)
        elif isinstance(target, ast.Subscript):
            self._store_subscript(target, v)
        elif isinstance(target, ast.Attribute):
            self._store_attribute(target, v)
        else:
            raise self.error("unsupported assignment target")

    def _indices(self, node):
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.error("slices are not supported inside kernels (slice the array in Python scope)")
            out.append(self._convert(self.expr(e), T.int32, what="index"))
        return out

    def _store_subscript(self, target, v):
        if self._is_element_part(target):
            return self._store_element_part(target, v)
        base = self.expr(target.value)
        idx = self._indices(target.slice)
        bt = base.type
        if isinstance(bt, _ARRAY_LIKE):
            base, idx = self._array_view_for(base, idx, target)
            self.call("store", [base] + idx + [self._convert(v, base.type.dtype)])
        elif T.is_composite(bt):
            if not isinstance(target.value, ast.Name):
                raise self.error("only named local vectors/matrices can be updated in place")
            dtype = bt._dtype
            idx = self._component_indices(bt, idx)
            if T.is_matrix(bt) and len(idx) == 1:
                v = self._convert(v, T.vector(bt._shape[1], dtype))
            else:
                v = self._convert(v, dtype)
            self.assign(target.value.id, self.call("assign_copy", [base] + idx + [v]))
        else:
            raise self.error(f"cannot assign into a value of type {T.type_repr(bt)}")

    def _component_indices(self, bt, idx):
        """Indices into a vector/matrix/quaternion/transform, as Warp takes them: a negative
        index counts from the end. A constant one out of range is an error here; others are
        wrapped at run time (and checked in debug mode, see emit_cpp)."""
        lengths = bt._shape[:len(idx)]
        if len(idx) > len(bt._shape):
            raise self.error(f"too many indices ({len(idx)}) for a {T.type_repr(bt)}")
        out = []
        for k, (i, n) in enumerate(zip(idx, lengths)):
            if i.const is not None:
                c = int(i.const)
                if not -n <= c < n:
                    what = f"index {c}" if len(idx) == 1 else f"index {c} (dimension {k})"
                    raise self.error(f"{what} out of range for a {T.type_repr(bt)} ({n} components along it)")
                out.append(self.const(c % n, T.int32) if c < 0 else i)
            else:
                r = Var(T.int32)
                self.emit(Call(r, _WRAP_INDEX, [i, self.const(n, T.int32)]))
                out.append(r)
        return out

    def _array_view_for(self, base, idx, node):
        if isinstance(base.type, T.IndexedArrayType):
            return self._indexed_access(base, idx, node)
        if len(idx) > base.type.ndim:
            raise self.error(f"too many indices ({len(idx)}) for a {base.type.ndim}-d array", node)
        if len(idx) < base.type.ndim:
            raise self.error(f"a {base.type.ndim}-d array needs {base.type.ndim} indices here, got {len(idx)}", node)
        return base, idx

    # -- stores into part of an array element: p[i].vel = v, a[i][1] = x, a[i].x += d ----------
    def _is_element_part(self, node) -> bool:
        """Is ``node`` a field/component of an array element (``arr[...]`` then ``.f``/``[k]``)?"""
        if not isinstance(node, (ast.Attribute, ast.Subscript)):
            return False
        depth = 0
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            inner = node.value
            if isinstance(node, ast.Subscript) and isinstance(inner, ast.Name) and inner.id in self.symtab \
                    and isinstance(self.symtab[inner.id].type, _ARRAY_LIKE):
                return depth > 0
            node, depth = inner, depth + 1
        return False

    def _element_part(self, node):
        """(array view, indices) addressing the element part ``node`` names: a view of the
        array whose elements are that field/component (same shape and strides), so that
        load/store/atomics and their adjoints apply to it unchanged."""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in self.symtab \
                and isinstance(self.symtab[node.value.id].type, _ARRAY_LIKE):
            arr = self.symtab[node.value.id]
            idx = self._indices(node.slice)
            arr, idx = self._array_view_for(arr, idx, node)
            return arr, idx
        arr, idx = self._element_part(node.value)
        t = arr.type.dtype
        if isinstance(node, ast.Attribute):
            offset, ft = self._field_offset(t, node.attr, node)
            offset = self.const(offset, T.int32)
        else:
            if not T.is_composite(t):
                raise self.error(f"cannot index into an element of type {T.type_repr(t)}", node)
            k = self._component_indices(t, self._indices(node.slice))
            size = t._dtype._size
            if T.is_matrix(t) and len(k) == 1:
                ft, stride = T.vector(t._shape[1], t._dtype), t._shape[1] * size
                offset = self.call("mul", [k[0], self.const(stride, T.int32)])
            elif T.is_matrix(t):
                ft = t._dtype
                row = self.call("mul", [k[0], self.const(t._shape[1] * size, T.int32)])
                offset = self.call("add", [row, self.call("mul", [k[1], self.const(size, T.int32)])])
            else:
                ft = t._dtype
                offset = self.call("mul", [k[0], self.const(size, T.int32)])
        view = Var(ArrayType(ft, arr.type.ndim))
        self.emit(Call(view, _FIELD_VIEW, [arr, offset], template=T.ctype_name(ft)))
        self._view_root[view] = self._view_root.get(arr, arr)
        return view, idx

    def _field_offset(self, t, attr, node):
        """(byte offset, type) of field/component ``attr`` of an element of type t."""
        if T.is_struct(t):
            if attr not in t._fields:
                raise self.error(f"struct {t._name} has no field '{attr}'", node)
            return getattr(t._ctypes, attr).offset, t._fields[attr]
        if (T.is_vector(t) or T.is_quat(t)) and len(attr) == 1 and attr in "xyzw"[:t._length]:
            return "xyzw".index(attr) * t._dtype._size, t._dtype
        if T.is_transform(t) and attr in ("p", "q"):
            return (0, T.vector(3, t._dtype)) if attr == "p" else (3 * t._dtype._size, T.quaternion(t._dtype))
        raise self.error(f"{T.type_repr(t)} has no attribute '{attr}'", node)

    def _store_element_part(self, target, v):
        view, idx = self._element_part(target)
        self.call("store", [view] + idx + [self._convert(v, view.type.dtype)])

    def _store_attribute(self, target, v):
        if self._is_element_part(target):
            return self._store_element_part(target, v)
        if not isinstance(target.value, ast.Name) or target.value.id not in self.symtab:
            raise self.error("only attributes of local variables can be assigned")
        base = self.symtab[target.value.id]
        bt = base.type
        if T.is_struct(bt):
            if target.attr not in bt._fields:
                raise self.error(f"struct {bt._name} has no field '{target.attr}'")
            out = Var(bt)
            self.emit(SetAttr(out, base, target.attr, self._convert(v, bt._fields[target.attr])))
            self.assign(target.value.id, out)
        elif (T.is_vector(bt) or T.is_quat(bt)) and target.attr in "xyzw" and len(target.attr) == 1:
            k = "xyzw".index(target.attr)
            self.assign(target.value.id, self.call("assign_copy", [base, self.const(k, T.int32), self._convert(v, bt._dtype)]))
        else:
            raise self.error(f"cannot set attribute '{target.attr}' on {T.type_repr(bt)}")

    def stmt_AugAssign(self, s):
        op = _BINOPS.get(type(s.op))
        if op is None:
            raise self.error("unsupported augmented assignment")
        t = s.target
        if isinstance(t, ast.Subscript) and self._is_adjoint_ref(t.value):
            self._adjoint_accumulate(t, s)
            return
        if self._is_element_part(t) and op in ("add", "sub"):
            # like a[i] += x: an atomic update of that field/component of the element
            view, idx = self._element_part(t)
            self.call("atomic_" + op, [view] + idx + [self._convert(self.expr(s.value), view.type.dtype)])
            return
        if isinstance(t, ast.Subscript):
            base = self.expr(t.value)
            if isinstance(base.type, _ARRAY_LIKE):
                idx = self._indices(t.slice)
                base, idx = self._array_view_for(base, idx, t)
                val = self._convert(self.expr(s.value), base.type.dtype)
                if op in ("add", "sub"):
                    self.call("atomic_" + op, [base] + idx + [val])
                else:
                    cur = self.call("load", [base] + idx)
                    self.call("store", [base] + idx + [self.call(op, [cur, val])])
                return
        cur = self.expr(t)
        self._assign_target(t, self.binop(op, cur, self.expr(s.value)))

    def _is_adjoint_ref(self, node):
        try:
            from . import autodiff_api

            return self._static_value(node) is autodiff_api.adjoint
        except Exception:
            return False

    def _adjoint_accumulate(self, t, s):
        if self.kind != "grad":
            raise self.error("kc.adjoint[...] is only valid inside a @kc.func_grad function")
        if not isinstance(t.slice, ast.Name) or t.slice.id not in self.defn.arg_names:
            raise self.error("kc.adjoint[x] needs x to be an input argument of the function")
        if not isinstance(s.op, ast.Add):
            raise self.error("kc.adjoint[x] supports only +=")
        target_t = self.symtab[t.slice.id].type
        self.emit(AdjointAccumulate(t.slice.id, self._convert(self.expr(s.value), target_t)))

    def stmt_If(self, s):
        cond = self.truth(self.expr(s.test))
        if cond.const is not None and self._is_static_cond(s.test):
            self.stmts(s.body if cond.const else s.orelse)
            return
        self.emit_if(cond, lambda: self.stmts(s.body), (lambda: self.stmts(s.orelse)) if s.orelse else None)

    def _is_static_cond(self, node):
        return not any(isinstance(n, ast.Name) and n.id in self.symtab for n in ast.walk(node))

    def emit_if(self, cond, then_fn, else_fn):
        before = dict(self.symtab)
        then_block, else_block = Block(), Block()
        self.blocks.append(then_block)
        then_fn()
        self.blocks.pop()
        then_syms, self.symtab = self.symtab, dict(before)
        self.blocks.append(else_block)
        if else_fn:
            else_fn()
        self.blocks.pop()
        else_syms = self.symtab
        self.emit(If(cond, then_block, else_block))
        merged = {}
        for name in list(then_syms) + [n for n in else_syms if n not in then_syms]:
            a, b = then_syms.get(name), else_syms.get(name)
            if a is None or b is None:
                continue  # defined on one path only: undefined afterwards
            if a is b:
                merged[name] = a
                continue
            if isinstance(a.type, WeakLiteral) or isinstance(b.type, WeakLiteral):
                # an unrolled loop's counter (or a ternary side) is a literal per path: the merge
                # needs a concrete type, so give the literals the type `select` infers for the pair
                a, b = self._unify_branch_values(name, a, b)
            if a.type != b.type:
                raise self.error(self._merge_mismatch(name, a.type, b.type))
            if isinstance(a.type, _ARRAY_LIKE):
                if name.startswith("__ifexp"):
                    raise self.error("'a if c else b' cannot choose between arrays inside a kernel")
                raise self.error(f"array variable '{name}' cannot be rebound inside a branch")
            out = Var(a.type, name)
            row, _, _ = registry.resolve("select", [T.bool_, a.type, a.type])
            self.emit(Call(out, row, [cond, a, b]))
            merged[name] = out
        self.symtab = merged

    @staticmethod
    def _merge_mismatch(name, ta, tb):
        shown = [T.type_repr(t) if not isinstance(t, WeakLiteral) else repr(t) for t in (ta, tb)]
        if name.startswith("__ifexp"):
            return f"the two sides of 'a if c else b' have different types: {shown[0]} and {shown[1]}"
        return f"'{name}' has type {shown[0]} on one branch and {shown[1]} on the other"

    def _unify_branch_values(self, name, a, b):
        """Concrete values for a branch merge where one side (or both) is a weak literal.
        The constants are emitted after the If: they do not depend on the path taken."""
        if isinstance(a.type, WeakLiteral) and isinstance(b.type, WeakLiteral):
            t = T.float32 if (a.type.is_float or b.type.is_float) else T.int32
            return self.materialize(a, t), self.materialize(b, t)
        res = registry.resolve("select", [T.bool_, a.type, b.type])
        if res is None:
            raise self.error(self._merge_mismatch(name, a.type, b.type))
        _, _, concrete = res
        return self.materialize(a, concrete[1]), self.materialize(b, concrete[2])

    def stmt_Break(self, s):
        if not self.loop_stack:
            raise self.error("'break' outside a loop")
        self.assign(self.loop_stack[-1]["brk"], self.const(True, T.bool_))

    def stmt_Continue(self, s):
        if not self.loop_stack:
            raise self.error("'continue' outside a loop")
        self.assign(self.loop_stack[-1]["cont"], self.const(True, T.bool_))

    def stmt_Return(self, s):
        if self.kind == "kernel" or self.kind == "grad":
            if s.value is not None:
                raise self.error("a kernel cannot return a value (write results to an output array)")
            if self.kind == "kernel":
                self.assign("__ret", self.const(True, T.bool_))
            return
        if s.value is None:
            self.assign("__ret", self.const(True, T.bool_))
            return
        vals = [self.expr(e) for e in s.value.elts] if isinstance(s.value, ast.Tuple) else [self.expr(s.value)]
        if self.ret_types is None:
            raise _RetryWithReturnTypes(tuple(self.materialize(v).type if isinstance(v.type, WeakLiteral) else v.type for v in vals))
        if len(vals) != len(self.ret_types):
            raise self.error(f"return gives {len(vals)} value(s) but the function returns {len(self.ret_types)}")
        for k, (v, t) in enumerate(zip(vals, self.ret_types)):
            self.assign(f"__retval{k}", self._convert(v, t, what="return value"))
        self.assign("__ret", self.const(True, T.bool_))

    # -- loops ---------------------------------------------------------------------------
    def stmt_For(self, s):
        if s.orelse:
            raise self.error("for/else is not supported in kernels")
        it = s.iter
        if not (isinstance(it, ast.Call) and self._static_value(it.func, default=None) is pybuiltins.range):
            raise self.error("kernels loop only over range(...)")
        if not isinstance(s.target, ast.Name):
            raise self.error("the loop variable must be a plain name")
        args = [self._range_arg(a) for a in it.args]
        if len(args) == 1:
            start, stop, step = Var(WEAK_INT, const=0), args[0], Var(WEAK_INT, const=1)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], Var(WEAK_INT, const=1)
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise self.error("range() takes 1 to 3 arguments")
        if all(v.const is not None for v in (start, stop, step)) and all(isinstance(v.type, WeakLiteral) for v in (start, stop, step)):
            values = list(range(start.const, stop.const, step.const))
            if len(values) <= config.max_unroll:
                self._unrolled(s, values)
                return
        start, stop, step = (self.materialize(v, T.int32) for v in (start, stop, step))
        self._dynamic_loop(s, "range", (start, stop, step))

    def _range_arg(self, node):
        """A range bound: an integer known at compile time (a literal, -3, a module constant,
        2 * COUNT) stays a literal, so that small constant ranges unroll; others become int32."""
        v = self.expr(node)
        if isinstance(v.type, WeakLiteral):
            if v.type.is_float:
                raise self.error("range() takes integers", node)
            return v
        return self._convert(v, T.int32, what="range argument")

    def stmt_While(self, s):
        if s.orelse:
            raise self.error("while/else is not supported in kernels")
        self._dynamic_loop(s, "while", None)

    def _loop_flags(self, s, uid):
        has_break = any(self._has_loop_exit(b) and any(isinstance(n, ast.Break) for n in self._own_loop_nodes(b)) for b in s.body)
        has_cont = any(isinstance(n, ast.Continue) for b in s.body for n in self._own_loop_nodes(b))
        has_ret = any(isinstance(n, ast.Return) for n in ast.walk(s))
        return has_break, has_cont, has_ret

    @staticmethod
    def _own_loop_nodes(node):
        stack = [node]
        while stack:
            n = stack.pop()
            yield n
            if isinstance(n, (ast.For, ast.While)) and n is not node:
                continue
            stack.extend(ast.iter_child_nodes(n))

    def _unrolled(self, s, values):
        self.loop_counter += 1
        uid = self.loop_counter
        has_break, has_cont, has_ret = self._loop_flags(s, uid)
        ctx = {"brk": f"__brk{uid}" if (has_break or has_ret) else None, "cont": f"__cont{uid}" if has_cont else None}
        if ctx["brk"]:
            self.assign(ctx["brk"], self.const(False, T.bool_))
        self.loop_stack.append(ctx)
        before = set(self.symtab)
        prior = self.symtab.get(s.target.id)
        try:
            for k, value in enumerate(values):
                def one(value=value):
                    self.symtab[s.target.id] = Var(WEAK_INT, const=value)
                    if ctx["cont"]:
                        self.assign(ctx["cont"], self.const(False, T.bool_))
                    self.stmts(s.body)
                if k > 0 and ctx["brk"]:
                    stop = self.symtab[ctx["brk"]]
                    if has_ret:
                        stop = self.call("logical_or", [stop, self.symtab["__ret"]])
                    self.emit_if(self.call("logical_not", [stop]), one, None)
                else:
                    one()
        finally:
            self.loop_stack.pop()
        last = self.symtab.get(s.target.id)
        if prior is not None and last is not None and isinstance(last.type, WeakLiteral) and T.is_int(prior.type):
            # the counter name was bound before the loop (e.g. carried by an enclosing dynamic
            # loop): its last value keeps that name's integer type, as the name has in Python
            self.assign(s.target.id, self.materialize(last, prior.type))
        for name in list(self.symtab):
            if name not in before and not name.startswith("__"):
                del self.symtab[name]

    def _assigned_names(self, nodes):
        names = set()
        for node in nodes:
            for n in ast.walk(node):
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    for t in targets:
                        names |= _target_names(t)
                elif isinstance(n, (ast.For,)):
                    for m in ast.walk(n.target):
                        if isinstance(m, ast.Name):
                            names.add(m.id)
                elif isinstance(n, ast.Call) and n.args:
                    fn = self._static_value(n.func, default=None)
                    if isinstance(fn, BuiltinStub):
                        outs = _OUT_ARGUMENT_FORMS.get(fn.name)
                        if outs and len(n.args) == 1 + len(outs):   # svd3(A, U, sigma, V) assigns U, sigma, V
                            names |= {a.id for a in n.args[1:] if isinstance(a, ast.Name)}
                        for k in registry.mutated_args(fn.name):
                            if k < len(n.args) and isinstance(n.args[k], ast.Name):
                                names.add(n.args[k].id)
                elif isinstance(n, ast.NamedExpr):
                    names.add(n.target.id)
        return names

    def _dynamic_loop(self, s, kind, rng):
        self.loop_counter += 1
        uid = self.loop_counter
        has_break, has_cont, has_ret = self._loop_flags(s, uid)
        ctx = {"brk": f"__brk{uid}" if has_break else None, "cont": f"__cont{uid}" if has_cont else None}
        if ctx["brk"]:
            self.assign(ctx["brk"], self.const(False, T.bool_))
        names = self._assigned_names(s.body + ([s.test] if kind == "while" else []))
        if kind == "range":
            # a counter name bound before the loop keeps its last value after it (Python, Warp 1.19)
            names.add(s.target.id)
        if has_ret:
            names |= {"__ret"} | {f"__retval{k}" for k in range(len(self.ret_types or ()))}
        if ctx["brk"]:
            names.add(ctx["brk"])
        carried = []
        before = dict(self.symtab)
        for name in sorted(n for n in names if n in self.symtab):
            init = self.symtab[name]
            if isinstance(init.type, _ARRAY_LIKE):
                continue
            entry = Var(init.type, name)
            carried.append(Carried(name, init, entry))
            self.symtab[name] = entry
        loop = Loop(kind, carried, Block(), uid=uid)
        if kind == "range":
            loop.start, loop.stop, loop.step = rng
            loop.counter = Var(T.int32, s.target.id)
            if self._nonneg(loop.start) and loop.step.const is not None and loop.step.const > 0:
                self._nonneg_ids.add(loop.counter.id)
        else:
            self.blocks.append(loop.cond_block)
            loop.cond = self.truth(self.expr(s.test))
            self.blocks.pop()
        stop_names = [n for n in (ctx["brk"], "__ret" if has_ret else None) if n]
        self.blocks.append(loop.body)
        self.loop_stack.append(ctx)
        try:
            if kind == "range":
                self.symtab[s.target.id] = loop.counter
            if ctx["cont"]:
                self.assign(ctx["cont"], self.const(False, T.bool_))
            self.stmts(s.body)
        finally:
            self.loop_stack.pop()
            self.blocks.pop()
        for c in carried:
            ex = self.symtab.get(c.name)
            if ex is None:
                raise self.error(f"'{c.name}' is not defined on every path through the loop body")
            if ex.type != c.init.type:
                raise self.error(f"'{c.name}' changes type inside the loop ({T.type_repr(c.init.type)} -> {T.type_repr(ex.type)}); "
                                 f"give it its final type before the loop, e.g. {c.name} = float(0)")
            c.exit = ex
        loop.brk = [c.entry for c in carried if c.name in stop_names]
        self.symtab = dict(before)
        for c in carried:
            c.result = Var(c.init.type, c.name)
            self.symtab[c.name] = c.result
        self.emit(loop)
        self.ir.loops.append(loop)

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e) -> Var:
        prev, self.node = self.node, e if hasattr(e, "lineno") else self.node
        try:
            meth = getattr(self, "expr_" + type(e).__name__, None)
            if meth is None:
                raise self.error(f"unsupported expression '{type(e).__name__}' in a kernel")
            r = meth(e)
            if isinstance(r, _Attr):
                raise self.error("this attribute can only be indexed, e.g. arr.shape[0]")
            return r
        finally:
            self.node = prev

    def expr_Constant(self, e):
        if isinstance(e.value, str):
            raise self.error("strings are only allowed in print()/printf()")
        if e.value is None:
            raise self.error("None is not a kernel value")
        return self.const(e.value) if not isinstance(e.value, bool) else self.const(e.value, T.bool_)

    def expr_Name(self, e):
        if e.id in self.symtab:
            return self.symtab[e.id]
        val = self._static_value(e)
        return self._value_to_var(val, e)

    def _value_to_var(self, val, node):
        if isinstance(val, (bool, np.bool_)):
            return self.const(bool(val), T.bool_)
        if isinstance(val, (int, float, np.integer, np.floating)):
            return self.const(val)
        if isinstance(val, T.scalar_base):
            return self.const(val.value, type(val))
        if isinstance(val, T._CompositeValue):
            comps = [self.const(float(x) if type(val)._dtype._is_float else int(x), type(val)._dtype) for x in val._v.ravel()]
            out = Var(type(val))
            self.emit(Construct(out, comps))
            return out
        name = getattr(node, "id", None) or ast.unparse(node)
        raise self.error(f"'{name}' is not a kernel value (found {type(val).__name__}); "
                         "kernels can use arguments, locals, numbers and kc.constant values")

    def _eval_static(self, call):
        """The Python value of ``kc.static(expr)``, evaluated now (when the kernel is built)."""
        if len(call.args) != 1 or call.keywords:
            raise self.error("kc.static() takes one expression", call)
        text = ast.unparse(call.args[0])
        scope = dict(self.defn.globals)
        scope.update(self.defn.nonlocals)
        # counters of unrolled loops (and other locals known at compile time) by value
        scope.update({n: v.const for n, v in self.symtab.items() if v.const is not None and not n.startswith("__")})
        try:
            return eval(compile(ast.Expression(call.args[0]), self.defn.file, "eval"), scope)
        except Exception as ex:
            raise self.error(f"kc.static({text}) could not be evaluated when the kernel was built: "
                             f"{type(ex).__name__}: {ex}", call) from None

    def _static_value(self, node, default=KeyError):
        """Evaluate a Name/Attribute chain in the function's globals/closure at compile time."""
        if isinstance(node, ast.Call):
            from . import kernel_api

            if self._static_value(node.func, default=None) is kernel_api.static:
                return self._eval_static(node)
        if isinstance(node, ast.Name):
            for scope in (self.defn.nonlocals, self.defn.globals, vars(pybuiltins)):
                if node.id in scope:
                    return scope[node.id]
            if default is not KeyError:
                return default
            if self.defn.unassigned_free_name(node.id):
                raise self.error(f"'{node.id}' is not assigned yet in the function that encloses '{self.defn.name}': "
                                 f"assign it before the first launch", node)
            raise self.error(f"unknown name '{node.id}': a kernel sees its arguments, its locals and the names of its "
                             "module and enclosing functions (pass other values as arguments)", node)
        if isinstance(node, ast.Attribute):
            base = self._static_value(node.value, default)
            if base is default and default is not KeyError:
                return default
            try:
                return getattr(base, node.attr)
            except AttributeError:
                if default is not KeyError:
                    return default
                raise self.error(f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'", node) from None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):  # e.g. shape=(2, 3)
            return tuple(self._static_value(e, default) for e in node.elts)
        if default is not KeyError:
            return default
        raise self.error("expected a name here", node)

    def expr_Attribute(self, e):
        if isinstance(e.value, ast.Name) and e.value.id in self.symtab or not self._is_static_chain(e.value):
            base = self.expr(e.value)
            bt = base.type
            if isinstance(bt, _ARRAY_LIKE):
                if e.attr == "shape":
                    return _Attr("shape", base)
                raise self.error(f"arrays have no attribute '{e.attr}' inside kernels (use .shape[k])")
            if T.is_struct(bt):
                if e.attr not in bt._fields:
                    raise self.error(f"struct {bt._name} has no field '{e.attr}'")
                out = Var(bt._fields[e.attr])
                self.emit(GetAttr(out, base, e.attr))
                root = self._field_path.get(base) or ((base.label,) if base in self.arg_vars else None)
                if root is not None:
                    self._field_path[out] = root + (e.attr,)
                return out
            if (T.is_vector(bt) or T.is_quat(bt)) and len(e.attr) == 1 and e.attr in "xyzw" and "xyzw".index(e.attr) < bt._length:
                return self.call("extract", [base, self.const("xyzw".index(e.attr), T.int32)])
            if T.is_transform(bt) and e.attr in ("p", "q"):
                return self.call("transform_get_translation" if e.attr == "p" else "transform_get_rotation", [base])
            raise self.error(f"{T.type_repr(bt)} has no attribute '{e.attr}'")
        return self._value_to_var(self._static_value(e), e)

    def _is_static_chain(self, node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in self.symtab

    def expr_Subscript(self, e):
        if isinstance(e.value, ast.Attribute) and e.value.attr == "shape" and not self._is_static_chain(e.value.value):
            base = self.expr_Attribute(e.value)   # arr.shape of a local array: an _Attr
            if isinstance(base, _Attr):
                k = self.expr(e.slice)
                if k.const is None:
                    raise self.error("arr.shape[k] needs a constant k")
                return self.call("array_shape", [base.var, self.const(int(k.const), T.int32)])
        base = self.expr(e.value)
        bt = base.type
        idx = self._indices(e.slice)
        if isinstance(bt, T.IndexedArrayType):
            data, idx = self._indexed_access(base, idx, e)
            return self.call("load", [data] + idx)
        if isinstance(bt, ArrayType):
            if len(idx) > bt.ndim:
                raise self.error(f"too many indices ({len(idx)}) for a {bt.ndim}-d array")
            if len(idx) < bt.ndim and len(idx) == 1:
                return self.call("view", [base, idx[0]])
            if len(idx) < bt.ndim:
                raise self.error(f"a {bt.ndim}-d array needs {bt.ndim} indices (or exactly 1 for a view), got {len(idx)}")
            return self.call("load", [base] + idx)
        if T.is_composite(bt):
            return self.call("extract", [base] + self._component_indices(bt, idx))
        if isinstance(bt, T.Tuple):
            k = idx[0].const
            if k is None:
                raise self.error("tuple index must be a constant")
            out = Var(bt.types[k])
            self.emit(GetAttr(out, base, f"f{k}"))
            return out
        raise self.error(f"cannot index a value of type {T.type_repr(bt)}")

    def binop(self, op, a, b):
        if op == "mul" and T.is_composite(a.type) and T.is_composite(b.type) and a.type._kind == "vector" and b.type._kind == "vector":
            raise self.error("vector * vector is ambiguous: use kc.dot, kc.cw_mul or kc.outer")
        if op == "pow" and isinstance(b.type, WeakLiteral) and b.const == 2 and not isinstance(a.type, WeakLiteral):
            return self.call("mul", [a, a])
        return self.call(op, [a, b])

    def expr_BinOp(self, e):
        op = _BINOPS.get(type(e.op))
        if op is None:
            raise self.error(f"unsupported operator {type(e.op).__name__}")
        return self.binop(op, self.expr(e.left), self.expr(e.right))

    def expr_UnaryOp(self, e):
        v = self.expr(e.operand)
        if isinstance(e.op, ast.USub):
            if v.const is not None and isinstance(v.type, WeakLiteral):
                return Var(v.type, const=-v.const)
            return self.call("neg", [v])
        if isinstance(e.op, ast.UAdd):
            return v
        if isinstance(e.op, ast.Not):
            return self.call("logical_not", [self.truth(v)])
        if isinstance(e.op, ast.Invert):
            return self.call("invert", [v])
        raise self.error("unsupported unary operator")

    def truth(self, v):
        if v.type is T.bool_:
            return v
        if isinstance(v.type, WeakLiteral):
            return self.const(bool(v.const), T.bool_)
        return self.call("truth", [v])

    def expr_BoolOp(self, e):
        return self._short_circuit(e.values, isinstance(e.op, ast.And))

    def _short_circuit(self, nodes, is_and):
        """``a and b and ...`` / ``a or b or ...`` as Python runs them: an operand is evaluated
        only when the ones before it left the result open, so ``i < n and a[i] > 0.0`` never
        reads a[n] and the adjoint never differentiates an operand that was not evaluated.
        Lowered to an If (the rest of the chain in the branch) and a select of booleans."""
        first = self.truth(self.expr(nodes[0]))
        if len(nodes) == 1:
            return first
        if first.const is not None:
            # known at compile time: `False and ...` / `True or ...` decide here
            return first if bool(first.const) != is_and else self._short_circuit(nodes[1:], is_and)
        name = self._hidden_name("__bool")
        self.symtab[name] = first

        def rest():
            self.symtab[name] = self._short_circuit(nodes[1:], is_and)

        if is_and:
            self.emit_if(first, rest, None)
        else:
            self.emit_if(first, lambda: None, rest)
        self._flatten_harmless_if()
        return self.symtab.pop(name)

    def _hidden_name(self, prefix):
        """A symbol-table name no user code can spell, for values merged across branches."""
        self.hidden_counter += 1
        return f"{prefix}{self.hidden_counter}"

    def expr_Compare(self, e):
        left = self.expr(e.left)
        acc = None
        for op, right_node in zip(e.ops, e.comparators):
            name = _CMPOPS.get(type(op))
            if name is None:
                raise self.error(f"unsupported comparison {type(op).__name__}")
            right = self.expr(right_node)
            r = self.call(name, [left, right])
            acc = r if acc is None else self.call("logical_and", [acc, r])
            left = right
        return acc

    def expr_IfExp(self, e):
        """``a if c else b``: only the taken side is evaluated (and so differentiated), as in
        Python; e.g. ``kc.sqrt(d) if d > 0.0 else 0.0`` has a finite gradient for d <= 0.
        Lowered like an if statement: each side in its branch, then a select."""
        c = self.truth(self.expr(e.test))
        if c.const is not None and self._is_static_cond(e.test):
            return self.expr(e.body if c.const else e.orelse)
        name = self._hidden_name("__ifexp")

        def side(node):
            def run():
                self.symtab[name] = self.expr(node)   # a literal stays weak until the merge
            return run

        self.emit_if(c, side(e.body), side(e.orelse))
        self._flatten_harmless_if()
        return self.symtab.pop(name)

    def _flatten_harmless_if(self):
        """Undo the branch of a short-circuit or conditional expression whose sides cannot be
        told apart from eager evaluation: only constants and pure integer/boolean arithmetic
        (comparisons, logic, no loads, no division that could trap, nothing with an adjoint).
        ``i < n and j < m`` or ``1.0 if c else 0.0`` then stay one straight block that the C++
        compiler turns into branch-free code and the adjoint can reorder."""
        stmts = self.block.stmts
        k = len(stmts) - 1
        while k >= 0 and not isinstance(stmts[k], If):
            k -= 1
        tail = stmts[k + 1:]
        selects = [st for st in tail if isinstance(st, Call) and st.builtin.name == "select"]
        if k < 0 or len(selects) > 1 or len(selects) + sum(isinstance(st, Const) for st in tail) != len(tail):
            return   # the branches also rebound other names (several selects)
        branch = stmts[k]
        if all(_harmless(st) for st in branch.body.stmts + branch.orelse.stmts):
            stmts[k:] = branch.body.stmts + branch.orelse.stmts + tail

    def expr_Tuple(self, e):
        raise self.error("tuples are only allowed in assignments and return statements")

    def _is_tid_call(self, node):
        from . import kernel_api

        return isinstance(node, ast.Call) and self._static_value(node.func, default=None) is kernel_api.tid

    # -- calls ------------------------------------------------------------------------------
    def expr_Call(self, e):
        from . import kernel_api
        from .function import Function

        if isinstance(e.func, ast.Name) and e.func.id in self.symtab:
            raise self.error(f"'{e.func.id}' is a value, not a function")
        if self._static_value(e.func, default=None) is kernel_api.static:
            return self._value_to_var(self._eval_static(e), e)
        if isinstance(e.func, ast.Attribute):
            self._reject_method_call(e.func)
        fn = self._static_value(e.func)
        if fn is kernel_api.tid:
            if e.args:
                raise self.error("kc.tid() takes no arguments")
            if self.kind != "kernel":
                raise self.error("kc.tid() is only available in a @kc.kernel; pass the thread index to the function as an argument")
            self.ir.tid_arity = max(self.ir.tid_arity, 1)
            out = Var(T.int32)
            self.emit(Tid(out, -1))
            self._nonneg_ids.add(out.id)
            return out
        if fn is pybuiltins.print:
            return self._print(e)
        if fn is kernel_api.printf:
            return self._printf(e)
        if fn is pybuiltins.len:
            v = self.expr(e.args[0])
            if isinstance(v.type, _ARRAY_LIKE):
                return self.call("array_len", [v])
            if T.is_composite(v.type):
                return self.const(v.type._length, T.int32)
            raise self.error("len() needs an array or a vector")
        if fn is pybuiltins.range:
            raise self.error("range() is only allowed as the iterable of a for loop")
        if isinstance(fn, Function):
            return self._call_function(fn, e)
        if fn in (float, int, bool) or T.is_scalar(fn):
            if len(e.args) != 1:
                raise self.error(f"{getattr(fn, '__name__', fn)}() takes one argument")
            return self._convert(self.expr(e.args[0]), T.type_from_annotation(fn), explicit=True)
        if T.is_composite(fn):
            return self._construct(fn, e)
        if fn in (T.vector, T.matrix):
            return self._construct_generic(fn, e)
        if fn is kernel_api.identity:
            return self._identity(e)
        if T.is_struct(fn):
            if e.args or e.keywords:
                raise self.error("struct constructors take no arguments inside kernels; set fields afterwards")
            out = Var(fn)
            self.emit(Construct(out, []))
            return out
        name = None
        if isinstance(fn, BuiltinStub):
            name = fn.name
        elif fn in _PY_BUILTIN_FUNCS:
            name = _PY_BUILTIN_FUNCS[fn]
        if name is not None:
            if e.keywords:
                raise self.error(f"kc.{name}() takes no keyword arguments")
            if name in _OUT_ARGUMENT_FORMS and len(e.args) == 1 + len(_OUT_ARGUMENT_FORMS[name]):
                return self._call_with_out_arguments(name, e)
            args = [self.expr(a) for a in e.args]
            for k in registry.mutated_args(name):
                # the native call updates this argument in place: give it a fresh SSA value first
                if k < len(e.args) and isinstance(e.args[k], ast.Name) and e.args[k].id in self.symtab:
                    fresh = Var(self.materialize(args[k]).type, e.args[k].id)
                    self.emit(Copy(fresh, self.materialize(args[k])))
                    self.symtab[e.args[k].id] = fresh
                    args[k] = fresh
            return self.call(name, args)
        fname = ast.unparse(e.func)
        raise self.error(f"cannot call '{fname}' inside a kernel: it is not a kernelcore builtin or a @kc.func")

    def _call_with_out_arguments(self, name, e):
        """``kc.svd3(A, U, sigma, V)``: the tuple form's results assigned to the local variables
        given as outputs (each must exist with the result's type, as Warp requires); an
        assignment like any other, so the adjoint flows through it unchanged."""
        outs = e.args[1:]
        res = self.call(name, [self.expr(e.args[0])], e)
        for k, (node, role) in enumerate(zip(outs, _OUT_ARGUMENT_FORMS[name])):
            want = res.type.types[k]
            if not isinstance(node, ast.Name) or node.id not in self.symtab:
                raise self.error(f"kc.{name}(A, {', '.join(_OUT_ARGUMENT_FORMS[name])}): output '{role}' must be a local "
                                 f"variable defined before the call (e.g. {role} = kc.{T.type_repr(want)}()), "
                                 f"got '{ast.unparse(node)}'", node)
            have = self.symtab[node.id].type
            if have != want:
                shown = T.type_repr(have) if not isinstance(have, WeakLiteral) else repr(have)
                raise self.error(f"kc.{name}: output '{role}' ('{node.id}') is a {shown}; for this A it must be a "
                                 f"{T.type_repr(want)}", node)
            out = Var(want)
            self.emit(GetAttr(out, res, f"f{k}"))
            self.assign(node.id, out)
        return None

    def _reject_method_call(self, func):
        """obj.method(...) where obj is a value (an array, a vector, ...): kernels have no methods."""
        from .array import array as host_array

        base = func.value
        if isinstance(base, ast.Name) and base.id in self.symtab:
            t = self.symtab[base.id].type
        else:
            value = self._static_value(base, default=None)
            if not isinstance(value, host_array):
                return
            t = ArrayType(value.dtype, value.ndim)
        call = f"{ast.unparse(func)}()"
        if isinstance(t, _ARRAY_LIKE):
            raise self.error(f"{call}: arrays have no methods inside kernels; call array methods such as fill_(), "
                             f"zero_() or numpy() from Python before or after kc.launch, or write elements here (a[i] = ...)")
        raise self.error(f"{call}: a {T.type_repr(t)} value has no methods inside kernels; use the kc.{func.attr}(...) "
                         "builtin form if there is one")

    def _call_function(self, fn, e):
        pos = [self.expr(a) for a in e.args]
        if any(isinstance(a.type, T.IndexedArrayType) for a in pos):
            raise self.error(f"an indexedarray cannot be passed to @kc.func '{fn.name}': read or write its elements in "
                             "the kernel and pass those (or pass the underlying array and its index arrays)")
        kw = {}
        for k in e.keywords:
            if k.arg is None:
                raise self.error(f"'**' arguments are not supported in calls to kernel function '{fn.name}'")
            kw[k.arg] = self.expr(k.value)
        args, inst, concrete = self._bind_call(fn, pos, kw)
        args = [self.materialize(a, t) for a, t in zip(args, concrete)]
        if inst not in self.ir.funcs:
            self.ir.funcs.append(inst)
        rt = inst.result_type
        out = Var(rt) if rt is not None else None
        self.emit(FuncCall(out, inst, args))
        for a, flags, param in zip(args, inst.array_flags(), inst.defn.arg_names):
            path = self._field_path.get(a)
            if path is not None and isinstance(a.type, ArrayType):
                if flags[0]:
                    self.ir.field_reads.add(path)
                if flags[1]:
                    self.ir.field_writes.add(path)
            root = path or ((a.label,) if a in self.arg_vars else None)
            if root is not None and T.is_struct(a.type) and inst.ir is not None:
                self.ir.field_reads.update(root + p[1:] for p in inst.ir.field_reads if p[0] == param)
                self.ir.field_writes.update(root + p[1:] for p in inst.ir.field_writes if p[0] == param)
            if a in self.arg_vars and isinstance(a.type, ArrayType):
                if flags[0]:
                    self.ir.array_reads.add(a.label)
                if flags[1]:
                    self.ir.array_writes.add(a.label)
        return out

    def _bind_call(self, fn, pos, kw):
        """Match positional, keyword and default arguments to an overload of ``fn``:
        (argument values in parameter order, FuncInstance, concrete types)."""
        problems = []
        for defn in reversed(fn.overloads):
            names = defn.arg_names
            if len(pos) > len(names):
                problems.append(f"{fn.name}() takes {len(names)} arguments, got {len(pos)} positional")
                continue
            bound = dict(zip(names, pos))
            bad = [k for k in kw if k not in names or k in bound]
            if bad:
                k = bad[0]
                problems.append(f"{fn.name}() got an unexpected keyword argument '{k}'" if k not in names
                                else f"{fn.name}() got argument '{k}' twice")
                continue
            bound.update(kw)
            missing = [n for n in names if n not in bound and n not in defn.defaults]
            if missing:
                problems.append(f"{fn.name}() is missing argument '{missing[0]}'")
                continue
            for n in names:
                if n not in bound:
                    bound[n] = self._default_value(fn, defn, n)
            args = [bound[n] for n in names]
            found = fn.match(defn, [a.type for a in args], self.error)
            if found is not None:
                return (args,) + found
        if problems and len(problems) == len(fn.overloads):
            raise self.error(problems[0] if len(set(problems)) == 1 else "; ".join(dict.fromkeys(problems)))
        inst, concrete = fn.resolve([a.type for a in pos], self.error, keywords=list(kw))
        return pos, inst, concrete

    def _default_value(self, fn, defn, name):
        value = defn.defaults[name]
        try:
            return self._value_to_var(value, self.node)
        except KernelCompileError:
            raise self.error(f"the default value {value!r} of argument '{name}' of '{fn.name}' is not a kernel value "
                             "(numbers, booleans, kc.constant and vector/matrix values are)") from None

    def _convert(self, v, t, explicit=False, what="value"):
        """Coerce v to type t: literals adapt; explicit casts convert scalars and composites."""
        if v.type == t:
            return v
        if isinstance(v.type, WeakLiteral):
            if T.is_scalar(t):
                return self.materialize(v, t, wrap=explicit)
            if T.is_composite(t) and explicit:
                out = Var(t)
                self.emit(Construct(out, [self.materialize(v, t._dtype, wrap=True)]))
                return out
        if explicit and T.is_scalar(t) and T.is_scalar(v.type):
            row = Builtin("cast", ["S"], t, "kc::cast", differentiable=T.is_float(t) and T.is_float(v.type))
            out = Var(t)
            self.emit(Call(out, row, [v], template=t._ctype))
            return out
        if explicit and T.is_composite(t) and T.is_composite(v.type) and t._shape == v.type._shape:
            out = Var(t)
            self.emit(Construct(out, [v]))
            return out
        if not explicit and what in ("index", "range argument") and T.is_int(t) and T.is_int(v.type):
            return self._convert(v, t, explicit=True)   # any integer type indexes and counts
        raise self.error(f"expected {T.type_repr(t)} for {what}, got {T.type_repr(v.type) if not isinstance(v.type, WeakLiteral) else repr(v.type)}"
                         + ("; convert explicitly, e.g. float(x) or kc.float64(x)" if T.is_scalar(t) else ""))

    def _construct(self, t, e):
        if e.keywords:
            raise self.error(f"{T.type_repr(t)}() takes positional arguments only")
        args = [self.expr(a) for a in e.args]
        n = int(np.prod(t._shape))
        if len(args) == 0:
            out = Var(t)
            self.emit(Construct(out, []))
            return out
        if len(args) == 1 and (T.is_scalar(args[0].type) or isinstance(args[0].type, WeakLiteral)):
            out = Var(t)
            self.emit(Construct(out, [self._convert(args[0], t._dtype, explicit=True)]))
            return out
        if len(args) == 1 and T.is_composite(args[0].type):
            return self._convert(args[0], t, explicit=True)
        flat = []
        count = 0
        for a in args:
            if isinstance(a.type, WeakLiteral) or T.is_scalar(a.type):
                flat.append(self._convert(a, t._dtype, explicit=isinstance(a.type, WeakLiteral)))
                count += 1
            elif T.is_composite(a.type) and a.type._dtype is t._dtype:
                flat.append(a)
                count += int(np.prod(a.type._shape))
            else:
                raise self.error(f"cannot build {T.type_repr(t)} from a {T.type_repr(a.type)}")
        if count != n:
            raise self.error(f"{T.type_repr(t)} needs {n} components, got {count}")
        out = Var(t)
        self.emit(Construct(out, flat))
        return out

    def _construct_generic(self, fn, e):
        from . import kernel_api

        kw = {k.arg: self._static_value(k.value) for k in e.keywords}
        dtype = T.type_from_annotation(kw.get("dtype", T.float32))
        if fn is T.vector:
            length = kw.get("length", len(e.args))
            t = T.vector(length, dtype)
        else:
            shape = kw.get("shape")
            if shape is None:
                raise self.error("kc.matrix(...) inside a kernel needs shape=(rows, cols)")
            t = T.matrix(shape, dtype)
        e2 = ast.Call(func=e.func, args=e.args, keywords=[])
        return self._construct(t, e2)

    def _identity(self, e):
        kw = {k.arg: self._static_value(k.value) for k in e.keywords}
        n = kw.get("n", self._static_value(e.args[0]) if e.args else None)
        dtype = T.type_from_annotation(kw.get("dtype", self._static_value(e.args[1]) if len(e.args) > 1 else T.float32))
        t = T.matrix((n, n), dtype)
        comps = [self.const(1 if i == j else 0, dtype) if not dtype._is_float else self.const(1.0 if i == j else 0.0, dtype)
                 for i in range(n) for j in range(n)]
        out = Var(t)
        self.emit(Construct(out, comps))
        return out

    def _print(self, e):
        items = []
        for k, a in enumerate(e.args):
            if k:
                items.append(" ")
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                items.append(a.value)
            else:
                v = self.materialize(self.expr(a))
                if not (T.is_scalar(v.type) or T.is_composite(v.type) or isinstance(v.type, ArrayType)):
                    raise self.error(f"print() cannot show a {T.type_repr(v.type)} value; print its fields or components")
                items.append(v)
        items.append("\n")
        self.emit(Print(items))
        self.ir.has_print = True
        return None

    def _printf(self, e):
        if not e.args or not (isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str)):
            raise self.error("kc.printf needs a constant format string first")
        args = [self.materialize(self.expr(a)) for a in e.args[1:]]
        for a in args:
            if not T.is_scalar(a.type):
                raise self.error("kc.printf takes scalar arguments; use print() for vectors")
        self.emit(Print(args, fmt=e.args[0].value))
        self.ir.has_print = True
        return None
