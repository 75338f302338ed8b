"""Taylor–Green vortex: kinetic energy decays as exp(-4 nu k^2 t) with the viscous term on.

Domain choice: u = sin(kx) cos(ky), v = -cos(kx) sin(ky) with k = 1 on the box [0, pi]^2 with
free-slip walls.  The box is one symmetry cell of the periodic vortex: u vanishes on x = 0, pi
and v on y = 0, pi (no normal flow), and the tangential velocity has zero normal derivative
there (no shear stress), so the free-slip walls impose exactly what periodicity would.  The
nonlinear term is balanced by the pressure, so the exact solution is the initial field times
exp(-2 nu k^2 t) per component: energy exp(-4 nu k^2 t).  MacCormack advection keeps the
numerical diffusion of the advection step (O(|u| dx^2)) well below nu.
"""
import numpy as np
import pytest

import kernelcore as kc
from sim.solvers.grid_fluid import SolverGridFluid

N = 32


def taylor_green(nu, advection, amplitude=1.0):
    s = SolverGridFluid((N, N), dx=np.pi / N, viscosity=nu, advection=advection)
    st = s.state()
    xf = np.arange(N + 1) * s.dx           # face positions
    xc = (np.arange(N) + 0.5) * s.dx       # cell centres
    st.u.assign(kc.from_numpy((amplitude * np.sin(xf)[:, None] * np.cos(xc)[None, :]).astype(np.float32)))
    st.v.assign(kc.from_numpy((-amplitude * np.cos(xc)[:, None] * np.sin(xf)[None, :]).astype(np.float32)))
    return s, st


def energy(st):
    return sum(float((getattr(st, n).numpy().astype(np.float64) ** 2).sum()) for n in ("u", "v"))


@pytest.mark.parametrize("nu,amplitude", [(0.1, 1.0), (0.4, 1.0)])
def test_kinetic_energy_decays_as_exp_minus_4_nu_k2_t(nu, amplitude):
    solver, st = taylor_green(nu, "maccormack", amplitude)
    e0 = energy(st)
    dt, steps = 0.02, 50
    states = [st, solver.state()]
    for k in range(steps):
        solver.step(states[k % 2], states[(k + 1) % 2], dt)
        if (k + 1) % 25 == 0:
            t = (k + 1) * dt
            ratio = energy(states[(k + 1) % 2]) / e0
            exact = np.exp(-4.0 * nu * t)
            assert abs(ratio / exact - 1.0) < 0.02, (t, ratio, exact)
    assert exact < 0.7  # the run decays enough for the 2 % to mean something
