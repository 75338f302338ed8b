"""Throw a cloth so that its centre lands on a target: optimise the initial velocity through contact.

A small square cloth is thrown from 0.3 m height; it hits the ground, crumples and folds
onto itself (ground contact with friction, ClothSelfContact).  The loss is the squared
distance between the mean particle position after ``--duration`` seconds and the target;
its gradient with respect to the (uniform) initial velocity comes from a Tape through
every step, the contacts and the self-contact step bound included.  Gradient descent
improves the throw; the loss curve is written as a PNG.

Run: python examples/cloth_throw.py --iterations 30 --out cloth_throw_loss.png
"""
from __future__ import annotations

import argparse

import numpy as np

import kernelcore as kc
import sim

TARGET = (0.9, 0.0, 0.2)
INITIAL_VELOCITY = (1.0, 1.0, 0.0)


@kc.kernel
def mean_position(q: kc.array(dtype=kc.vec3), inv_n: float, centre: kc.array(dtype=kc.vec3)):
    kc.atomic_add(centre, 0, q[kc.tid()] * inv_n)


@kc.kernel
def squared_distance(centre: kc.array(dtype=kc.vec3), target: kc.vec3, loss: kc.array(dtype=float)):
    d = centre[0] - target
    loss[0] = kc.dot(d, d)


class ClothThrow:
    """One throw (forward) and its gradient.  ``size`` cells per side of a 0.2 m cloth; ``duration`` [s]."""

    def __init__(self, size: int = 6, duration: float = 0.5, dt: float = 2e-3, target=TARGET):
        self.steps = max(1, int(round(duration / dt)))
        self.dt = float(dt)
        self.target = kc.vec3(*target)
        b = sim.ModelBuilder(particle_damping=0.1)
        b.set_material(0, ke=100.0, restitution=0.0, mu=0.5)
        b.set_ground_plane()
        s = np.sqrt(0.5)
        h = 0.2 / size
        b.add_cloth_grid(pos=(-0.1, 0.3, 0.1), rot=(-s, 0.0, 0.0, s), vel=(0.0, 0.0, 0.0), dim_x=size, dim_y=size,
                         cell_x=h, cell_y=h, mass=0.2 / (size + 1) ** 2, tri_ke=30.0, tri_ka=30.0, tri_kd=0.02,
                         edge_ke=1e-4, particle_radius=0.005)
        self.model = b.finalize(requires_grad=True)
        self.solver = sim.SolverSemiImplicit(
            self.model, self_contact=sim.ClothSelfContact(self.model, thickness=0.006, ke=50.0, kd=0.02))
        self.states = [self.model.state() for _ in range(self.steps + 1)]
        self.centre = kc.zeros(1, dtype=kc.vec3, requires_grad=True)
        self.loss_array = kc.zeros(1, dtype=float, requires_grad=True)

    def run(self, velocity):
        n = self.model.particle_count
        self.states[0].particle_qd.assign(kc.array(np.tile(np.asarray(velocity, np.float32), (n, 1)), dtype=kc.vec3))
        for k in range(self.steps):
            self.solver.step(self.model, self.states[k], self.states[k + 1], None, self.dt)
        self.centre.zero_()
        kc.launch(mean_position, dim=n, inputs=[self.states[-1].particle_q, 1.0 / n], outputs=[self.centre])
        kc.launch(squared_distance, dim=1, inputs=[self.centre, self.target], outputs=[self.loss_array])
        return self.loss_array

    def loss_and_grad(self, velocity):
        """(loss [m^2], d loss / d velocity (3,)) of a throw with uniform initial ``velocity`` [m/s]."""
        tape = kc.Tape()
        with tape:
            loss = self.run(velocity)
        tape.backward(loss=loss)
        grad = self.states[0].particle_qd.grad.numpy().astype(np.float64).sum(axis=0)
        tape.zero()
        return float(loss.numpy()[0]), grad

    def loss(self, velocity) -> float:
        return float(self.run(velocity).numpy()[0])


def optimize(throw, iterations=20, lr=1.0, velocity=INITIAL_VELOCITY, verbose=True):
    """Gradient descent on the initial velocity (steps clipped to 0.5 m/s); returns (losses, velocity)."""
    v = np.asarray(velocity, np.float64).copy()
    losses = []
    for it in range(iterations):
        loss, grad = throw.loss_and_grad(v)
        losses.append(loss)
        if verbose:
            print(f"iter {it:3d}  loss {loss:.4e} m^2  velocity ({v[0]:.3f}, {v[1]:.3f}, {v[2]:.3f}) m/s")
        step = lr * grad
        norm = np.linalg.norm(step)
        if norm > 0.5:
            step *= 0.5 / norm
        v -= step
    return losses, v


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(np.arange(len(losses)), np.maximum(losses, 1e-12), marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|centre(T) - target|^2  [m^2]")
    ax.set_title("cloth throw: initial velocity optimisation")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--size", type=int, default=6, help="cells per side")
    parser.add_argument("--duration", type=float, default=0.5, help="simulated time per throw [s]")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--out", default="cloth_throw_loss.png", help="loss curve PNG")
    args = parser.parse_args(argv)
    throw = ClothThrow(args.size, args.duration)
    losses, v = optimize(throw, args.iterations, args.lr)
    final = throw.loss(v)
    print(f"final loss {final:.4e} m^2 with initial velocity ({v[0]:.3f}, {v[1]:.3f}, {v[2]:.3f}) m/s")
    plot_losses(losses + [final], args.out)
    print(f"loss curve written to {args.out}")
    return {"losses": losses, "final_loss": final, "velocity": v}


if __name__ == "__main__":
    main()
