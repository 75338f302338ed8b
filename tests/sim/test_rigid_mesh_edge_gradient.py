"""Issue #15 finding: the gradient of a spinning box dropped on a static prism ridge (penalty contacts
with mesh vertices and edges, sim/collide_mesh_edges.py) "disagreed with finite differences after the
first edge contact".  It does not: the Tape gradient is the derivative of the simulation as it is.

Cause: with penalty contacts the contact starts at a step, so the final height is a piecewise-smooth
function of the initial height h, with a kink each time the first contact moves to the next step:
every v dt in h (v the impact speed, ~1.65 mm here).  Between kinks the Tape gradient equals float64
central differences of a small step (1e-4); a step of 3e-4 or more straddles a kink and gives another
number each time.  After more contacts the pieces get shorter and steeper (at 300 steps the local
slope is ~-14 while every affordable difference step averages over many pieces: ~-0.2..+0.2).

Time-of-impact contacts (``toi=True``, which now also sweep boxes against static meshes,
sim/toi_mesh.py) take the impact at its real time and remove these kinks.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

pytest.importorskip("geometry")

RIDGE_Y = 0.1
H0 = 0.38                      # initial height [m]: first contact at step ~168
SPIN = (5.0, 0.0, 0.0)         # [rad/s], about the axis across the ridge
STEPS, DT = 220, 1e-3


def _prism(half_width=0.6, height=RIDGE_Y, half_length=1.0):
    section = [(-half_width, 0.0), (half_width, 0.0), (0.0, height)]
    pts = np.array([(x, y, z) for z in (-half_length, half_length) for x, y in section])
    tris = [(0, 2, 1), (3, 4, 5), (0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4), (2, 0, 3), (2, 3, 5)]
    return pts, np.asarray(tris)


def _ridge_drop(toi):
    """(run(h) -> final height, states, Tape gradient d final height / d h at H0)."""
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.5, mu=0.5)
    b.add_shape_mesh(*_prism())
    body = b.add_body(kc.transform(kc.vec3(0.0, H0, 0.0), kc.quat(0, 0, 0, 1)), ang_vel=SPIN)
    b.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=body, density=1000.0)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=toi)
    states = [m.state() for _ in range(STEPS + 1)]
    q0 = states[0].body_q.numpy()[0].copy()

    def run(h):
        states[0].body_q.numpy()[0] = q0
        states[0].body_q.numpy()[0, 1] = h
        for k in range(STEPS):
            solver.step(m, states[k], states[k + 1], None, DT)
        return float(states[-1].body_q.numpy()[0, 1])

    tape = kc.Tape()
    with tape:
        run(H0)
    seed = np.zeros((1, 7), np.float32)
    seed[0, 1] = 1.0
    tape.backward(grads={states[-1].body_q: seed})
    return run, states, float(states[0].body_q.grad.numpy()[0, 1])


def _fd(run, h, eps):
    return (run(h + eps) - run(h - eps)) / (2.0 * eps)


def test_ridge_gradient_is_exact_between_contact_onset_kinks():
    run, states, grad = _ridge_drop(toi=False)
    counts = np.array([int(s.contacts.count.numpy()[0]) for s in states[1:]])
    first = int(np.argmax(counts > 0))
    v_impact = -float(states[first].body_qd.numpy()[0, 1])
    assert 150 < first < 190 and counts[first:].sum() > 20          # it landed on the ridge
    # between kinks the Tape gradient is the derivative
    np.testing.assert_allclose(grad, _fd(run, H0, 1e-4), rtol=0.02)
    # a wide difference straddles a kink: another number
    assert abs(_fd(run, H0, 3e-3) - grad) > 0.05 * abs(grad)
    # the kinks come every v dt in h: one period on, the same piece shape and nearly the same slope
    period = v_impact * DT
    assert 1.2e-3 < period < 2.2e-3
    np.testing.assert_allclose(_fd(run, H0 + period, 1e-4), grad, rtol=0.1)
    # and half a period on, another piece of another slope
    assert abs(_fd(run, H0 + 0.5 * period, 1e-4) - grad) > 0.2 * abs(grad)


def test_ridge_gradient_with_toi_has_no_onset_kinks():
    # the same drop with toi=True (the box swept against the mesh): the loss is smooth at the scale
    # of the kinks above, and wide differences agree with the Tape gradient
    run, states, grad = _ridge_drop(toi=True)
    assert float(states[-1].body_q.numpy()[0, 1]) < H0 - 0.05        # it landed
    for eps in (1e-3, 3e-3):
        np.testing.assert_allclose(_fd(run, H0, eps), grad, rtol=0.03)
