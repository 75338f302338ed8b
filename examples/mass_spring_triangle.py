"""Optimise the rest lengths of a three-spring triangle so that it settles to a target area.

Three unit-mass particles in the plane are joined by three damped springs. The
simulation runs for a fixed time from a fixed start; the loss is the squared
difference between the triangle's final area and the target (0.2 m^2). The rest
lengths are improved by gradient descent, the gradient coming from a Tape that
replays the adjoint of every launch (the mass-spring example of the DiffTaichi paper).

Every step writes new state arrays (``x[t + 1]``, ``v[t + 1]``) and accumulates
forces into a fresh row ``f[t]``, so nothing on the tape is overwritten.

Run: python examples/mass_spring_triangle.py --iters 40 --out loss.png
"""
from __future__ import annotations

import argparse

import numpy as np

import kernelcore as kc

TARGET_AREA = 0.2

# Start: a small right triangle (area 0.005 m^2), springs at their current lengths.
START_POSITIONS = np.array([[0.3, 0.5], [0.3, 0.4], [0.4, 0.4]], dtype=np.float32)
SPRING_ENDS = np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int32)


@kc.kernel
def eval_springs(x: kc.array(dtype=kc.vec2, ndim=2), spring_a: kc.array(dtype=int), spring_b: kc.array(dtype=int),
                 rest_length: kc.array(dtype=float), stiffness: float, t: int, f: kc.array(dtype=kc.vec2, ndim=2)):
    """Hooke forces of spring s scattered (atomically) onto both ends: f[t, a] += k (l - l0) d̂."""
    s = kc.tid()
    a = spring_a[s]
    b = spring_b[s]
    d = x[t, b] - x[t, a]
    l = kc.length(d)
    force = d * (stiffness * (l - rest_length[s]) / l)
    f[t, a] += force
    f[t, b] -= force


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec2, ndim=2), v: kc.array(dtype=kc.vec2, ndim=2),
              f: kc.array(dtype=kc.vec2, ndim=2),
              mass: float, damping: float, dt: float, t: int):
    """Semi-implicit Euler with exponential velocity damping, from row t into row t + 1."""
    i = kc.tid()
    vn = v[t, i] * kc.exp(-damping * dt) + f[t, i] * (dt / mass)
    v[t + 1, i] = vn
    x[t + 1, i] = x[t, i] + vn * dt


@kc.kernel
def area_loss(x: kc.array(dtype=kc.vec2, ndim=2), t: int, target: float,
              area: kc.array(dtype=float), loss: kc.array(dtype=float)):
    """area[0] = signed-agnostic area of triangle (x0, x1, x2) at row t; loss[0] = (area - target)^2."""
    e1 = x[t, 1] - x[t, 0]
    e2 = x[t, 2] - x[t, 0]
    A = 0.5 * kc.abs(e1[0] * e2[1] - e1[1] * e2[0])
    area[0] = A
    loss[0] = (A - target) * (A - target)


class TriangleSim:
    """The forward simulation for given rest lengths; ``run(rest, tape)`` returns (loss, area) arrays.

    steps: time steps of ``dt`` seconds; stiffness in N/m, damping in 1/s (velocity
    decay rate), unit masses (kg).
    """

    def __init__(self, steps=200, dt=0.01, stiffness=100.0, damping=15.0, mass=1.0):
        self.steps, self.dt, self.stiffness, self.damping, self.mass = steps, dt, stiffness, damping, mass
        self.spring_a = kc.array(SPRING_ENDS[:, 0].copy(), dtype=kc.int32)
        self.spring_b = kc.array(SPRING_ENDS[:, 1].copy(), dtype=kc.int32)

    def run(self, rest):
        """Simulate with the rest-length array ``rest`` (3 floats, m); record on the active tape if any."""
        n, steps = 3, self.steps
        x = kc.zeros((steps + 1, n), dtype=kc.vec2, requires_grad=True)
        v = kc.zeros((steps + 1, n), dtype=kc.vec2, requires_grad=True)
        f = kc.zeros((steps, n), dtype=kc.vec2, requires_grad=True)
        x.numpy()[0] = START_POSITIONS
        area = kc.zeros(1, dtype=float, requires_grad=True)
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        for t in range(steps):
            kc.launch(eval_springs, dim=3, inputs=[x, self.spring_a, self.spring_b, rest, self.stiffness, t, f])
            kc.launch(integrate, dim=n, inputs=[x, v, f, self.mass, self.damping, self.dt, t])
        kc.launch(area_loss, dim=1, inputs=[x, steps, TARGET_AREA, area, loss])
        return loss, area

    def loss_and_grad(self, rest_np):
        """(loss, area, d loss / d rest) for rest lengths given as numpy (3,)."""
        rest = kc.array(np.asarray(rest_np, np.float32), dtype=float, requires_grad=True)
        with kc.Tape() as tape:
            loss, area = self.run(rest)
        tape.backward(loss=loss)
        return float(loss.numpy()[0]), float(area.numpy()[0]), rest.grad.numpy().astype(np.float64).copy()

    def loss(self, rest_np):
        """Forward only (no tape): the loss for rest lengths given as numpy (3,)."""
        rest = kc.array(np.asarray(rest_np, np.float32), dtype=float)
        loss, _ = self.run(rest)
        return float(loss.numpy()[0])


def initial_rest_lengths():
    a, b = START_POSITIONS[SPRING_ENDS[:, 0]], START_POSITIONS[SPRING_ENDS[:, 1]]
    return np.linalg.norm(b - a, axis=1).astype(np.float64)


def optimize(iters=40, lr=2.0, steps=200, verbose=True):
    """Gradient descent on the rest lengths; returns (loss history, area history, final rest lengths)."""
    sim = TriangleSim(steps=steps)
    rest = initial_rest_lengths()
    losses, areas = [], []
    for it in range(iters):
        loss, area, grad = sim.loss_and_grad(rest)
        losses.append(loss)
        areas.append(area)
        if verbose:
            print(f"iter {it:3d}  loss {loss:.6e}  area {area:.5f}  rest {np.array2string(rest, precision=4)}")
        rest = rest - lr * grad
    return losses, areas, rest


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(np.arange(len(losses)), losses, marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"(area - {TARGET_AREA})^2")
    ax.set_title("mass-spring triangle: rest-length optimisation")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=40, help="gradient-descent iterations")
    parser.add_argument("--steps", type=int, default=200, help="simulation steps per evaluation (dt = 0.01 s)")
    parser.add_argument("--lr", type=float, default=2.0, help="learning rate")
    parser.add_argument("--out", default=None, help="write a PNG plot of the loss curve here")
    args = parser.parse_args(argv)
    losses, areas, rest = optimize(args.iters, args.lr, args.steps)
    print(f"final area {areas[-1]:.5f} (target {TARGET_AREA}), rest lengths {np.array2string(rest, precision=4)}")
    if args.out:
        plot_losses(losses, args.out)
        print(f"loss curve written to {args.out}")
    return losses


if __name__ == "__main__":
    main()
