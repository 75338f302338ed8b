"""The binomial ("revolve") schedule of kc.checkpointed: O(s) states for N steps.

``kc.checkpointed(..., schedule="revolve", snapshots=s)`` keeps at most ``s`` intermediate
states (plus the initial and final states and at most three work states) instead of
sqrt(N).  The backward reverses the steps [lo, hi) recursively: it advances from the state
at ``lo`` to a split point ``mid`` unrecorded, keeps that state as a snapshot, reverses
[mid, hi) with one snapshot fewer, frees the snapshot's role and reverses [lo, mid) with the
same number again.  The split follows the binomial bound: with s snapshots and r
repetitions, beta(s, r) = C(s + r, s) steps can be reversed, beta(s, r) = beta(s, r - 1) +
beta(s - 1, r), so [lo, mid) gets at most beta(s, r - 1) steps (its steps were advanced once
already) for the smallest r with beta(s, r) >= hi - lo.  With no snapshot left it advances
from ``lo`` to each step in turn (quadratic in the segment, which the schedule keeps short).

Each step's adjoints run right after that step is re-run under a fresh Tape, steps from last
to first, so the launch order of the adjoints, and therefore the gradient, is bitwise the same
as a plain Tape's (deterministic forward assumed).  Unlike the textbook algorithm, the
forward sweep keeps no snapshot (it only runs the loop); the backward's first advance
recomputes it, so the cost is at most one extra forward of the loop over the optimum.
"""
from __future__ import annotations

from math import comb

from .tape import Tape


def revolve_split(steps: int, snapshots: int) -> int:
    """Steps to advance before taking a snapshot when reversing ``steps`` >= 2 steps with
    ``snapshots`` >= 1 free snapshots (1 <= result < steps)."""
    r = 1
    while comb(snapshots + r, snapshots) < steps:
        r += 1
    return max(1, min(comb(snapshots + r - 1, snapshots), steps - 1))


class RevolveLoop:
    """The tape entry of a checkpointed loop under the binomial schedule."""

    def __init__(self, step, n, snapshots, make_state, initial, final, on_state_grad=None):
        self.step, self.n, self.snapshots, self.make_state = step, n, snapshots, make_state
        self.initial, self.final, self.on_state_grad = initial, final, on_state_grad
        self.free = []            # states allocated by the backward, not in use (allocation is slow)
        self.allocated = 0        # states the backward allocated (for tests: s + at most 3)
        self.steps_run = 0        # step evaluations of the last backward (recomputation + the recorded ones)

    def _take(self):
        if self.free:
            return self.free.pop()
        self.allocated += 1
        return self.make_state()

    def _zero_grad(self, state):
        from .checkpoint import state_arrays

        for a in state_arrays(state):
            a.grad.zero_()

    def _advance(self, src, i, j):
        """Run steps i .. j-1 unrecorded from ``src`` (state i); return a work state holding state j."""
        from .checkpoint import _NoRecording

        cur = src
        for t in range(i, j):
            nxt = self._take()
            with _NoRecording():
                self.step(t, cur, nxt)
            self.steps_run += 1
            if cur is not src:
                self.free.append(cur)
            cur = nxt
        return cur

    def _reverse_step(self, i, src, dst):
        """Re-run step i from ``src`` into ``dst`` on a fresh Tape and run its adjoints: ``dst.grad`` holds
        dL/d(state i+1); dL/d(state i) accumulates into ``src.grad`` (zeroed unless it is the initial state)."""
        from .checkpoint import _NoRecording

        tape = Tape()
        with _NoRecording(only=tape):
            self.step(i, src, dst)
        self.steps_run += 1
        try:
            tape._run_adjoints()
        except FloatingPointError as e:  # verify_nan: say which step
            raise type(e)(f"{e} [inside kc.checkpointed, recomputed step {i} of {self.n}]") from None
        if self.on_state_grad is not None:
            self.on_state_grad(i, src)

    def _reverse(self, lo, hi, src, dst, s, own_dst):
        """Reverse steps hi-1 .. lo: ``src`` holds state lo, ``dst.grad`` dL/d(state hi); ``own_dst``: ``dst``
        is a work state, freed as soon as step hi-1 (its only reader) is reversed."""
        if hi - lo == 1:
            self._reverse_step(lo, src, dst)
            if own_dst:
                self.free.append(dst)
            return
        if s == 0:  # no snapshot left: advance from lo to each step in turn
            for j in reversed(range(lo, hi)):
                w = src if j == lo else self._advance(src, lo, j)
                if w is not src:
                    self._zero_grad(w)
                self._reverse_step(j, w, dst)
                if own_dst or j < hi - 1:
                    self.free.append(dst)
                dst = w
            return
        mid = lo + revolve_split(hi - lo, s)
        snap = self._advance(src, lo, mid)
        self._zero_grad(snap)
        self._reverse(mid, hi, snap, dst, s - 1, own_dst)
        self._reverse(lo, mid, src, snap, s, True)

    def backward(self):
        self.steps_run = 0
        if self.on_state_grad is not None:
            self.on_state_grad(self.n, self.final)
        self._reverse(0, self.n, self.initial, self.final, self.snapshots, False)
        self.free.clear()

    def expand(self):
        """The whole loop recorded step by step on a new Tape (N states: for checks on small N)."""
        from .checkpoint import _NoRecording

        tape = Tape()
        cur = self.initial
        with _NoRecording(only=tape):
            for i in range(self.n):
                nxt = self.make_state()
                self.step(i, cur, nxt)
                cur = nxt
        return tape
