"""render_line_list (springs) and render_points(velocities=...) in both renderers."""

from __future__ import annotations

import numpy as np
import pytest

from render import RenderWarning

VERTS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
PAIRS = np.array([[0, 1], [1, 2], [2, 3]])


def test_usd_line_list_and_velocities(tmp_path):
    pytest.importorskip("pxr")
    from pxr import Usd, UsdGeom

    from render import UsdRenderer

    path = str(tmp_path / "lines.usda")
    r = UsdRenderer(path, fps=30)
    vel = np.tile([0.0, -3.0, 0.0], (4, 1))
    for i in range(3):
        r.begin_frame(i / 30)
        r.render_line_list("net/springs", VERTS + [0, -0.1 * i, 0], PAIRS, (1, 1, 0))
        r.render_points("net/points", VERTS + [0, -0.1 * i, 0], 0.05, velocities=vel)
        r.end_frame()
    r.close()
    stage = Usd.Stage.Open(path)
    curves = UsdGeom.BasisCurves(stage.GetPrimAtPath("/root/net/springs"))
    assert curves.GetTypeAttr().Get() == "linear"
    assert list(curves.GetCurveVertexCountsAttr().Get(2)) == [2, 2, 2]
    np.testing.assert_allclose(np.array(curves.GetPointsAttr().Get(2)), (VERTS + [0, -0.2, 0])[PAIRS.reshape(-1)])
    pts = UsdGeom.Points(stage.GetPrimAtPath("/root/net/points"))
    np.testing.assert_allclose(np.array(pts.GetVelocitiesAttr().Get(1)), vel)
    assert pts.GetVelocitiesAttr().GetNumTimeSamples() == 1  # unchanged values are written once


def test_bad_line_list_and_velocities_are_named_errors(tmp_path):
    pytest.importorskip("pxr")
    from render import UsdRenderer

    r = UsdRenderer(str(tmp_path / "x.usda"))
    r.begin_frame(0.0)
    with pytest.raises(ValueError, match=r"render_line_list\('s'\): indices must lie in \[0, 4\), got \[0, 9\]"):
        r.render_line_list("s", VERTS, [[0, 9]])
    with pytest.raises(ValueError, match=r"render_line_list\('t'\): indices must have shape \(S, 2\)"):
        r.render_line_list("t", VERTS, [0, 1, 2])
    with pytest.raises(ValueError, match=r"render_points\('p'\): velocities must have shape \(4, 3\)"):
        r.render_points("p", VERTS, 0.1, velocities=np.zeros((3, 3)))
    vel = np.zeros((4, 3))
    vel[2] = np.nan
    with pytest.warns(RenderWarning, match="1 of 4 points"):
        r.render_points("q", VERTS, 0.1, velocities=vel)
    bad = VERTS.copy()
    bad[3] = np.inf
    with pytest.warns(RenderWarning, match="line list skipped"):
        r.render_line_list("u", bad, PAIRS)
    r.end_frame()
    r.close()


@pytest.mark.gl
def test_viewer_draws_line_list(make_viewer):
    v = make_viewer(show_hud=False, show_grid=False, background=(0.0, 0.0, 0.0))
    v.camera.look_at((0.5, 0.5, 3.0), (0.5, 0.5, 0.0))
    v.render_line_list("springs", VERTS, PAIRS[:1], (1.0, 1.0, 0.0))  # one bottom segment
    v.redraw()
    yellow = (v.get_pixels().astype(int)[..., :2] > 150).all(axis=2)
    rows = np.nonzero(yellow.any(axis=1))[0]
    assert yellow.sum() > 20 and np.ptp(rows) <= 2  # a horizontal line
    v.render_line_list("springs", VERTS, PAIRS, (1.0, 1.0, 0.0))  # three segments: a U turned over
    v.redraw()
    yellow = (v.get_pixels().astype(int)[..., :2] > 150).all(axis=2)
    assert np.ptp(np.nonzero(yellow.any(axis=1))[0]) > 20
