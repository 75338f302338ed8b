"""examples/robot_batch.py runs: a small batch of legged robots stands on the ground and stays finite."""
import numpy as np

from examples import robot_batch


def test_robot_batch_example_runs_and_robots_stand():
    res = robot_batch.main(["--count", "2", "--steps", "150"])
    assert res["robot_steps_per_s"] > 0
    # 150 ms after release the torso (0.42 m up at the start) has settled onto its legs, not the ground
    assert 0.2 < res["mean_torso_height"] < 0.42, res
    assert np.isfinite(res["mean_distance"])
