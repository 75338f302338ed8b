"""SolverPBF gradients through a Tape against central finite differences.

The loss is the mean x of the particles after 10 steps of a block thrown against a wall
of the domain; the input is the initial velocity field.  The simulation is float32; the
finite differences re-run it with the loss reduced in float64, along random directions
(dL/deps of L(v0 + eps delta) against grad . delta).

The loss is only piecewise smooth: a particle projected out of a wall, or whose density
constraint switches on (C = max(rho / rho0 - 1, 0)), has a kink where that happens, and a
finite difference whose step straddles such events averages the slopes on both sides
(measured: 25 % off with eps = 2e-2 m/s, 1 % with 1e-3).  The step is therefore small,
eps = 1e-3 m/s, where float32 round-off still stays near 0.5 %.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

STEPS = 10
DT = 4.0e-3


@kc.kernel
def mean_x(q: kc.array(dtype=kc.vec3), scale: float, loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, q[i][0] * scale)


def setup(**kw):
    s = 0.05
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_particle_grid((0.5 * s, 0.5 * s, 0.5 * s), (1.5, 0.0, 0.3), 4, 4, 3, s, density=1000.0, radius=0.5 * s,
                        jitter=0.004, seed=2)
    b.add_shape_sphere((0.3, 0.05, 0.1), radius=0.06)
    model = b.finalize(requires_grad=True)
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (0.26, 0.5, 0.2)), **kw)
    return model, solver


def run(model, solver, v0, tape=None):
    states = [model.state() for _ in range(STEPS + 1)]
    states[0].particle_qd.assign(kc.array(v0.astype(np.float32), dtype=kc.vec3))
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def go():
        for k in range(STEPS):
            solver.step(model, states[k], states[k + 1], None, DT)
        kc.launch(mean_x, dim=model.particle_count, inputs=[states[-1].particle_q, 1.0 / model.particle_count, loss])

    if tape is None:
        go()
    else:
        with tape:
            go()
    return loss, states


def host_loss(states):
    return float(states[-1].particle_q.numpy()[:, 0].astype(np.float64).mean())


@pytest.mark.parametrize("kw", [dict(), dict(vorticity_confinement=0.5, scorr_k=0.01, xsph=0.05),
                                dict(vorticity_confinement=0.5, scorr_k=0.01, xsph=0.05, fast_math=True)])
def test_gradient_of_mean_x_wrt_initial_velocity_matches_finite_differences(kw):
    model, solver = setup(**kw)
    v0 = model.particle_qd.numpy().astype(np.float64)
    tape = kc.Tape()
    loss, states = run(model, solver, v0, tape)
    tape.backward(loss=loss)
    grad = states[0].particle_qd.grad.numpy().astype(np.float64)
    assert np.abs(grad).max() > 0
    q_end = states[-1].particle_q.numpy()
    assert q_end[:, 0].max() > 0.26 - 0.026 - 1e-4, "the block must reach the wall (boundaries in the gradient)"
    rng = np.random.default_rng(0)
    eps = 1.0e-3
    for _ in range(3):
        delta = rng.normal(size=v0.shape)
        fd = (host_loss(run(model, solver, v0 + eps * delta)[1]) - host_loss(run(model, solver, v0 - eps * delta)[1]))
        fd /= 2 * eps
        an = float((grad * delta).sum())
        assert an == pytest.approx(fd, rel=0.03, abs=0.02 * np.linalg.norm(grad))   # |grad . delta| ~ |grad|


def test_gradient_without_walls_is_one_step_free_flight():
    """Far from everything and spread out (no constraint active), x(T) = x0 + T v0: dL/dv0_x = T / N."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_particle_grid((1.0, 1.0, 1.0), (0.2, 0.0, 0.0), 3, 3, 3, 0.3, density=1000.0, radius=0.01, volume=1e-4)
    model = b.finalize(requires_grad=True)
    solver = sim.SolverPBF(model, smoothing_length=0.1, bounds=((0.0,) * 3, (3.0,) * 3), xsph=0.0)
    tape = kc.Tape()
    loss, states = run(model, solver, model.particle_qd.numpy().astype(np.float64), tape)
    tape.backward(loss=loss)
    grad = states[0].particle_qd.grad.numpy()
    np.testing.assert_allclose(grad[:, 0], STEPS * DT / model.particle_count, rtol=1e-5)
    np.testing.assert_allclose(grad[:, 1:], 0.0, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(), dict(vorticity_confinement=0.5)])
def test_taped_steps_raise_no_gradless_intermediate_warning(kw, monkeypatch):
    """The pair cache is off in taped steps; its placeholders must not look like a float intermediate
    computed from grad arrays (kernelcore/tape.py warns about those: the gradient would stop there)."""
    import warnings

    import kernelcore.tape as tape_mod

    monkeypatch.setattr(tape_mod, "_warned_gradless", set())   # warnings are once per process
    model, solver = setup(**kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape = kc.Tape()
        loss, states = run(model, solver, model.particle_qd.numpy().astype(np.float64), tape)
        tape.backward(loss=loss)
    gradless = [str(w.message) for w in caught if "without requires_grad" in str(w.message)]
    assert gradless == []
    assert np.abs(states[0].particle_qd.grad.numpy()).max() > 0
