"""Steer smoke into a target shape: DiffTaichi's differentiable-smoke task on sim.SolverGridFluid.

A disc of smoke sits in the middle of a closed 2-D box of fluid.  The unknowns are the
initial face velocities u0, v0; the smoke is carried by the (incompressible, projected)
flow for ``--steps`` steps and the loss is the squared difference between the final
density and a target image (two blobs, drawn procedurally: no image file needed).
Gradients of the loss w.r.t. u0 and v0 come from a kc.Tape over every step, the pressure
projection's adjoint being a second conjugate-gradient solve.  Gradient descent with Adam.

Writes ``loss.png`` (loss curve) and ``before_after.png`` (target, final smoke with zero
initial velocity, final smoke with the optimised one) into ``--out-dir``.

Run: python examples/smoke_optimize.py --res 64 --steps 60 --iterations 40 --out-dir smoke_out
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import kernelcore as kc
import sim


@kc.kernel
def squared_error_kernel(a: kc.array(dtype=float, ndim=2), target: kc.array(dtype=float, ndim=2),
                         loss: kc.array(dtype=float)):
    i, j = kc.tid()
    d = a[i, j] - target[i, j]
    kc.atomic_add(loss, 0, d * d)


def images(n):
    """Initial smoke (a disc in the centre) and the target (two blobs left and right), (n, n) arrays."""
    c = (np.arange(n) + 0.5) / n
    x, y = np.meshgrid(c, c, indexing="ij")
    start = (np.hypot(x - 0.5, y - 0.5) < 0.2).astype(np.float32)
    target = np.zeros((n, n), np.float32)
    for cx, cy in ((0.3, 0.62), (0.7, 0.38)):
        target += np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * 0.09 ** 2)).astype(np.float32)
    target *= start.sum() / target.sum()  # same amount of smoke as at the start
    return start, target


class SmokeProblem:
    def __init__(self, res, steps, dt):
        self.res, self.steps, self.dt = res, steps, dt
        self.solver = sim.SolverGridFluid((res, res), dx=1.0 / res, cfl=8.0)
        self.states = [self.solver.state(requires_grad=True) for _ in range(steps + 1)]
        start, target = images(res)
        self.start = start
        self.target = kc.from_numpy(target)
        self.loss = kc.zeros(1, dtype=float, requires_grad=True)

    def run(self, u0, v0, tape=None):
        """Final density (numpy) and the loss for initial velocities u0 (n+1, n), v0 (n, n+1) [m/s]."""
        s0 = self.states[0]
        s0.u.assign(kc.from_numpy(u0.astype(np.float32)))
        s0.v.assign(kc.from_numpy(v0.astype(np.float32)))
        s0.density.assign(kc.from_numpy(self.start))
        self.loss.zero_()
        with tape if tape is not None else _nothing():
            for k in range(self.steps):
                self.solver.step(self.states[k], self.states[k + 1], self.dt)
            kc.launch(squared_error_kernel, dim=(self.res, self.res),
                      inputs=[self.states[-1].density, self.target, self.loss])
        return self.states[-1].density.numpy().copy(), float(self.loss.numpy()[0])

    def loss_and_grad(self, u0, v0):
        tape = kc.Tape()
        final, loss = self.run(u0, v0, tape)
        tape.backward(loss=self.loss)
        gu, gv = self.states[0].u.grad.numpy().copy(), self.states[0].v.grad.numpy().copy()
        tape.zero()
        return final, loss, gu, gv


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def adam(params, grads, state, lr, it, b1=0.9, b2=0.999, eps=1e-8):
    for k, (p, g) in enumerate(zip(params, grads)):
        m, v = state.setdefault(k, (np.zeros_like(p), np.zeros_like(p)))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[k] = (m, v)
        p -= lr * (m / (1 - b1 ** (it + 1))) / (np.sqrt(v / (1 - b2 ** (it + 1))) + eps)


def save_pictures(losses, target, before, after, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(np.arange(len(losses)), losses, marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss = sum (rho_N - target)^2")
    ax.set_title("smoke: optimise the initial velocity")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "loss.png"), dpi=100)
    plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.2))
    for ax, img, title in zip(axes, (target, before, after), ("target", "before (u0 = 0)", "after optimisation")):
        ax.imshow(img.T, origin="lower", cmap="magma", vmin=0.0, vmax=max(float(target.max()), 1e-6))
        ax.set_title(title)
        ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "before_after.png"), dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--res", type=int, default=64, help="cells per side")
    parser.add_argument("--steps", type=int, default=60, help="fluid steps per episode")
    parser.add_argument("--dt", type=float, default=0.01, help="step [s] (the box is 1 m wide)")
    parser.add_argument("--iterations", type=int, default=40, help="Adam iterations")
    parser.add_argument("--lr", type=float, default=0.05, help="Adam step [m/s]")
    parser.add_argument("--out-dir", default="smoke_optimize_out", help="folder for the PNGs")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    prob = SmokeProblem(args.res, args.steps, args.dt)
    n = args.res
    u0 = np.zeros((n + 1, n))
    v0 = np.zeros((n, n + 1))
    before, _ = prob.run(u0, v0)
    losses, opt = [], {}
    final = before
    for it in range(args.iterations):
        t0 = time.perf_counter()
        final, loss, gu, gv = prob.loss_and_grad(u0, v0)
        losses.append(loss)
        adam([u0, v0], [gu, gv], opt, args.lr, it)
        print(f"iter {it:3d}  loss {loss:.5f}  |grad| {np.sqrt((gu ** 2).sum() + (gv ** 2).sum()):.3e}  "
              f"({time.perf_counter() - t0:.2f} s)")
    after, last = prob.run(u0, v0)
    losses.append(last)
    save_pictures(losses, prob.target.numpy(), before, after, args.out_dir)
    print(f"loss {losses[0]:.5f} -> {last:.5f}; pictures in {args.out_dir}")
    return {"losses": losses, "u0": u0, "v0": v0}


if __name__ == "__main__":
    main()
