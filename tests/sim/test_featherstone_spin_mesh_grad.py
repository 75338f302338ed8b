"""Tape gradients of a box link thrown with spin onto a static triangle-mesh floor
(SolverFeatherstone, dt = 2 ms; issue 16, the scene session 13 found Tape -838 vs finite differences
+108 on) against float32 central differences of the same simulation.

Settled in session 16: the Tape is right.  Contact switches (points entering and leaving the floor,
manifold changes) make the final state piecewise smooth in the initial state with pieces narrower
than 1e-3, so central differences at eps >= 1e-3 straddle kinks and scatter (toi=True, 60 steps:
-3.96 / -15.4 / +38.7 at eps 1e-2 / 3e-3 / 1e-3 against the Tape's +3.301), while at eps 1e-4 and
1e-5 they agree with the Tape to 3 digits (+3.301, +3.299).  With penalty contacts (toi=False) the
box rocks on its corners and the gradient grows ~100x in 10 steps of contact, so beyond ~40 steps
no eps gives a stable difference (chaos, not a Tape bug); at 17 steps eps 3e-4..1e-5 agree (-80.2 / -80.22).
A line scan of the 60-step penalty loss along the q0 direction (41 points over +-1e-3) is smooth for
h < -2e-4 (slope -16, Tape -15.99) and rough beyond: the first landing flings the box into a spin
that grows continuously but steeply with h (|w| 11.4 -> 12.8 rad/s over h = 1e-4 .. 2e-4) and the
second landing, 40 ms later, turns that into kinks every ~5e-5 with local slopes of 1e3 - 1e4.
"""
import numpy as np
import pytest

import sim

pytest.importorskip("geometry")

from featherstone_scenes import assert_gradients_match_fd  # noqa: E402
from test_featherstone_static_mesh_penalty import add_floor  # noqa: E402

DT = 2e-3


def _spinning_box():
    """A 10 cm box link (1 kg/dm^3) tilted by ~0.25 rad, 12 cm above a 4 x 4-cell mesh floor, thrown at
    (1, -1, 0.5) m/s with spin (3, 5, 7) rad/s; friction 0.8, no restitution."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_material(0, ke=1e4, mu=0.8, restitution=0.0)
    add_floor(b, "mesh", cells=4)
    body = b.add_body(xform=(0.0, 0.12, 0.0, 0, 0, 0, 1), vel=(1.0, -1.0, 0.5), ang_vel=(3.0, 5.0, 7.0))
    b.add_shape_box(half_extents=(0.05, 0.05, 0.05), body=body, density=1000.0)
    b.add_joint_free(body)
    model = b.finalize(requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    tilt = np.array([np.sin(0.2), 0.0, np.sin(0.15), 1.0])
    q0[3:] = tilt / np.linalg.norm(tilt)
    return model, q0, qd0


@pytest.mark.parametrize("toi, steps", [(True, 60), (False, 17)])
def test_spinning_box_on_mesh_gradients_match_small_step_differences(toi, steps):
    # toi: 60 steps (0.12 s, ~40 of them on the floor); penalty: 17 steps (the first ~3 in contact, before
    # the rocking turns chaotic; the penalty law's 100 rad/s stiffness already makes the gradient ~ -80)
    model, q0, qd0 = _spinning_box()
    states = assert_gradients_match_fd(model, q0, qd0, steps, DT, eps=1e-4, toi=toi)
    # it landed: its centre came below its start by more than the fall's 2 cm and the floor pushed it up
    assert min(float(s.joint_q.numpy()[1]) for s in states) < 0.1
    assert max(float(s.joint_qd.numpy()[1]) - float(p.joint_qd.numpy()[1])
               for p, s in zip(states, states[1:])) > 0.0
