"""A lined-up three-stack of hull cubes pushed sideways with time of impact on (issue 15): friction stops
it (the bottom cube within v^2 / (2 mu g), as a lone sliding box), it comes to rest and the bottom
cube, whose ground contact is sim/toi_shapes.py's sweep, does not creep afterwards."""
import numpy as np
import pytest

import kernelcore as kc
import sim

pytest.importorskip("geometry")

from test_rigid_hull_stack import CUBE, SIZE, _penetration  # noqa: E402

MU = 0.5
G = 9.81
PUSH = 0.05  # [m/s] along x, every cube


def test_three_stack_pushed_sideways_comes_to_rest_and_does_not_creep():
    dt = 5e-4
    b = sim.ModelBuilder(gravity=(0, -G, 0))
    b.set_material(0, ke=4e4, restitution=0.0, mu=MU)
    b.set_ground_plane()
    for i in range(3):
        body = b.add_body(kc.transform(kc.vec3(0.0, SIZE * (i + 0.5), 0.0), kc.quat(0, 0, 0, 1)), vel=(PUSH, 0, 0))
        b.add_shape_mesh(CUBE, None, scale=SIZE, body=body, is_convex=True, density=500.0)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s0, s1 = m.state(), m.state()
    deepest = 0.0
    x_half = None
    for k in range(int(2.0 / dt)):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if k % 200 == 199:
            deepest = max(deepest, _penetration(s0.body_q.numpy().astype(np.float64)))
        if k == int(1.0 / dt) - 1:
            x_half = s0.body_q.numpy()[0, 0]
    q = s0.body_q.numpy().astype(np.float64)
    qd = s0.body_qd.numpy()
    assert deepest < 2e-3, deepest
    assert np.abs(qd[:, :3]).max() < 1e-2, qd                   # at rest after 2 s
    assert np.abs(qd[:, 3:]).max() < 0.1, qd
    # the bottom cube slides at most as far as a lone box (v^2 / (2 mu g) = 0.25 mm: the cubes above
    # only add friction) and then stays put: no creep over the second second
    stop = PUSH ** 2 / (2.0 * MU * G)
    assert 0.0 <= q[0, 0] < 1.05 * stop, q[0, 0]
    assert abs(q[0, 0] - x_half) < 1e-5, (q[0, 0], x_half)
    np.testing.assert_allclose(q[:, [0, 2]], 0.0, atol=5e-3)     # the stack stays lined up
    np.testing.assert_allclose(q[:, 1], SIZE * (np.arange(3) + 0.5), atol=2e-3)
