"""Minimise the sum of squared norms of 2-d points with torch's Adam, gradients from kernelcore.

The loss kernel adds |x_i|^2 of every point into one number (atomically); a Tape gives its
gradient 2 x_i.  Two ways of sharing the points with PyTorch, both without copies:

* ``from_torch``: the points are a torch tensor; ``kc.from_torch`` wraps it, and the kc
  array's ``.grad`` is the tensor's ``.grad``, so ``tape.backward`` fills what Adam reads.
* ``to_torch``: the points are a kc array; Adam steps on ``kc.to_torch(xs)``, a tensor whose
  ``.grad`` is the array's ``.grad``.

Run: python examples/torch_adam_points.py --mode both --iters 200
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import kernelcore as kc


@kc.kernel
def loss(xs: kc.array(dtype=float, ndim=2), l: kc.array(dtype=float)):
    """l[0] += |xs[i]|^2 for each point i (xs: (n, 2) in m, l: (1,) in m^2)."""
    tid = kc.tid()
    kc.atomic_add(l, 0, xs[tid, 0] ** 2.0 + xs[tid, 1] ** 2.0)


def optimize_from_torch(n=100, iters=200, lr=0.1, seed=0):
    """Points held by torch; returns the loss after each Adam step."""
    gen = torch.Generator().manual_seed(seed)
    xs = torch.randn(n, 2, generator=gen, requires_grad=True)
    l = torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adam([xs], lr=lr)
    kc_xs = kc.from_torch(xs)   # shares xs and xs.grad
    kc_l = kc.from_torch(l)
    tape = kc.Tape()
    with tape:
        kc.launch(loss, dim=len(xs), inputs=[kc_xs], outputs=[kc_l], device=kc_xs.device)
    history = []
    for _ in range(iters):
        tape.zero()
        tape.backward(loss=kc_l)   # xs.grad now holds 2 xs, computed by kernelcore
        opt.step()                 # updates xs in place, and so kc_xs
        kc_l.zero_()
        kc.launch(loss, dim=len(xs), inputs=[kc_xs], outputs=[kc_l], device=kc_xs.device)
        history.append(l.item())
    return history


def optimize_to_torch(n=100, iters=200, lr=0.1, seed=0):
    """Points held by kernelcore; returns the loss after each Adam step."""
    rng = np.random.default_rng(seed)
    xs = kc.array(rng.standard_normal((n, 2)), dtype=kc.float32, requires_grad=True)
    l = kc.zeros(1, dtype=kc.float32, requires_grad=True)
    opt = torch.optim.Adam([kc.to_torch(xs)], lr=lr)   # the tensor's .grad is xs.grad
    tape = kc.Tape()
    with tape:
        kc.launch(loss, dim=len(xs), inputs=[xs], outputs=[l], device=xs.device)
    history = []
    for _ in range(iters):
        tape.zero()
        tape.backward(loss=l)
        opt.step()
        l.zero_()
        kc.launch(loss, dim=len(xs), inputs=[xs], outputs=[l], device=xs.device)
        history.append(float(l.numpy()[0]))
    return history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["from_torch", "to_torch", "both"], default="both")
    parser.add_argument("--n", type=int, default=100, help="number of points")
    parser.add_argument("--iters", type=int, default=200, help="Adam steps")
    parser.add_argument("--lr", type=float, default=0.1, help="Adam learning rate")
    args = parser.parse_args(argv)
    results = {}
    if args.mode in ("from_torch", "both"):
        results["from_torch"] = optimize_from_torch(args.n, args.iters, args.lr)
    if args.mode in ("to_torch", "both"):
        results["to_torch"] = optimize_to_torch(args.n, args.iters, args.lr)
    for name, h in results.items():
        print(f"{name}: loss {h[0]:.4f} -> {h[-1]:.6f} after {len(h)} Adam steps")
    return results


if __name__ == "__main__":
    main()
