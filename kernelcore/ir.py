"""A small typed IR between the frontend and the emitters.

Values are SSA ``Var``s (assigned once, except loop-carried entries which the loop
driver refreshes each iteration).  Control flow stays structured: ``If`` and ``Loop``
hold nested blocks; branch merges are explicit ``select`` calls after the ``If``.
``break``/``continue``/``return`` have already been lowered to boolean flags, so a
loop body is a straight region the adjoint can replay one iteration at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import types as T


class Var:
    _counter = 0

    def __init__(self, type_, label: str | None = None, const=None):
        Var._counter += 1
        self.id = Var._counter
        self.type = type_
        self.label = label
        self.const = const  # Python value when known at compile time
        self.storage = None  # set by the emitter while this value shares another's C++ variable

    @property
    def cname(self):
        return self.storage or f"v{self.id}"

    def __repr__(self):
        lab = f":{self.label}" if self.label else ""
        return f"%{self.id}{lab}<{T.type_repr(self.type)}>"


@dataclass
class Stmt:
    line: int = field(default=0, init=False)


@dataclass
class Const(Stmt):
    out: Var
    value: object


@dataclass
class Call(Stmt):
    out: Var | None
    builtin: object          # registry.Builtin row
    args: list
    template: str = ""       # explicit C++ template arguments, e.g. a cast target


@dataclass
class FuncCall(Stmt):
    out: Var | None
    func: object             # FuncInstance
    args: list


@dataclass
class Construct(Stmt):
    out: Var
    args: list               # scalars and/or composites, flattened in order (or one scalar: fill)


@dataclass
class Copy(Stmt):
    out: Var
    src: Var


@dataclass
class GetAttr(Stmt):
    out: Var
    obj: Var
    field: str               # struct member, or "f<k>" of a tuple


@dataclass
class SetAttr(Stmt):
    out: Var
    obj: Var
    field: str
    value: Var


@dataclass
class Tid(Stmt):
    out: Var
    dim: int                 # -1: flat thread index


@dataclass
class Print(Stmt):
    items: list              # str or Var
    fmt: str | None = None   # printf format (kc.printf) or None (print)


@dataclass
class AdjointAccumulate(Stmt):
    param: str               # parameter name of the custom-grad function's target
    value: Var


@dataclass
class Block:
    stmts: list = field(default_factory=list)

    def walk(self):
        """All statements, depth first."""
        for s in self.stmts:
            yield s
            if isinstance(s, If):
                yield from s.body.walk()
                yield from s.orelse.walk()
            elif isinstance(s, Loop):
                yield from s.cond_block.walk()
                yield from s.body.walk()


@dataclass
class If(Stmt):
    cond: Var
    body: Block
    orelse: Block


@dataclass
class Carried:
    name: str
    init: Var                # value before the loop
    entry: Var               # value at the start of an iteration
    exit: Var = None         # value at the end of the body
    result: Var = None       # value after the loop


@dataclass
class Loop(Stmt):
    kind: str                # "range" or "while"
    carried: list
    body: Block
    start: Var = None        # range loops: start, stop, step and the counter
    stop: Var = None
    step: Var = None
    counter: Var = None
    cond_block: Block = field(default_factory=Block)
    cond: Var = None         # while loops
    brk: Var = None          # entry var of the break flag, if the body breaks
    uid: int = 0


def defined_vars(block: Block):
    """Every Var a block defines (outputs of its statements, recursively)."""
    out = []
    for s in block.walk():
        o = getattr(s, "out", None)
        if o is not None:
            out.append(o)
        if isinstance(s, Loop):
            out.extend(c.entry for c in s.carried)
            out.extend(c.result for c in s.carried if c.result is not None)
            if s.counter is not None:
                out.append(s.counter)
            if s.cond is not None:
                out.append(s.cond)
    return out


def read_vars(stmt) -> set:
    """Ids of the Vars a statement reads (a loop: its carried initial and end-of-body values)."""
    found = set()

    def add(value):
        if isinstance(value, Var):
            found.add(value.id)
        elif isinstance(value, Carried):
            add(value.init)
            add(value.exit)
        elif isinstance(value, (list, tuple)):
            for x in value:
                add(x)

    for name, value in vars(stmt).items():
        if name != "out":
            add(value)
    return found


def use_counts(stmts, extra=()) -> dict:
    """Var id -> how many of ``stmts`` read it (``extra``: Vars read once more, e.g. returns)."""
    counts = {}
    for st in stmts:
        for vid in read_vars(st):
            counts[vid] = counts.get(vid, 0) + 1
    for v in extra:
        counts[v.id] = counts.get(v.id, 0) + 1
    return counts


def format_block(block: Block, indent=0) -> str:
    """Readable dump used by KERNELCORE_DUMP_IR."""
    pad = "  " * indent
    lines = []
    for s in block.stmts:
        if isinstance(s, If):
            lines.append(f"{pad}if {s.cond!r}:")
            lines.append(format_block(s.body, indent + 1))
            if s.orelse.stmts:
                lines.append(f"{pad}else:")
                lines.append(format_block(s.orelse, indent + 1))
        elif isinstance(s, Loop):
            carried = ", ".join(f"{c.name}: {c.init!r}->{c.entry!r}->{c.exit!r}" for c in s.carried)
            head = f"range({s.start!r}, {s.stop!r}, {s.step!r}) as {s.counter!r}" if s.kind == "range" else f"while {s.cond!r}"
            lines.append(f"{pad}loop#{s.uid} {head} carried[{carried}]:")
            if s.cond_block.stmts:
                lines.append(f"{pad}  cond:")
                lines.append(format_block(s.cond_block, indent + 2))
            lines.append(format_block(s.body, indent + 1))
        else:
            fields = {k: v for k, v in s.__dict__.items() if k not in ("line",)}
            if isinstance(s, Call):
                fields["builtin"] = s.builtin.name
            if isinstance(s, FuncCall):
                fields["func"] = s.func.cname
            lines.append(f"{pad}{type(s).__name__} " + " ".join(f"{k}={v!r}" for k, v in fields.items()) + f"  # line {s.line}")
    return "\n".join(l for l in lines if l)
