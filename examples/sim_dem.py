"""DEM: a block of granular particles collapses in a box (particle contacts via a hash grid).

Particles (radius 1 cm, sand-like density) start as a jittered block and fall into a
square box made of four static walls on a ground plane.  Contacts between particles use
the spring-dashpot law of sim/contact.py with Coulomb friction, found each step through a
geometry.HashGrid.  Prints the simulation speed in steps per second (the first step, which
compiles the kernels, is not counted).

Run: python examples/sim_dem.py --count 100000 --steps 200 [--out dem.usd]
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import sim

RADIUS = 0.01          # m
DENSITY = 2500.0       # kg/m^3


def build_model(count: int, device="cpu", cohesion: float = 0.0):
    """A model with about ``count`` particles in a block, walls and ground; returns (model, block dims)."""
    side = max(1, int(round((count / 2.0) ** (1.0 / 3.0))))
    height = max(1, int(math.ceil(count / (side * side))))
    spacing = 2.2 * RADIUS  # with the jitter below, no two particles start in contact
    mass = DENSITY * 4.0 / 3.0 * math.pi * RADIUS ** 3
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_material(0, ke=1.0e4, restitution=0.3, mu=0.5, cohesion=cohesion, cohesion_distance=0.2 * RADIUS)
    b.set_ground_plane()
    b.add_particle_grid((-0.5 * side * spacing, RADIUS + 0.01, -0.5 * side * spacing), (0.0, 0.0, 0.0),
                        side, height, side, spacing, mass, RADIUS, jitter=0.05 * RADIUS, seed=1)
    half = side * spacing  # the box is twice as wide as the block
    s2 = math.sqrt(0.5)
    for pos, rot in [((half, 0, 0), (0, 0, s2, s2)), ((-half, 0, 0), (0, 0, -s2, s2)),
                     ((0, 0, half), (-s2, 0, 0, s2)), ((0, 0, -half), (s2, 0, 0, s2))]:
        # plane normal = local +Y rotated to point into the box
        b.add_shape_plane(pos, rot, width=2 * half, length=2 * half)
    return b.finalize(device=device), (side, height, side)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="number of particles (about)")
    parser.add_argument("--steps", type=int, default=100, help="time steps to run")
    parser.add_argument("--dt", type=float, default=2.0e-4, help="time step [s]")
    parser.add_argument("--cohesion", type=float, default=0.0, help="cohesion force [N]")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None, help="write particle positions to this USD file")
    parser.add_argument("--render-every", type=int, default=20, help="steps between USD frames")
    args = parser.parse_args(argv)

    model, dims = build_model(args.count, args.device, args.cohesion)
    solver = sim.SolverDEM(model)
    s0, s1 = model.state(), model.state()
    renderer = None
    if args.out:
        import render

        renderer = render.UsdRenderer(args.out, fps=1.0 / (args.dt * args.render_every))
    print(f"{model.particle_count} particles (block {dims[0]} x {dims[1]} x {dims[2]}), dt {args.dt:g} s")

    def frame(k):
        if renderer is not None and k % args.render_every == 0:
            renderer.begin_frame(k * args.dt)
            renderer.render_points("particles", s0.particle_q.numpy(), RADIUS, colors=(0.8, 0.7, 0.4))
            renderer.end_frame()

    frame(0)
    solver.step(model, s0, s1, None, args.dt)  # compiles the kernels
    s0, s1 = s1, s0
    start, cpu_start = time.perf_counter(), time.process_time()
    for k in range(1, args.steps):
        solver.step(model, s0, s1, None, args.dt)
        s0, s1 = s1, s0
        frame(k + 1)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    timed = max(1, args.steps - 1)
    rate = timed / elapsed if elapsed > 0 else float("inf")
    threads = os.cpu_count() or 1
    q = s0.particle_q.numpy()
    if not np.all(np.isfinite(q)):
        raise FloatingPointError("particle_q became non-finite")
    print(f"{timed} steps in {elapsed:.3f} s: {rate:.1f} steps/s, "
          f"{rate * model.particle_count / 1e6:.2f} M particle-steps/s; lowest particle at {q[:, 1].min():.4f} m")
    # wall time counts other processes' load; CPU time over all cores does not
    if cpu > 0:
        print(f"CPU time {cpu:.3f} s on {threads} core(s): {timed * threads / cpu:.1f} steps/s if the cores were idle")
    if renderer is not None:
        renderer.save()
        print(f"wrote {args.out}")
    return {"steps_per_second": rate, "particle_count": model.particle_count, "min_height": float(q[:, 1].min())}


if __name__ == "__main__":
    main()
