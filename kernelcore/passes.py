"""IR-to-IR optimisation passes, run after the frontend (each testable on its own).

fold_select_accumulate
    ``if c: s += d`` becomes, after SSA, ``s2 = select(c, s + d, s)``: the select sits on the
    loop-carried chain of ``s``.  Rewriting it as ``s2 = s + select(c, d, 0)`` takes the
    select off that chain (the difference in a neighbour-sum loop is ~2x on the CPU).
    Exact for integers and vectors of them; for floats it differs only in the sign of an
    exact zero (-0 + 0 = +0).  Adjoints follow from the rewritten statements.
"""
from __future__ import annotations

from . import types as T
from .builtins.registry import registry
from .ir import Block, Call, Const, Construct, If, Loop, Var


def fold_select_accumulate(block: Block) -> int:
    """Rewrite select(c, b + d, b) / select(c, b, b + d) after Ifs; returns the rewrite count."""
    count = 0
    for s in block.stmts:
        if isinstance(s, If):
            count += fold_select_accumulate(s.body) + fold_select_accumulate(s.orelse)
        elif isinstance(s, Loop):
            count += fold_select_accumulate(s.body)
    out = []
    last_if = None
    for s in block.stmts:
        if isinstance(s, If):
            last_if = s
        elif last_if is not None and _is_branch_select(s, last_if):
            rewritten = _rewrite(s, last_if)
            if rewritten:
                out.extend(rewritten)
                count += 1
                continue
        elif not (isinstance(s, Call) and s.builtin.name == "select"):
            last_if = None
        out.append(s)
    block.stmts = out
    return count


def _is_branch_select(s, node):
    return isinstance(s, Call) and s.builtin.name == "select" and s.args[0] is node.cond


def _defining_add(var, block):
    for st in block.stmts:
        if isinstance(st, Call) and st.out is var and st.builtin.name == "add":
            return st
    return None


def _rewrite(sel, node):
    cond, a, b = sel.args
    for branch, accumulated, kept, delta_first in ((node.body, a, b, True), (node.orelse, b, a, False)):
        add = _defining_add(accumulated, branch)
        if add is None:
            continue
        x, y = add.args
        delta = y if x is kept else x if y is kept else None
        if delta is None or delta.type != kept.type or not _supported(kept.type):
            continue
        zero = Var(kept.type)
        zero_stmt = Const(zero, 0 if not T.is_float(kept.type) else 0.0) if T.is_scalar(kept.type) else Construct(zero, [])
        picked = Var(kept.type)
        row = registry.resolve("select", [T.bool_, kept.type, kept.type])[0]
        choose = Call(picked, row, [cond, delta, zero] if delta_first else [cond, zero, delta])
        add_row = registry.resolve("add", [kept.type, kept.type])[0]
        total = Call(sel.out, add_row, [kept, picked])
        for st in (zero_stmt, choose, total):
            st.line = sel.line
        return [zero_stmt, choose, total]
    return None


def _supported(t):
    if T.is_scalar(t):
        return t is not T.bool_
    return T.is_vector(t)


PASSES = [("fold_select_accumulate", fold_select_accumulate)]
