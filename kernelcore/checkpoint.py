"""kc.checkpointed: a loop of N steps on a Tape that keeps O(sqrt N) states instead of N.

A plain Tape keeps every state of a rollout alive until ``backward()``, because each step's
adjoint reads the state it started from.  ``checkpointed`` runs the loop with recording off,
keeping only the state at the start of every segment of ``segment`` steps (ceil(sqrt(N)) by
default), and records itself on the enclosing Tape as one entry.  Its backward walks the
segments last to first: it re-runs one segment from its checkpoint under a fresh inner
Tape, into fresh states, then runs that inner tape's adjoints.  The gradient of a segment's
end state is already in place (the next segment's backward left it in the checkpoint's
``.grad``, or the caller's loss put it in the final state's), so segments chain with no
copying, and arrays outside the loop (Control inputs, model parameters) receive their
gradient from the inner launches exactly as from a plain Tape, in the same order: the result
is bitwise the same as without checkpointing when the forward is deterministic (a fixed
thread count on the CPU).

Memory: ceil(N / segment) checkpoints + 2 work states during the forward; during the
backward, the checkpoints plus ``segment - 1`` work states for the segment being
recomputed (allocated once and reused by every segment).
With segment = sqrt(N) that is about 2 sqrt(N) states.  Time: every step runs twice forward
(once in the forward, once when its segment is recomputed), plus once backward.
"""
from __future__ import annotations

import math

from .array import array
from .device import get_runtime
from .tape import Tape


def state_arrays(state):
    """The kc arrays of a state: a kc array, a list/tuple/dict of them, or an object with
    ``arrays()`` (sim.State: (name, array) pairs)."""
    if isinstance(state, array):
        return [state]
    if isinstance(state, dict):
        items = list(state.values())
    elif isinstance(state, (list, tuple)):
        items = list(state)
    elif callable(getattr(state, "arrays", None)):
        items = [a[1] if isinstance(a, tuple) else a for a in state.arrays()]
    else:
        raise TypeError(f"kc.checkpointed: cannot find the arrays of a state of type {type(state).__name__}: "
                        "pass a kc array, a list/tuple/dict of kc arrays, or an object with an arrays() method")
    out = [a for a in items if a is not None]
    for a in out:
        if not isinstance(a, array):
            raise TypeError(f"kc.checkpointed: a state holds a {type(a).__name__}, expected kc arrays")
    return out


def _like(state):
    """make_state for states that are plain arrays or containers of arrays: zeros of the same
    shape and dtype, with a gradient."""
    from .array import zeros

    def one(a):
        return zeros(a.shape, dtype=a.dtype, device=a.device, requires_grad=True)

    if isinstance(state, array):
        return lambda: one(state)
    if isinstance(state, (list, tuple)):
        return lambda: type(state)(one(a) for a in state)
    if isinstance(state, dict):
        return lambda: {k: one(a) for k, a in state.items()}
    raise TypeError(f"kc.checkpointed: pass make_state=... (a function returning a fresh state) for states of type "
                    f"{type(state).__name__}, e.g. make_state=model.state")


class _NoRecording:
    """Hide the enclosing tapes (launches and kc.copy record on every tape of the stack)."""

    def __init__(self, only=None):
        self.only = only

    def __enter__(self):
        stack = get_runtime().tape_stack
        self.saved = stack[:]
        stack.clear()
        if self.only is not None:
            stack.append(self.only)

    def __exit__(self, *exc):
        stack = get_runtime().tape_stack
        stack.clear()
        stack.extend(self.saved)


def checkpointed(step, state, num_steps: int, make_state=None, segment: int | None = None, on_state_grad=None,
                 schedule: str = "sqrt", snapshots: int | None = None):
    """Run ``step(i, state_in, state_out)`` for i = 0 .. num_steps-1 from ``state``; return the
    final state (a new one, from ``make_state()``).

    Inside ``with tape:``, the loop is recorded as one entry that keeps only every
    ``segment``-th state and recomputes the others during ``tape.backward()`` (see the module
    docstring); outside a tape it just runs, with two work states.

    Args:
        step: ``step(i, state_in, state_out)`` launches kernels that read ``state_in`` (never
            write it) and overwrite every quantity of ``state_out`` that later steps read
            (e.g. ``lambda i, a, b: solver.step(model, a, b, control, dt)``).  It may read any
            other array (Control inputs, model parameters): their gradients accumulate as on a
            plain Tape.  It must do the same thing when re-run (recomputation).
        state: the initial state, left unchanged; a kc array, a list/tuple/dict of kc arrays
            or an object with ``arrays()`` such as ``sim.State``.  Like any array on a Tape it
            must not be overwritten before ``backward()``.
        num_steps: N >= 1.
        make_state: returns a fresh state of the same layout whose arrays require grad
            (``model.state`` for sim); optional for arrays and containers of arrays.
        segment: steps per segment, 1 <= segment (larger than N means N); default
            ceil(sqrt(N)).  Segments need not divide N: the last one is shorter.
        on_state_grad: optional ``on_state_grad(i, state)``, called during ``backward()`` once
            the gradient of state i (the input of step i; i = N: the final state) is complete,
            i = N first, down to 0 (kc.autograd.gradient_norms uses it).  The state and its
            ``.grad`` arrays may be reused after it returns: copy what you keep.
        schedule: ``"sqrt"`` (segments of ``segment`` steps, above) or ``"revolve"``: the
            binomial schedule of kernelcore/checkpoint_revolve.py, which keeps at most
            ``snapshots`` intermediate states (plus 2 to 3 work states) and re-runs steps more
            often (about r times each for N = C(snapshots + r, r)).
        snapshots: for ``schedule="revolve"``, an integer >= 0; default ceil(log2 N).
    """
    n = int(num_steps)
    if n < 1 or n != num_steps:
        raise ValueError(f"kc.checkpointed: num_steps must be an integer >= 1, got {num_steps!r}")
    k = math.isqrt(n - 1) + 1 if segment is None else int(segment)  # ceil(sqrt(n))
    if k < 1 or (segment is not None and k != segment):
        raise ValueError(f"kc.checkpointed: segment must be an integer >= 1, got {segment!r}")
    k = min(k, n)
    if schedule not in ("sqrt", "revolve"):
        raise ValueError(f"kc.checkpointed: schedule must be 'sqrt' or 'revolve', got {schedule!r}")
    if schedule == "revolve":
        n_snap = max(0, (n - 1).bit_length()) if snapshots is None else snapshots
        if not isinstance(n_snap, int) or isinstance(n_snap, bool) or n_snap < 0:
            raise ValueError(f"kc.checkpointed: snapshots must be an integer >= 0, got {snapshots!r}")
        if segment is not None:
            raise ValueError("kc.checkpointed: segment= is for schedule='sqrt'; schedule='revolve' takes snapshots=")
        k = n  # the forward keeps no checkpoint: the backward's schedule takes its own snapshots
    elif snapshots is not None:
        raise ValueError("kc.checkpointed: snapshots= is for schedule='revolve'")
    make_state = make_state or _like(state)
    state_arrays(state)  # checks the layout early
    recording = bool(get_runtime().tape_stack)
    final = make_state()
    checkpoints = [state]  # checkpoints[s]: the state at the start of segment s
    work = [None, None]
    outside = []
    with _NoRecording():
        cur = state
        for i in range(n):
            if i + 1 == n:
                nxt = final
            elif recording and (i + 1) % k == 0:
                nxt = make_state()
                checkpoints.append(nxt)
            else:
                slot = 0 if work[0] is not cur else 1
                if work[slot] is None:
                    work[slot] = make_state()
                nxt = work[slot]
            try:
                if recording and i == 0:
                    outside = _outside_arrays(step, cur, nxt)  # runs step 0, recorded to find the arrays it reads
                else:
                    step(i, cur, nxt)
            except FloatingPointError as e:  # verify_nan: say which step
                raise type(e)(f"{e} [inside kc.checkpointed, step {i} of {n}]") from None
            cur = nxt
    if not recording:
        return final
    del work
    for s in checkpoints[1:] + [final]:
        for a in state_arrays(s):
            if a.grad is None:
                raise ValueError("kc.checkpointed: make_state() returned arrays without requires_grad=True; the "
                                 "gradient cannot flow through the loop")
    if schedule == "revolve":
        from .checkpoint_revolve import RevolveLoop

        loop = RevolveLoop(step, n, n_snap, make_state, state, final, on_state_grad)
    else:
        loop = _Loop(step, n, k, make_state, checkpoints, final, on_state_grad)
    arrays = state_arrays(state) + state_arrays(final) + outside
    for tape in _enclosing_tapes():
        tape.record_func(loop.backward, arrays)
        entry = tape.launches[-1]
        entry.name = (f"checkpointed({n} steps, revolve, {n_snap} snapshots)" if schedule == "revolve"
                      else f"checkpointed({n} steps, segment {k})")
        entry.loop = loop
        entry.expand = loop.expand  # for kc.autograd.gradcheck_tape
    return final


def _enclosing_tapes():
    seen = set()
    for tape in reversed(get_runtime().tape_stack):
        if id(tape) not in seen:
            seen.add(id(tape))
            yield tape


def _outside_arrays(step, state_in, state_out):
    """Run step 0 on a scratch tape; the arrays with a gradient it touches outside the two states."""
    scratch = Tape()
    with _NoRecording(only=scratch):
        step(0, state_in, state_out)
    mine = {id(a) for a in state_arrays(state_in) + state_arrays(state_out)}
    found, seen = [], set()
    for e in scratch.launches:
        for p in (getattr(e, "params", None) or getattr(e, "arrays", ())):
            if isinstance(p, array) and p.grad is not None and id(p) not in mine and id(p) not in seen:
                seen.add(id(p))
                found.append(p)
    return found


class _Loop:
    """The recorded loop: its checkpoints and how to recompute and reverse each segment."""

    def __init__(self, step, n, k, make_state, checkpoints, final, on_state_grad=None):
        self.step, self.n, self.k, self.make_state = step, n, k, make_state
        self.on_state_grad = on_state_grad
        self.checkpoints, self.final = checkpoints, final

    def backward(self):
        n, k = self.n, self.k
        pool = []  # the work states inside a segment, reused by every segment (allocation is slow)
        for s in reversed(range(len(self.checkpoints))):
            start, stop = s * k, min(n, (s + 1) * k)
            cur = self.checkpoints[s]
            if s > 0:
                for a in state_arrays(cur):  # its gradient is accumulated by this segment alone
                    a.grad.zero_()
            end = self.checkpoints[s + 1] if s + 1 < len(self.checkpoints) else self.final
            tapes, states = [], [cur]  # one tape per step: on_state_grad sees each state's gradient
            for i in range(start, stop):    # before the previous step's stores consume it
                if i + 1 == stop:
                    nxt = end
                else:
                    j = i - start
                    if j == len(pool):
                        pool.append(self.make_state())
                    else:
                        for a in state_arrays(pool[j]):  # left over from the later segment
                            a.grad.zero_()
                    nxt = pool[j]
                tapes.append(Tape())
                with _NoRecording(only=tapes[-1]):
                    self.step(i, cur, nxt)  # rewrites `end` with the values it already holds
                cur = nxt
                states.append(nxt)
            if self.on_state_grad is not None and stop == n:
                self.on_state_grad(n, end)
            for i in reversed(range(start, stop)):
                try:
                    tapes[i - start]._run_adjoints()  # end's .grad holds its adjoint: the loss's or the next segment's
                except FloatingPointError as e:  # verify_nan: say which step the inner tape held
                    raise type(e)(f"{e} [inside kc.checkpointed, recomputed step {i} of {n}]") from None
                if self.on_state_grad is not None:
                    self.on_state_grad(i, states[i - start])
            del tapes, states

    def expand(self):
        """The whole loop recorded step by step on a new Tape (N states: for checks on small N)."""
        tape = Tape()
        cur = self.checkpoints[0]
        with _NoRecording(only=tape):
            for i in range(self.n):
                nxt = self.make_state()
                self.step(i, cur, nxt)
                cur = nxt
        return tape
