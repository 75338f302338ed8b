"""render.validation: shapes, colours, indices, NaN handling (no GL, no USD)."""

from __future__ import annotations

import numpy as np
import pytest

from render import validation as V


def test_to_numpy_uses_numpy_method():
    class Dev:
        def numpy(self):
            return np.arange(6).reshape(2, 3)

    out = V.to_numpy(Dev())
    assert out.dtype == np.float32 and out.shape == (2, 3) and out[1, 2] == 5


def test_points_and_vectors():
    assert V.points3("c", "n", "points", [1, 2, 3]).shape == (1, 3)
    with pytest.raises(ValueError, match=r"c\('n'\): points must have shape \(N, 3\), got shape \(2, 4\)"):
        V.points3("c", "n", "points", np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"pos must have 3 components, got shape \(2,\)"):
        V.vec3("c", "n", "pos", [1, 2])


def test_quaternions():
    np.testing.assert_allclose(V.quat("c", "n", None), [0, 0, 0, 1])
    np.testing.assert_allclose(V.quat("c", "n", [0, 0, 0, 2]), [0, 0, 0, 1])
    with pytest.raises(ValueError, match="zero length"):
        V.quat("c", "n", [0, 0, 0, 0])
    assert np.isnan(V.quat("c", "n", [np.nan, 0, 0, 1])).any()  # left for the caller to skip
    q = V.quats("c", "n", np.array([[0, 0, 0, 3.0], [0, 4.0, 0, 0]]), 2)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), [1, 1], rtol=1e-6)


def test_colors():
    assert V.colors("c", "n", None, 3) is None
    np.testing.assert_allclose(V.colors("c", "n", np.array([255, 0, 128], np.uint8), 3),
                               [1.0, 0.0, 128 / 255], rtol=1e-6)
    assert V.colors("c", "n", (1, 0, 0), 3).tolist() == [1.0, 0.0, 0.0]  # Python ints are not 0..255
    assert V.colors("c", "n", np.ones((3, 3)), 3).shape == (3, 3)
    assert V.colors("c", "n", [2.0, -1.0, 0.5], None).tolist() == [1.0, 0.0, 0.5]  # clipped
    with pytest.raises(ValueError, match=r"colors has shape \(2, 3\) but 3 items.*\(3,\) or \(3, 3\)"):
        V.colors("c", "n", np.ones((2, 3)), 3)


def test_triangles():
    assert V.triangles("c", "n", [0, 1, 2, 2, 1, 0], 3).shape == (2, 3)
    with pytest.raises(ValueError, match=r"multiple of 3.*\(5,\)"):
        V.triangles("c", "n", [0, 1, 2, 2, 1], 3)
    with pytest.raises(ValueError, match=r"out of range \[0, 3\).*min -1"):
        V.triangles("c", "n", [0, 1, -1], 3)


def test_radii_and_scalars():
    assert V.radii("c", "n", 0.5, 4) == 0.5
    assert V.radii("c", "n", np.full(4, 0.5), 4).shape == (4,)
    with pytest.raises(ValueError, match=r"radius must be a scalar or have shape \(4,\)"):
        V.radii("c", "n", np.ones(3), 4)
    with pytest.raises(ValueError, match="must be > 0"):
        V.scalar("c", "n", "radius", 0.0)


def test_warning_names_frame_time_and_name():
    with pytest.warns(V.RenderWarning, match=r"render_points\('dust'\) at frame 7 \(t=0.125 s\): skipped 2"):
        V.warn_skipped("render_points", "dust", 7, 0.125, "skipped 2 of 9 points")


def test_default_color_is_stable():
    np.testing.assert_array_equal(V.default_color("a"), V.default_color("a"))
    assert V.default_color("a").shape == (3,)
