"""Every solver checks its step's dt with sim.solvers.checks.check_dt: NaN, inf, 0, a negative
number, a string or a bool is a one-line ValueError naming the solver and the value, before
anything is launched (a NaN dt filled the state with NaN, a negative one integrated backwards).
ModelBuilder.gravity is checked when assigned, as in the constructor."""
import numpy as np
import pytest

import sim


def _vbd():
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 1, 1, 0.1, 0.1, 0.01)
    m = b.finalize()
    return m, sim.SolverVBD(m), 1e-3


def _featherstone():
    b = sim.ModelBuilder()
    bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.5, 0, 0))
    b.add_joint_revolute(-1, bob, axis=(0, 0, 1))
    m = b.finalize()
    return m, sim.SolverFeatherstone(m), 1e-3


def _mpm():
    b = sim.ModelBuilder()
    mat = b.add_material(model="fixed_corotated", youngs_modulus=1.0e4, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.4, 0.0), (0.0, 0.0, 0.0), 2, 2, 1, 0.01, density=1000.0, material=mat)
    m = b.finalize()
    return m, sim.SolverMPM(m, dx=0.05, bounds=((0, 0), (1, 1)), dim=2), 1e-4


def _pbf():
    b = sim.ModelBuilder()
    b.add_particle_grid((0.1, 0.1, 0.1), (0.0, 0.0, 0.0), 2, 2, 2, 0.05, density=1000.0, radius=0.025)
    m = b.finalize()
    return m, sim.SolverPBF(m, smoothing_length=0.1, bounds=((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))), 1e-3


SOLVERS = {"SolverVBD": _vbd, "SolverFeatherstone": _featherstone, "SolverMPM": _mpm, "SolverPBF": _pbf}


@pytest.mark.parametrize("name", list(SOLVERS))
def test_step_rejects_a_bad_dt_and_leaves_the_state_alone(name):
    model, solver, good = SOLVERS[name]()
    s0, s1 = model.state(), model.state()
    before = {k: a.numpy().copy() for k, a in s1.arrays()}
    for dt in (float("nan"), float("inf"), 0.0, -1e-3, "0.001", True):
        with pytest.raises(ValueError, match=rf"^{name}.step: dt must be finite and > 0 \[s\], got {dt!r}$"):
            solver.step(model, s0, s1, None, dt)
    for k, a in s1.arrays():
        np.testing.assert_array_equal(a.numpy(), before[k], err_msg=k)
    solver.step(model, s0, s1, None, np.float32(good))  # a numpy scalar is a number
    for k, a in s1.arrays():
        assert np.isfinite(a.numpy()).all(), k


@pytest.mark.parametrize("g", [-9.81, float("nan"), (0.0, -9.81), "down", (0.0, float("inf"), 0.0)])
def test_builder_gravity_is_checked_when_assigned(g):
    b = sim.ModelBuilder()
    # before: a scalar failed later in finalize ("vec3() argument after * must be an iterable")
    with pytest.raises(ValueError, match=r"^ModelBuilder: gravity must be 3 finite numbers, got "):
        b.gravity = g
    b.gravity = np.array([0.0, 0.0, -9.81])
    assert b.gravity == (0.0, 0.0, -9.81)
    assert tuple(b.finalize().gravity) == (0.0, 0.0, pytest.approx(-9.81))
