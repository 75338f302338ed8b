"""A pile of rigid bodies: mixed spheres, boxes and capsules falling into a box, written to USD.

``--count`` bodies (a third each: spheres of radius 0.06 m, cubes of half extent 0.05 m,
capsules of radius 0.04 m and half height 0.05 m; density 1000 kg/m^3; random
orientations) start on a grid of columns 0.18 m apart above the floor of an open box (the
ground plane and four static wall boxes, 0.05 m thick) and fall into it.  Penalty contacts
(ke = 1e4 N/m, restitution 0.3, mu = 0.5) for body-ground, body-wall and body-body pairs,
``sim.SolverSemiImplicit`` with dt = 1 ms.  Every ``--render-every`` steps the bodies'
shapes are written to the USD file as time-sampled transforms (walls once), under
``/root/pile/<kind>_<i>`` and ``/root/box/<wall>``.

The run checks itself: positions stay finite and no body leaves the box (through a wall or
the floor) by more than its size; it raises otherwise.

Run: python examples/sim_rigid_pile.py --count 1000 --steps 1500 --out rigid_pile.usda
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import sim

SPACING = 0.18
SPHERE_R, BOX_HALF, CAPSULE_R, CAPSULE_HALF = 0.06, 0.05, 0.04, 0.05
REACH = 0.09  # the largest distance from a body's centre to its surface [m] (capsule: 0.05 + 0.04)
WALL_THICKNESS = 0.05


def build_model(count: int, seed: int = 0, device: str = "cpu"):
    """(model, half width of the box's inside [m], wall height [m], shape names)."""
    rng = np.random.default_rng(seed)
    side = max(2, int(math.ceil(math.sqrt(count / 4.0))))  # columns per row; about 4 layers
    layers = int(math.ceil(count / side ** 2))
    half_width = 0.5 * side * SPACING + 0.02
    wall_height = 0.1 + layers * SPACING + 0.2
    b = sim.ModelBuilder()
    mat = b.add_material(ke=1.0e4, restitution=0.3, mu=0.5)
    b.set_ground_plane(material=mat)
    names = []
    h = 0.5 * wall_height
    t = 0.5 * WALL_THICKNESS
    reach = half_width + t
    for name, pos, half in (("wall_x0", (-reach, h, 0.0), (t, h, reach + t)),
                            ("wall_x1", (reach, h, 0.0), (t, h, reach + t)),
                            ("wall_z0", (0.0, h, -reach), (half_width, h, t)),
                            ("wall_z1", (0.0, h, reach), (half_width, h, t))):
        b.add_shape_box(pos=pos, half_extents=half, material=mat, name=name)
        names.append(f"box/{name}")
    for k in range(count):
        lay, rest = divmod(k, side * side)
        i, j = divmod(rest, side)
        pos = ((i - 0.5 * (side - 1)) * SPACING, 0.1 + lay * SPACING, (j - 0.5 * (side - 1)) * SPACING)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        body = b.add_body(tuple(pos) + tuple(q))
        kind = ("sphere", "box", "capsule")[k % 3]
        if kind == "sphere":
            b.add_shape_sphere(radius=SPHERE_R, body=body, material=mat)
        elif kind == "box":
            b.add_shape_box(half_extents=(BOX_HALF,) * 3, body=body, material=mat)
        else:
            b.add_shape_capsule(radius=CAPSULE_R, half_height=CAPSULE_HALF, body=body, material=mat)
        names.append(f"pile/{kind}_{k}")
    return b.finalize(device=device), half_width, wall_height, names


def check_inside(q, half_width):
    """Raise when a body position is not finite or lies outside the box by more than its size."""
    if not np.all(np.isfinite(q)):
        raise FloatingPointError("body_q became non-finite")
    out = (np.abs(q[:, 0]) > half_width + REACH) | (np.abs(q[:, 2]) > half_width + REACH) | (q[:, 1] < -REACH)
    if out.any():
        k = int(np.argmax(out))
        raise RuntimeError(f"body {k} left the box: position {q[k, :3].tolist()} (inside half width {half_width:g} m)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="number of bodies")
    parser.add_argument("--steps", type=int, default=1500, help="time steps to run")
    parser.add_argument("--dt", type=float, default=1.0e-3, help="time step [s]")
    parser.add_argument("--out", default="sim_rigid_pile.usda", help="USD file to write ('' for none)")
    parser.add_argument("--render-every", type=int, default=20, help="steps between USD frames")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    model, half_width, wall_height, names = build_model(args.count, device=args.device)
    solver = sim.SolverSemiImplicit(model)
    s0, s1 = model.state(), model.state()
    out = None
    if args.out:
        import render
        from scenes.render_adapter import ModelRenderer

        usd = render.UsdRenderer(args.out, fps=1.0 / (args.dt * args.render_every))
        out = ModelRenderer(usd, model, shape_names=names, ground_size=4.0 * half_width)
        out.render(s0, 0.0)
    print(f"{model.body_count} bodies falling into a box {2 * half_width:.2f} m wide, {wall_height:.2f} m high; "
          f"dt {args.dt:g} s")
    start = time.perf_counter()
    for k in range(1, args.steps + 1):
        solver.step(model, s0, s1, None, args.dt)
        s0, s1 = s1, s0
        if out is not None and k % args.render_every == 0:
            out.render(s0, k * args.dt)
    elapsed = time.perf_counter() - start
    q = s0.body_q.numpy()
    check_inside(q, half_width)
    if out is not None:
        out.renderer.save()
    rate = args.steps / elapsed if elapsed > 0 else float("inf")
    print(f"{args.steps} steps in {elapsed:.2f} s ({rate:.1f} steps/s, USD output included); "
          f"bodies' heights {q[:, 1].min():.3f} .. {q[:, 1].max():.3f} m" + (f"; wrote {args.out}" if args.out else ""))
    return {"body_q": q, "half_width": half_width, "steps_per_second": rate}


if __name__ == "__main__":
    main()
