"""examples/robot_walker.py: the Tape gradient of the walking loss through ground contact against
central finite differences, and a few optimisation steps making the quadruped walk further.

The finite-difference regime: 60 steps (0.12 s) from the start pose, where feet already
touch the floor (checked below) and slide while the gait moves the legs; the loss is the mean
torso position over the last 15 steps, which is smooth in the parameters there, so float32
central differences with a step of 1e-2 rad agree with the adjoint to well under 1%.
"""
import numpy as np
import pytest

from examples import robot_walker as rw

FOOT_OFFSET = np.array([0.0, 0.0, -0.14])   # the foot sphere's centre in the shin frame (quadruped.xml) [m]
FOOT_RADIUS = 0.03


def rotate(q, v):
    """Rotate v by the unit quaternion q = (x, y, z, w)."""
    u, w = q[:3], q[3]
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def lowest_foot_gap(walker, state):
    """Smallest height of a foot sphere above the floor [m] (negative: pressed into it)."""
    body_q = state.body_q.numpy()
    shins = [walker.robot.bodies[f"{leg}_shin"] for leg in rw.LEGS]
    return min(float((body_q[b, :3] + rotate(body_q[b, 3:7], FOOT_OFFSET))[2]) - FOOT_RADIUS for b in shins)


@pytest.fixture(scope="module")
def short_walker():
    return rw.Walker(steps=60)


@pytest.mark.parametrize("index", [(1, 0), (0, 4), (2, 5)], ids=["fl_hip_sin", "fl_knee_offset", "fr_knee_cos"])
def test_walker_gradient_matches_central_differences_in_contact(short_walker, index):
    w = short_walker
    p0 = rw.initial_gait()
    loss, grad = w.loss_and_grad(p0)
    # the regime is the intended one: feet on the floor at the start and at the end of the rollout
    assert lowest_foot_gap(w, w.states[0]) < 0.0
    assert lowest_foot_gap(w, w.states[-1]) < 0.0
    assert np.isfinite(loss) and np.all(np.isfinite(grad))
    eps = 1e-2
    plus, minus = p0.copy(), p0.copy()
    plus[index] += eps
    minus[index] -= eps
    fd = (w.loss(plus) - w.loss(minus)) / (2.0 * eps)
    assert abs(fd) > 1e-3, f"the loss hardly depends on parameter {index} here (fd {fd}): a weak check"
    assert grad[index] == pytest.approx(fd, rel=0.02, abs=2e-5), (index, grad[index], fd)


def test_walker_walks_further_after_a_few_iterations():
    w = rw.Walker(steps=200)
    p0 = rw.initial_gait()
    w.loss(p0)
    before = w.distance()
    losses, history = rw.optimize(w, p0, iterations=4, verbose=False)
    best = history[int(np.argmin(losses))]
    final = w.loss(best)
    after = w.distance()
    assert final < losses[0] - 0.02, (losses, final)
    assert after > before + 0.03, (before, after)
