"""Holes found by the adversarial pass of session 13: each bad input now gets a one-line error
naming the call and the value (before: numpy's own message, a silent default, or a state
silently filled with NaN), and input that is not used is warned about."""
import warnings

import numpy as np
import pytest

import sim


def test_add_particles_names_a_bad_position_shape():
    b = sim.ModelBuilder()
    # before: "cannot reshape array of size 8 into shape (3)" (numpy, no call named)
    with pytest.raises(ValueError, match=r"add_particles: pos must have shape \(n, 3\), got \(4, 2\)"):
        b.add_particles(np.zeros((4, 2)))
    # 6 numbers are not 2 particles: before they were reshaped into two silently
    with pytest.raises(ValueError, match=r"add_particles: pos must have shape \(n, 3\), got \(6,\)"):
        b.add_particles(np.zeros(6))
    assert b.particle_count == 0
    assert len(b.add_particles([])) == 0


@pytest.mark.parametrize("kw, what", [({"mass": np.ones(3)}, "mass"), ({"radius": np.ones(5)}, "radius"),
                                      ({"vel": np.zeros((4, 2))}, "vel"), ({"volume": np.ones(2)}, "volume")])
def test_add_particles_names_a_per_particle_array_of_the_wrong_length(kw, what):
    with pytest.raises(ValueError, match=rf"add_particles: {what} must be one value or one per particle"):
        sim.ModelBuilder().add_particles(np.zeros((4, 3)), **kw)


def test_add_particles_warns_that_mass_is_ignored_with_density():
    b = sim.ModelBuilder()
    with pytest.warns(UserWarning, match="add_particles: mass is ignored because density is given"):
        b.add_particles(np.zeros((2, 3)), mass=5.0, volume=1e-3, density=1000.0)
    assert b.particle_mass == [1.0, 1.0]   # density * volume
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b.add_particles(np.zeros((1, 3)), volume=1e-3, density=1000.0)
        b.add_particles(np.zeros((1, 3)))
    assert b.particle_mass[2:] == [1.0, 1.0]


def _falling_model():
    b = sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), mass=1.0, radius=0.05)
    return b.finalize()


@pytest.mark.parametrize("solver", ["SolverSemiImplicit", "SolverXPBD"])
@pytest.mark.parametrize("dt", [float("nan"), -1e-3, 0.0, float("inf")])
def test_step_rejects_a_dt_that_is_not_finite_and_positive(solver, dt):
    m = _falling_model()
    s = getattr(sim, solver)(m)
    s0, s1 = m.state(), m.state()
    with pytest.raises(ValueError, match=rf"{solver}.step: dt must be finite and > 0 \[s\], got {dt!r}"):
        s.step(m, s0, s1, None, dt)
    s.step(m, s0, s1, None, 1e-2)   # a good dt still steps: free fall, v = -g dt
    # (XPBD takes v from the float32 position change: ~1e-5 relative round-off at y = 1 m)
    assert s1.particle_qd.numpy()[0, 1] == pytest.approx(-9.81e-2, rel=1e-4)


@pytest.mark.parametrize("max_iter", [0, -5, 2.5, True])
def test_grid_fluid_rejects_a_bad_max_iter(max_iter):
    # before: 0 silently meant the default, 2.5 became 2, -5 failed inside numpy
    with pytest.raises(ValueError, match=rf"SolverGridFluid: max_iter must be None or an integer >= 1, got {max_iter!r}"):
        sim.SolverGridFluid((4, 4), 0.1, max_iter=max_iter)
    assert sim.SolverGridFluid((4, 4), 0.1, max_iter=7).cg.max_iter == 7
