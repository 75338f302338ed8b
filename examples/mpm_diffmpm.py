"""Teach a 2-D soft robot to walk: DiffTaichi's diffmpm problem on sim.SolverMPM.

An elastic body (fixed-corotated, E = 10 Pa, density 1, the scaled units of diffmpm)
stands on two legs on a frictional floor.  Each leg is split into a front and a back
muscle; muscle k pulls along the material's vertical axis with an active stress
``strength * tanh(sum_j W[k, j] sin(omega t + 2 pi j / N) + b[k])`` (an open-loop
oscillator controller).  The loss is minus the mean x position of the robot at the end
of the run; W and b are improved by gradient descent with gradients from a kc.Tape over
every substep (each step writes a fresh State; the grids live in those states).

The loss curve is written to a PNG.

Run: python examples/mpm_diffmpm.py --iterations 30 --steps 400 --out diffmpm_loss.png
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import kernelcore as kc
import sim

N_SIN = 4            # oscillator basis functions per muscle
N_MUSCLES = 4
OMEGA = 2.0 * math.pi * 5.0   # controller frequency [rad/s]


@kc.kernel
def controller_kernel(weights: kc.array(dtype=float, ndim=2), bias: kc.array(dtype=float),
                      muscle: kc.array(dtype=kc.int32), t: float, omega: float, strength: float,
                      actuation: kc.array(dtype=float)):
    p = kc.tid()
    k = muscle[p]
    a = float(0.0)
    if k >= 0:
        s = bias[k]
        for j in range(N_SIN):
            s += weights[k, j] * kc.sin(omega * t + 2.0 * 3.141592653589793 * float(j) / float(N_SIN))
        a = strength * kc.tanh(s)
    actuation[p] = a


def controller(weights, bias, muscle, t, strength, control):
    """Muscle activations of time ``t`` [s] into ``control.particle_actuation`` [Pa]."""
    kc.launch(controller_kernel, dim=muscle.shape[0], inputs=[weights, bias, muscle, float(t), OMEGA, float(strength)],
              outputs=[control.particle_actuation])


@kc.kernel
def mean_x_loss(q: kc.array(dtype=kc.vec3), scale: float, loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, -q[p][0] * scale)


def build_robot(dx):
    """Body 0.2 x 0.05 m on two 0.04 x 0.05 m legs; returns (model, muscle index per particle or -1)."""
    b = sim.ModelBuilder(gravity=(0.0, -3.8, 0.0))
    mat = b.add_material(model="fixed_corotated", youngs_modulus=10.0, poisson_ratio=0.2)
    sp = dx / 2
    pieces = [((0.1, 0.05), (0.2, 0.05), -1),      # body
              ((0.1, 0.0), (0.02, 0.05), 0), ((0.12, 0.0), (0.02, 0.05), 1),    # back leg: two muscles
              ((0.26, 0.0), (0.02, 0.05), 2), ((0.28, 0.0), (0.02, 0.05), 3)]   # front leg
    y0 = 0.5 * sp
    muscles = []
    for (x, y), (w, h), k in pieces:
        nx, ny = int(round(w / sp)), int(round(h / sp))
        b.add_particle_grid((x + sp / 2, y0 + y + sp / 2, 0.0), (0.0, 0.0, 0.0), nx, ny, 1, sp,
                            density=1.0, volume=sp * sp, material=mat)
        muscles += [k] * (nx * ny)
    return b.finalize(requires_grad=True), np.asarray(muscles, np.int32)


class Robot:
    """The walking problem: ``loss_and_grad(W, b)`` runs the taped simulation and its adjoint."""

    def __init__(self, steps=400, dx=1.0 / 64, dt=1.0e-3, strength=4.0):
        self.model, muscles = build_robot(dx)
        self.steps, self.dt, self.strength = steps, dt, strength
        self.solver = sim.SolverMPM(self.model, dx=dx, bounds=((0.0, 0.0), (1.0, 0.5)), dim=2,
                                    boundary="separate", friction=10.0)
        self.muscle = kc.array(muscles, dtype=kc.int32)
        m = self.model
        self.states = [m.state() for _ in range(steps + 1)]
        self.controls = [m.control() for _ in range(steps)]
        self.weights = kc.zeros((N_MUSCLES, N_SIN), dtype=float, requires_grad=True)
        self.bias = kc.zeros(N_MUSCLES, dtype=float, requires_grad=True)
        self.loss = kc.zeros(1, dtype=float, requires_grad=True)

    def run(self, W, b, tape=None):
        self.weights.assign(np.asarray(W, np.float32))
        self.bias.assign(np.asarray(b, np.float32))
        self.loss.zero_()
        m, S, C = self.model, self.states, self.controls
        for k in range(self.steps):
            controller(self.weights, self.bias, self.muscle, k * self.dt, self.strength, C[k])
            self.solver.step(m, S[k], S[k + 1], C[k], self.dt)
        kc.launch(mean_x_loss, dim=m.particle_count, inputs=[S[-1].particle_q, 1.0 / m.particle_count, self.loss])

    def loss_and_grad(self, W, b):
        tape = kc.Tape()
        with tape:
            self.run(W, b)
        tape.backward(loss=self.loss)
        out = (float(self.loss.numpy()[0]), self.weights.grad.numpy().astype(np.float64).copy(),
               self.bias.grad.numpy().astype(np.float64).copy())
        tape.zero()
        return out


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(np.arange(len(losses)), losses, marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss = -mean x at the end [m]")
    ax.set_title("diffmpm soft robot: controller optimisation")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="gradient-descent iterations")
    parser.add_argument("--steps", type=int, default=400, help="substeps per episode (dt = 1 ms)")
    parser.add_argument("--lr", type=float, default=0.3, help="step length in controller-parameter space")
    parser.add_argument("--out", default="mpm_diffmpm_loss.png", help="loss curve PNG")
    args = parser.parse_args(argv)
    robot = Robot(steps=args.steps)
    rng = np.random.default_rng(0)
    W = rng.normal(0.0, 0.3, (N_MUSCLES, N_SIN))
    b = np.zeros(N_MUSCLES)
    print(f"{robot.model.particle_count} particles, grid {robot.solver.grid_shape}, {args.steps} substeps")
    losses = []
    for it in range(args.iterations):
        t0 = time.perf_counter()
        loss, gW, gb = robot.loss_and_grad(W, b)
        losses.append(loss)
        norm = math.sqrt(float((gW ** 2).sum() + (gb ** 2).sum())) + 1e-12
        W -= args.lr * gW / norm
        b -= args.lr * gb / norm
        print(f"iter {it:3d}  loss {loss:+.5f} m  |grad| {norm:.3e}  ({time.perf_counter() - t0:.2f} s)")
    plot_losses(losses, args.out)
    print(f"loss curve written to {args.out}")
    return {"losses": losses, "W": W, "b": b}


if __name__ == "__main__":
    main()
