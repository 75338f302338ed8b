"""OpenGLViewer.render_cloth: cloth drawn smooth, its shading following the per-vertex normals (EGL pixels)."""

from __future__ import annotations

import numpy as np
import pytest

from render.mesh_normals import vertex_normals

pytestmark = pytest.mark.gl

BG = (0.25, 0.5, 0.75)
RED = (0.9, 0.2, 0.2)


def roof(n=2, height=0.8):
    """A sheet folded along x = 0 towards the camera (+z): two flat panels of n / 2 cells each, (n + 1) x 2
    vertices (one cell per panel: its vertex normals differ from one side of the panel to the other)."""
    x = np.linspace(-1.0, 1.0, n + 1)
    pts = np.array([(xi, yi, height * (1.0 - abs(xi))) for yi in (-1.0, 1.0) for xi in x], np.float32)
    tris = []
    for i in range(n):
        a, b, c, d = i, i + 1, n + 1 + i + 1, n + 1 + i
        tris += [(a, b, c), (a, c, d)]
    return pts, np.array(tris, np.int32)


def row_profile(make_viewer, draw):
    v = make_viewer(width=200, height=120, show_hud=False, show_grid=False, background=BG)
    v.light_shadows = False
    v.camera.look_at((0.0, 0.0, 4.0), (0.0, 0.0, 0.0))
    v.begin_frame(0.0)
    draw(v)
    v.end_frame()
    px = v.get_pixels().astype(int)
    row = px[60]
    cloth = np.abs(row - np.array([64, 128, 191])).sum(1) > 30
    cols = np.nonzero(cloth)[0]
    assert len(cols) > 40   # the sheet spans the middle of the row
    return row[:, 0], cols


def test_cloth_shading_varies_with_the_vertex_normals(make_viewer):
    pts, tris = roof()
    # flat (render_mesh): each panel has one normal, so one shade across it
    red, cols = row_profile(make_viewer, lambda v: v.render_mesh("sheet", pts, tris, colors=RED))
    mid = (cols.min() + cols.max()) // 2
    left = red[cols.min() + 3:mid - 3]
    assert left.max() - left.min() <= 2
    # smooth (render_cloth): the normals turn from the panel's at the edge to the fold's bisector at
    # x = 0, and the shade follows them across the panel
    red_s, cols_s = row_profile(make_viewer, lambda v: v.render_cloth("sheet", pts, tris, colors=RED))
    left_s = red_s[cols_s.min() + 3:mid - 3]
    assert left_s.max() - left_s.min() > 8
    # and that is the normals, not the positions: the same smooth path given one normal everywhere
    # draws one shade again
    same = np.tile(np.float32([0.0, 0.0, 1.0]), (len(pts), 1))
    red_n, cols_n = row_profile(make_viewer, lambda v: v._draw_mesh("sheet", pts, tris, np.float32(RED), normals=same))
    left_n = red_n[cols_n.min() + 3:mid - 3]
    assert left_n.max() - left_n.min() <= 2
    n = vertex_normals(pts, tris)
    assert n[0, 0] < -0.3 and n[2, 0] > 0.3   # the two panels tilt opposite ways


def test_render_cloth_checks_uvs_and_skips_nan(make_viewer):
    pts, tris = roof(8)
    v = make_viewer(width=64, height=48, show_hud=False)
    with pytest.raises(ValueError, match=r"render_cloth\('sheet'\): uvs must be finite \(18, 2\)"):
        v.render_cloth("sheet", pts, tris, uvs=np.zeros((3, 2)))
    v.render_cloth("sheet", pts, tris, uvs=np.zeros((18, 2)))
    bad = pts.copy()
    bad[0, 0] = np.nan
    from render import RenderWarning

    with pytest.warns(RenderWarning, match="mesh skipped"):
        v.render_cloth("sheet", bad, tris)
