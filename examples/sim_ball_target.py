"""Throw a ball at a wall so that it bounces back onto a target: optimise the throw.

A ball (one particle, radius 0.1 m, 1 kg) starts at 1 m height and is thrown towards a
static box wall whose face is 1.9 m away.  It bounces off the wall (penalty contact with
restitution) and should be at the target after ``--duration`` seconds.  The loss is
the squared distance between the ball and the target at that time; its gradient
with respect to the initial velocity comes from a Tape that replays the adjoint of
every solver step (each step writes a fresh State, so nothing on the tape is
overwritten).  The velocity is improved by gradient descent.

Every iteration's trajectory is written to one USD file, one after the other in time
(iteration k plays during [k, k + 1) x duration), and the loss curve to a PNG.

Run: python examples/sim_ball_target.py --iterations 40 --out-dir ball_out
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import kernelcore as kc
import sim

BALL_START = (0.0, 1.0, 0.0)
BALL_RADIUS = 0.1
WALL_POS = (2.0, 1.5, 0.0)
WALL_HALF_EXTENTS = (0.1, 1.5, 1.0)
TARGET = (0.4, 1.4, 0.0)
INITIAL_VELOCITY = (5.0, 4.0, 0.0)


@kc.kernel
def distance_loss(q: kc.array(dtype=kc.vec3), index: int, target: kc.vec3, loss: kc.array(dtype=float)):
    """loss[0] = |q[index] - target|^2 [m^2]."""
    d = q[index] - target
    loss[0] = kc.dot(d, d)


class BallTarget:
    """The forward simulation of one throw and its gradient.

    Args:
        duration: simulated time [s]; dt: time step [s]; ke: contact stiffness [N/m];
        restitution: of the wall and ground contacts.
    """

    def __init__(self, duration: float = 0.8, dt: float = 1.0 / 600.0, ke: float = 2.0e4, restitution: float = 0.8,
                 target=TARGET):
        self.steps = max(1, int(round(duration / dt)))
        self.dt = float(dt)
        self.target = np.asarray(target, np.float32)
        b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        b.set_material(0, ke=ke, restitution=restitution, mu=0.2)
        b.set_ground_plane()
        self.ball = b.add_particle(BALL_START, (0.0, 0.0, 0.0), mass=1.0, radius=BALL_RADIUS)
        b.add_shape_box(WALL_POS, half_extents=WALL_HALF_EXTENTS, name="wall")
        self.model = b.finalize(requires_grad=True)
        self.solver = sim.SolverSemiImplicit(self.model)
        # one State per step: the tape needs every intermediate value
        self.states = [self.model.state() for _ in range(self.steps + 1)]
        self.loss_array = kc.zeros(1, dtype=float, requires_grad=True)

    def run(self, velocity):
        """Simulate a throw with initial ``velocity`` (3,) [m/s]; returns the loss array."""
        s0 = self.states[0]
        s0.particle_q.numpy()[self.ball] = BALL_START
        s0.particle_qd.numpy()[self.ball] = np.asarray(velocity, np.float32)
        for k in range(self.steps):
            self.solver.step(self.model, self.states[k], self.states[k + 1], None, self.dt)
        kc.launch(distance_loss, dim=1, inputs=[self.states[-1].particle_q, self.ball, kc.vec3(*self.target),
                                                 self.loss_array])
        return self.loss_array

    def loss(self, velocity) -> float:
        """Forward only: the loss [m^2] of a throw."""
        return float(self.run(velocity).numpy()[0])

    def loss_and_grad(self, velocity):
        """(loss [m^2], d loss / d velocity (3,) [m^2 / (m/s)]) of a throw."""
        tape = kc.Tape()
        with tape:
            loss = self.run(velocity)
        tape.backward(loss=loss)
        grad = self.states[0].particle_qd.grad.numpy()[self.ball].astype(np.float64).copy()
        tape.zero()
        return float(loss.numpy()[0]), grad

    def trajectory(self):
        """Ball positions of the last run, (steps + 1, 3) [m]."""
        return np.stack([s.particle_q.numpy()[self.ball] for s in self.states])


def optimize(sim_, iterations=30, lr=0.5, velocity=INITIAL_VELOCITY, verbose=True, on_iteration=None):
    """Gradient descent on the initial velocity; returns (losses, final velocity).

    ``lr`` is in (m/s) / (m^2 / (m/s)); steps are clipped to 1 m/s so that a large
    gradient right after a contact event cannot throw the search far away.
    """
    v = np.asarray(velocity, np.float64).copy()
    losses = []
    for it in range(iterations):
        loss, grad = sim_.loss_and_grad(v)
        losses.append(loss)
        if on_iteration is not None:
            on_iteration(it, v, loss)
        if verbose:
            print(f"iter {it:3d}  loss {loss:.5e} m^2  velocity ({v[0]:.4f}, {v[1]:.4f}, {v[2]:.4f}) m/s")
        step = lr * grad
        norm = np.linalg.norm(step)
        if norm > 1.0:
            step *= 1.0 / norm
        v = v - step
    return losses, v


def plot_losses(losses, path):
    """Write the loss curve as a PNG (matplotlib with the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(np.arange(len(losses)), np.maximum(losses, 1e-12), marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|x(T) - target|^2  [m^2]")
    ax.set_title("ball to target: initial velocity optimisation")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


class TrajectoryWriter:
    """Writes the trajectory of every iteration into one USD file, iteration after iteration."""

    def __init__(self, path, sim_, fps=60.0):
        import render

        self.sim, self.fps = sim_, fps
        self.renderer = render.UsdRenderer(path, fps=fps, up_axis="Y")
        self.frame_steps = max(1, int(round(1.0 / (fps * sim_.dt))))
        self.duration = sim_.steps * sim_.dt

    def write(self, iteration):
        r, s = self.renderer, self.sim
        traj = s.trajectory()
        t0 = iteration * (self.duration + 1.0 / self.fps)
        for k in range(0, len(traj), self.frame_steps):
            r.begin_frame(t0 + k * s.dt)
            r.render_points("ball", traj[k:k + 1], BALL_RADIUS, colors=(0.9, 0.4, 0.1))
            r.render_sphere("target", tuple(s.target), (0.0, 0.0, 0.0, 1.0), 0.05, color=(0.1, 0.8, 0.2))
            r.render_box("wall", WALL_POS, (0.0, 0.0, 0.0, 1.0), WALL_HALF_EXTENTS, color=(0.6, 0.6, 0.7))
            # the whole path of this throw (unchanged within an iteration, so stored once per iteration)
            r.render_line_strip("path", traj[::self.frame_steps], color=(0.9, 0.4, 0.1))
            r.end_frame()

    def save(self):
        self.renderer.save()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="gradient-descent iterations")
    parser.add_argument("--duration", type=float, default=0.8, help="simulated time per throw [s]")
    parser.add_argument("--dt", type=float, default=1.0 / 600.0, help="time step [s]")
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate")
    parser.add_argument("--out-dir", default="sim_ball_target_out", help="folder for the USD file and loss plot")
    parser.add_argument("--no-usd", action="store_true", help="do not write the USD trajectories")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    ball = BallTarget(duration=args.duration, dt=args.dt)
    writer = None if args.no_usd else TrajectoryWriter(os.path.join(args.out_dir, "trajectories.usda"), ball)
    losses, v = optimize(ball, args.iterations, args.lr,
                         on_iteration=(lambda it, v, loss: writer.write(it)) if writer else None)
    final = ball.loss(v)
    print(f"final loss {final:.5e} m^2 with initial velocity ({v[0]:.4f}, {v[1]:.4f}, {v[2]:.4f}) m/s")
    if writer:
        writer.save()
        print(f"trajectories written to {os.path.join(args.out_dir, 'trajectories.usda')}")
    plot = os.path.join(args.out_dir, "loss.png")
    plot_losses(losses + [final], plot)
    print(f"loss curve written to {plot}")
    return {"losses": losses, "final_loss": final, "velocity": v}


if __name__ == "__main__":
    main()
