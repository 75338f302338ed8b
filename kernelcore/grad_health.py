"""Gradient health over long rollouts: per-step gradient norms (with an optional PNG plot)
and gradient clipping for optimisers.  Exposed as kc.autograd.gradient_norms and
kc.autograd.clip_grad_norm."""
from __future__ import annotations

import numpy as np

from .array import _raw_copy, array
from .checkpoint import checkpointed, state_arrays
from .tape import Tape


def _grad_sq(arrays):
    total = 0.0
    for a in arrays:
        if a.grad is not None and a.size:
            g = a.grad.numpy().astype(np.float64)
            total += float(np.sum(g * g))
    return total


def gradient_norms(step, state, num_steps: int, loss_fn, make_state=None, select=None, segment=None,
                   plot: str | None = None):
    """L2 norm of dL/d(state_t) for t = 0 .. N of a rollout, to see gradients explode or vanish.

    Runs the rollout as ``kc.checkpointed(step, state, num_steps, make_state, segment)`` on a
    Tape (so memory stays O(sqrt N)), then ``loss_fn(final_state)`` (launches writing a
    1-element float array with requires_grad, which it returns), and backward.

    Args:
        select: ``select(state)`` -> the arrays whose gradients count (default: every array
            of the state), e.g. ``lambda s: [s.particle_qd]``.
        plot: a PNG path: norms against the step on a log axis (needs matplotlib; without it
            the plot is skipped with a printed message).

    Returns:
        numpy float64 array (N + 1,): entry t is the norm of the gradient with respect to the
        state before step t (entry N: the final state).  The loss array is left with its
        gradients (``state``'s arrays' gradients are zeroed first, then hold dL/d state_0;
        arrays outside the state, such as parameters, accumulate theirs as on any Tape).
    """
    norms = np.zeros(int(num_steps) + 1)
    pick = select or state_arrays

    def record(i, s):
        norms[i] = np.sqrt(_grad_sq(pick(s)))

    for a in state_arrays(state):  # entry 0 is this rollout's gradient alone
        if a.grad is not None:
            a.grad.zero_()
    tape = Tape()
    with tape:
        final = checkpointed(step, state, num_steps, make_state=make_state, segment=segment, on_state_grad=record)
        loss = loss_fn(final)
    if not isinstance(loss, array):
        raise TypeError(f"gradient_norms: loss_fn must return the 1-element loss array, got {type(loss).__name__}")
    tape.backward(loss)
    if plot:
        _plot_norms(norms, plot)
    return norms


def _plot_norms(norms, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"gradient_norms: matplotlib is not installed; skipping the plot {path}")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    steps = np.arange(norms.size)
    ax.semilogy(steps, np.maximum(norms, np.finfo(np.float64).tiny))
    ax.set_xlabel("step")
    ax.set_ylabel("|dL / d state|")
    ax.set_title("gradient norm per step")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def clip_grad_norm(arrays, max_norm: float) -> float:
    """Scale the gradients of ``arrays`` (kc arrays with ``.grad``) in place so that their
    joint L2 norm is at most ``max_norm``; return the norm before clipping.

    Non-finite norms raise (clipping a NaN gradient would hide it)."""
    max_norm = float(max_norm)
    if not max_norm > 0:
        raise ValueError(f"clip_grad_norm: max_norm must be > 0, got {max_norm}")
    arrays = list(arrays)
    for a in arrays:
        if not isinstance(a, array) or a.grad is None:
            raise ValueError("clip_grad_norm: every entry must be a kc array with requires_grad=True")
    norm = float(np.sqrt(_grad_sq(arrays)))
    if not np.isfinite(norm):
        raise FloatingPointError(f"clip_grad_norm: the gradient norm is {norm}")
    if norm > max_norm:
        scale = max_norm / norm
        for a in arrays:
            g = a.grad
            scaled = (g.numpy() * scale).astype(g.numpy().dtype)
            _raw_copy(g, array(scaled, dtype=g.dtype, device=g.device))
    return norm
