"""Adjoint pass: a block of forward IR -> the list of reverse statements.

The generated adjoint of a kernel or function first replays the forward statements
(without side effects: stores and atomics are skipped, user functions run their
``replay`` variant), then runs these reverse statements, which accumulate ``adj_<v>``
for every value in reverse order.

Dynamic loops get correct gradients even with loop-carried mutable locals (where Warp
and DiffTaichi do not): the replay stores the carried state at the start of iterations
in a fixed per-thread buffer of ``config.loop_checkpoints`` entries (``kc::loop_tape``,
native/kc_loop.h), reset each time the loop is entered (a nested loop runs once per outer
iteration); when a loop runs longer than the buffer, the stride between checkpoints
doubles and the records keep to half the buffer.  The reverse sweep (``kc::reverse_loop``)
takes the stretches between records from the last to the first and reverses each on
Griewank's binomial checkpointing schedule in the free half of the buffer, replaying every
iteration once before running its reverse statements.  Memory per thread and loop:
checkpoints x sizeof(carried state), fixed at compile time.  Time: N iterations cost
O(N) while N <= checkpoints and O(N log N) in practice beyond (each iteration recomputed
at most 3 times up to 131,072 iterations with 64 checkpoints, 6 times up to 100M).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import (AdjointAccumulate, Block, Call, Const, Construct, Copy, FuncCall, GetAttr, If, Loop, Print,
                 SetAttr, Tid, defined_vars)


@dataclass
class Rev:
    """Reverse of one straight-line statement."""
    stmt: object


@dataclass
class RevIf:
    stmt: If
    body: list
    orelse: list


@dataclass
class RevLoop:
    stmt: Loop
    body: list
    zero_vars: list = field(default_factory=list)   # adjoints reset before each reversed iteration


def _has_adjoint(s) -> bool:
    if isinstance(s, Call):
        return s.builtin.differentiable
    if isinstance(s, (FuncCall, Construct, Copy, GetAttr, SetAttr)):
        return True
    return False


def reverse_block(block: Block) -> list:
    out = []
    for s in reversed(block.stmts):
        if isinstance(s, If):
            body, orelse = reverse_block(s.body), reverse_block(s.orelse)
            if body or orelse:
                out.append(RevIf(s, body, orelse))
        elif isinstance(s, Loop):
            zero = defined_vars(s.body) + [c.entry for c in s.carried]
            out.append(RevLoop(s, reverse_block(s.body), zero))
        elif isinstance(s, (Const, Tid, Print, AdjointAccumulate)):
            continue
        elif _has_adjoint(s):
            out.append(Rev(s))
    return out


def format_reverse(rev: list, indent=0) -> str:
    pad = "  " * indent
    lines = []
    for r in rev:
        if isinstance(r, RevIf):
            lines.append(f"{pad}rev-if {r.stmt.cond!r}:")
            lines.append(format_reverse(r.body, indent + 1))
            lines.append(f"{pad}rev-else:")
            lines.append(format_reverse(r.orelse, indent + 1))
        elif isinstance(r, RevLoop):
            lines.append(f"{pad}rev-loop#{r.stmt.uid}:")
            lines.append(format_reverse(r.body, indent + 1))
        else:
            s = r.stmt
            name = getattr(getattr(s, "builtin", None), "name", None) or getattr(getattr(s, "func", None), "cname", None) or type(s).__name__
            lines.append(f"{pad}adj {name} -> {getattr(s, 'out', None)!r}")
    return "\n".join(l for l in lines if l)
