"""Dam break with position-based fluids (sim.SolverPBF), written as time-sampled USD Points.

A block of water (``--nx x --ny x --nz`` particles, spacing ``--spacing``) stands against
the left wall of a closed tank and collapses; a static sphere sits in its way.  Prints the
front position against Ritter's shallow-water front ``W + 2 sqrt(g H) t`` and the speed in
steps per second; ``--out`` writes the particles as a USD Points prim per frame.

Run: python examples/fluid_dam_break.py --nx 40 --ny 20 --nz 10 --frames 120 --out dam.usda
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import sim

G = 9.81


def build(nx, ny, nz, spacing, sphere=True):
    """Model and solver of the dam break; returns (model, solver, (W, H) of the column [m])."""
    s = spacing
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_particle_grid((0.5 * s, 0.5 * s, 0.5 * s), (0.0, 0.0, 0.0), nx, ny, nz, s, density=1000.0,
                        radius=0.5 * s, jitter=0.05 * s, seed=1)
    W, H, D = nx * s, ny * s, nz * s
    length = W + 6.0 * H
    if sphere:
        b.add_shape_sphere((W + 2.5 * H, 0.0, 0.5 * D), radius=0.6 * H)
    model = b.finalize()
    solver = sim.SolverPBF(model, smoothing_length=2.0 * s, bounds=((0.0, 0.0, 0.0), (length, 3.0 * H, D)),
                           iterations=4, xsph=0.01, vorticity_confinement=0.01)
    return model, solver, (W, H)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nx", type=int, default=40)
    parser.add_argument("--ny", type=int, default=20)
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--spacing", type=float, default=0.01, help="particle spacing [m]")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--substeps", type=int, default=4, help="steps per 1/60 s frame")
    parser.add_argument("--out", default=None, help="USD file for the particles (time-sampled Points)")
    args = parser.parse_args(argv)

    model, solver, (W, H) = build(args.nx, args.ny, args.nz, args.spacing)
    dt = 1.0 / 60.0 / args.substeps
    renderer = None
    if args.out:
        import render

        renderer = render.UsdRenderer(args.out, fps=60)
    s0, s1 = model.state(), model.state()
    radius = 0.5 * args.spacing
    print(f"{model.particle_count} particles, h = {solver.h:g} m, dt = {dt:.4g} s, column {W:g} x {H:g} m")
    c0 = math.sqrt(G * H)
    start = None
    for frame in range(args.frames + 1):
        q = s0.particle_q.numpy()
        if renderer is not None:
            renderer.begin_frame(frame / 60.0)
            renderer.render_points("water", q, radius, colors=(0.2, 0.45, 0.9))
            renderer.end_frame()
        t = frame / 60.0
        if frame % 10 == 0:
            front = float(np.sort(q[:, 0])[-max(1, len(q) // 200)]) + radius
            print(f"t = {t:5.3f} s  front {front:6.3f} m  (Ritter {min(W + 2 * c0 * t, solver.upper[0]):6.3f} m)")
        if frame == args.frames:
            break
        for _ in range(args.substeps):
            solver.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0
        if start is None:
            start = time.perf_counter()   # after the first frame, which compiles the kernels
    steps = (args.frames - 1) * args.substeps
    if steps > 0:
        print(f"{steps / (time.perf_counter() - start):.1f} steps/s")
    if renderer is not None:
        renderer.save()
    q = s0.particle_q.numpy()
    assert np.all(np.isfinite(q)), "the simulation produced NaN"
    return q


if __name__ == "__main__":
    main()
