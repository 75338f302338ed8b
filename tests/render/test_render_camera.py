"""Camera maths (no GL needed)."""

from __future__ import annotations

import numpy as np
import pytest

from render.opengl.camera import Camera


@pytest.mark.parametrize("up_axis", ["Y", "Z"])
def test_look_at_roundtrip(up_axis):
    cam = Camera(up_axis)
    cam.look_at((3.0, 2.0, 4.0), (1.0, 0.5, -1.0))
    np.testing.assert_allclose(cam.position, [3.0, 2.0, 4.0], atol=1e-9)
    np.testing.assert_allclose(cam.target, [1.0, 0.5, -1.0])
    assert cam.distance == pytest.approx(np.linalg.norm([2.0, 1.5, 5.0]))
    # the target projects to the image centre, the eye looks down -Z in eye space
    np.testing.assert_allclose(cam.project(cam.target, 200, 100), [100.0, 50.0], atol=1e-6)
    eye_space = cam.view_matrix() @ np.append(cam.target, 1.0)
    assert eye_space[2] == pytest.approx(-cam.distance, rel=1e-5)


def test_yaw_pitch_conventions():
    cam = Camera("Y", distance=2.0, yaw=0.0, pitch=0.0)
    np.testing.assert_allclose(cam.position, [0, 0, 2], atol=1e-12)
    cam.orbit(90.0, 0.0)
    np.testing.assert_allclose(cam.position, [2, 0, 0], atol=1e-12)
    cam.orbit(0.0, 200.0)  # clamped short of the pole
    assert cam.pitch == Camera.PITCH_LIMIT
    z = Camera("Z", distance=2.0, yaw=0.0, pitch=0.0)
    np.testing.assert_allclose(z.position, [0, -2, 0], atol=1e-12)
    np.testing.assert_allclose(z.right, [1, 0, 0], atol=1e-12)


def test_pan_zoom_fly():
    cam = Camera("Y", distance=4.0, yaw=0.0, pitch=0.0)
    cam.pan(0.5, 0.25)
    np.testing.assert_allclose(cam.target, [2.0, 1.0, 0.0], atol=1e-12)
    cam.zoom(0.5)
    assert cam.distance == 2.0
    cam.fly(1.0, 0.0, 0.0)
    np.testing.assert_allclose(cam.target, [2.0, 1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(cam.position, [2.0, 1.0, 1.0], atol=1e-12)


def test_projection_matrix():
    cam = Camera(fov=90.0, near=1.0, far=10.0)
    p = cam.projection_matrix(2.0)
    assert p[0, 0] == pytest.approx(0.5) and p[1, 1] == pytest.approx(1.0)
    near = p @ np.array([0, 0, -1.0, 1.0])
    far = p @ np.array([0, 0, -10.0, 1.0])
    assert near[2] / near[3] == pytest.approx(-1.0) and far[2] / far[3] == pytest.approx(1.0)
