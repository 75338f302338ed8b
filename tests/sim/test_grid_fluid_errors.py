"""SolverGridFluid: bad input raises a one-line error naming the argument."""
import numpy as np
import pytest

import kernelcore as kc
from sim.solvers.grid_fluid import SolverGridFluid


@pytest.mark.parametrize("kwargs,match", [
    (dict(res=(0, 8), dx=0.1), r"res=\(0, 8\).*>= 1"),
    (dict(res=(8, 8, 0), dx=0.1), r"res=.*resolution of zero"),
    (dict(res=(8,), dx=0.1), r"res must be \(nx, ny\)"),
    (dict(res=(8, 2.5), dx=0.1), r"res must be"),
    (dict(res=(8, 8), dx=-0.1), r"dx must be finite > 0, got -0.1"),
    (dict(res=(8, 8), dx=0.0), r"dx must be finite > 0"),
    (dict(res=(8, 8), dx=float("nan")), r"dx must be finite"),
    (dict(res=(8, 8), dx=0.1, viscosity=-1.0), r"viscosity must be finite >= 0"),
    (dict(res=(8, 8), dx=0.1, advection="rk4"), r"advection must be one of"),
    (dict(res=(8, 8), dx=0.1, boundary="sticky"), r"boundary must be one of"),
    (dict(res=(8, 8), dx=0.1, cfl=0.0), r"cfl must be finite > 0"),
    (dict(res=(8, 8), dx=0.1, preconditioner="ilu"), r"preconditioner must be one of"),
])
def test_bad_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SolverGridFluid(**kwargs)


def test_cfl_over_the_limit_names_dt():
    s = SolverGridFluid((8, 8), dx=0.1, cfl=2.0)
    a, b = s.state(), s.state()
    a.u.fill_(0.0)
    u = np.zeros(a.u.shape, np.float32)
    u[3, 4] = 5.0
    a.u.assign(kc.from_numpy(u))
    s.step(a, b, 0.04)  # CFL 2.0: allowed
    with pytest.raises(ValueError, match=r"dt=0.05 s gives a CFL number .* = 2.5 over the limit cfl=2"):
        s.step(a, b, 0.05)


def test_bad_step_arguments():
    s = SolverGridFluid((6, 5), dx=0.1)
    other = SolverGridFluid((6, 5), dx=0.1)
    a, b = s.state(), s.state()
    with pytest.raises(ValueError, match="dt must be a finite number > 0"):
        s.step(a, b, 0.0)
    with pytest.raises(ValueError, match="state_out must differ from state_in"):
        s.step(a, a, 0.01)
    with pytest.raises(ValueError, match="state_out must be a state made by this solver"):
        s.step(a, other.state(), 0.01)
    nan = np.zeros(a.v.shape, np.float32)
    nan[2, 2] = np.nan
    a.v.assign(kc.from_numpy(nan))
    with pytest.raises(ValueError, match="non-finite velocity"):
        s.step(a, b, 0.01)


def test_bad_solids():
    s = SolverGridFluid((6, 5), dx=0.1)
    with pytest.raises(ValueError, match="radius must be finite > 0"):
        s.add_solid_sphere((0.2, 0.2), -1.0)
    with pytest.raises(ValueError, match="center must be 2 finite numbers"):
        s.add_solid_sphere((0.2,), 0.1)
    with pytest.raises(ValueError, match="half_extents must be 2 finite numbers > 0"):
        s.add_solid_box((0.2, 0.2), (0.1, 0.0))
    with pytest.raises(TypeError, match="expected a geometry.Volume"):
        s.add_solid_sdf(np.zeros((3, 3, 3)))
