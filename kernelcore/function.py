"""@kc.func and its companions: overload sets, specialisations, custom grad/replay/native."""
from __future__ import annotations

import hashlib
import re
import types as _pytypes
from typing import Any

from . import types as T
from .array import ArrayType
from .builtins.registry import WeakLiteral
from .frontend import FuncDef, build_ir

_functions: dict = {}   # (module, qualname, closure) -> Function: redefinition with a new signature adds an overload
_building: dict = {}    # specialisations whose IR is being built (a second request is recursion)


class Function:
    """A kernel function: callable from kernels, specialised per argument types."""

    def __init__(self, name, module, closure=""):
        self.__name__ = name
        self.name = name
        self.module = module
        self.closure = closure   # captured values (closure_key): two closures of one def are two functions
        self.overloads: list[FuncDef] = []
        self.instances: dict = {}
        self.custom_grad: FuncDef | None = None
        self.custom_replay: FuncDef | None = None
        self.native = None  # (snippet, adj_snippet, replay_snippet)

    def add_overload(self, defn: FuncDef):
        sig = [T.type_key(defn.arg_types.get(n)) for n in defn.arg_names]
        self.overloads = [d for d in self.overloads if [T.type_key(d.arg_types.get(n)) for n in d.arg_names] != sig]
        self.overloads.append(defn)
        self.instances.clear()

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"kernel function '{self.name}' can only be called inside kernels or other kernel functions")

    def resolve(self, arg_types, error, keywords=()):
        """Pick the overload for these argument types and return (FuncInstance, concrete types)."""
        for defn in reversed(self.overloads):
            found = self.match(defn, arg_types, error)
            if found is not None:
                return found
        shown = ", ".join(repr(a) if isinstance(a, WeakLiteral) else T.type_repr(a) for a in arg_types)
        shown += "".join(f", {k}=..." for k in keywords)
        sigs = "; ".join(f"{self.name}(" + ", ".join(T.type_repr(d.arg_types[n]) for n in d.arg_names) + ")" for d in self.overloads)
        raise error(f"no overload of function '{self.name}' accepts ({shown}); candidates: {sigs}")

    def match(self, defn, arg_types, error=None):
        """(FuncInstance, concrete types) of overload ``defn`` for these argument types, or None."""
        if len(defn.arg_names) != len(arg_types):
            return None
        concrete = []
        for name, a in zip(defn.arg_names, arg_types):
            c = _match_param(defn.arg_types[name], a)
            if c is None:
                return None
            concrete.append(c)
        key = (id(defn), tuple(T.type_key(c) for c in concrete))
        inst = self.instances.get(key)
        if inst is None:
            if key in _building:
                raise (error or defn.error)(f"'{self.name}' calls itself (directly or through other functions): kernel "
                                            "functions cannot recurse; rewrite the recursion as a loop")
            _building[key] = None
            try:
                inst = FuncInstance(self, defn, concrete)
            finally:
                del _building[key]
            # cached before its custom grad/replay are built: they may call this function
            self.instances[key] = inst
            try:
                inst.build_custom()
            except BaseException:
                del self.instances[key]
                raise
        return inst, concrete


def _match_param(p, a):
    if p is Any:
        return a.default if isinstance(a, WeakLiteral) else a
    if isinstance(p, ArrayType):
        if not isinstance(a, ArrayType) or a.ndim != p.ndim:
            return None
        return a if (p.dtype is Any or a.dtype is p.dtype) else None
    if isinstance(a, WeakLiteral):
        if T.is_scalar(p) and p is not T.bool_ and (T.is_float(p) or not a.is_float):
            return p
        return None
    return p if a == p else None


class FuncInstance:
    """One specialisation of a Function for concrete argument types (emitted as C++)."""

    def __init__(self, function: Function, defn: FuncDef, arg_types):
        self.function = function
        self.defn = defn
        self.arg_types = list(arg_types)
        # the name says everything the C++ depends on (source, captured values, argument types), so two
        # instances with one name are the same code: a module emits it once (module._ordered_functions)
        key = (f"{defn.module}.{defn.fdef.name}:{defn.firstline}:" + ",".join(T.type_key(t) for t in arg_types)
               + (f"|{function.closure}" if function.closure else "")
               + "|" + hashlib.sha256(defn.source.encode()).hexdigest()[:12])
        self.cname = f"f_{defn.name}_{hashlib.sha256(key.encode()).hexdigest()[:10]}"
        self.native = function.native
        self.replay_ir = None
        self.grad_ir = None
        if self.native is not None:
            self.ir = None
            rt = defn.return_type
            self.result_type = None if not rt else (rt[0] if len(rt) == 1 else T.Tuple(rt))
            return
        self.ir = build_ir(defn, self.arg_types, "func")
        rts = self.ir.ret_types
        self.result_type = None if not rts else (rts[0] if len(rts) == 1 else T.Tuple(rts))

    def build_custom(self):
        """IR of the custom replay and grad (after the instance is cached: a custom grad may call
        its own forward function, e.g. d softplus = 1 - exp(-softplus(x)))."""
        function, rts = self.function, (self.ir.ret_types if self.ir is not None else None)
        if self.native is not None:
            return
        if function.custom_replay is not None:
            self.replay_ir = build_ir(function.custom_replay, self.arg_types, "replay", ret_hint=rts)
        if function.custom_grad is not None:
            g_types = list(self.arg_types) + ([self.result_type] if self.result_type is not None else [])
            self.grad_ir = build_ir(function.custom_grad, g_types, "grad")

    def array_flags(self):
        """(read, written) for each argument, for verify_autograd_array_access."""
        if self.ir is None:
            return [(True, True)] * len(self.arg_types)
        names = self.defn.arg_names
        return [(n in self.ir.array_reads, n in self.ir.array_writes) for n in names]

    def dependencies(self):
        deps = []
        for ir in (self.ir, self.replay_ir, self.grad_ir):
            if ir is not None:
                deps.extend(f for f in ir.funcs if f not in deps)
        return deps


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _value_key(v, depth=0) -> str:
    """A string that differs when a captured value would compile differently.  Stable across
    processes for what kernels can use as constants (numbers, strings, kernelcore types, other
    kernel functions and kernels, modules), so the kernel cache keeps hitting; anything else is
    keyed by identity, which is only correct, never stale."""
    if depth > 8:
        return f"id{id(v)}"
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_value_key(x, depth + 1) for x in v) + ")"
    if isinstance(v, Function):
        return f"F:{v.module}.{v.name}[{v.closure}]"
    if isinstance(v, _pytypes.ModuleType):
        return f"M:{v.__name__}"
    cname = getattr(v, "cname", None)       # a Kernel (its cname is unique within its module)
    if isinstance(cname, str):
        return f"K:{cname}"
    if isinstance(v, type) or hasattr(v, "_ctype"):
        try:
            return f"T:{T.type_key(v)}:{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', '')}"
        except Exception:
            pass
    r = repr(v)
    if _ADDRESS.search(r) is None and len(r) < 512:
        return f"{type(v).__qualname__}:{r}"
    return f"id{id(v)}"


def closure_key(pyfunc) -> str:
    """Key of the values a nested function captures from its enclosing function ("" for none).
    Names not yet assigned when the function is decorated (functions defined after it) are left
    out: they are read when the function compiles."""
    cells = pyfunc.__closure__ or ()
    parts = []
    for name, cell in zip(pyfunc.__code__.co_freevars, cells):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        parts.append(f"{name}={_value_key(value)}")
    if not parts:
        return ""
    return hashlib.sha256(";".join(parts).encode()).hexdigest()[:12]


def func(pyfunc=None, *, module=None):
    """Decorator: a function callable from kernels (overloaded by argument annotations).

    A ``@kc.func`` defined inside a factory function is one function per captured values:
    ``make(2.0)`` and ``make(3.0)`` each get their own, and both can be used in one kernel
    module; a redefinition that captures the same values adds (or replaces) an overload."""
    def wrap(f):
        defn = FuncDef(f, "func")
        closure = closure_key(f)
        key = (f.__module__, f.__qualname__, closure)
        fn = _functions.get(key)
        if fn is None:
            fn = Function(f.__name__, f.__module__, closure)
            _functions[key] = fn
        fn.add_overload(defn)
        fn.__doc__ = f.__doc__
        return fn

    return wrap(pyfunc) if pyfunc is not None else wrap


def func_grad(forward: Function):
    """Decorator: custom adjoint of ``forward``; use ``kc.adjoint[x] += ...`` inside."""
    def wrap(g):
        forward.custom_grad = FuncDef(g, "grad")
        forward.instances.clear()
        return g

    return wrap


def func_replay(forward: Function):
    """Decorator: custom forward used when the adjoint replays ``forward``."""
    def wrap(r):
        forward.custom_replay = FuncDef(r, "func")
        forward.instances.clear()
        return r

    return wrap


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None):
    """Decorator: a kernel function whose body is native C++/CUDA code (``snippet``)."""
    def wrap(f):
        defn = FuncDef(f, "func_native")
        fn = Function(f.__name__, f.__module__)
        fn.native = (snippet, adj_snippet, replay_snippet)
        fn.add_overload(defn)
        return fn

    return wrap
