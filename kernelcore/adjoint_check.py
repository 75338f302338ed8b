"""Builtins without an adjoint that a kernel's gradient needs: an error, never a silent zero.

A table row with ``differentiable=False`` has no ``adj_`` twin: the reverse sweep skips it, so
the gradient through it would be zero.  That is right for comparisons and counters, wrong
when a differentiable value flows through it into something the loss depends on (e.g. the
out-argument form of ``quat_to_axis_angle``).  ``missing_adjoints`` finds such calls in a
kernel's IR (and in the @kc.func bodies it calls, except those with a custom grad or native
code); ``check_backward`` raises when an adjoint launch would need one: some array feeding the
call has a gradient.

Activity is a data-flow over the IR: a value depends on the float arrays it was computed from
(integers and booleans carry nothing); a call needs its adjoint when one of its differentiable
arguments depends on an array and its result (or an argument it updates in place) is read by a
statement that has an adjoint.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass

from . import types as T
from .array import ArrayType
from .ir import Call, Construct, Copy, FuncCall, GetAttr, Loop, SetAttr, read_vars


class MissingAdjointError(RuntimeError):
    """A gradient would flow through a builtin that has no adjoint."""


@dataclass(frozen=True)
class Missing:
    name: str          # builtin
    file: str
    line: int
    sources: frozenset  # kernel array arguments whose values reach the call


def _carries(t) -> bool:
    return isinstance(t, ArrayType) or T.is_differentiable_type(t)


def _analyze(ir, file, arg_sources: dict, out: list, visiting: set):
    """Data-flow over one IR; ``arg_sources``: Var id -> frozenset of kernel array labels."""
    deps = dict(arg_sources)
    stmts = list(ir.block.walk())
    changed = True
    while changed:   # loops feed their carried values back: iterate to a fixed point
        changed = False
        for s in stmts:
            src = frozenset().union(*(deps.get(i, frozenset()) for i in read_vars(s)))
            outs = []
            if isinstance(s, Loop):
                for c in s.carried:
                    src_c = deps.get(c.init.id, frozenset()) | deps.get(getattr(c.exit, "id", None), frozenset())
                    for v in (c.entry, c.result):
                        if v is not None and _carries(v.type) and not src_c <= deps.get(v.id, frozenset()):
                            deps[v.id] = deps.get(v.id, frozenset()) | src_c
                            changed = True
                continue
            o = getattr(s, "out", None)
            if o is not None:
                outs.append(o)
            if isinstance(s, Call):
                outs += [s.args[k] for k in s.builtin.mutates if k < len(s.args)]
            for v in outs:
                if _carries(v.type) and not src <= deps.get(v.id, frozenset()):
                    deps[v.id] = deps.get(v.id, frozenset()) | src
                    changed = True
    used = {v.id for v in (getattr(ir, "ret_vars", None) or [])}   # returned values, and values read by
    for s in stmts:   # statements that propagate adjoints
        if (isinstance(s, Call) and s.builtin.differentiable) or isinstance(s, (FuncCall, Construct, Copy, GetAttr, SetAttr)):
            used |= read_vars(s)
        elif isinstance(s, Loop):
            used |= read_vars(s)
    for s in stmts:
        if isinstance(s, Call) and not s.builtin.differentiable:
            row = s.builtin
            src = frozenset().union(*(deps.get(a.id, frozenset()) for a in s.args
                                      if not isinstance(a.type, ArrayType) and T.is_differentiable_type(a.type)))
            if not src:
                continue
            results = ([s.out] if s.out is not None else []) + [s.args[k] for k in row.mutates if k < len(s.args)]
            if any(T.is_differentiable_type(v.type) and v.id in used for v in results):
                out.append(Missing(row.name, file, s.line, src))
        elif isinstance(s, FuncCall):
            inst = s.func
            if inst.ir is None or inst.grad_ir is not None or id(inst) in visiting:
                continue   # native code or a custom grad: the user wrote the adjoint
            params = {p.id: deps.get(a.id, frozenset()) for p, a in zip(inst.ir.args, s.args)}
            visiting.add(id(inst))
            _analyze(inst.ir, inst.defn.file, params, out, visiting)
            visiting.discard(id(inst))


def missing_adjoints(kernel, ir) -> list:
    """Calls in ``kernel`` (IR ``ir``) whose missing adjoint a gradient would need (cached on the IR)."""
    cached = getattr(ir, "_missing_adjoints", None)
    if cached is None:
        sources = {v.id: frozenset([v.label]) for v in ir.args
                   if isinstance(v.type, ArrayType) and T.is_differentiable_type(v.type.dtype)}
        cached = []
        _analyze(ir, kernel.defn.file, sources, cached, set())
        ir._missing_adjoints = cached
    return cached


def _check_adjoint_shapes(kernel, params, adj_params):
    """An adjoint (from adj_inputs/adj_outputs, else the array's ``.grad``, which a user may
    assign) must have its array's shape: the adjoint kernel indexes it with the array's indices
    (a shorter one was written past its end)."""
    for k, (name, p) in enumerate(zip(kernel.arg_names, params)):
        given = adj_params is not None and k < len(adj_params) and adj_params[k] is not None
        g = adj_params[k] if given else getattr(p, "grad", None)
        if hasattr(g, "shape") and hasattr(p, "shape") and g.shape != p.shape:
            what = f"argument 'adj_{name}'" if given else f"argument '{name}': its .grad"
            raise ValueError(f"kernel '{kernel.key}' {what}: the adjoint has shape {g.shape} but "
                             f"the array has shape {p.shape}")


def check_backward(kernel, ir, params, adj_params=None, grad_shapes=True):
    """Raise MissingAdjointError when this adjoint launch needs an adjoint that does not exist.

    ``params``: the launch's arguments in order; an array argument counts as differentiable when
    it has a gradient (``.grad``, or its entry in ``adj_params``).  ``grad_shapes``: also check
    that each adjoint has its array's shape (a Tape replaying a launch whose gradients are those
    it checked at record time skips this).
    """
    if grad_shapes:
        _check_adjoint_shapes(kernel, params, adj_params)
    missing = missing_adjoints(kernel, ir)
    if not missing:
        return
    with_grad = set()
    for k, (name, p) in enumerate(zip(kernel.arg_names, params)):
        g = adj_params[k] if adj_params is not None and k < len(adj_params) else None
        if g is not None or getattr(p, "grad", None) is not None:
            with_grad.add(name)
    for m in missing:
        hit = sorted(m.sources & with_grad)
        if hit:
            hint = {"quat_to_axis_angle": "; use the differentiable form `axis, angle = kc.quat_to_axis_angle(q)`"}
            source = linecache.getline(m.file, m.line).strip()
            raise MissingAdjointError(
                f"kc.{m.name}() has no adjoint, but the gradient of {', '.join(hit)} flows through it "
                f"(it would silently be zero){hint.get(m.name, '')}\n  in kernel '{kernel.key}' at {m.file}:{m.line}"
                + (f"\n    {source}" if source else ""))
