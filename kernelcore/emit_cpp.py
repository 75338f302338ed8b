"""Emitter: typed IR (+ reverse list) -> C++ text. It only prints.

The CUDA emitter (emit_cuda.py) subclasses this and overrides the entry points only.
Every value is declared at the top of its function (so branch and loop bodies can
assign what later code, including the reverse sweep, reads).
"""
from __future__ import annotations

import math
import re

from . import config
from . import types as T
from .accumulation import plan as accumulation_plan
from .adjoint import Rev, RevIf, RevLoop, reverse_block
from .array import ArrayType
from .errors import KernelCompileError
from .ir import (AdjointAccumulate, Block, Call, Const, Construct, Copy, FuncCall, GetAttr, If, Loop, Print, SetAttr,
                 Tid, Var, defined_vars, use_counts)


def ctype(t) -> str:
    if isinstance(t, ArrayType):
        return f"kc::array_t<{ctype(t.dtype)}>"
    if isinstance(t, T.Tuple):
        return tuple_struct_name(t)
    return t._ctype


def tuple_struct_name(t: T.Tuple) -> str:
    import hashlib

    return "tuple_" + hashlib.sha256(T.type_key(t).encode()).hexdigest()[:12]


def adj_zero(t) -> str:
    """Initial value of an adjoint accumulator (kc::adj_zero: -0.0 for floats, see kc_vec.h)."""
    if T.is_float(t) or (T.is_composite(t) and T.is_float(t._dtype)):
        return f"kc::adj_zero<{ctype(t)}>()"
    return "{}"


def scalar_ctype(t) -> str:
    return t._dtype._ctype if T.is_composite(t) else t._ctype


def literal(value, t) -> str:
    if t is T.bool_:
        return "true" if value else "false"
    if T.is_float(t):
        v = float(value)
        if math.isnan(v):
            text = "(0.0/0.0)"
        elif math.isinf(v):
            text = "(1.0/0.0)" if v > 0 else "(-1.0/0.0)"
        else:
            text = repr(v)
        return f"kc::cast<{t._ctype}>({text})"
    return f"(({t._ctype}){int(value)}{'ULL' if not t._signed else 'LL'})"


class Emitter:
    target = "cpu"

    def __init__(self, debug: bool = False):
        self.debug = debug
        self.lines: list[str] = []
        self.indent = 0
        self.filename = ""
        self.function_uses = {}
        self.discarded_adjoints = set()  # ids of values whose adjoints nothing reads (see rev_Call)
        self.tid_params = False  # kernel thread functions take one index per launch dimension (CPU)
        self.lane_records = {}   # id(accumulation statement) -> record slot, in lane functions (emit_lane_entry)

    # -- output helpers --------------------------------------------------------------------
    def w(self, text=""):
        self.lines.append("    " * self.indent + text if text else "")

    def line_directive(self, stmt):
        if stmt.line and self.filename:
            self.lines.append(f'#line {stmt.line} "{self.filename}"')

    def text(self):
        return "\n".join(self.lines) + "\n"

    # -- declarations --------------------------------------------------------------------------
    def declare_values(self, ir, adj=False, adj_args_local=False):
        """Declare every SSA value (and its adjoint) at the top of the function."""
        argset = {v.id for v in ir.args}
        seen = set()
        for v in defined_vars(ir.block):
            if v.id in seen or v.id in argset:
                continue
            seen.add(v.id)
            self.w(f"{ctype(v.type)} {v.cname} = {{}};")
            if adj:
                self.w(f"{ctype(v.type)} adj_{v.cname} = {adj_zero(v.type)};")
        if adj and adj_args_local:
            for v in ir.args:
                self.w(f"{ctype(v.type)} adj_{v.cname} = {adj_zero(v.type)};")
        for loop in ir.loops:
            self.w(f"kc::int64 it_{loop.uid} = 0; kc::int64 trip_{loop.uid} = 0;")
            if adj:
                self.declare_checkpoints(loop)

    def declare_checkpoints(self, loop):
        """The carried state of a dynamic loop and its checkpoint buffer (kc::loop_tape, kc_loop.h)."""
        u, slots = loop.uid, config.loop_checkpoints
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 2:
            raise ValueError(f"kc.config.loop_checkpoints must be an integer >= 2, got {slots!r}")
        fields = " ".join(f"{ctype(c.entry.type)} f{k};" for k, c in enumerate(loop.carried)) or "char unused;"
        self.w(f"struct ck_{u}_t {{ {fields} }};")
        self.w(f"kc::loop_tape<ck_{u}_t, {slots}> ck_{u};")

    def declare_lambdas(self, ir, mode):
        """Adjoint functions replay loop bodies several times: each body is a lambda."""
        for loop in ir.loops:  # post-order (inner loops first), see frontend
            u = loop.uid
            self.w(f"auto body_{u} = [&]() {{")
            self.indent += 1
            if loop.kind == "range":
                self.w(f"{loop.counter.cname} = {loop.start.cname} + (kc::int32)it_{u} * {loop.step.cname};")
            self.emit_block(loop.body, mode, ret="")
            self.indent -= 1
            self.w("};")
            if loop.kind == "while":
                self.w(f"auto cond_{u} = [&]() -> bool {{")
                self.indent += 1
                self.emit_block(loop.cond_block, mode, ret="false")
                self.w(f"return {loop.cond.cname};")
                self.indent -= 1
                self.w("};")

    # -- forward statements --------------------------------------------------------------------
    def emit_block(self, block, mode, ret):
        """mode: "fwd" (side effects on); "replay" (side effects skipped); "adjoint" (as replay,
        with dynamic loops checkpointed for the reverse sweep that follows)."""
        for s in block.stmts:
            self.line_directive(s)
            getattr(self, "fwd_" + type(s).__name__)(s, mode, ret)

    def fwd_Const(self, s, mode, ret):
        self.w(f"{s.out.cname} = {literal(s.value, s.out.type)};")

    def fwd_Call(self, s, mode, ret):
        row = s.builtin
        if mode == "fwd" and id(s) in self.lane_records:
            value = s.args[1 + self._nidx(s)].cname
            return self._record(s, value if row.name == "atomic_add" else f"kc::neg_value({value})")
        if mode != "fwd" and row.side_effect:
            if s.out is not None:
                self.w(f"{s.out.cname} = {{}};  // {row.name}: side effect skipped in replay")
            return
        if row.name == "assert":   # debug mode checks it; release mode compiles it out (as Warp)
            if self.debug:
                self.w(f"if (!kc::assert_check({s.args[0].cname}, {s.args[1].cname}, __LINE__)) return {ret};")
            return
        if self.debug and row.array_access:
            idx = ", ".join(a.cname for a in s.args[1:1 + self._nidx(s)])
            self.w(f"if (!kc::bounds_check({s.args[0].cname}, __LINE__, {self._nidx(s)}, {idx})) return {ret};")
        if self.debug and row.name == "indexed_index":
            a = [x.cname for x in s.args]
            self.w(f"if (!kc::indexed_check({a[0]}, {a[1]}, {a[2]}, {a[3]}, __LINE__)) return {ret};")
        if self.debug and row.name == "wrap_index":
            self.w(f"if (!kc::component_check({s.args[0].cname}, {s.args[1].cname}, __LINE__)) return {ret};")
        if not self.debug and row.name == "wrap_index":  # clamped and reported (kc_array.h wrap_component)
            a = s.args
            return self.w(f"{s.out.cname} = kc::wrap_component({a[0].cname}, {a[1].cname}, __LINE__);")
        if self.debug and row.name in _DIVISIONS and _is_integer(s.args[1].type):
            self.w(f"if (!kc::divisor_check({s.args[1].cname}, __LINE__)) return {ret};")
        sym = row.native + (f"<{s.template}>" if s.template else "")
        if s.out is not None and isinstance(s.out.type, T.Tuple):
            # several results (e.g. svd3): the native function writes the tuple's fields
            fields = [f"{s.out.cname}.f{k}" for k in range(len(s.out.type.types))]
            self.w(f"{sym}({', '.join([a.cname for a in s.args] + fields)});")
            return
        call = f"{sym}({', '.join(a.cname for a in s.args)})"
        self.w(f"{s.out.cname} = {call};" if s.out is not None else f"{call};")

    def _record(self, s, value):
        """An accumulation of a lane (emit_lane_entry): its element's byte offset and value go to
        the lane's slot of the record block; the entry point applies them after the SIMD loop."""
        k = self.lane_records[id(s)]
        idx = ", ".join(a.cname for a in s.args[1:1 + self._nidx(s)])
        self.w(f"__rec.o{k}[__lane] = kc::offset({s.args[0].cname}, {idx}); __rec.v{k}[__lane] = {value};")

    @staticmethod
    def _nidx(s):
        n = s.args[0].type.ndim
        return min(n, len(s.args) - 1)

    def fwd_FuncCall(self, s, mode, ret):
        name = s.func.cname + ("_replay" if mode != "fwd" else "")
        call = f"{name}({', '.join(a.cname for a in s.args)})"
        self.w(f"{s.out.cname} = {call};" if s.out is not None else f"{call};")

    def fwd_Construct(self, s, mode, ret):
        out, t = s.out, s.out.type
        if not s.args or T.is_struct(t) or isinstance(t, T.Tuple):
            self.w(f"{out.cname} = {{}};")
            return
        sc = scalar_ctype(t)
        n = _ncomp(t)
        if len(s.args) == 1 and not T.is_composite(s.args[0].type):
            self.w(f"for (int k = 0; k < {n}; ++k) (({sc}*)&{out.cname})[k] = {s.args[0].cname};")
            return
        k = 0
        for a in s.args:
            if T.is_composite(a.type):
                m = _ncomp(a.type)
                src_sc = scalar_ctype(a.type)
                conv = f"(({src_sc}*)&{a.cname})[j]" if src_sc == sc else f"kc::cast<{sc}>((({src_sc}*)&{a.cname})[j])"
                self.w(f"for (int j = 0; j < {m}; ++j) (({sc}*)&{out.cname})[{k} + j] = {conv};")
                k += m
            else:
                self.w(f"(({sc}*)&{out.cname})[{k}] = {a.cname};")
                k += 1

    def fwd_Copy(self, s, mode, ret):
        if s.out.cname != s.src.cname:  # one variable when the loop updates it in place
            self.w(f"{s.out.cname} = {s.src.cname};")

    def fwd_GetAttr(self, s, mode, ret):
        self.w(f"{s.out.cname} = {s.obj.cname}.{s.field};")

    def fwd_SetAttr(self, s, mode, ret):
        self.w(f"{s.out.cname} = {s.obj.cname}; {s.out.cname}.{s.field} = {s.value.cname};")

    def fwd_Tid(self, s, mode, ret):
        if s.dim < 0:
            self.w(f"{s.out.cname} = (kc::int32)__tid;")
        elif self.tid_params:
            self.w(f"{s.out.cname} = __i{s.dim};")  # the entry point's loop indices (for_each_index)
        else:
            self.w(f"{s.out.cname} = kc::tid_dim(__bounds, __tid, {s.dim});")

    def fwd_Print(self, s, mode, ret):
        if mode != "fwd":
            return
        if s.fmt is not None:
            args = "".join(", " + _printf_arg(a) for a in s.items)
            self.w(f'printf({_c_string(s.fmt)}{args});')
            return
        for item in s.items:
            if isinstance(item, str):
                self.w(f"kc::print_value({_c_string(item)});")
            else:
                self.w(f"kc::print_value({item.cname});")

    def fwd_AdjointAccumulate(self, s, mode, ret):
        self.w(f"adj_{self.grad_params[s.param]} += {s.value.cname};")

    def fwd_If(self, s, mode, ret):
        if _speculatable(s.body) and _speculatable(s.orelse):
            # If-conversion: both sides are cheap pure arithmetic, so compute them
            # unconditionally and let the select calls after the If merge them; the C++
            # compiler then emits branch-free code (the reverse sweep stays conditional).
            self.emit_block(s.body, mode, ret)
            self.emit_block(s.orelse, mode, ret)
            return
        self.w(f"if ({s.cond.cname}) {{")
        self.indent += 1
        self.emit_block(s.body, mode, ret)
        self.indent -= 1
        if s.orelse.stmts:
            self.w("} else {")
            self.indent += 1
            self.emit_block(s.orelse, mode, ret)
            self.indent -= 1
        self.w("}")

    def _carry_update(self, loop, src="exit", dst="entry"):
        """Parallel assignment entry <- exit (values may be swapped between carried names)."""
        pairs = [(getattr(c, dst), getattr(c, src)) for c in loop.carried
                 if getattr(c, dst).cname != getattr(c, src).cname]
        if not pairs:
            return
        tmps = " ".join(f"{ctype(d.type)} t{k} = {s_.cname};" for k, (d, s_) in enumerate(pairs))
        sets = " ".join(f"{d.cname} = t{k};" for k, (d, s_) in enumerate(pairs))
        self.w(f"{{ {tmps} {sets} }}")

    def _loop_head(self, loop, cond_call):
        u = loop.uid
        for c in loop.carried:
            self.w(f"{c.entry.cname} = {c.init.cname};")
        if loop.kind == "range":
            self.w(f"trip_{u} = kc::trip_count({loop.start.cname}, {loop.stop.cname}, {loop.step.cname});")
        self.w(f"for (it_{u} = 0; ; ++it_{u}) {{")
        self.indent += 1
        if loop.brk:
            self.w(f"if ({' || '.join(v.cname for v in loop.brk)}) break;")
        if loop.kind == "range":
            self.w(f"if (it_{u} >= trip_{u}) break;")
        else:
            self.w(f"if (!{cond_call}) break;")

    def fwd_Loop(self, s, mode, ret):
        if mode == "adjoint":
            return self._replay_loop(s)
        shared = _in_place_carried(s, self.function_uses)
        for exit_var, entry in shared:
            exit_var.storage = entry.cname
        try:
            self._plain_loop(s, mode, ret)
        finally:
            for exit_var, _ in shared:
                exit_var.storage = None

    def _plain_loop(self, s, mode, ret):
        u = s.uid
        if s.kind == "while":
            # plain forward: evaluate the condition inline
            for c in s.carried:
                self.w(f"{c.entry.cname} = {c.init.cname};")
            self.w(f"for (it_{u} = 0; ; ++it_{u}) {{")
            self.indent += 1
            if s.brk:
                self.w(f"if ({' || '.join(v.cname for v in s.brk)}) break;")
            self.emit_block(s.cond_block, mode, ret)
            self.w(f"if (!{s.cond.cname}) break;")
        else:
            self._loop_head(s, None)
            self.w(f"{s.counter.cname} = {s.start.cname} + (kc::int32)it_{u} * {s.step.cname};")
        self.emit_block(s.body, mode, ret)
        self._carry_update(s)
        self.indent -= 1
        self.w("}")
        for c in s.carried:
            self.w(f"{c.result.cname} = {c.entry.cname};")

    def _replay_loop(self, s):
        """The replay of a dynamic loop before the reverse sweep: records checkpoints of the
        carried state. The tape is reset at every entry (a nested loop is entered once per
        iteration of the loop around it, and its reverse reads the records of that entry)."""
        u = s.uid
        self.w(f"ck_{u}.reset();")
        self._loop_head(s, f"cond_{u}()")
        self.w(f"if (it_{u} == ck_{u}.next) ck_{u}.record({self._checkpoint(s)});")
        self.w(f"body_{u}();")
        self._carry_update(s)
        self.indent -= 1
        self.w("}")
        self.w(f"ck_{u}.count = it_{u};")
        for c in s.carried:
            self.w(f"{c.result.cname} = {c.entry.cname};")

    # -- adjoint bodies: replay, then the reverse sweep ------------------------------------------
    def _captured(self, emit) -> list:
        """The lines `emit()` writes, taken back out of the output."""
        start = len(self.lines)
        emit()
        chunk = self.lines[start:]
        del self.lines[start:]
        return chunk

    def emit_adjoint_body(self, ir, seeds=()):
        """Replay the forward, seed `adj_ret` (functions), then run the reverse sweep.

        Replay statements whose values only the reverse sweep reads are emitted just before
        the first reverse statement that reads them (and dropped when nothing does). A static
        loop is unrolled, so replaying every iteration up front kept each iteration's
        intermediates (and its array reads, which the C++ compiler may not move past the
        gradient stores) alive across the whole sweep: the MLS-MPM G2P adjoint spent 8% of its
        time on the spills. Sunk statements are pure and read only values that nothing
        reassigns (loops reassign theirs; random states and query iterators are updated in
        place), so they compute the same values later. Debug builds keep the replay order, as
        their bounds checks return early.
        """
        lambdas = self._captured(lambda: self.declare_lambdas(ir, "adjoint"))
        self.lines.extend(lambdas)
        pinned = _ids(lambdas)   # ids that code staying in place reads (loop bodies run as lambdas)
        stmts = ir.block.stmts
        replay = [self._captured(lambda s=s: self.emit_block(Block([s]), "adjoint", "")) for s in stmts]
        sweep = [self._captured(lambda r=r: self.emit_reverse([r])) for r in reverse_block(ir.block)]
        first_read = {}
        for j, chunk in enumerate(sweep):
            for i in _ids(chunk):
                first_read.setdefault(i, j)
        unstable = _reassigned_ids(ir)
        before = [[] for _ in sweep]    # sunk replay chunks, in forward order, before sweep[j]
        kept = [True] * len(stmts)
        for k in range(len(stmts) - 1, -1, -1):
            s, reads = stmts[k], _ids(replay[k])
            out = getattr(s, "out", None)
            if (not self.debug and _sinkable(s) and out is not None and str(out.id) not in pinned and
                    not (reads & unstable)):
                at = first_read.get(str(out.id))
                kept[k] = False
                if at is not None:
                    before[at].insert(0, replay[k])
                    for i in reads - {str(out.id)}:
                        first_read[i] = min(first_read.get(i, at), at)
                continue
            pinned.update(reads)
        for k, chunk in enumerate(replay):
            if kept[k]:
                self.lines.extend(chunk)
        for line in seeds:
            self.w(line)
        for j, chunk in enumerate(sweep):
            for c in before[j]:
                self.lines.extend(c)
            self.lines.extend(chunk)

    # -- reverse statements ----------------------------------------------------------------------
    def emit_reverse(self, rev):
        for r in rev:
            if isinstance(r, RevIf):
                self.w(f"if ({r.stmt.cond.cname}) {{")
                self.indent += 1
                self.emit_reverse(r.body)
                self.indent -= 1
                self.w("} else {")
                self.indent += 1
                self.emit_reverse(r.orelse)
                self.indent -= 1
                self.w("}")
            elif isinstance(r, RevLoop):
                self.rev_loop(r)
            else:
                self.line_directive(r.stmt)
                getattr(self, "rev_" + type(r.stmt).__name__)(r.stmt)

    def rev_Call(self, s):
        row = s.builtin
        if id(s) in self.lane_records:
            return self._record(s, f"adj_{s.out.cname}")
        adj_sym = _adj_symbol(row.native) + (f"<{s.template}>" if s.template else "")
        unread = _unread_values(row, s.args, self.discarded_adjoints)
        # a default value where the adjoint reads nothing: the replay can then drop (or sink)
        # what only fed this argument, e.g. a sum's running total or a stored value
        args = [f"{ctype(a.type)}{{}}" if k in unread else a.cname for k, a in enumerate(s.args)]
        if s.out is not None and isinstance(s.out.type, T.Tuple):
            # tuple results: adj_f(args..., results..., adj_args..., adj_results...)
            n = len(s.out.type.types)
            args += [f"{s.out.cname}.f{k}" for k in range(n)] + [f"adj_{a.cname}" for a in s.args]
            args += [f"adj_{s.out.cname}.f{k}" for k in range(n)]
            self.w(f"{adj_sym}({', '.join(args)});")
            return
        args += [f"adj_{a.cname}" for a in s.args]
        if s.out is not None:
            args.append(f"adj_{s.out.cname}")
        self.w(f"{adj_sym}({', '.join(args)});")

    def rev_FuncCall(self, s):
        native = s.func.native is not None
        # native snippets read adj_<array>[i]: pass the gradient buffer as an array
        args = [a.cname for a in s.args] + [f"kc::grad_array({a.cname})" if native and isinstance(a.type, ArrayType)
                                            else f"adj_{a.cname}" for a in s.args]
        if s.out is not None:
            args.append(f"adj_{s.out.cname}")
        self.w(f"adj_{s.func.cname}({', '.join(args)});")

    def rev_Construct(self, s):
        out, t = s.out, s.out.type
        if not s.args or T.is_struct(t) or isinstance(t, T.Tuple):
            return
        sc = scalar_ctype(t)
        n = _ncomp(t)
        if len(s.args) == 1 and not T.is_composite(s.args[0].type):
            self.w(f"for (int k = 0; k < {n}; ++k) adj_{s.args[0].cname} += (({sc}*)&adj_{out.cname})[k];")
            return
        k = 0
        for a in s.args:
            if T.is_composite(a.type):
                m = _ncomp(a.type)
                src_sc = scalar_ctype(a.type)
                val = f"(({sc}*)&adj_{out.cname})[{k} + j]"
                if src_sc != sc:
                    if not (T.is_float(a.type._dtype) and T.is_float(t._dtype)):
                        k += m
                        continue
                    val = f"kc::cast<{src_sc}>({val})"
                self.w(f"for (int j = 0; j < {m}; ++j) (({src_sc}*)&adj_{a.cname})[j] += {val};")
                k += m
            else:
                self.w(f"adj_{a.cname} += (({sc}*)&adj_{out.cname})[{k}];")
                k += 1

    def rev_Copy(self, s):
        if not T.is_differentiable_type(s.out.type):
            return
        self.w(f"adj_{s.src.cname} += adj_{s.out.cname};")

    def rev_GetAttr(self, s):
        if not T.is_differentiable_type(s.out.type):
            return
        self.w(f"adj_{s.obj.cname}.{s.field} += adj_{s.out.cname};")

    def rev_SetAttr(self, s):
        if not isinstance(s.value.type, ArrayType):
            self.w(f"adj_{s.value.cname} += adj_{s.out.cname}.{s.field}; adj_{s.out.cname}.{s.field} = {{}};")
        self.w(f"adj_{s.obj.cname} += adj_{s.out.cname};")

    @staticmethod
    def _checkpoint(loop):
        """The carried state of a loop as its checkpoint struct."""
        return f"ck_{loop.uid}_t{{{', '.join(c.entry.cname for c in loop.carried)}}}"

    def rev_loop(self, r):
        """Reverse sweep of a dynamic loop: kc::reverse_loop (kc_loop.h) restores checkpoints,
        recomputes iterations on its binomial schedule and calls the last lambda here, which
        replays one iteration and runs its reverse statements."""
        loop, u = r.stmt, r.stmt.uid
        self.w("{")
        self.indent += 1
        diff = [(k, c) for k, c in enumerate(loop.carried) if T.is_differentiable_type(c.entry.type)]
        for k, c in diff:
            self.w(f"{ctype(c.entry.type)} g{u}_{k} = adj_{c.result.cname};")
        restore = " ".join(f"{c.entry.cname} = s_{u}.f{k};" for k, c in enumerate(loop.carried))
        # a while condition may update locals in place (random state, query iterators):
        # replaying an iteration means the condition, then the body
        step = f"it_{u} = at_{u}; " + (f"cond_{u}(); body_{u}();" if loop.kind == "while" else f"body_{u}();")
        self.w(f"kc::reverse_loop(ck_{u},")
        self.indent += 1
        self.w(f"[&](const ck_{u}_t& s_{u}) {{ {restore} }},")
        self.w(f"[&]() {{ return {self._checkpoint(loop)}; }},")
        self.w(f"[&](kc::int64 at_{u}) {{")
        self.indent += 1
        self.w(step)
        self._carry_update(loop)
        self.indent -= 1
        self.w("},")
        self.w(f"[&](kc::int64 at_{u}) {{")
        self.indent += 1
        self.w(step)
        seen = set()
        zero = []
        for v in r.zero_vars:
            if v.id not in seen:
                seen.add(v.id)
                zero.append(f"adj_{v.cname} = {adj_zero(v.type)};")
        for k in range(0, len(zero), 8):
            self.w(" ".join(zero[k:k + 8]))
        for k, c in diff:
            self.w(f"adj_{c.exit.cname} += g{u}_{k};")
        self.emit_reverse(r.body)
        for k, c in diff:
            self.w(f"g{u}_{k} = adj_{c.entry.cname};")
        self.indent -= 1
        self.w("});")
        self.indent -= 1
        for k, c in diff:
            self.w(f"adj_{c.init.cname} += g{u}_{k};")
        self.indent -= 1
        self.w("}")

    # -- whole functions ---------------------------------------------------------------------------
    def _ret_expr(self, ir):
        if not ir.ret_vars:
            return ""
        if len(ir.ret_vars) == 1:
            return ir.ret_vars[0].cname
        return f"{ctype(T.Tuple(ir.ret_types))}{{{', '.join(v.cname for v in ir.ret_vars)}}}"

    def emit_function(self, inst):
        """Forward, replay and adjoint C++ functions of one @kc.func specialisation."""
        self.filename = _escape_path(inst.defn.file)
        self.function_uses = _function_uses(inst.ir) if inst.native is None else {}
        rt = ctype(inst.result_type) if inst.result_type is not None else "void"
        if inst.native is not None:
            return self._emit_native_function(inst, rt)
        ir = inst.ir
        params = ", ".join(f"{ctype(v.type)} {v.cname}" for v in ir.args)
        ret_default = "{}" if rt != "void" else ""
        for suffix, mode, fir in (("", "fwd", ir), ("_replay", "replay", inst.replay_ir or ir)):
            fparams = ", ".join(f"{ctype(v.type)} {v.cname}" for v in fir.args)
            self.function_uses = _function_uses(fir)
            self.w(f"static KC_FUNC {rt} {inst.cname}{suffix}({fparams}) {{")
            self.indent += 1
            self.declare_values(fir, adj=False)
            self.emit_block(fir.block, "fwd" if fir is not ir else mode, ret_default)
            if rt != "void":
                self.w(f"return {self._ret_expr(fir)};")
            self.indent -= 1
            self.w("}")
        # adjoint
        adj_params = [f"{ctype(v.type)}& adj_{v.cname}" for v in ir.args]
        if inst.grad_ir is not None:
            g = inst.grad_ir
            n = len(ir.args)
            gparams = [f"{ctype(v.type)} {v.cname}" for v in g.args[:n]]
            gadj = [f"{ctype(v.type)}& adj_{v.cname}" for v in g.args[:n]]
            tail = [f"{ctype(g.args[n].type)} {g.args[n].cname}"] if len(g.args) > n else []
            self.grad_params = {v.label: v.cname for v in g.args[:n]}
            self.function_uses = _function_uses(g)
            self.w(f"static KC_ADJOINT_FUNC void adj_{inst.cname}({', '.join(gparams + gadj + tail)}) {{")
            self.indent += 1
            self.declare_values(g, adj=False)
            self.emit_block(g.block, "fwd", "")
            self.indent -= 1
            self.w("}")
            return
        tail = [f"{rt} adj_ret"] if rt != "void" else []
        self.w(f"static KC_ADJOINT_FUNC void adj_{inst.cname}({', '.join([params] if params else [] + [])}{', ' if params else ''}{', '.join(adj_params + tail)}) {{")
        self.indent += 1
        self.declare_values(ir, adj=True)
        self.discarded_adjoints = _constants(ir)
        seeds = []
        if rt != "void":
            if len(ir.ret_vars) == 1:
                seeds.append(f"adj_{ir.ret_vars[0].cname} += adj_ret;")
            else:
                seeds.extend(f"adj_{v.cname} += adj_ret.f{k};" for k, v in enumerate(ir.ret_vars))
        self.emit_adjoint_body(ir, seeds)
        self.discarded_adjoints = set()
        self.indent -= 1
        self.w("}")

    def _emit_native_function(self, inst, rt):
        snippet, adj_snippet, replay_snippet = inst.native
        names = inst.defn.arg_names
        params = ", ".join(f"{ctype(t)} {n}" for n, t in zip(names, inst.arg_types))
        self.w(f"static KC_FUNC {rt} {inst.cname}({params}) {{\n{snippet}\n}}")
        self.w(f"static KC_FUNC {rt} {inst.cname}_replay({params}) {{\n{replay_snippet if replay_snippet is not None else snippet}\n}}")
        adj = [f"{ctype(t)}{'' if isinstance(t, ArrayType) else '&'} adj_{n}" for n, t in zip(names, inst.arg_types)]
        tail = [f"{rt} adj_ret"] if rt != "void" else []
        self.w(f"static KC_FUNC void adj_{inst.cname}({', '.join([params] + adj + tail)}) {{\n{adj_snippet or ''}\n}}")

    def emit_kernel_threads(self, kernel_name, ir, with_adjoint=True, lane=None):
        """Per-thread forward (and adjoint) functions of a kernel.

        ``lane``: "fwd" or "bwd" emits only that direction's lane function instead (emit_lane_entry):
        the thread function with the record block and the lane number as extra parameters, its
        accumulations (``self.lane_records``) written to the block instead of the arrays."""
        self.filename = _escape_path(ir.defn.file)
        self.function_uses = _function_uses(ir)
        # arrays by reference: a thread function that is not inlined otherwise copies every array
        # descriptor (64 bytes) per element, which tripled the cost of small adjoint kernels
        params = "".join(f", const {ctype(v.type)}& {v.cname}" if isinstance(v.type, ArrayType)
                         else f", {ctype(v.type)} {v.cname}" for v in ir.args)
        # multi-dimensional kc.tid() on the CPU: the entry point iterates the dimensions as nested
        # loops and passes each index (no 64-bit division per thread and dimension)
        self.tid_params = self.target == "cpu" and ir.tid_arity > 1
        if self.tid_params:
            params = "".join(f", kc::int32 __i{d}" for d in range(ir.tid_arity)) + params
        if lane is not None:
            params = f", {kernel_name}_{lane}_rec& __rec, kc::int32 __lane" + params
        if lane in (None, "fwd"):
            self.w(f"static KC_FUNC void {kernel_name}_fwd_{'lane' if lane else 'thread'}(const kc::launch_bounds_t& __bounds, kc::int64 __tid{params}) {{")
            self.indent += 1
            if self.debug:
                self.w("kc::set_debug_thread(__tid);  // named by debug-mode errors")
            self.declare_values(ir)
            self.emit_block(ir.block, "fwd", "")
            self.indent -= 1
            self.w("}")
        if not with_adjoint or lane == "fwd":
            self.tid_params = False
            return
        qualifier = "KC_FUNC" if lane else "KC_ADJOINT_FUNC"  # (the lane's caller decides what to vectorise)
        self.w(f"static {qualifier} void {kernel_name}_bwd_{'lane' if lane else 'thread'}(const kc::launch_bounds_t& __bounds, kc::int64 __tid{params}) {{")
        self.indent += 1
        if self.debug:
            self.w("kc::set_debug_thread(__tid);")
        self.declare_values(ir, adj=True, adj_args_local=True)
        # a kernel's value arguments get local adjoints that go nowhere (array gradients live in .grad)
        self.discarded_adjoints = _constants(ir) | {v.id for v in ir.args if not isinstance(v.type, ArrayType)}
        self.emit_adjoint_body(ir)
        self.discarded_adjoints = set()
        self.tid_params = False
        self.indent -= 1
        self.w("}")

    def emit_args_struct(self, kernel_name, ir):
        self.w(f"struct {kernel_name}_args {{")
        for v in ir.args:
            self.w(f"    {ctype(v.type)} {v.cname};")
        self.w("};")

    def emit_entry_points(self, kernel_name, ir, with_adjoint=True, simd=None):
        """CPU entry points: an OpenMP loop over the launch grid (and, for straight-line kernels,
        a vectorised forward for contiguous distinct arrays: emit_streaming_entry). ``simd``: the
        kernel's option (kc.kernel): False never emits the vectorised forward, True requires it."""
        arity = ir.tid_arity if ir.tid_arity > 1 else 0
        if simd and lane_accumulations(ir, "fwd") is None and not streamable(ir):
            stmt, what = _simd_obstacle(ir.block, set(), lanes=True) or (
                (None, "a print") if ir.has_print else
                (None, "accumulations the lanes cannot record (an atomic whose result is used, an array both "
                       "accumulated into and otherwise accessed, an array alias, or a launch of several dimensions)"))
            raise KernelCompileError(f"simd=True, but the kernel cannot run several threads per SIMD lane: it has {what}",
                                     ir.defn.name, ir.defn.file, getattr(stmt, "line", 0) or ir.defn.firstline)
        stream = not self.debug and simd is not False and streamable(ir)
        lanes = set()  # directions with a lane entry point (kc.kernel(simd=True): accumulations recorded per lane)
        if simd and not self.debug:
            lanes = {kind for kind in (("fwd", "bwd") if with_adjoint else ("fwd",)) if lane_accumulations(ir, kind)}
        if stream and "fwd" not in lanes:
            self.emit_streaming_entry(kernel_name, ir, arity, inline_all=bool(simd))
        for kind in sorted(lanes):
            self.emit_lane_entry(kernel_name, ir, kind, lane_accumulations(ir, kind))
        flush = " fflush(stdout);" if ir.has_print else ""
        for kind in (("fwd", "bwd") if with_adjoint else ("fwd",)):
            self.w(f'extern "C" KC_EXPORT void {kernel_name}_{kind}(const kc::launch_bounds_t* b, const {kernel_name}_args* a) {{')
            if kind in lanes:
                self.w(f"    if ({kernel_name}_{kind}_lanes(b, a)) return;")
            elif stream and kind == "fwd":
                self.w(f"    if ({kernel_name}_fwd_stream(b, a)) return;")
            self.w("    const kc::int64 n = b->size;")
            self.w("    if (b->nthreads <= 1) {")
            self.w("        " + self._thread_loop(kernel_name, kind, ir, arity, "a->", "0", "n"))
            private = accumulation_plan(ir, kind == "bwd").private
            if private:
                self.indent += 1
                self.emit_private_launch(kernel_name, kind, ir, private)
                self.indent -= 1
            # Chunks handed out on demand (about 16 per thread), not one fixed share each: threads
            # whose items cost more (a query point deep inside a mesh) or a core that runs slower
            # (a VM's second vCPU) no longer hold the others up. Results do not depend on the
            # split: no accumulation here (private copies, above, keep the static split), plain
            # writes, or atomics that are unordered anyway.
            self.w("    } else {")
            self.w("        const kc::int64 chunk = kc::launch_chunk(n, b->nthreads);")
            if arity:
                self.w("        const kc::int64 nchunks = (n + chunk - 1) / chunk;")
                self.w("        #pragma omp parallel for schedule(dynamic, 1) num_threads(b->nthreads)")
                self.w("        for (kc::int64 c = 0; c < nchunks; ++c) "
                       + self._thread_loop(kernel_name, kind, ir, arity, "a->", "c * chunk",
                                           "(c * chunk + chunk < n ? c * chunk + chunk : n)"))
            else:
                self.w("        #pragma omp parallel for schedule(dynamic, chunk) num_threads(b->nthreads)")
                self.w("        " + self._thread_loop(kernel_name, kind, ir, arity, "a->", "0", "n"))
            self.w("    }" + flush)
            self.w("}")

    @staticmethod
    def _thread_loop(kernel_name, kind, ir, arity, prefix, begin, end):
        """One statement calling the thread function for the flat indices [begin, end)."""
        args = "".join(f", {prefix}{v.cname}" for v in ir.args)
        if not arity:
            return f"for (kc::int64 t = {begin}; t < {end}; ++t) {kernel_name}_{kind}_thread(*b, t{args});"
        idx = "".join(f", o[{d}]" for d in range(arity - 1)) + ", j"
        return (f"kc::for_each_index(*b, {begin}, {end}, [&](kc::int64 t, const kc::int32* o, kc::int32 j) "
                f"{{ {kernel_name}_{kind}_thread(*b, t{idx}{args}); }});")

    def emit_streaming_entry(self, kernel_name, ir, arity, inline_all=False):
        """The forward of a straight-line kernel over contiguous, pairwise distinct arrays.

        Returns false (and the generic entry point runs) unless every array is in C order and no
        two overlap. Then the thread function gets copies of the arrays whose last stride is the
        constant sizeof(T), the loop is `omp simd` (the kernel's threads are independent: no
        atomics, and no array aliases another) and split in chunks handed out on demand, so the C++
        compiler vectorises it: saxpy went from ~0.55 to the C loop's bandwidth. The loop
        vectoriser is off for everything else (toolchain.py), hence the optimize attribute.
        Each thread computes exactly what the generic entry point's would (same statements,
        same rounding: no FMA contraction, see toolchain.py), so results do not depend on which
        entry point runs.
        """
        arrays = [v for v in ir.args if isinstance(v.type, ArrayType)]
        # the chunks one thread takes; the copies are its own locals, so the constant strides reach
        # the loop (shared with an OpenMP region they would be read back from memory)
        # inline_all (kc.kernel(simd=True)): `flatten` inlines the thread function and its
        # @kc.func calls into the loop whatever their size (GCC otherwise calls a large body per
        # element and vectorises nothing). Only non-floating-point options may differ from the
        # rest of the file here: GCC refuses to inline floating-point code across differing FP
        # options (the former "no-trapping-math" attribute left bench_autodiff's G2P calling its
        # B-spline function per element, 0.6-0.8x); -fno-trapping-math is now global (toolchain.py).
        attrs = 'optimize("tree-loop-vectorize"), flatten' if inline_all else 'optimize("tree-loop-vectorize")'
        self.w(f"static __attribute__(({attrs})) void {kernel_name}_fwd_share("
               f"const kc::launch_bounds_t* b, const {kernel_name}_args* a, int tn, int team) {{")
        self.indent += 1
        args = self.emit_unpacked_args(ir)
        call = f"{kernel_name}_fwd_thread(*b"
        if not arity:
            self.w("const kc::int64 items = b->size;")
            loop = ["const kc::int32 first = (kc::int32)begin, stop = (kc::int32)end;",
                    "#pragma omp simd",
                    f"for (kc::int32 t = first; t < stop; ++t) {call}, (kc::int64)t{args});"]
        else:
            # rows of the last dimension: the leading indices are decomposed once per row
            idx = "".join(f", o[{d}]" for d in range(arity - 1))
            self.w(f"const kc::int32 width = b->shape[{arity - 1}];")
            self.w("const kc::int64 items = b->size / width;")
            loop = ["for (kc::int64 r = begin; r < end; ++r) {",
                    "    kc::int32 o[4] = {0, 0, 0, 0};",
                    "    kc::int64 rem = r;",
                    f"    for (int d = {arity - 2}; d >= 0; --d) {{ o[d] = (kc::int32)(rem % b->shape[d]); rem /= b->shape[d]; }}",
                    "    const kc::int64 t0 = r * width;",
                    "    #pragma omp simd",
                    f"    for (kc::int32 j = 0; j < width; ++j) {call}, t0 + j{idx}, j{args});",
                    "}"]
        # On several threads the items go out in chunks on demand (~16 per thread, whole SIMD
        # blocks), not in one fixed share each: a thread that starts late (on a VM, a vCPU halted
        # between launches and woken; on a busy machine, one waiting for a core) takes fewer,
        # instead of the others waiting for its half at the end.  Plain writes only: the split
        # changes no result.  One thread: the whole range, the loop as it was before chunks (one
        # loop for all the items: GCC's inlining of the thread function, and so whether it
        # vectorises a large body, stays as it was on one thread).
        for line in ["if (team <= 1) {",
                     "    const kc::int64 begin = 0, end = items;",
                     *("    " + x for x in loop),
                     "} else {",
                     "    const kc::int64 chunk = (kc::launch_chunk(items, team) + 15) & ~(kc::int64)15;",
                     "    const kc::int64 nchunks = (items + chunk - 1) / chunk;",
                     "    #pragma omp for schedule(dynamic, 1) nowait",
                     "    for (kc::int64 c = 0; c < nchunks; ++c) {",
                     "        const kc::int64 begin = c * chunk, end = begin + chunk < items ? begin + chunk : items;",
                     *("        " + x for x in loop),
                     "    }",
                     "}"]:
            self.w(line)
        self.indent -= 1
        self.w("}")
        self.w(f"static bool {kernel_name}_fwd_stream(const kc::launch_bounds_t* b, const {kernel_name}_args* a) {{")
        self.indent += 1
        self.emit_plain_arrays_guard(arrays)
        if not arity:
            self.w("if (b->size > 0x7FFFFFFF) return false;")  # the loop counts in int32
        self.w(f"if (b->nthreads <= 1) {kernel_name}_fwd_share(b, a, 0, 1);")
        self.w("else {")
        self.w("    #pragma omp parallel num_threads(b->nthreads)")
        self.w(f"    {kernel_name}_fwd_share(b, a, omp_get_thread_num(), omp_get_num_threads());")
        self.w("}")
        self.w("return true;")
        self.indent -= 1
        self.w("}")

    def emit_plain_arrays_guard(self, arrays):
        """``return false`` unless every array in ``arrays`` is C-contiguous and no two overlap
        (what the vectorised entry points assume)."""
        if arrays:
            self.w("if (" + " || ".join(f"!kc::c_contiguous(a->{v.cname})" for v in arrays) + ") return false;")
        if len(arrays) > 1:
            self.w(f"uintptr_t first[{len(arrays)}], last[{len(arrays)}];")
            for k, v in enumerate(arrays):
                self.w(f"kc::byte_range(a->{v.cname}, first[{k}], last[{k}]);")
            self.w(f"if (!kc::disjoint(first, last, {len(arrays)})) return false;")

    def emit_unpacked_args(self, ir):
        """Local copies of a share function's arguments (arrays in C order) from its ``a`` struct;
        returns them as ", x, y" for the thread function's call."""
        for v in ir.args:
            if isinstance(v.type, ArrayType):
                self.w(f"const {ctype(v.type)} {v.cname} = kc::c_order<{v.type.ndim}>(a->{v.cname});")
            else:
                self.w(f"const {ctype(v.type)} {v.cname} = a->{v.cname};")
        return "".join(f", {v.cname}" for v in ir.args)

    def emit_lane_entry(self, kernel_name, ir, kind, records):
        """The vectorised ``kind`` entry point of a kc.kernel(simd=True) whose threads accumulate
        into arrays (forward: top-level atomic_add/atomic_sub; adjoint: the gradient scatter of
        every read), see lane_accumulations.

        Lanes may not add into one element at once, so each thread's accumulations are recorded
        instead: the block of LANES threads runs as an `omp simd` loop (GCC vectorises the
        arithmetic), each writing the byte offset and value of its k-th accumulation to slot k of
        its lane; a scalar loop then applies the block's records lane by lane, slot by slot, with
        the accumulation the thread itself would have done (plain add on one thread or into an
        element the thread owns, atomic otherwise). That is the generic entry point's order on one
        thread, so results are bit-identical there; on several threads each takes one static share
        (atomics then add in another order, as they do between runs). Returns false (the generic
        entry point runs) for strided or overlapping arrays, private accumulation copies, more
        than 2^31 threads.
        """
        arrays = [v for v in ir.args if isinstance(v.type, ArrayType)]
        self.w("#ifndef KC_LANES")
        self.w("#define KC_LANES 16  // threads per block of records: two AVX2 vectors of float")
        self.w("#endif")
        self.w(f"struct {kernel_name}_{kind}_rec {{")
        for k, st in enumerate(records):
            self.w(f"    kc::int64 o{k}[KC_LANES]; {ctype(st.args[0].type.dtype)} v{k}[KC_LANES];")
        self.w("};")
        self.lane_records = {id(st): k for k, st in enumerate(records)}
        try:
            self.emit_kernel_threads(kernel_name, ir, with_adjoint=kind == "bwd", lane=kind)
        finally:
            self.lane_records = {}
        self.w(f"static __attribute__(({_LANE_ATTRS})) void {kernel_name}_{kind}_share("
               f"const kc::launch_bounds_t* b, const {kernel_name}_args* a, int tn, int team) {{")
        self.indent += 1
        args = self.emit_unpacked_args(ir)
        self.w(f"{kernel_name}_{kind}_rec rec;")
        self.w("kc::int64 begin, end;")
        self.w("kc::static_share(b->size, tn, team, begin, end);")
        self.w("for (kc::int64 t0 = begin; t0 < end; t0 += KC_LANES) {")
        self.indent += 1
        self.w("const kc::int32 lanes = (kc::int32)(end - t0 < KC_LANES ? end - t0 : KC_LANES);")
        self.w("#pragma omp simd")
        self.w(f"for (kc::int32 l = 0; l < lanes; ++l) {kernel_name}_{kind}_lane(*b, t0 + l, rec, l{args});")
        self.w("for (kc::int32 l = 0; l < lanes; ++l) {")
        for k, st in enumerate(records):
            a = st.args[0].cname
            if kind == "fwd":
                self.w(f"    kc::accumulate({a}, kc::elem({a}.data, {a}, rec.o{k}[l]), rec.v{k}[l]);")
            else:
                self.w(f"    if ({a}.grad) kc::grad_accumulate({a}, kc::elem({a}.grad, {a}, rec.o{k}[l]), rec.v{k}[l]);")
        self.w("}")
        self.indent -= 1
        self.w("}")
        self.indent -= 1
        self.w("}")
        self.w(f"static bool {kernel_name}_{kind}_lanes(const kc::launch_bounds_t* b, const {kernel_name}_args* a) {{")
        self.indent += 1
        self.w("if (b->private_mask || b->size > 0x7FFFFFFF) return false;")
        self.emit_plain_arrays_guard(arrays)
        self.w(f"if (b->nthreads <= 1) {kernel_name}_{kind}_share(b, a, 0, 1);")
        self.w("else {")
        self.w("    #pragma omp parallel num_threads(b->nthreads)")
        self.w(f"    {kernel_name}_{kind}_share(b, a, omp_get_thread_num(), omp_get_num_threads());")
        self.w("}")
        self.w("return true;")
        self.indent -= 1
        self.w("}")

    def emit_private_launch(self, kernel_name, kind, ir, private):
        """The launch with private accumulation copies (accumulation.py): thread 0 adds into
        the array itself, every other thread into a zeroed copy of its own; after the loop
        the threads sum the copies into the array, each over its share of the elements."""
        field = "grad" if kind == "bwd" else "data"
        self.w("} else if (b->private_mask) {")
        self.indent += 1
        self.w("const int nt = b->nthreads;")
        for k, _ in enumerate(private):
            self.w(f"void* copies_{k}[KC_MAX_THREADS] = {{}};")
        self.w("#pragma omp parallel num_threads(nt)")
        self.w("{")
        self.indent += 1
        self.w(f"{kernel_name}_args la = *a;")
        self.w("const int tn = omp_get_thread_num(), team = omp_get_num_threads();")
        for k, tgt in enumerate(private):
            v = f"la.{ir.args[tgt.arg].cname}"
            self.w(f"const bool on_{k} = (b->private_mask >> {k} & 1) && {v}.{field} && team <= KC_MAX_THREADS;")
            self.w(f"const kc::int64 count_{k} = on_{k} ? kc::element_count({v}) * {tgt.ncomp} : 0;")
            self.w(f"if (on_{k}) {{")
            self.w(f"    if (tn > 0) {v}.{field} = (decltype({v}.{field}))kc::private_copy({k}, count_{k} * sizeof({tgt.scalar}));")
            self.w(f"    copies_{k}[tn] = (void*){v}.{field}; {v}.serial = 1;")
            self.w("}")
        arity = ir.tid_arity if ir.tid_arity > 1 else 0
        if arity:  # the same split as schedule(static), walked row by row
            self.w("kc::int64 begin, end;")
            self.w("kc::static_share(n, tn, team, begin, end);")
            self.w(self._thread_loop(kernel_name, kind, ir, arity, "la.", "begin", "end"))
            self.w("#pragma omp barrier")
        else:
            args = "".join(f", la.{v.cname}" for v in ir.args)
            self.w("#pragma omp for schedule(static)")
            self.w(f"for (kc::int64 t = 0; t < n; ++t) {kernel_name}_{kind}_thread(*b, t{args});")
        for k, tgt in enumerate(private):
            self.w(f"if (on_{k}) kc::private_reduce(({tgt.scalar}**)copies_{k}, team, count_{k});")
        self.indent -= 1
        self.w("}")
        self.indent -= 1


_DIVISIONS = ("div", "mod", "floordiv", "cw_div")  # argument 1 is the divisor



def streamable(ir) -> bool:
    """Straight-line kernels: no loops (other than range loops with constant bounds), branches
    (other than the if-converted ones), prints or atomics, and calls only of @kc.func functions
    that are straight-line too; their forward gets a vectorised entry point (see
    Emitter.emit_streaming_entry). Their threads are independent when no array aliases another."""
    cached = getattr(ir, "_streamable", None)
    if cached is None:
        cached = ir._streamable = not ir.has_print and _simd_obstacle(ir.block, set()) is None
    return cached


_LANE_ATTRS = 'optimize("tree-loop-vectorize"), flatten'
_LANE_ATOMICS = ("atomic_add", "atomic_sub")
_HARMLESS = ("array_len", "array_shape", "wrap_array_index")  # read only the descriptor


def lane_accumulations(ir, kind):
    """The accumulation statements of kernel ``ir`` that its vectorised ``kind`` ("fwd"/"bwd")
    entry point records per lane (Emitter.emit_lane_entry), in the order the thread function
    runs them; None where that entry point cannot run the kernel.

    The kernel must be straight-line (streamable, atomics aside) with a 1-D launch. Forward: the
    records are its atomic_add/atomic_sub statements outside loops, whose results are unused,
    on arrays that nothing else in the kernel touches. Adjoint: the gradient scatters of its
    reads (arrays of float elements that the kernel only reads); no loops left after unrolling,
    no @kc.func taking arrays (its adjoint would scatter unrecorded)."""
    key = "_lane_" + kind
    if key not in ir.__dict__:
        ir.__dict__[key] = _lane_accumulations(ir, kind)
    return ir.__dict__[key]


def _lane_accumulations(ir, kind):
    if ir.has_print or ir.tid_arity > 1 or _simd_obstacle(ir.block, set(), lanes=True) is not None:
        return None
    args = {v.id for v in ir.args if isinstance(v.type, ArrayType)}
    uses = use_counts(ir.block.walk(), ir.ret_vars)
    names = {}   # array argument id -> names of the builtins that take it
    for s in ir.block.walk():
        if isinstance(s, Copy) and isinstance(s.src.type, ArrayType):
            return None   # an alias: accesses through it would not be followed
        if isinstance(s, FuncCall) and any(isinstance(a.type, ArrayType) for a in s.args):
            if kind == "bwd":
                return None
            for a in s.args:
                if isinstance(a.type, ArrayType):
                    names.setdefault(a.id, set()).add("call")
        if isinstance(s, Call):
            for a in s.args:
                if isinstance(a.type, ArrayType):
                    names.setdefault(a.id, set()).add(s.builtin.name)
    if any(a not in args for a in names):
        return None   # an array from a struct field or a view
    top = ir.block.stmts
    if kind == "fwd":
        records = [s for s in top if isinstance(s, Call) and s.builtin.name in _LANE_ATOMICS]
        nested = [s for s in ir.block.walk() if isinstance(s, Call) and s.builtin.side_effect and s.builtin.name != "store"]
        if len(nested) != len(records):
            return None   # an atomic in a loop, or another kind of atomic
        for s in records:
            if (s.out is not None and uses.get(s.out.id)) or not names[s.args[0].id] <= set(_LANE_ATOMICS) | set(_HARMLESS):
                return None
        return records
    if ir.loops:
        return None
    records = []
    for s in top:
        if isinstance(s, Call) and s.builtin.name == "load" and T.is_differentiable_type(s.args[0].type.dtype):
            if not names[s.args[0].id] <= {"load", *_HARMLESS}:
                return None   # also stored or accumulated into: its gradient is read, not only added to
            if scalar_ctype(s.args[0].type.dtype) not in ("float", "double", "kc::float32", "kc::float64"):
                return None
            records.append(s)
    if any(isinstance(s, Call) and s.builtin.name == "load" for s in ir.block.walk() if s not in top):
        return None
    return records[::-1]   # the reverse sweep scatters in reverse order


def _simd_obstacle(block, seen, lanes=False):
    """The first statement (in ``block`` or a function it calls) that keeps a kernel off the
    vectorised entry point, with what it is; None when there is none. ``lanes``: atomic_add and
    atomic_sub in the kernel itself are allowed (recorded per lane, see lane_accumulations)."""
    constants = {s.out.id for s in block.walk() if isinstance(s, Const)}
    top = {id(s) for s in block.stmts} if lanes else set()
    for s in block.walk():
        if id(s) in top and isinstance(s, Call) and s.builtin.name in _LANE_ATOMICS:
            continue
        if isinstance(s, Loop) and _fixed_trip(s, constants):
            continue  # its body is walked (and checked) like the code around it
        if isinstance(s, Loop):
            return s, "a loop whose trip count is not constant (or that breaks)"
        if isinstance(s, Print):
            return s, "a print"
        if isinstance(s, If) and not (_speculatable(s.body) and _speculatable(s.orelse)):
            return s, "a branch with loads, stores or calls"
        if isinstance(s, Call) and s.builtin.side_effect and s.builtin.name != "store":
            return s, f"'{s.builtin.name}' (an atomic or other side effect)"
        if isinstance(s, FuncCall) and id(s.func) not in seen:
            seen.add(id(s.func))
            fir = getattr(s.func, "ir", None)  # None: a native snippet, which may loop
            if fir is None:
                return s, "a call of a native function"
            if fir.has_print:
                return s, "a call of a function that prints"
            inner = _simd_obstacle(fir.block, seen)
            if inner is not None:
                return s, f"a call of a function with {inner[1]}"
    return None


def _fixed_trip(loop, constants) -> bool:
    """A `range` loop with constant bounds and no break (the 3x3 stencil loops of MPM G2P): every
    thread runs the same iterations, so the work stays uniform for the static split of the
    streaming entry point and GCC unrolls it completely before vectorising across threads."""
    return (loop.kind == "range" and not loop.brk
            and all(v is not None and v.id in constants for v in (loop.start, loop.stop, loop.step)))


def _is_integer(t) -> bool:
    """An integer scalar, or a vector/matrix of integers (their division by zero is checked)."""
    return T.is_int(t) or (T.is_composite(t) and T.is_int(t._dtype))


_SPECULATE_MAX = 8
_NO_SPECULATE = {"div", "mod", "floordiv"}  # integer division by zero would trap


def _speculatable(block) -> bool:
    """A short branch body with no side effects, memory accesses, calls or loops."""
    if len(block.stmts) > _SPECULATE_MAX:
        return False
    for st in block.stmts:
        if isinstance(st, (Const, Copy)):
            continue
        if not isinstance(st, Call):
            return False
        row = st.builtin
        if row.side_effect or row.array_access or row.mutates or row.name in ("view", "extract", "assign_copy"):
            return False
        if row.name in _NO_SPECULATE and not all(T.is_float(a.type) or (T.is_composite(a.type) and T.is_float(a.type._dtype)) for a in st.args):
            return False
    return True


def _function_uses(ir):
    """Var id -> number of statements (and returns) of a function that read it."""
    return use_counts(ir.block.walk(), ir.ret_vars)


def _in_place_carried(loop, function_uses):
    """Carried values a loop updates in place: ``x1 = copy(x0)`` of the iteration's entry value
    x0, where x0 has no other use and x1 is the value carried to the next iteration (the
    frontend's copy before a builtin that mutates its argument, e.g. a query iterator).
    Plain forward code may keep both in one C++ variable; the copy then disappears, which
    matters for iterators updated by a non-inlined function (their address is taken, so
    each copy would be a memory copy per iteration). The adjoint keeps the copies: it
    restores entry values from checkpoints and accumulates adjoints through them."""
    # the value after the loop must be unused: with one variable it would be the value the
    # failing while-condition left, where the adjoint's replay sees the value before it
    brk = {v.id for v in (loop.brk or ())}
    exits = {c.entry.id: c.exit for c in loop.carried
             if c.exit is not None and c.exit is not c.entry and c.entry.id not in brk
             and (c.result is None or not function_uses.get(c.result.id))}
    if not exits:
        return []
    copies = [st for st in list(loop.cond_block.walk()) + list(loop.body.walk())
              if isinstance(st, Copy) and st.src.id in exits and exits[st.src.id] is st.out]
    if not copies:
        return []
    uses = use_counts(list(loop.cond_block.walk()) + list(loop.body.walk()))
    return [(st.out, st.src) for st in copies if uses.get(st.src.id, 0) == 1]


def _ncomp(t):
    n = 1
    for d in t._shape:
        n *= d
    return n


def _adj_symbol(native: str) -> str:
    head, sep, tail = native.rpartition("::")
    return f"{head}{sep}adj_{tail}"


def _c_string(s: str) -> str:
    """A C string literal (printf formats keep their % directives)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _printf_arg(v: Var) -> str:
    t = v.type
    if t is T.float16:
        return f"(double)kc::half_to_float({v.cname})"
    if T.is_float(t):
        return f"(double){v.cname}"
    if t in (T.int64, T.uint64):
        return f"(long long){v.cname}"
    return f"(int){v.cname}" if T.is_scalar(t) and t._size < 4 else v.cname


def _escape_path(p: str) -> str:
    return p.replace("\\", "\\\\").replace('"', '\\"')


def emit_struct(t) -> str:
    """C++ definition of a @kc.struct (or tuple) with the += used by adjoint accumulation."""
    if isinstance(t, T.Tuple):
        name, fields = ctype(t), [(f"f{k}", ft) for k, ft in enumerate(t.types)]
    else:
        name, fields = t._ctype, list(t._fields.items())
    body = " ".join(f"{ctype(ft)} {fn};" for fn, ft in fields)
    acc = " ".join(f"a.{fn} += b.{fn};" for fn, ft in fields if not isinstance(ft, ArrayType))
    atom = " ".join(f"r.{fn} = atomic_add_raw(&p->{fn}, v.{fn});" for fn, ft in fields
                    if not isinstance(ft, ArrayType) and ft is not T.bool_)
    return (f"struct {name} {{ {body} }};\n"
            f"KC_FUNC {name}& operator+=({name}& a, const {name}& b) {{ {acc} return a; }}\n"
            # adjoints of reads from arrays of structs scatter member-wise
            f"KC_FUNC {name} atomic_add_raw({name}* p, const {name}& v) {{ using kc::atomic_add_raw; {name} r = {{}}; {atom} return r; }}\n")


_IDENT = re.compile(r"\bv(\d+)\b")


def _constants(ir) -> set:
    """Ids of constants: nothing reads their adjoints."""
    return {s.out.id for s in ir.block.walk() if isinstance(s, Const)}


def _unread_values(row, args, discarded) -> set:
    """Indices of ``args`` whose values the adjoint of ``row`` does not read.

    Linear rows declare theirs (``adj_ignores``).  A bilinear row reads argument 0's value only
    for argument 1's adjoint and the other way round, so when one adjoint is discarded (a
    constant, a kernel's value argument) the other argument's value is not needed.
    """
    unread = set(row.adj_ignores)
    if row.adj_bilinear and len(args) == 2:
        if args[0].id in discarded:
            unread.add(1)
        if args[1].id in discarded:
            unread.add(0)
    return unread


def _ids(lines) -> set:
    """Ids of the SSA values (C++ names v<id>) a chunk of emitted lines mentions."""
    return set(_IDENT.findall("\n".join(lines)))


def _sinkable(s) -> bool:
    """Pure statements the adjoint may emit later than the replay order (see emit_adjoint_body)."""
    if isinstance(s, (Const, Copy, Construct, GetAttr, SetAttr, Tid)):
        return True
    if isinstance(s, Call):
        row = s.builtin
        return not (row.side_effect or row.mutates)
    return False


def _reassigned_ids(ir) -> set:
    """Ids of values assigned more than once: everything a loop defines or carries (the reverse
    sweep replays iterations) and arguments of builtins that update them in place."""
    out = set()
    for s in ir.block.walk():
        if isinstance(s, Loop):
            for v in defined_vars(Block([s])):
                out.add(str(v.id))
        elif isinstance(s, Call) and s.builtin.mutates:
            out.update(str(s.args[i].id) for i in s.builtin.mutates if i < len(s.args))
    return out
