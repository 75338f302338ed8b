"""Which array arguments' *values* a kernel's adjoint reads (for verify_autograd_array_access).

The adjoint of a kernel replays its forward from the arrays as they are when ``backward()``
runs. A store's adjoint consumes the gradient of the element it overwrote (kc_array.h), so
overwriting an array is exact whenever no adjoint needs the values it held: a linear
update ``b[i] = a[i] * c + d`` needs ``c`` but not ``a[i]``, so ping-ponging ``a`` and ``b``
between steps is exact, while ``b[i] = a[i] * a[i]`` needs ``a[i]`` and goes wrong once
``a`` is overwritten. This analysis tells the two apart, with the same rules the emitter
uses to drop replay values nothing reads (emit_cpp: ``_unread_values``, discarded
adjoints of constants and of a kernel's value arguments).

Conservative where it cannot follow: user functions that read an array argument, arrays
inside structs (not tracked, as elsewhere in the verifier), every builtin other than
load/store/atomics that takes an array, and loop control and branch conditions (always
treated as needed).
"""
from __future__ import annotations

from .array import ArrayType
from .ir import Call, Const, Copy, FuncCall, If, Loop, read_vars

# the adjoints of these read the gradient array only (and the indices)
_GRADIENT_ONLY = ("store", "atomic_add", "atomic_sub")
_DESCRIPTOR_ONLY = ("array_len", "array_shape", "view")


def adjoint_value_reads(ir) -> set:
    """Names of the kernel's array arguments whose element values its adjoint needs (cached on ``ir``)."""
    cached = getattr(ir, "_adjoint_value_reads", None)
    if cached is not None:
        return cached
    result = _analyse(ir)
    ir._adjoint_value_reads = result
    return result


def _analyse(ir) -> set:
    from .emit_cpp import _unread_values  # the emitter's own rule, so both agree

    stmts = list(ir.block.walk())
    arg_names = {v.id: v.label for v in ir.args if isinstance(v.type, ArrayType)}
    discarded = {s.out.id for s in stmts if isinstance(s, Const)}
    discarded |= {v.id for v in ir.args if not isinstance(v.type, ArrayType)}

    alias = {}    # array Var id -> argument name (copies and views of argument arrays)
    inputs = {}   # Var id -> ids of the values it is computed from
    for s in stmts:
        if isinstance(s, Loop):
            for c in s.carried:
                for v in (c.entry, c.result):
                    if v is not None:
                        inputs.setdefault(v.id, set()).update(x.id for x in (c.init, c.exit, c.entry) if x is not None)
            if s.counter is not None:
                inputs.setdefault(s.counter.id, set()).update(x.id for x in (s.start, s.step) if x is not None)
            continue
        out = getattr(s, "out", None)
        if out is None or isinstance(s, If):
            continue
        inputs.setdefault(out.id, set()).update(read_vars(s))
        if isinstance(s, Copy) and isinstance(s.src.type, ArrayType):
            name = alias.get(s.src.id, arg_names.get(s.src.id))
            if name is not None:
                alias[out.id] = name
        elif isinstance(s, Call) and s.builtin.name == "view":
            name = alias.get(s.args[0].id, arg_names.get(s.args[0].id))
            if name is not None:
                alias[out.id] = name

    def array_name(v):
        return alias.get(v.id, arg_names.get(v.id))

    needed, value_read = set(), set()
    for s in stmts:
        if isinstance(s, If):
            needed.add(s.cond.id)
        elif isinstance(s, Loop):
            needed.update(v.id for v in (s.start, s.stop, s.step, s.cond) if v is not None)
            needed.update(v.id for v in (s.brk or ()))
        elif isinstance(s, FuncCall):
            # the function's adjoint replays it: every argument counts, and arrays it reads
            needed.update(a.id for a in s.args)
            for a, (reads, _) in zip(s.args, s.func.array_flags()):
                if isinstance(a.type, ArrayType) and reads and array_name(a) is not None:
                    value_read.add(array_name(a))
        elif isinstance(s, Call) and s.builtin.differentiable:
            row = s.builtin
            arrays = [a for a in s.args if isinstance(a.type, ArrayType)]
            if row.name == "load" or row.name in _DESCRIPTOR_ONLY:
                needed.update(a.id for a in s.args[1:])   # indices (a load's value: see below)
                continue
            unread = _unread_values(row, s.args, discarded)
            needed.update(a.id for k, a in enumerate(s.args) if k not in unread and not isinstance(a.type, ArrayType))
            if row.name not in _GRADIENT_ONLY:
                # atomic_min/max compare with the element's current value; other builtins
                # taking arrays (geometry queries) are not followed
                value_read.update(n for n in map(array_name, arrays) if n is not None)
    # the values needed are computed from these values, back to the loads that read arrays
    todo = list(needed)
    while todo:
        vid = todo.pop()
        for src in inputs.get(vid, ()):
            if src not in needed:
                needed.add(src)
                todo.append(src)
    for s in stmts:
        if isinstance(s, Call) and s.builtin.name == "load" and s.out is not None and s.out.id in needed:
            name = array_name(s.args[0])
            if name is not None:
                value_read.add(name)
    return value_read
