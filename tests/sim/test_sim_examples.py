"""The sim examples: gradients of the ball throw against finite differences; both examples run."""
import numpy as np
import pytest

from examples import sim_ball_target as ball


@pytest.fixture(scope="module")
def throw():
    return ball.BallTarget()


def test_ball_bounces_off_the_wall(throw):
    throw.loss(ball.INITIAL_VELOCITY)
    traj = throw.trajectory()
    wall_face = ball.WALL_POS[0] - ball.WALL_HALF_EXTENTS[0]
    assert traj[:, 0].max() > wall_face - ball.BALL_RADIUS - 0.05  # reaches the wall
    assert traj[-1, 0] < traj[:, 0].max() - 0.5                     # and comes back
    assert traj[:, 1].min() > ball.BALL_RADIUS                       # without touching the ground


@pytest.mark.parametrize("velocity", [ball.INITIAL_VELOCITY, (4.5, 3.6, 0.4)])
def test_ball_gradient_matches_finite_differences(throw, velocity):
    v = np.asarray(velocity, np.float64)
    loss, grad = throw.loss_and_grad(v)
    eps = 1e-3
    fd = np.array([(throw.loss(v + e) - throw.loss(v - e)) / (2 * eps) for e in np.eye(3) * eps])
    assert np.abs(fd[:2]).min() > 0.1  # both in-plane components matter (the bounce is in the chain)
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=5e-3)
    # a second evaluation gives the same gradient (the tape and gradients are reset)
    _, grad2 = throw.loss_and_grad(v)
    np.testing.assert_allclose(grad2, grad, rtol=1e-6, atol=1e-7)


def test_ball_example_main_optimises_and_writes_outputs(tmp_path):
    out = tmp_path / "ball"
    res = ball.main(["--iterations", "4", "--duration", "0.8", "--out-dir", str(out)])
    assert res["final_loss"] < 0.5 * res["losses"][0]
    assert (out / "loss.png").stat().st_size > 1000
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(out / "trajectories.usda"))
    pts = UsdGeom.Points(stage.GetPrimAtPath("/root/ball")).GetPointsAttr()
    samples = pts.GetTimeSamples()
    per_iteration = len(range(0, 481, 10))  # 480 steps at 600 Hz drawn at 60 fps
    assert len(samples) == 4 * per_iteration


def test_dem_example_runs_small():
    from examples import sim_dem

    res = sim_dem.main(["--count", "200", "--steps", "30"])
    assert res["particle_count"] >= 200 and res["steps_per_second"] > 0
    assert res["min_height"] > 0.005
