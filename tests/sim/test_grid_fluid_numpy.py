"""SolverGridFluid against an independent vectorised NumPy implementation of the same step
(benchmarks/smoke_numpy.py: its own sampling, advection, buoyancy and float64 PCG)."""
import os
import sys

import numpy as np
import pytest

import kernelcore as kc
from sim.solvers.grid_fluid import SolverGridFluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "benchmarks"))
import smoke_numpy  # noqa: E402


@pytest.mark.parametrize("res", [(20, 16), (10, 8, 6)])
def test_steps_match_numpy(res):
    dim = len(res)
    dx, dt = 0.05, 0.02
    solver = SolverGridFluid(res, dx=dx, heat_lift=3.0, smoke_weight=0.5)
    rng = np.random.default_rng(2)
    a = solver.state()
    fields = {}
    for name in ("u", "v", "w", "density", "temperature"):
        arr = getattr(a, name)
        if arr is not None:
            fields[name] = (0.5 * rng.standard_normal(arr.shape)).astype(np.float32)
            arr.assign(kc.from_numpy(fields[name]))
    states = [a, solver.state()]
    three = res if dim == 3 else res + (1,)
    nx, ny, nz = three
    u = fields["u"].reshape(nx + 1, ny, nz)
    v = fields["v"].reshape(nx, ny + 1, nz)
    w = fields["w"] if dim == 3 else np.zeros((nx, ny, 2), np.float32)
    rho, temp = fields["density"].reshape(three), fields["temperature"].reshape(three)
    for k in range(3):
        solver.step(states[k % 2], states[(k + 1) % 2], dt)
        u, v, w, rho, temp, _ = smoke_numpy.step(u, v, w, rho, temp, dt, dx, heat_lift=3.0, smoke_weight=0.5,
                                                 dim=dim)
    out = states[1]
    scale = max(np.abs(u).max(), np.abs(v).max())
    np.testing.assert_allclose(out.u.numpy().reshape(u.shape), u, atol=2e-5 * scale)
    np.testing.assert_allclose(out.v.numpy().reshape(v.shape), v, atol=2e-5 * scale)
    if dim == 3:
        np.testing.assert_allclose(out.w.numpy(), w, atol=2e-5 * scale)
    np.testing.assert_allclose(out.density.numpy().reshape(rho.shape), rho, atol=2e-5)
    np.testing.assert_allclose(out.temperature.numpy().reshape(temp.shape), temp, atol=2e-5)
