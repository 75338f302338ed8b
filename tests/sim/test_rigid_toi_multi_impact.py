"""Several time-of-impact contacts in one step for particles and single-sphere bodies (sim/toi.py): a
ball fast in a narrow gap between two walls meets both within one step and ends where the analytic
reflections put it; its gradient through both impacts is that of the folded path."""
import numpy as np
import pytest

import kernelcore as kc
import sim

R = 0.01      # ball radius [m]
ROOM = 0.03   # the ball's centre moves in [-ROOM, ROOM] between the walls' faces (at +-0.04)
V = 8.0       # [m/s]: 8 cm per 1 cm step, more than the 6 cm of room: two impacts in some steps
DT = 0.01


def _gap(kind, x0, requires_grad=False):
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=1.0, mu=0.0)
    for side in (-1, 1):
        b.add_shape_box((0.045 * side, 0.0, 0.0), half_extents=(0.005, 0.5, 0.5))
    if kind == "particle":
        b.add_particle((x0, 0.0, 0.0), (V, 0.0, 0.0), 1.0, R)
    else:
        body = b.add_body(kc.transform(kc.vec3(x0, 0.0, 0.0), kc.quat(0, 0, 0, 1)), vel=(V, 0.0, 0.0))
        b.add_shape_sphere(radius=R, body=body)
    return b.finalize(requires_grad=requires_grad)


def _x(kind, s):
    return float((s.particle_q if kind == "particle" else s.body_q).numpy()[0, 0])


def _v(kind, s):
    return float((s.particle_qd if kind == "particle" else s.body_qd).numpy()[0, 0])


def _folded(u):
    """Position and velocity sign of the ball after moving ``u`` [m] unfolded (mirror images of the gap)."""
    y = np.mod(u + ROOM, 4 * ROOM)
    return (y - ROOM, 1.0) if y <= 2 * ROOM else (3 * ROOM - y, -1.0)


@pytest.mark.parametrize("kind", ["particle", "body"])
def test_ball_in_a_narrow_gap_meets_both_walls_in_one_step(kind):
    x0 = 0.02
    m = _gap(kind, x0)
    solver = sim.SolverSemiImplicit(m, toi=True)
    s0, s1 = m.state(), m.state()
    for k in range(1, 7):
        solver.step(m, s0, s1, None, DT)
        s0, s1 = s1, s0
        x, sign = _folded(x0 - 0.0 + V * DT * k)
        np.testing.assert_allclose(_x(kind, s0), x, atol=1e-5, err_msg=f"step {k}")
        np.testing.assert_allclose(_v(kind, s0), sign * V, rtol=1e-5, err_msg=f"step {k}")
    # step 1 has two impacts (1 cm to the right wall, 6 cm across, 1 cm back: x = -0.02 moving right);
    # one impact per step would leave the ball at x = -0.04, in the left wall, moving left


@pytest.mark.parametrize("kind", ["particle", "body"])
def test_gradient_through_two_impacts_in_one_step(kind):
    # two reflections: d(final x)/d(initial x) = +1 (the folded path's slope), as finite differences say
    m = _gap(kind, 0.02, requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True)
    states = [m.state() for _ in range(2)]
    q = (lambda s: s.particle_q) if kind == "particle" else (lambda s: s.body_q)

    def run(x0):
        q(states[0]).numpy()[0, 0] = x0
        solver.step(m, states[0], states[1], None, DT)
        return _x(kind, states[1])

    tape = kc.Tape()
    with tape:
        run(0.02)
    seed = np.zeros(q(states[1]).numpy().shape, np.float32)
    seed[0, 0] = 1.0
    tape.backward(grads={q(states[1]): seed})
    grad = float(q(states[0]).grad.numpy()[0, 0])
    eps = 1e-3
    fd = (run(0.02 + eps) - run(0.02 - eps)) / (2 * eps)
    np.testing.assert_allclose(fd, 1.0, rtol=1e-3)
    np.testing.assert_allclose(grad, 1.0, rtol=1e-3)
