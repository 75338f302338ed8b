"""IR-to-IR optimisation passes, run after the frontend (each testable on its own).

fold_select_accumulate
    ``if c: s += d`` becomes, after SSA, ``s2 = select(c, s + d, s)``: the select sits on the
    loop-carried chain of ``s``.  Rewriting it as ``s2 = s + select(c, d, 0)`` takes the
    select off that chain (the difference in a neighbour-sum loop is ~2x on the CPU).
    Exact for integers and vectors of them; for floats it differs only in the sign of an
    exact zero (-0 + 0 = +0).  Adjoints follow from the rewritten statements.

fuse_scaled_outer
    ``outer(a, b) * s`` (the APIC / MLS-MPM affine term) becomes one ``outer_scaled(a, b, s)``
    when nothing else reads the outer product.  The forward rounds exactly as before; the
    adjoint no longer forms ``adj * s`` and replays ``outer(a, b)`` to get ``adj_s``, it
    shares ``adj b`` between ``adj_a`` and ``adj_s`` (kc_vec.h).  MPM G2P adjoint:
    291 -> 244 us on one thread.
"""
from __future__ import annotations

from . import types as T
from .builtins.registry import registry
from .ir import Block, Call, Const, Construct, If, Loop, Var, use_counts


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


def fuse_scaled_outer(block: Block, extra_reads=()) -> int:
    """Rewrite mul(outer(a, b), s) / mul(s, outer(a, b)) as outer_scaled(a, b, s); returns the count.

    ``extra_reads``: Vars read outside the statements (a function's return values).  Only an
    outer product read once, by a mul in the same block, is fused, so nothing moves across
    a branch or into a loop.
    """
    return _fuse_outer_in(block, use_counts(list(block.walk()), extra_reads))


def _fuse_outer_in(block: Block, uses: dict) -> int:
    count = 0
    for s in block.stmts:
        if isinstance(s, If):
            count += _fuse_outer_in(s.body, uses) + _fuse_outer_in(s.orelse, uses)
        elif isinstance(s, Loop):
            count += _fuse_outer_in(s.cond_block, uses) + _fuse_outer_in(s.body, uses)
    outers = {}     # id of a once-read outer product -> its statement
    fused = {}      # id(mul statement) -> the outer_scaled call replacing it
    dropped = set()  # id(outer statement) folded into one of those calls
    for s in block.stmts:
        if not isinstance(s, Call):
            continue
        if s.builtin.name == "outer" and uses.get(s.out.id, 0) == 1:
            outers[s.out.id] = s
        elif s.builtin.name == "mul" and len(s.args) == 2:
            for m, k in ((s.args[0], s.args[1]), (s.args[1], s.args[0])):
                product = outers.get(m.id)
                if product is None or not T.is_scalar(k.type):
                    continue
                a, b = product.args
                row = registry.resolve("outer_scaled", [a.type, b.type, k.type])
                if row is None:
                    continue
                call = Call(s.out, row[0], [a, b, k])
                call.line = s.line
                fused[id(s)] = call
                dropped.add(id(outers.pop(m.id)))
                break
    if not fused:
        return count
    block.stmts = [fused.get(id(st), st) for st in block.stmts if id(st) not in dropped]
    return count + len(fused)


PASSES = [("fold_select_accumulate", lambda ir: fold_select_accumulate(ir.block)),
          ("fuse_scaled_outer", lambda ir: fuse_scaled_outer(ir.block, ir.ret_vars))]
