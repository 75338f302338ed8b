"""Teach a quadruped loaded from MJCF to walk forward: an open-loop gait optimised through the Tape.

The robot (examples/assets/quadruped.xml, Z up): a box torso on a free joint and four legs,
each a hip and a knee hinge about y with capsule segments and a sphere foot; the file's
position actuators make every joint a PD drive (kp = 20 N m/rad, kv = 0.5 N m s/rad) towards
``Control.joint_target_pos``.  It stands on the MJCF floor plane (penalty contacts with
Coulomb friction, sim/contact.py) and is stepped by SolverFeatherstone.

Controller (open loop): the target of joint j at time t is

    target_j(t) = c_j + a_j sin(w t) + b_j cos(w t),    w = 2 pi f,

24 parameters (c, a, b for 8 joints), written into a fresh Control every step by a kernel.
The first guess is a trot-like pattern (diagonal hips in anti-phase, knees bent); it
shuffles but barely moves the torso.  The loss is smooth: the negative mean forward
position of the torso over the last quarter of the rollout plus penalties on sideways drift
and on tilting, L = mean(-x + 0.5 y^2 + 0.5 (1 - cos tilt)) (without the tilt term the
best gaits lunge and roll over soon after the horizon).  Its gradient with respect to the 24 parameters comes
from the Tape (every step writes a new State and Control).  The parameters are improved by
Adam with the gradient norm clipped (contacts make single gradients noisy); the best
iterate is kept.

Outputs in --out-dir: loss.png (loss curve) and walker.usda (rollout with the final gait).

Run: python examples/robot_walker.py --iterations 20 --steps 400 --out-dir walker_out
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import kernelcore as kc
import sim

MJCF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "quadruped.xml")
LEGS = ("fl", "fr", "hl", "hr")
JOINTS = tuple(f"{leg}_hip" for leg in LEGS) + tuple(f"{leg}_knee" for leg in LEGS)
TILT_WEIGHT = 0.5  # [m] loss per unit of 1 - cos(torso tilt): keeps the learnt gait upright
START_HEIGHT = 0.30  # [m] torso height at the start (the legs touch the floor with bent knees)


def initial_gait():
    """(3, 8) parameters (rows c, a, b; columns JOINTS): a trot-like first guess [rad]."""
    p = np.zeros((3, len(JOINTS)))
    trot = {"fl": 1.0, "hr": 1.0, "fr": -1.0, "hl": -1.0}   # diagonal legs together
    for j, leg in enumerate(LEGS):
        p[1, j] = 0.25 * trot[leg]           # hip swing
        p[0, 4 + j] = -0.4                   # knees bent
        p[2, 4 + j] = 0.2 * trot[leg]        # knee lift, a quarter period after the hip
    return p


@kc.kernel
def gait_targets(params: kc.array(dtype=float, ndim=2), dofs: kc.array(dtype=int), t: float, omega: float,
                 targets: kc.array(dtype=float)):
    """targets[dofs[j]] = c_j + a_j sin(omega t) + b_j cos(omega t) [rad]; params (3, joints)."""
    j = kc.tid()
    targets[dofs[j]] = params[0, j] + params[1, j] * kc.sin(omega * t) + params[2, j] * kc.cos(omega * t)


@kc.kernel
def torso_cost(joint_q: kc.array(dtype=float), weight: float, loss: kc.array(dtype=float)):
    """loss[0] += weight (-x + 0.5 y^2 + tilt) of the torso; x, y [m] are free joint coordinates 0, 1 and
    tilt = 2 (qx^2 + qy^2) = 1 - (torso z axis . world z) from its quaternion (coordinates 3..6)."""
    x = joint_q[0]
    y = joint_q[1]
    qx = joint_q[3]
    qy = joint_q[4]
    loss[0] += weight * (0.5 * y * y - x + TILT_WEIGHT * 2.0 * (qx * qx + qy * qy))


class Walker:
    """The quadruped rollout for given gait parameters, and its gradient.

    Args:
        steps: solver steps per rollout; dt: step [s]; frequency: gait frequency f [Hz].
    """

    def __init__(self, steps: int = 400, dt: float = 2e-3, frequency: float = 2.5):
        b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
        self.robot = sim.parse_mjcf(MJCF, b)
        self.model = b.finalize(requires_grad=True)
        self.steps, self.dt, self.omega = int(steps), float(dt), 2.0 * math.pi * float(frequency)
        if self.steps < 4:
            raise ValueError(f"Walker: steps must be >= 4, got {steps}")
        self.dofs = kc.array(np.array([self.robot.joint_dof[n] for n in JOINTS], np.int32), dtype=int)
        self.solver = sim.SolverFeatherstone(self.model)
        self.states = [self.model.state() for _ in range(self.steps + 1)]
        self.controls = [self.model.control() for _ in range(self.steps)]
        q0 = self.states[0].joint_q.numpy().copy()
        q0[2] = START_HEIGHT
        for j, n in enumerate(JOINTS):
            q0[self.robot.joint_coord[n]] = initial_gait()[0, j] + initial_gait()[2, j]   # the targets at t = 0
        self.q0 = q0.astype(np.float32)
        self.tail = max(1, self.steps // 4)   # the loss averages the last quarter of the rollout
        self.loss_array = kc.zeros(1, dtype=float, requires_grad=True)

    def run(self, params):
        """Simulate with the kc params array (3, 8); returns the loss array (records on the active tape)."""
        self.states[0].joint_q.assign(self.q0)
        self.states[0].joint_qd.zero_()
        s0 = self.states[0]
        sim.eval_fk(self.model, s0.joint_q, s0.joint_qd, s0)   # body poses of the start (the USD's first frame)
        self.loss_array.zero_()
        for k in range(self.steps):
            c = self.controls[k]
            kc.launch(gait_targets, dim=len(JOINTS), inputs=[params, self.dofs, k * self.dt, self.omega],
                      outputs=[c.joint_target_pos])
            self.solver.step(self.model, self.states[k], self.states[k + 1], c, self.dt)
            if k >= self.steps - self.tail:
                kc.launch(torso_cost, dim=1, inputs=[self.states[k + 1].joint_q, 1.0 / self.tail],
                          outputs=[self.loss_array])
        return self.loss_array

    def loss(self, params) -> float:
        """Forward only: the loss of a rollout with params (3, 8) given as numpy."""
        return float(self.run(kc.array(np.asarray(params, np.float32), dtype=float)).numpy()[0])

    def loss_and_grad(self, params):
        """(loss, d loss / d params (3, 8)) for params given as numpy (3, 8)."""
        p = kc.array(np.asarray(params, np.float32), dtype=float, requires_grad=True)
        with kc.Tape() as tape:
            loss = self.run(p)
        tape.backward(loss=loss)
        g = p.grad.numpy().astype(np.float64).copy()
        tape.zero()
        return float(loss.numpy()[0]), g

    def distance(self) -> float:
        """Forward distance [m] the torso moved in the last rollout (x at the end minus x at the start)."""
        return float(self.states[-1].joint_q.numpy()[0] - self.states[0].joint_q.numpy()[0])

    def trajectory(self):
        """(steps + 1, coords) joint coordinates of the last rollout."""
        return np.stack([s.joint_q.numpy().copy() for s in self.states])


def optimize(walker, params, iterations=20, lr=0.03, clip=1.0, verbose=True):
    """Adam on the gait parameters with the gradient norm clipped to ``clip``; returns (losses, params history)."""
    p = np.array(params, np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1, b2 = 0.9, 0.999
    losses, history = [], []
    for it in range(iterations):
        loss, g = walker.loss_and_grad(p)
        if not (np.isfinite(loss) and np.all(np.isfinite(g))):
            print(f"iter {it:3d}: non-finite loss or gradient, stopping")
            break
        losses.append(loss)
        history.append(p.copy())
        norm = float(np.linalg.norm(g))
        if verbose:
            print(f"iter {it:3d}  loss {loss:+.4f}  distance {walker.distance():+.3f} m  |grad| {norm:.3g}",
                  flush=True)
        if norm > clip:
            g = g * (clip / norm)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** (it + 1))) / (np.sqrt(v / (1 - b2 ** (it + 1))) + 1e-8)
    return losses, history


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(np.arange(len(losses)), losses, marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss: mean(-x + 0.5 y^2 + 0.5 tilt) [m]")
    ax.set_title("quadruped from MJCF: open-loop gait")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_usd(walker, path, every=10):
    """The last rollout as a USD animation (time-sampled body transforms)."""
    import render
    from scenes.render_adapter import ModelRenderer

    usd = render.UsdRenderer(path, fps=1.0 / (walker.dt * every), up_axis="Z")
    out = ModelRenderer(usd, walker.model, ground_size=4.0)
    for k in range(0, walker.steps + 1, every):
        out.render(walker.states[k], k * walker.dt)
    usd.save()
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="optimisation iterations")
    parser.add_argument("--steps", type=int, default=400, help="solver steps per rollout")
    parser.add_argument("--dt", type=float, default=2e-3, help="solver time step [s]")
    parser.add_argument("--frequency", type=float, default=2.5, help="gait frequency [Hz]")
    parser.add_argument("--lr", type=float, default=0.03, help="Adam step size [rad]")
    parser.add_argument("--out-dir", default="walker_out", help="folder for loss.png and walker.usda")
    args = parser.parse_args(argv)
    walker = Walker(steps=args.steps, dt=args.dt, frequency=args.frequency)
    print(f"quadruped from {MJCF}: {walker.model.body_count} bodies, {walker.model.joint_dof_count} dofs, "
          f"{walker.steps} steps of {walker.dt:g} s")
    p0 = initial_gait()
    loss0 = walker.loss(p0)
    before = walker.distance()
    t0 = time.perf_counter()
    losses, history = optimize(walker, p0, args.iterations, args.lr)
    elapsed = time.perf_counter() - t0
    best = history[int(np.argmin(losses))] if losses else p0
    final_loss = walker.loss(best)
    after = walker.distance()
    os.makedirs(args.out_dir, exist_ok=True)
    plot_losses(losses, os.path.join(args.out_dir, "loss.png"))
    usd = write_usd(walker, os.path.join(args.out_dir, "walker.usda"))
    print(f"distance walked in {walker.steps * walker.dt:.2f} s: {before:+.3f} m before, {after:+.3f} m after "
          f"{len(losses)} iterations ({elapsed:.1f} s); loss {loss0:+.4f} -> {final_loss:+.4f}")
    print(f"wrote {os.path.join(args.out_dir, 'loss.png')} and {usd}")
    return {"losses": losses, "initial_loss": loss0, "final_loss": final_loss, "distance_before": before,
            "distance_after": after, "params": best}


if __name__ == "__main__":
    main()
