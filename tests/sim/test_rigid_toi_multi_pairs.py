"""Several body-body time-of-impact impacts per body and step (sim/toi_body_pairs.py, ``max_impacts``):
Newton's cradle against the analytic exchange, a fast ball between two free plates, and the Tape
through two impacts in one step against float64 central differences."""
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import add_free_body, impact_builder, momentum_energy, run_steps

pytest.importorskip("geometry")

GAP = 1.0e-3  # [m] between neighbouring spheres of the cradle
RADIUS = 0.05


def _cradle(count, v, e=1.0):
    b = impact_builder(e=e)
    for k in range(count):
        body = add_free_body(b, (k * (2 * RADIUS + GAP), 0, 0), vel=(v if k == 0 else 0.0, 0, 0))
        b.add_shape_sphere(radius=RADIUS, body=body)
    return b.finalize()


@pytest.mark.parametrize("count", [3, 5])
def test_newtons_cradle_passes_the_velocity_down_the_row_in_one_step(count):
    # e = 1, equal masses: each impact hands the whole velocity on; all count - 1 impacts fall in the
    # first step (each gap is crossed in 1 ms, dt = 10 ms)
    v, dt = 1.0, 0.01
    m = _cradle(count, v)
    solver = sim.SolverSemiImplicit(m, toi=True, max_impacts=count - 1)
    p0, L0, ke0 = momentum_energy(m, m.state())
    s = run_steps(m, solver, 1, dt)
    p1, L1, ke1 = momentum_energy(m, s)
    vel = s.body_qd.numpy()[:, :3]
    expected = np.zeros((count, 3))
    expected[-1, 0] = v
    np.testing.assert_allclose(vel, expected, atol=1e-5)
    np.testing.assert_allclose(p1, p0, atol=1e-5 * np.abs(p0).max())
    np.testing.assert_allclose(ke1, ke0, rtol=1e-5)
    # each sphere but the last moved across its gap; the last moved for the rest of the step
    x = s.body_q.numpy()[:, 0].astype(np.float64)
    x0 = np.arange(count) * (2 * RADIUS + GAP)
    moved = np.full(count, GAP)
    moved[-1] = v * dt - (count - 1) * GAP
    np.testing.assert_allclose(x - x0, moved, atol=1e-4)


def test_fast_ball_between_two_free_plates_never_passes_either():
    # a 1 cm ball at 100 m/s between two free 1 cm plates 5 cm apart (inner faces): 10 cm per step, so two
    # or three impacts a step; it must stay between them
    b = impact_builder(e=1.0)
    ball = add_free_body(b, (0, 0, 0), vel=(100.0, 0, 0))
    b.add_shape_sphere(radius=0.005, body=ball)
    plates = []
    for side in (-1, 1):
        plate = add_free_body(b, (side * 0.03, 0, 0))
        b.add_shape_box(half_extents=(0.005, 0.05, 0.05), body=plate)
        plates.append(plate)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True, max_impacts=4)
    p0, L0, ke0 = momentum_energy(m, m.state())
    s0, s1 = m.state(), m.state()
    for _ in range(10):
        solver.step(m, s0, s1, None, 1.0e-3)
        s0, s1 = s1, s0
        x = s0.body_q.numpy()[:, 0]
        assert x[plates[0]] + 0.005 < x[ball] - 0.005 + 1e-4
        assert x[ball] + 0.005 < x[plates[1]] - 0.005 + 1e-4
    p1, L1, ke1 = momentum_energy(m, s0)
    np.testing.assert_allclose(p1, p0, atol=1e-4 * np.abs(p0).max())
    assert ke1 <= ke0 * (1 + 1e-4)
    v = s0.body_qd.numpy()[:, 0]
    assert v[plates[0]] < 0.0 < v[plates[1]]             # both plates were struck outward


def _two_impact_case(max_impacts, steps=3, dt=0.02):
    # A hits B, B hits C, both in the first step (s = 0.66, 0.84); off-centre and with friction, so the
    # impulses turn the line of motion and spin the spheres
    b = impact_builder(e=0.8, mu=0.2)
    a = add_free_body(b, (-0.15, 0.0, 0.0), vel=(4.0, 0.0, 0.0))
    b.add_shape_sphere(radius=RADIUS, body=a)
    c1 = add_free_body(b, (0.0, 0.02, 0.01))
    b.add_shape_sphere(radius=RADIUS, body=c1)
    c2 = add_free_body(b, (0.11, 0.03, -0.01))
    b.add_shape_sphere(radius=RADIUS, body=c2)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True, max_impacts=max_impacts)
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((3, 7), np.float32)
    w[a, :3] = (1.0, 0.5, 0.3)
    w[c1, :3] = (0.4, -0.6, 0.2)
    w[c2, :3] = (0.7, 0.3, -0.5)

    def run(v0):
        states[0].body_qd.numpy()[a, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    return m, states, w, run, a, c2


def test_tape_through_two_impacts_in_one_step_matches_finite_differences():
    m, states, w, run, a, last = _two_impact_case(4)
    v0 = np.array([4.0, 0.0, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[a, :3].astype(np.float64)
    assert np.linalg.norm(states[1].body_qd.numpy()[last, :3]) > 0.5  # the second impact, in the first step
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    assert np.abs(fd).min() > 0.01
    np.testing.assert_allclose(grad, fd, rtol=0.02, atol=2e-2 * np.abs(fd).max())


def test_taped_step_with_two_impact_passes_warns_about_no_gradless_intermediate(monkeypatch):
    # the second pass reads the first pass's s_last (each body's last impact time, computed from arrays
    # that require grad): it has a gradient of its own, so the Tape's check for float intermediates
    # without requires_grad (kernelcore/tape.py) stays quiet
    import kernelcore.tape as tape_module

    monkeypatch.setattr(tape_module, "_warned_gradless", set())  # (it warns once per process)
    m, states, w, run, a, last = _two_impact_case(4, steps=1)
    with pytest.warns() as record:
        with kc.Tape():
            run(np.array([4.0, 0.0, 0.0]))
        warnings.warn("sentinel", UserWarning)  # (pytest.warns needs one)
    assert np.linalg.norm(states[1].body_qd.numpy()[last, :3]) > 0.5  # two passes ran
    assert not [str(r.message) for r in record if "requires_grad" in str(r.message)]


@pytest.mark.parametrize("value", [0, -1, 2.5, True])
def test_max_impacts_is_checked(value):
    m = _cradle(2, 1.0)
    with pytest.raises(ValueError, match="max_impacts"):
        sim.SolverSemiImplicit(m, toi=True, max_impacts=value)


def test_max_impacts_without_toi_is_warned_about():
    m = _cradle(2, 1.0)
    with pytest.warns(UserWarning, match="max_impacts"):
        sim.SolverSemiImplicit(m, max_impacts=2)
