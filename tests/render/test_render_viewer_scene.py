"""Viewer screenshots of whole scenes (headless EGL): the camera frames the scene's bounds,
the grid does not z-fight with a ground plane at the same height, contact casts shadows."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl

BG = (0.25, 0.5, 0.75)
BG_U8 = np.array([64, 128, 191])
GROUND = (0.8, 0.8, 0.8)


def _not_background(px):
    return np.abs(px.astype(int) - BG_U8).sum(axis=2) > 12


def test_grid_lines_on_a_ground_plane_do_not_z_fight(make_viewer):
    """Every pixel of a grid line seen without the plane is still a grid pixel with the plane
    drawn at the same height (z-fighting leaves a dashed, view-dependent half of them)."""
    v = make_viewer(width=240, height=160, show_hud=False, background=BG, samples=0)
    v.camera.look_at((3.0, 2.0, 6.0), (0.0, 0.0, 0.0))
    v.light_shadows = False  # the test is about depth, not lighting
    v.redraw()
    grid = _not_background(v.get_pixels())
    assert grid.sum() > 500
    v.render_plane("ground", (0, 0, 0), None, 8.0, 8.0, GROUND)
    v.show_grid = False
    v.redraw()
    plane_only = v.get_pixels().astype(int)
    plane = _not_background(plane_only)
    v.show_grid = True
    v.redraw()
    both = v.get_pixels().astype(int)
    on_plane = grid & plane
    assert on_plane.sum() > 300
    # where the grid lies on the plane, the grid's colour must win (lines are darker than the plane)
    changed = np.abs(both - plane_only).sum(axis=2) > 30
    assert changed[on_plane].mean() > 0.95, changed[on_plane].mean()
    # and nothing else on the plane changes: the ground away from the lines stays smooth
    away = plane & ~np.roll(np.roll(grid, 1, 0) | np.roll(grid, -1, 0) | grid, 1, 1) & ~np.roll(grid, -1, 1)
    assert changed[away].mean() < 0.01
    assert both[away].std(axis=0).max() < 12.0


def test_scene_is_framed_at_start(make_viewer):
    scenes = pytest.importorskip("scenes")
    pytest.importorskip("pxr")
    v = make_viewer(width=200, height=150, show_hud=False, background=BG, show_grid=False)
    v.camera.distance = 50.0  # a camera far away from a 2 m scene: run() must frame it
    scene = scenes.load("default")
    scenes.run(scene, frames=0, viewer=v, progress=False)
    px = v.get_pixels()
    colored = (px[..., 2].astype(int) - px[..., 0].astype(int)) > 60  # the blue grains
    rows, cols = np.nonzero(colored)
    assert colored.sum() > 400
    # the grains block (about a third of the scene's width) spans a fair part of the frame
    assert np.ptp(cols) > 0.25 * 200 and np.ptp(rows) > 0.1 * 150
    # and the whole scene (wedge + grains) fits: no scene pixel touches the frame's left/right edges
    # except the ground plane, which is wider than the view on purpose
    lo, hi = np.array([-1.0, 0.0, -1.0]), np.array([1.0, 1.8, 1.0])
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    pix = np.array([v.camera.project(c, 200, 150) for c in corners])
    assert pix[:, 0].min() >= 0 and pix[:, 0].max() <= 200 and pix[:, 1].min() >= 0 and pix[:, 1].max() <= 150
    span = max(np.ptp(pix[:, 0]) / 200, np.ptp(pix[:, 1]) / 150)
    assert 0.5 < span <= 1.0, span  # fills at least half of the frame along one axis


def test_contact_casts_a_shadow_on_the_ground(make_viewer):
    v = make_viewer(width=160, height=120, show_hud=False, background=BG, show_grid=False)
    v.camera.look_at((0.0, 4.0, 4.0), (0.0, 0.0, 0.0))
    v.render_plane("ground", (0, 0, 0), None, 6.0, 6.0, GROUND)
    v.redraw()
    lit = v.get_pixels().astype(int).sum(axis=2)
    v.render_sphere("ball", (0, 1.0, 0), None, 0.4, (0.9, 0.1, 0.1))  # its shadow falls beside it
    v.redraw()
    px = v.get_pixels().astype(int)
    ball = (px[..., 0] > 2 * px[..., 1] + 10) & (px[..., 0] > 2 * px[..., 2] + 10)
    for _ in range(2):  # grow the mask over the ball's antialiased outline
        ball = ball | np.roll(ball, 1, 0) | np.roll(ball, -1, 0) | np.roll(ball, 1, 1) | np.roll(ball, -1, 1)
    darker = (px.sum(axis=2) < lit - 60) & ~ball
    # a shadow: ground pixels next to the ball became clearly darker
    assert darker.sum() > 100, darker.sum()
    v.light_shadows = False
    v.redraw()
    px2 = v.get_pixels().astype(int)
    assert ((px2.sum(axis=2) < lit - 60) & ~ball).sum() < 0.1 * darker.sum()
