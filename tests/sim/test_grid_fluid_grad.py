"""SolverGridFluid gradients (kc.Tape, the projection's adjoint CG solve) against finite differences.

The fluid runs in float32; the finite differences rerun the same forward with the loss
reduced in float64 on the host and a step large enough to dwarf float32 round-off, so they
check the adjoint's value, not the last digits.  Replacing the projection's adjoint solve
by the identity makes these fail by 50-100 %.  Directional: dL/deps of L(x + eps delta)
against grad . delta for a random smooth delta.
"""
import numpy as np
import pytest

import kernelcore as kc
from sim.solvers.grid_fluid import SolverGridFluid

STEPS = 3
DT = 0.02


@kc.kernel
def weighted_sum(a: kc.array(dtype=float, ndim=2), w: kc.array(dtype=float, ndim=2), loss: kc.array(dtype=float)):
    i, j = kc.tid()
    kc.atomic_add(loss, 0, a[i, j] * w[i, j])


@kc.kernel
def weighted_sum3(a: kc.array(dtype=float, ndim=3), w: kc.array(dtype=float, ndim=3), loss: kc.array(dtype=float)):
    i, j, k = kc.tid()
    kc.atomic_add(loss, 0, a[i, j, k] * w[i, j, k])


def smooth(shape, rng, scale=1.0):
    """A smooth random field: a few low Fourier modes (finite differences stay away from kinks)."""
    grids = np.meshgrid(*[np.linspace(0.0, 1.0, n) for n in shape], indexing="ij")
    f = np.zeros(shape)
    for _ in range(4):
        phase = rng.uniform(0, 2 * np.pi, len(shape))
        k = rng.integers(1, 3, len(shape))
        f += rng.normal() * np.prod([np.sin(np.pi * k[a] * grids[a] + phase[a]) for a in range(len(shape))], axis=0)
    return scale * f


def make(dim, advection):
    res = (10, 8) if dim == 2 else (6, 5, 4)
    solver = SolverGridFluid(res, dx=0.1, viscosity=0.02, advection=advection, smoke_weight=0.5, heat_lift=2.0,
                             vorticity=0.3)
    solver.add_solid_sphere((0.5, 0.4, 0.2)[:dim], 0.12)
    return solver


def run(solver, u0, v0, rho0, weights, tape=None):
    states = [solver.state(requires_grad=tape is not None) for _ in range(STEPS + 1)]
    s0 = states[0]
    s0.u.assign(kc.from_numpy(u0.astype(np.float32)))
    s0.v.assign(kc.from_numpy(v0.astype(np.float32)))
    s0.density.assign(kc.from_numpy(rho0.astype(np.float32)))
    s0.temperature.assign(kc.from_numpy(np.full(rho0.shape, 0.3, np.float32)))  # fixed: not a function of rho0
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def go():
        for k in range(STEPS):
            solver.step(states[k], states[k + 1], DT)
        last = states[-1]
        ws = weighted_sum if solver.dim == 2 else weighted_sum3
        for name in ("density", "u", "v"):
            kc.launch(ws, dim=getattr(last, name).shape, inputs=[getattr(last, name), weights[name], loss])

    if tape is not None:
        with tape:
            go()
    else:
        go()
    host = sum(float((getattr(states[-1], n).numpy().astype(np.float64) * weights[n].numpy()).sum())
               for n in ("density", "u", "v"))
    return loss, states, host


@pytest.mark.parametrize("dim,advection", [(2, "semi_lagrangian"), (2, "maccormack"), (3, "semi_lagrangian")])
def test_gradient_matches_finite_differences(dim, advection):
    rng = np.random.default_rng(3)
    solver = make(dim, advection)
    st = solver.state()
    u0 = smooth(st.u.shape, rng, 0.5)
    v0 = smooth(st.v.shape, rng, 0.5)
    rho0 = np.abs(smooth(st.density.shape, rng, 1.0))
    weights = {n: kc.from_numpy(smooth(getattr(st, n).shape, rng).astype(np.float32))
               for n in ("density", "u", "v")}
    tape = kc.Tape()
    loss, states, _ = run(solver, u0, v0, rho0, weights, tape)
    tape.backward(loss=loss)
    g = {"u": states[0].u.grad.numpy().astype(np.float64), "v": states[0].v.grad.numpy().astype(np.float64),
         "density": states[0].density.grad.numpy().astype(np.float64)}
    assert all(np.all(np.isfinite(x)) for x in g.values())
    for name in ("u", "density"):
        delta = smooth(g[name].shape, rng)
        eps = 1e-2

        def f(e):
            args = {"u": u0, "v": v0, "density": rho0}
            args[name] = args[name] + e * delta
            return run(solver, args["u"], args["v"], args["density"], weights)[2]

        fd = (f(eps) - f(-eps)) / (2 * eps)
        ad = float((g[name] * delta).sum())
        # the directional derivative is a sum with cancellation; its terms' size sets the scale of
        # what float32 forward runs and the kinks of piecewise-trilinear sampling (a finite
        # difference that straddles a back-trace crossing a grid line sees both slopes) can resolve
        scale = float(np.abs(g[name] * delta).sum())
        assert abs(ad - fd) <= 2e-2 * abs(fd) + 5e-3 * scale, (name, ad, fd, scale)
