"""Integrate particles under gravity with a kernel (the seeds' first example).

Run: python examples/integrate_particles.py --count 1024 --steps 100
"""
from __future__ import annotations

import argparse

import numpy as np

import kernelcore as kc


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), gravity: kc.vec3, dt: float):
    i = kc.tid()
    v[i] = v[i] + gravity * dt
    x[i] = x[i] + v[i] * dt


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = kc.array(rng.random((args.count, 3)), dtype=kc.vec3)
    v = kc.zeros(args.count, dtype=kc.vec3)
    dt = 1.0 / 60.0
    for _ in range(args.steps):
        kc.launch(integrate, dim=args.count, inputs=[x, v, kc.vec3(0.0, -9.8, 0.0), dt])
    t = args.steps * dt
    print(f"integrated {args.count} particles for {args.steps} steps ({t:.3f} s): mean height {x.numpy()[:, 1].mean():.4f} m")
    return x.numpy()


if __name__ == "__main__":
    main()
