"""Granular column collapse in 2-D (sim.SolverMPM, Drucker-Prager sand), run-out against Lube et al.

A column of sand of width L0 and height H = a L0 stands against the left wall of a box
(the wall is a symmetry plane: the half of a column of width 2 L0) and is released.  It
spreads on the floor and comes to rest with its front at L_inf.  Lube, Huppert, Sparks &
Freundt (2005) measured, for aspect ratios a < 1.7, a normalised run-out
(L_inf - L0) / L0 ~= 1.2 a, independent of the grains' friction.  This script runs a few
aspect ratios, waits until the sand is at rest (largest particle speed below --rest-speed)
and prints the measured run-out next to 1.2 a.

The front L_inf is the 99.5th percentile of the particles' x (a few grains that skitter
ahead are not the deposit's front).  The floor has Coulomb friction --floor-friction; the
left wall too (it stands for the column's symmetry plane, where real sand would not slide:
the run-out is insensitive to that choice here because the sand at the wall barely moves
sideways).

Measured (E = 2e5 Pa, friction angle 30 deg, floor friction 0.5; run-out / 1.2 a):

    cells/L0   a = 0.5   0.9    1.3    1.6
    16         0.56      0.77   0.89   0.93
    32         0.69      0.94   1.06   1.09

Within ~10% of the law for a >= 0.9 at 32 cells; short columns run out 30% less than
1.2 a (their front moves only a few cells, so resolution and floor friction weigh more),
and the values still change with resolution (not converged at 32 cells).  H_inf/H0 stays
~1 for a < 1, as Lube et al. observed (the top of a short column is not disturbed).
A softer sand (E = 2e4 Pa) compresses ~8% under its own weight and a thin basal layer
then squeezes out along the floor, which inflates the run-out; hence the stiff default.

Run: python examples/mpm_column_collapse.py            (cells per L0: 16, a few minutes)
     python examples/mpm_column_collapse.py --small    (coarse, seconds; used by the tests)
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import sim

G = 9.81


def build_column(a, l0, cells, friction_angle, youngs_modulus, density):
    """A model with one sand column of width ``l0`` [m] and height ``a * l0``; returns (model, dx, bounds)."""
    dx = l0 / cells
    sp = dx / 2  # 2 x 2 particles per cell
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    mat = b.add_material(model="sand", youngs_modulus=youngs_modulus, poisson_ratio=0.3, friction_angle=friction_angle)
    nx, ny = int(round(l0 / sp)), int(round(a * l0 / sp))
    b.add_particle_grid((sp / 2, sp / 2, 0.0), (0.0, 0.0, 0.0), nx, ny, 1, sp, density=density, volume=sp * sp,
                        material=mat)
    length = l0 * (2.0 + 2.5 * a)  # room for a run-out of twice the expected one
    height = l0 * (a + 0.5)
    return b.finalize(), dx, ((0.0, 0.0), (length, height))


def collapse(a, l0=0.1, cells=16, friction_angle=30.0, floor_friction=0.5, youngs_modulus=2.0e5, density=1600.0,
             rest_speed=0.01, max_time=None):
    """Run one collapse; returns dict(a, runout, height, time, steps, particles)."""
    model, dx, bounds = build_column(a, l0, cells, friction_angle, youngs_modulus, density)
    solver = sim.SolverMPM(model, dx=dx, bounds=bounds, dim=2, boundary="separate", friction=floor_friction)
    dt = 0.9 * solver.max_dt
    h0 = a * l0
    # free-fall time of the column top, times a generous factor: the collapse ends well before
    max_time = max_time or 12.0 * math.sqrt(2.0 * h0 / G) + 0.2
    s0, s1 = model.state(), model.state()
    t, steps, check_every = 0.0, 0, 50
    while t < max_time:
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        t += dt
        steps += 1
        if steps % check_every == 0 and t > 2.0 * math.sqrt(2.0 * h0 / G):
            v = s0.particle_qd.numpy()[:, :2]
            if np.sqrt((v * v).sum(axis=1)).max() < rest_speed:
                break
    q = s0.particle_q.numpy()[:, :2]
    if not np.all(np.isfinite(q)):
        raise RuntimeError(f"a = {a}: the simulation blew up")
    front = float(np.percentile(q[:, 0], 99.5)) + 0.25 * dx  # the particle centre plus half its spacing
    return dict(a=a, runout=(front - l0) / l0, height=float(q[:, 1].max()) / h0, time=t, steps=steps,
                particles=model.particle_count, at_rest=t < max_time)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--aspect", type=float, nargs="+", default=[0.5, 0.9, 1.3, 1.6],
                        help="aspect ratios a = H / L0 (Lube et al.'s linear law holds for a < 1.7)")
    parser.add_argument("--cells", type=int, default=16, help="grid cells across the column width L0")
    parser.add_argument("--friction-angle", type=float, default=30.0, help="sand friction angle [degrees]")
    parser.add_argument("--floor-friction", type=float, default=0.5, help="Coulomb friction of floor and walls")
    parser.add_argument("--rest-speed", type=float, default=0.01, help="at rest when every particle is slower [m/s]")
    parser.add_argument("--small", action="store_true", help="coarse and short (a smoke test, not a measurement)")
    args = parser.parse_args(argv)
    cells, aspects, max_time = args.cells, args.aspect, None
    if args.small:
        cells, aspects, max_time = 6, [0.8], 0.15
    print(f"granular column collapse, 2-D MLS-MPM sand (friction angle {args.friction_angle:g} deg, floor friction "
          f"{args.floor_friction:g}), {cells} cells across L0 = 0.1 m")
    print(f"{'a':>5} {'particles':>9} {'steps':>6} {'t [s]':>6} {'(Linf-L0)/L0':>13} {'Lube 1.2 a':>11} "
          f"{'ratio':>6} {'Hinf/H0':>8}")
    rows = []
    for a in aspects:
        start = time.perf_counter()
        r = collapse(a, cells=cells, friction_angle=args.friction_angle, floor_friction=args.floor_friction,
                     rest_speed=args.rest_speed, max_time=max_time)
        expected = 1.2 * a
        rest = "" if r["at_rest"] else "  (not at rest: stopped at the time limit)"
        print(f"{a:5.2f} {r['particles']:9d} {r['steps']:6d} {r['time']:6.2f} {r['runout']:13.2f} {expected:11.2f} "
              f"{r['runout'] / expected:6.2f} {r['height']:8.2f}   ({time.perf_counter() - start:.1f} s){rest}")
        rows.append(r)
    return rows


if __name__ == "__main__":
    main()
