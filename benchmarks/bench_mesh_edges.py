"""What the mesh edge contacts cost: a 100-body mesh/box pile with them and without, interleaved.

The scene: ``n`` bodies (half mesh cubes, half boxes, 0.1 m, density 500 kg/m^3, random
orientations) in a column grid over a static ridged terrain mesh (a row of prisms, ridges
along z) with four static boxes at its corners and the ground; ``--settle`` steps (not timed)
let them land and touch each other, then samples of ``--steps`` steps are timed alternately
with every edge contact on (sim/collide_mesh_edges.py, sim/collide_mesh_edge_pairs.py) and
off (``body_mesh_contacts.edges = None``, ``.edge_pairs = None``), from copies of the same
settled state.  Reported: the median seconds per step of each and their ratio (on / off).

Run: python benchmarks/bench_mesh_edges.py --bodies 100
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernelcore as kc  # noqa: E402
import sim  # noqa: E402

CUBE_POINTS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64) - 0.5
CUBE_TRIS = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def ridged_terrain(width=2.0, ridges=5, height=0.06):
    """A row of ``ridges`` prisms over x in [-width/2, width/2], z in [-width/2, width/2], ridges along z."""
    pts, tris = [], []
    step = width / ridges
    for r in range(ridges):
        x0 = -width / 2 + r * step
        base = len(pts)
        for z in (-width / 2, width / 2):
            pts += [(x0, 0.0, z), (x0 + step, 0.0, z), (x0 + step / 2, height, z)]
        tris += [(base + a, base + b, base + c) for a, b, c in
                 ((0, 2, 1), (3, 4, 5), (0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4), (2, 0, 3), (2, 3, 5))]
    return np.asarray(pts), np.asarray(tris)


def scene(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.2, mu=0.5)
    b.set_ground_plane()
    b.add_shape_mesh(*ridged_terrain())
    for sx in (-1, 1):
        for sz in (-1, 1):
            b.add_shape_box((sx * 0.8, 0.1, sz * 0.8), half_extents=(0.1, 0.1, 0.1))
    side = int(np.ceil(np.sqrt(n / 3)))
    for i in range(n):
        layer, k = divmod(i, side * side)
        x = (k % side - (side - 1) / 2) * 0.16
        z = (k // side - (side - 1) / 2) * 0.16
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        body = b.add_body(kc.transform(kc.vec3(x, 0.15 + 0.16 * layer, z), kc.quat(*q)))
        if i % 2 == 0:
            b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.1, 0.1, 0.1), body=body, density=500.0)
        else:
            b.add_shape_box(half_extents=(0.05, 0.05, 0.05), body=body, density=500.0)
    return b.finalize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=100)
    parser.add_argument("--settle", type=int, default=300)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    m = scene(args.bodies)
    dt = 1e-3
    solvers = {"on": sim.SolverSemiImplicit(m), "off": sim.SolverSemiImplicit(m)}
    meshes = solvers["off"].body_mesh_contacts
    meshes.edges = None
    meshes.edge_pairs = None
    s0, s1 = m.state(), m.state()
    for _ in range(args.settle):
        solvers["on"].step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
    settled = (s0.body_q.numpy().copy(), s0.body_qd.numpy().copy())
    times = {"on": [], "off": []}
    states = {k: (m.state(), m.state()) for k in solvers}
    for k, (a, c) in states.items():  # warm-up: compile, allocate contact arrays
        solvers[k].step(m, a, c, None, dt)
    for _ in range(args.samples):
        for k in ("on", "off"):
            a, c = states[k]
            a.body_q.assign(settled[0])
            a.body_qd.assign(settled[1])
            t0 = time.perf_counter()
            for _ in range(args.steps):
                solvers[k].step(m, a, c, None, dt)
                a, c = c, a
            times[k].append((time.perf_counter() - t0) / args.steps)
    on, off = np.median(times["on"]), np.median(times["off"])
    counts = (int(s0.contacts.count.numpy()[0]), int(s0.body_pair_contacts.count.numpy()[0]))
    print(f"bodies={args.bodies} contacts(static, pair)={counts} ms/step: edges on {on * 1e3:.2f}, "
          f"off {off * 1e3:.2f}, ratio on/off {on / off:.3f}")


if __name__ == "__main__":
    main()
