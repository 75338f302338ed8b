"""SolverPBF(fast_math=True): the pair-loop kernels in their fast-math builds (kc.kernel(fast_math=True)).

The same steps as the IEEE build up to rounding, the hydrostatic tank still at rest density
within 1 %, and a NaN still reported by the solver's non-finite check.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

G = 9.81


def tank(n, s, **kw):
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_particle_grid((s / 2,) * 3, (0.0, 0.0, 0.0), n, n, n, s, density=1000.0, radius=s / 2)
    model = b.finalize()
    L = n * s
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (L, 2 * L, L)), **kw)
    return model, solver


def test_fast_math_steps_match_ieee_steps():
    """20 steps of a spinning block with every term on: fast math changes rounding only."""
    def run(fast):
        model, solver = tank(6, 0.02, xsph=0.05, vorticity_confinement=0.3, scorr_k=0.01, fast_math=fast)
        states = [model.state(), model.state()]
        q = states[0].particle_q.numpy().copy()   # (numpy() of a CPU array is a view)
        states[0].particle_qd.assign(kc.array(np.cross(q - q.mean(0), [0.0, 0.0, 4.0]).astype(np.float32),
                                              dtype=kc.vec3))
        for _ in range(20):
            solver.step(model, states[0], states[1], None, 2e-3)
            states.reverse()
        return q, states[0].particle_q.numpy(), states[0].particle_qd.numpy()

    q_start, q1, v1 = run(True)
    _, q0, v0 = run(False)
    assert np.abs(q0 - q_start).max() > 0.01, "the block must move"
    np.testing.assert_allclose(q1, q0, atol=2e-5)                  # 0.1 % of a spacing
    np.testing.assert_allclose(v1, v0, atol=2e-3 * np.abs(v0).max())


def test_fast_math_tank_settles_at_rest_density():
    n, s = 8, 0.02
    model, solver = tank(n, s, xsph=0.1, fast_math=True)
    states = [model.state(), model.state()]
    y0 = states[0].particle_q.numpy()[:, 1].mean()
    for _ in range(400):    # 2 s
        solver.step(model, states[0], states[1], None, 1.0 / 200)
        states.reverse()
    q = states[0].particle_q.numpy()
    v = np.linalg.norm(states[0].particle_qd.numpy(), axis=1)
    assert q.shape[0] == n ** 3 and np.all(np.isfinite(q))
    assert np.all(q >= solver.lower) and np.all(q <= solver.upper)
    assert abs(q[:, 1].mean() - y0) < 0.05 * y0
    assert v.mean() < 0.01 and v.max() < 0.05
    h = solver.h
    inner = np.all((q > h) & (q < np.array([n * s, q[:, 1].max(), n * s]) - h), axis=1)
    assert inner.sum() >= 20
    err = np.abs(solver.density(states[0])[inner] / solver.rest_density - 1.0)
    assert err.mean() < 0.01, err.mean()


def test_fast_math_nan_is_still_reported():
    """The host check of step (check_input, on by default) names a NaN velocity.  (With
    check_input=False a NaN position is clamped into the domain box by the boundary projection,
    in the IEEE build as well: the step's output is then finite either way.)"""
    model, solver = tank(4, 0.02, fast_math=True)
    s0, s1 = model.state(), model.state()
    v = s0.particle_qd.numpy().copy()
    v[5] = np.nan
    s0.particle_qd.assign(kc.array(v, dtype=kc.vec3))
    with pytest.raises(ValueError, match="particle 5 moves at nan"):
        solver.step(model, s0, s1, None, 1e-3)
