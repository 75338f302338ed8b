"""Neighbour search with geometry.HashGrid: SPH-style densities of random particles.

Each particle sums a smoothing kernel over its neighbours within the radius, found through
the hash grid (the seeds' ``hash_grid_query`` loop), and the result is checked against a
brute-force sum on a sample of particles.

Run: python examples/geometry_neighbours.py --count 20000 --neighbours 30
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import kernelcore as kc
import geometry


@kc.kernel
def density(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float, rho: kc.array(dtype=float),
            count: kc.array(dtype=kc.int32)):
    tid = kc.tid()
    i = kc.hash_grid_point_id(grid, tid)        # visit points in cell order (memory locality)
    p = points[i]
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    s = float(0.0)
    c = int(0)
    while kc.hash_grid_query_next(query, index):
        d = kc.length(p - points[index])
        if d <= radius:
            q = 1.0 - d / radius
            s += q * q * q                         # a compact polynomial kernel
            c += 1
    rho[i] = s
    count[i] = c


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--neighbours", type=float, default=30.0, help="target mean neighbour count")
    parser.add_argument("--frames", type=int, default=3, help="rebuild + query this many times")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    n = args.count
    radius = float((args.neighbours * 3.0 / (4.0 * np.pi * n)) ** (1.0 / 3.0))
    dim = int(min(128, max(4, np.ceil(1.0 / radius) + 1)))
    grid = geometry.HashGrid(dim, dim, dim)
    points = kc.array(rng.random((n, 3)), dtype=kc.vec3)
    rho, count = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.int32)
    for frame in range(args.frames):
        points.numpy()[:] += rng.normal(scale=0.1 * radius, size=(n, 3)).astype(np.float32)   # particles move
        t0 = time.perf_counter()
        grid.build(points, radius)
        t1 = time.perf_counter()
        kc.launch(density, dim=n, inputs=[grid.id, points, radius, rho, count])
        t2 = time.perf_counter()
        print(f"frame {frame}: build {1e3 * (t1 - t0):.2f} ms, query {1e3 * (t2 - t1):.2f} ms, "
              f"mean neighbours {count.numpy().mean():.1f}")
    # brute-force check on a sample
    p = points.numpy().astype(np.float64)
    sample = rng.choice(n, size=min(n, 200), replace=False)
    d = np.linalg.norm(p[sample, None, :] - p[None, :, :], axis=2)
    ref = np.where(d <= radius, (1.0 - d / radius) ** 3, 0.0).sum(axis=1)
    err = float(np.max(np.abs(rho.numpy()[sample] - ref)))
    print(f"max density error vs brute force on {len(sample)} particles: {err:.2e}")
    assert err < 1e-3
    return rho.numpy()


if __name__ == "__main__":
    main()
