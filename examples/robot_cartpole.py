"""Balance a cart-pole loaded from a URDF: optimise a feedback controller through 2 s of simulation.

The cart-pole (examples/assets/cartpole.urdf: a cart on a prismatic joint along X, a pole
on a hinge about Y, Z up) starts with the pole tilted by 0.25 rad.  A linear state feedback
pushes the cart, f = F tanh(K . (x, theta, x', theta') / F) (a saturated motor of at most
F = 40 N, written into ``Control.joint_f``), and SolverFeatherstone steps the articulation
in generalised coordinates.  The first guess looks at the pole only, K = (0, 20, 0, 2): it
keeps the pole up but lets the cart run away.  The loss is the time integral of theta^2 + 0.1 x^2 +
0.01 theta'^2 over the rollout; its gradient with respect to the four gains K comes from a
Tape that replays the adjoint of every solver step (each step writes a fresh State and
Control, so nothing on the tape is overwritten).  The gains are improved by Adam.

Outputs in --out-dir: loss.png (the loss curve) and cartpole.usda (the rollout with the
final gains, bodies as time-sampled transforms).

Run: python examples/robot_cartpole.py --iterations 60 --out-dir cartpole_out
"""
from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import kernelcore as kc
import sim

URDF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "cartpole.urdf")
START_ANGLE = 0.25  # [rad] initial tilt of the pole
MAX_FORCE = 40.0  # [N] motor saturation


@kc.kernel
def feedback_force(joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float), gains: kc.array(dtype=float),
                   cart_q: int, pole_q: int, cart_dof: int, pole_dof: int, max_force: float,
                   joint_f: kc.array(dtype=float)):
    """joint_f[cart] = F tanh(K . (x, theta, x', theta') / F) [N] (theta > 0 leans the pole towards +x)."""
    u = (gains[0] * joint_q[cart_q] + gains[1] * joint_q[pole_q] + gains[2] * joint_qd[cart_dof]
         + gains[3] * joint_qd[pole_dof])
    joint_f[cart_dof] = max_force * kc.tanh(u / max_force)


@kc.kernel
def running_cost(joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float), cart_q: int, pole_q: int,
                 pole_dof: int, dt: float, loss: kc.array(dtype=float)):
    """loss[0] += dt (theta^2 + 0.1 x^2 + 0.01 theta'^2)."""
    th = joint_q[pole_q]
    x = joint_q[cart_q]
    w = joint_qd[pole_dof]
    loss[0] += dt * (th * th + 0.1 * x * x + 0.01 * w * w)


class CartPole:
    """The cart-pole rollout for given gains, and its gradient.

    Args:
        duration: simulated time [s]; dt: solver time step [s].
    """

    def __init__(self, duration: float = 2.0, dt: float = 0.01):
        b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sim.ModelImportWarning)  # (there are none in this file)
            self.robot = sim.parse_urdf(URDF, b)
        self.model = b.finalize(requires_grad=True)
        self.cart_q, self.pole_q = self.robot.joint_coord["slider"], self.robot.joint_coord["hinge"]
        self.cart_dof, self.pole_dof = self.robot.joint_dof["slider"], self.robot.joint_dof["hinge"]
        self.steps = max(1, int(round(duration / dt)))
        self.dt = float(dt)
        self.solver = sim.SolverFeatherstone(self.model)
        # one State and one Control per step: the tape needs every intermediate value
        self.states = [self.model.state() for _ in range(self.steps + 1)]
        self.controls = [self.model.control() for _ in range(self.steps)]
        q0 = self.states[0].joint_q.numpy().copy()
        q0[self.pole_q] = START_ANGLE
        self.q0 = q0.astype(np.float32)
        self.loss_array = kc.zeros(1, dtype=float, requires_grad=True)

    def run(self, gains):
        """Simulate with the gains array (4,); returns the loss array (records on the active tape)."""
        self.states[0].joint_q.assign(self.q0)
        self.states[0].joint_qd.zero_()
        self.loss_array.zero_()
        m = self.model
        for k in range(self.steps):
            s, c = self.states[k], self.controls[k]
            kc.launch(feedback_force, dim=1, inputs=[s.joint_q, s.joint_qd, gains, self.cart_q, self.pole_q,
                                                     self.cart_dof, self.pole_dof, MAX_FORCE, c.joint_f])
            self.solver.step(m, s, self.states[k + 1], c, self.dt)
            kc.launch(running_cost, dim=1, inputs=[self.states[k + 1].joint_q, self.states[k + 1].joint_qd,
                                                   self.cart_q, self.pole_q, self.pole_dof, self.dt,
                                                   self.loss_array])
        return self.loss_array

    def loss(self, gains) -> float:
        """Forward only: the loss of a rollout with gains (4,)."""
        return float(self.run(kc.array(np.asarray(gains, np.float32), dtype=float)).numpy()[0])

    def loss_and_grad(self, gains):
        """(loss, d loss / d gains (4,)) for gains given as numpy (4,)."""
        k = kc.array(np.asarray(gains, np.float32), dtype=float, requires_grad=True)
        with kc.Tape() as tape:
            loss = self.run(k)
        tape.backward(loss=loss)
        g = k.grad.numpy().astype(np.float64).copy()
        tape.zero()
        return float(loss.numpy()[0]), g

    def trajectory(self):
        """(steps + 1, coords) joint coordinates of the last rollout."""
        return np.stack([s.joint_q.numpy().copy() for s in self.states])


INITIAL_GAINS = (0.0, 20.0, 0.0, 2.0)


def optimize(cp, iterations=60, lr=1.0, gains=INITIAL_GAINS, verbose=True):
    """Adam on the gains; returns (loss history, gains history)."""
    k = np.asarray(gains, np.float64)
    m = np.zeros(4)
    v = np.zeros(4)
    b1, b2 = 0.9, 0.999
    losses, history = [], []
    for it in range(iterations):
        loss, g = cp.loss_and_grad(k)
        losses.append(loss)
        history.append(k.copy())
        if verbose:
            print(f"iter {it:3d}  loss {loss:.5f}  gains {np.array2string(k, precision=2)}", flush=True)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        k = k - lr * (m / (1 - b1 ** (it + 1))) / (np.sqrt(v / (1 - b2 ** (it + 1))) + 1e-8)
    return losses, history


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(np.arange(len(losses)), losses, marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss (integral of the cost) [s]")
    ax.set_title("cart-pole from URDF: feedback gains")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_usd(cp, path, every=4):
    """The last rollout as a USD animation (time-sampled body transforms)."""
    import render
    from scenes.render_adapter import ModelRenderer

    usd = render.UsdRenderer(path, fps=1.0 / (cp.dt * every), up_axis="Z")
    out = ModelRenderer(usd, cp.model, ground_size=4.0)
    for k in range(0, cp.steps + 1, every):
        out.render(cp.states[k], k * cp.dt)
    usd.save()
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60, help="optimisation iterations")
    parser.add_argument("--duration", type=float, default=2.0, help="simulated time per rollout [s]")
    parser.add_argument("--dt", type=float, default=0.01, help="solver time step [s]")
    parser.add_argument("--lr", type=float, default=1.0, help="Adam step size")
    parser.add_argument("--out-dir", default="cartpole_out", help="folder for loss.png and cartpole.usda")
    args = parser.parse_args(argv)
    cp = CartPole(duration=args.duration, dt=args.dt)
    print(f"cart-pole from {URDF}: {cp.model.body_count} bodies, {cp.model.joint_dof_count} dofs, "
          f"{cp.steps} steps of {cp.dt:g} s")
    t0 = time.perf_counter()
    losses, history = optimize(cp, args.iterations, args.lr)
    elapsed = time.perf_counter() - t0
    final = history[int(np.argmin(losses))]
    final_loss = cp.loss(final)
    traj = cp.trajectory()
    os.makedirs(args.out_dir, exist_ok=True)
    plot_losses(losses, os.path.join(args.out_dir, "loss.png"))
    usd = write_usd(cp, os.path.join(args.out_dir, "cartpole.usda"))
    print(f"loss {losses[0]:.4f} -> {final_loss:.4f} in {len(losses)} iterations ({elapsed:.1f} s); gains "
          f"{np.array2string(final, precision=2)}; final |theta| {abs(traj[-1, cp.pole_q]):.4f} rad, x "
          f"{traj[-1, cp.cart_q]:+.3f} m")
    print(f"wrote {os.path.join(args.out_dir, 'loss.png')} and {usd}")
    return {"losses": losses, "final_loss": final_loss, "gains": final, "trajectory": traj,
            "pole_q": cp.pole_q, "cart_q": cp.cart_q}


if __name__ == "__main__":
    main()
