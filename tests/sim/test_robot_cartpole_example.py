"""examples/robot_cartpole.py: the gradient of the rollout loss with respect to the feedback
gains (Tape through SolverFeatherstone) against central finite differences, and a short run
of the example that lowers the loss and writes its PNG and USD."""
import numpy as np
import pytest

from examples import robot_cartpole as cp_example


@pytest.fixture(scope="module")
def cartpole():
    return cp_example.CartPole(duration=0.5, dt=0.01)


def test_gradient_matches_finite_differences(cartpole):
    k = np.array([1.0, 25.0, 1.0, 3.0])
    loss, grad = cartpole.loss_and_grad(k)
    eps = np.array([0.1, 0.1, 0.1, 0.1])
    fd = np.array([(cartpole.loss(k + e) - cartpole.loss(k - e)) / (2 * e[i])
                   for i, e in enumerate(np.diag(eps))])
    assert np.abs(fd).max() > 1e-4  # the gains matter
    np.testing.assert_allclose(grad, fd, rtol=0.02, atol=1e-3 * np.abs(fd).max())  # measured: 0.2 %
    # a second evaluation gives the same gradient (tape and gradients are reset)
    _, grad2 = cartpole.loss_and_grad(k)
    np.testing.assert_allclose(grad2, grad, rtol=1e-5, atol=1e-8)


def test_example_main_lowers_the_loss_and_writes_outputs(tmp_path):
    out = tmp_path / "cp"
    res = cp_example.main(["--iterations", "6", "--duration", "1.0", "--out-dir", str(out)])
    assert res["final_loss"] < res["losses"][0]
    assert (out / "loss.png").stat().st_size > 1000
    from pxr import Usd

    stage = Usd.Stage.Open(str(out / "cartpole.usda"))
    assert stage.GetEndTimeCode() > stage.GetStartTimeCode()
