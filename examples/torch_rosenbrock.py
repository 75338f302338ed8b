"""Minimise the Rosenbrock function at many points: a kernelcore kernel inside torch autograd.

``Rosenbrock`` is a ``torch.autograd.Function``: its forward launches the kernel on kc
views of the torch tensors, its backward launches the kernel's adjoint
(``kc.launch(..., adjoint=True, adj_inputs=..., adj_outputs=...)``) with the incoming
torch gradient as the adjoint of the output.  The adjoint of the input is a fresh
array returned to torch, which accumulates it into ``xy.grad`` itself.  torch's Adam then
moves every point towards the minimum at (1, 1).

Run: python examples/torch_rosenbrock.py --points 1500 --iters 2000
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import kernelcore as kc


@kc.func
def rosenbrock(x: float, y: float):
    return (1.0 - x) ** 2.0 + 100.0 * (y - x ** 2.0) ** 2.0


@kc.kernel
def eval_rosenbrock(xs: kc.array(dtype=kc.vec2), z: kc.array(dtype=float)):
    """z[i] = rosenbrock(xs[i]) (xs: (n,) vec2, z: (n,))."""
    i = kc.tid()
    x = xs[i]
    z[i] = rosenbrock(x[0], x[1])


class Rosenbrock(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xy, num_points):
        ctx.xy = kc.from_torch(xy, dtype=kc.vec2, requires_grad=False)
        ctx.num_points = num_points
        ctx.z = kc.zeros(num_points, device=ctx.xy.device)
        kc.launch(eval_rosenbrock, dim=num_points, inputs=[ctx.xy], outputs=[ctx.z])
        return kc.to_torch(ctx.z)

    @staticmethod
    def backward(ctx, adj_z):
        # torch hands in dL/dz; the kernel's adjoint turns it into dL/dxy
        adj_xy = kc.zeros_like(ctx.xy)
        kc.launch(eval_rosenbrock, dim=ctx.num_points, inputs=[ctx.xy], outputs=[ctx.z],
                  adj_inputs=[adj_xy], adj_outputs=[kc.from_torch(adj_z.contiguous())], adjoint=True)
        return kc.to_torch(adj_xy), None


def optimize(num_points=1500, iters=2000, lr=5e-2, seed=42):
    """Adam on points drawn from N(0, 1); returns (xy (n, 2) numpy, mean z after each step)."""
    torch_device = kc.device_to_torch(kc.get_device())
    rng = np.random.default_rng(seed)
    xy = torch.tensor(rng.normal(size=(num_points, 2)), dtype=torch.float32, requires_grad=True, device=torch_device)
    opt = torch.optim.Adam([xy], lr=lr)
    history = []
    for _ in range(iters):
        opt.zero_grad()
        z = Rosenbrock.apply(xy, num_points)
        z.backward(torch.ones_like(z))
        opt.step()
        history.append(z.mean().item())
    return xy.detach().cpu().numpy(), history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=5e-2)
    args = parser.parse_args(argv)
    xy, history = optimize(args.points, args.iters, args.lr)
    print(f"mean of the points: {np.mean(xy, axis=0)} (minimum at (1, 1)); "
          f"mean z {history[0]:.3f} -> {history[-1]:.5f}")
    return xy, history


if __name__ == "__main__":
    main()
