"""Which kernel arguments a launch accumulates into, and how threads may share them.

A CPU launch on several threads must not lose updates when threads add into the same
array element. Compare-and-swap loops (the CPU has no atomic float add) are correct but,
contended on few cores, slower than one thread (P2G: 138 us on one thread, 524 us on two).
This analysis sorts every accumulation target of a kernel, per mode, into

``exclusive``
    every access indexes the element by the thread index itself (``x[tid]``), so no two
    threads touch one element: plain adds are safe on any number of threads;
``private``
    the array is only ever accumulated into (``+=``/``atomic_add``/``atomic_sub`` whose
    result is unused, or, in the adjoint, the gradient of an array that is only read):
    each thread may add into a zeroed private copy, summed into the array after the loop
    (emit_cpp writes that reduction; launch.py decides when the copy is worth it);
``shared``
    anything else (reads of the same array, min/max/cas/exch, results that are used,
    arrays passed to user functions that accumulate, or reached through structs): atomics, and the launch
    stays on one thread until it is large (``config.scatter_parallel_grain``).

"fwd" targets are data arrays (atomics); "bwd" targets are gradient arrays (adjoints of
reads). Forward atomics are skipped in the adjoint's replay and adjoint accumulation does
not happen in the forward, so each mode has one kind of target per array.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from . import types as T
from .array import ArrayType
from .ir import Call, Copy, FuncCall, Tid, use_counts

_ACCUMULATE = ("atomic_add", "atomic_sub")
_HARMLESS = ("array_len", "array_shape", "wrap_array_index")  # read only the descriptor
# element types a private copy can hold: whole numbers of float32/float64 (or int32/int64) scalars
_PRIVATE_SCALARS = {T.float32: "float", T.float64: "double", T.int32: "kc::int32", T.int64: "kc::int64"}


@dataclass
class Target:
    arg: int                 # index of the kernel argument
    kind: str                # "exclusive" or "private"
    scalar: str = ""         # C++ scalar type of the private copy ("private" only)
    ncomp: int = 1           # scalars per element
    itemsize: int = 0        # bytes per element


@dataclass
class Plan:
    shared: bool = False                               # some accumulation must stay atomic
    targets: list = field(default_factory=list)        # [Target]

    @property
    def private(self):
        return [t for t in self.targets if t.kind == "private"]

    @property
    def exclusive(self):
        return [t for t in self.targets if t.kind == "exclusive"]


def plan(ir, adjoint: bool) -> Plan:
    """The accumulation plan of kernel ``ir`` for its forward (False) or adjoint (True)."""
    key = "_accumulation_bwd" if adjoint else "_accumulation_fwd"
    p = getattr(ir, key, None)
    if p is None:
        p = _analyse(ir, adjoint)
        setattr(ir, key, p)
    return p


def _analyse(ir, adjoint):
    args = {v.id: k for k, v in enumerate(ir.args) if isinstance(v.type, ArrayType)}
    alias = {}          # Var id -> argument index, through copies
    tids = {}           # Var id -> Tid.dim
    accesses = {}       # argument index -> [(builtin name, index vars, result used)]
    out = Plan()
    stmts = list(ir.block.walk())
    for s in stmts:
        if isinstance(s, Copy) and isinstance(s.src.type, ArrayType):
            src = alias.get(s.src.id, args.get(s.src.id))
            if src is not None:
                alias[s.out.id] = src
        elif isinstance(s, Copy) and s.src.id in tids:
            tids[s.out.id] = tids[s.src.id]
        elif isinstance(s, Tid):
            tids[s.out.id] = s.dim
    used = use_counts(stmts, ir.ret_vars)  # Vars some statement reads

    def arg_of(v):
        return alias.get(v.id, args.get(v.id))

    passed = set()      # arguments handed to user functions that do not accumulate
    for s in stmts:
        if isinstance(s, FuncCall):
            arrays = [a for a in s.args if isinstance(a.type, ArrayType)]
            if not arrays:
                continue
            if adjoint:
                if _custom_grad_reads_only(s.func):
                    # a hand-written adjoint that only reads arrays (e.g. a scatter's gather of the
                    # grid's gradients, sim/mpm_scatter.py); the replay skips the forward's atomics
                    passed.update(arg_of(a) for a in arrays)
                else:
                    out.shared = True   # the automatic adjoint accumulates into the arrays' gradients
                continue
            if not _func_may_accumulate(s.func):
                passed.update(arg_of(a) for a in arrays)   # no accumulation there: threads stay independent
                continue
            # follow the function's accesses back to the kernel's arguments: a scatter written as a
            # kc.func is classified as if it were written in the kernel (private when add-only)
            sub = _func_accesses(s.func, set())
            if sub is None:
                out.shared = True   # the function may accumulate anywhere (or read what others add)
                continue
            for j, acc in sub.items():
                k = arg_of(s.args[j])
                if k is None:
                    out.shared = True
                else:
                    accesses.setdefault(k, []).extend((name, (), res_used) for name, res_used in acc)
            continue
        if not isinstance(s, Call):
            continue
        arrays = [a for a in s.args if isinstance(a.type, ArrayType)]
        if not arrays:
            continue
        name = s.builtin.name
        if name in _HARMLESS:
            continue
        k = arg_of(arrays[0])
        if k is None or not s.builtin.array_access:
            # an array reached through a struct field, or a view: we cannot follow it
            if _may_accumulate(name, arrays[0], adjoint):
                out.shared = True
            continue
        n = min(arrays[0].type.ndim, len(s.args) - 1)
        accesses.setdefault(k, []).append((name, s.args[1:1 + n], s.out is not None and s.out.id in used))

    for k, acc in sorted(accesses.items()):
        t = ir.args[k].type
        kind = _classify(t, acc, adjoint, tids, used, ir.tid_arity)
        if kind is None:
            continue
        if k in passed:
            kind = "shared"   # a function reads an array this kernel accumulates into
        if kind == "shared":
            out.shared = True
            continue
        target = Target(k, kind)
        if kind == "private":
            scalar, ncomp = _private_layout(t.dtype)
            if scalar is None:
                out.shared = True
                continue
            target.scalar, target.ncomp = scalar, ncomp
            target.itemsize = ctypes.sizeof(T.ctypes_of(t.dtype))
        out.targets.append(target)
    return out


def _func_may_accumulate(inst, seen=None) -> bool:
    """Whether calling user function ``inst`` (a FuncInstance) may accumulate into an array: an
    atomic on an array anywhere in its body or in the functions it calls.  Plain stores do not
    count: a kernel's own stores do not make its launch shared either (two threads storing to one
    element race whatever the thread count, as in Warp).  Native functions, and anything that
    cannot be followed, count as accumulating."""
    ir = getattr(inst, "ir", None)
    if getattr(inst, "native", None) is not None or ir is None:
        return True
    seen = set() if seen is None else seen
    if id(inst) in seen:
        return False   # recursion: already being examined
    seen.add(id(inst))
    for s in ir.block.walk():
        if isinstance(s, FuncCall):
            if any(isinstance(a.type, ArrayType) for a in s.args) and _func_may_accumulate(s.func, seen):
                return True
        elif isinstance(s, Call) and any(isinstance(a.type, ArrayType) for a in s.args):
            b = s.builtin
            if b.name not in _HARMLESS and (b.name.startswith("atomic_") or b.mutates):
                return True
    return False


def _func_accesses(inst, seen):
    """The array accesses of user function ``inst`` (a FuncInstance), its callees' included, by
    parameter: {parameter index: [(builtin name, whether its result is used)]}; None when they
    cannot be followed (native functions, recursion, arrays reached through structs or views)."""
    ir = getattr(inst, "ir", None)
    if getattr(inst, "native", None) is not None or ir is None or id(inst) in seen:
        return None
    seen = seen | {id(inst)}
    params = {v.id: k for k, v in enumerate(ir.args) if isinstance(v.type, ArrayType)}
    alias = {}
    stmts = list(ir.block.walk())
    for s in stmts:
        if isinstance(s, Copy) and isinstance(s.src.type, ArrayType):
            src = alias.get(s.src.id, params.get(s.src.id))
            if src is not None:
                alias[s.out.id] = src
    used = use_counts(stmts, ir.ret_vars)

    def param_of(v):
        return alias.get(v.id, params.get(v.id))

    out = {}
    for s in stmts:
        if isinstance(s, FuncCall):
            if not any(isinstance(a.type, ArrayType) for a in s.args):
                continue
            sub = _func_accesses(s.func, seen)
            if sub is None:
                return None
            for j, acc in sub.items():
                k = param_of(s.args[j])
                if k is None:
                    return None
                out.setdefault(k, []).extend(acc)
            continue
        if not isinstance(s, Call):
            continue
        arrays = [a for a in s.args if isinstance(a.type, ArrayType)]
        if not arrays or s.builtin.name in _HARMLESS:
            continue
        k = param_of(arrays[0])
        if k is None or not s.builtin.array_access:
            if _may_accumulate(s.builtin.name, arrays[0], False) or s.builtin.mutates:
                return None
            continue
        out.setdefault(k, []).append((s.builtin.name, s.out is not None and s.out.id in used))
    return out


def _custom_grad_reads_only(inst) -> bool:
    """Whether user function ``inst`` has a hand-written adjoint (kc.func_grad) that only reads
    arrays: its adjoint then accumulates into no array, whatever its forward does (the replay
    skips stores and atomics)."""
    ir = getattr(inst, "grad_ir", None)
    if ir is None:
        return False
    for s in ir.block.walk():
        if isinstance(s, FuncCall):
            if any(isinstance(a.type, ArrayType) for a in s.args) and _func_may_accumulate_or_store(s.func):
                return False
        elif isinstance(s, Call) and any(isinstance(a.type, ArrayType) for a in s.args):
            b = s.builtin
            if b.name not in _HARMLESS and (b.name.startswith("atomic_") or b.mutates or not b.array_access):
                return False
    return True


def _func_may_accumulate_or_store(inst) -> bool:
    """_func_may_accumulate, with plain stores counting too."""
    if _func_may_accumulate(inst):
        return True
    sub = _func_accesses(inst, set())
    return sub is None or any(name != "load" for acc in sub.values() for name, _ in acc)


def _may_accumulate(name, arr, adjoint):
    if adjoint:
        return name == "load" and T.is_differentiable_type(arr.type.dtype)
    return name.startswith("atomic_")


def _classify(t, acc, adjoint, tids, used, tid_arity):
    """None (not accumulated in this mode), "exclusive", "private" or "shared"."""
    names = {a[0] for a in acc}
    if adjoint:
        if "load" not in names or not T.is_differentiable_type(t.dtype):
            return None
        # stores and atomics read the gradient in the adjoint: then the gradient is not add-only
        add_only = names == {"load"}
    else:
        if not names & {"atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_cas", "atomic_exch"}:
            return None
        add_only = names <= set(_ACCUMULATE) and not any(res_used for _, _, res_used in acc)
    if all(_is_own_element(idx, t.ndim, tids, tid_arity) for _, idx, _ in acc):
        if adjoint or names <= set(_ACCUMULATE) | {"load", "store"}:
            return "exclusive"
    return "private" if add_only else "shared"


def _is_own_element(idx, ndim, tids, tid_arity):
    """Is the index exactly this thread's own grid point (so distinct threads never meet)?"""
    dims = [tids.get(v.id) for v in idx]
    if any(d is None for d in dims):
        return False
    if len(dims) == 1 and ndim == 1 and dims[0] == -1:
        return True                      # the flat thread index
    return tid_arity == ndim == len(dims) and sorted(dims) == list(range(ndim))


def _private_layout(dtype):
    if T.is_scalar(dtype):
        return _PRIVATE_SCALARS.get(dtype), 1
    if T.is_composite(dtype) and dtype._dtype in _PRIVATE_SCALARS:
        n = 1
        for d in dtype._shape:
            n *= d
        return _PRIVATE_SCALARS[dtype._dtype], n
    return None, 0
