"""OpenGLViewer rendered headless (EGL + Mesa llvmpipe on CI): pixels, input, output."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from render import RenderWarning

pytestmark = pytest.mark.gl

BG = (0.25, 0.5, 0.75)  # clear colour -> (64, 128, 191) as uint8
BG_U8 = np.array([64, 128, 191])
RED = (0.9, 0.1, 0.1)


def _mask(px, channel=0, thresh=2.0):
    """Pixels where ``channel`` dominates both others by ``thresh`` x."""
    px = px.astype(float) + 1.0
    others = [c for c in range(3) if c != channel]
    return (px[..., channel] > thresh * px[..., others[0]]) & (px[..., channel] > thresh * px[..., others[1]])


def _centroid(mask):
    rows, cols = np.nonzero(mask)
    return np.array([cols.mean(), rows.mean()])


def _scene(make_viewer, **kw):
    kw.setdefault("show_hud", False)
    kw.setdefault("show_grid", False)
    kw.setdefault("background", BG)
    v = make_viewer(**kw)
    v.camera.look_at((0.0, 0.0, 5.0), (0.0, 0.0, 0.0))
    return v


def test_sphere_center_color_and_background_corners(make_viewer):
    v = _scene(make_viewer)
    v.begin_frame(0.0)
    v.render_sphere("ball", (0, 0, 0), None, 1.0, RED)
    v.end_frame()
    px = v.get_pixels()
    assert px.shape == (120, 160, 3) and px.dtype == np.uint8
    center = px[55:65, 75:85].reshape(-1, 3).astype(int)
    assert center[:, 0].min() > 100  # lit red
    assert center[:, 1].max() < 60 and center[:, 2].max() < 60
    for corner in (px[0, 0], px[0, -1], px[-1, 0], px[-1, -1]):
        np.testing.assert_array_equal(corner, BG_U8)
    # a sphere of radius 1 at distance 5 with a 45 degree fov spans ~ 2*atan(1/5)/45deg of the height
    height_px = _mask(px).any(axis=1).sum()
    expected = 120 * np.tan(np.arcsin(1 / 5)) / np.tan(np.radians(22.5))
    assert abs(height_px - expected) <= 3


def test_box_color_and_position_in_image(make_viewer):
    """An object placed above the centre shows up in the top half (top row first)."""
    v = _scene(make_viewer)
    v.render_box("crate", (0.0, 1.0, 0.0), None, (0.4, 0.4, 0.4), (0.1, 0.8, 0.1))
    v.begin_frame(0.0)
    v.end_frame()
    px = v.get_pixels()
    green = _mask(px, channel=1)
    assert green.sum() > 100
    col, row = _centroid(green)
    expected = v.camera.project((0.0, 1.0, 0.0), 160, 120)
    assert abs(col - expected[0]) < 2 and abs(row - expected[1]) < 2
    assert row < 60  # y up in the world = smaller row index
    face = px[int(row), int(col)].astype(int)
    assert face[1] > 100 and face[0] < 60 and face[2] < 60


def test_capsule_and_cylinder_axis_is_y(make_viewer):
    v = _scene(make_viewer)
    v.render_capsule("cap", (-1, 0, 0), None, 0.25, 0.75, RED)
    v.render_cylinder("cyl", (1, 0, 0), None, 0.25, 0.75, (0.1, 0.1, 0.9))
    px = v.get_pixels()
    for mask in (_mask(px, 0), _mask(px, 2)):
        rows, cols = np.nonzero(mask)
        height, width = np.ptp(rows) + 1, np.ptp(cols) + 1
        assert height > 2.5 * width  # tall and thin: long axis is world Y


def test_screenshot_png_readable(make_viewer, tmp_path):
    import imageio.v3 as iio

    v = _scene(make_viewer, width=96, height=64)
    v.render_sphere("ball", (0, 0, 0), None, 1.0, RED)
    v.begin_frame(0.0)
    v.end_frame()
    path = v.screenshot(str(tmp_path / "shot.png"))
    img = iio.imread(path)
    assert img.shape == (64, 96, 3)
    np.testing.assert_array_equal(img, v.get_pixels())
    with pytest.raises(OSError, match="does not exist"):
        v.screenshot(str(tmp_path / "missing" / "x.png"))


def test_mouse_drag_orbits_camera_and_moves_object(make_viewer):
    v = _scene(make_viewer)
    v.render_sphere("ball", (0.0, 0.0, 1.5), None, 0.5, RED)  # between target and camera
    v.begin_frame(0.0)
    v.end_frame()
    before = _centroid(_mask(v.get_pixels()))
    assert abs(before[0] - 80) < 1
    yaw0, pitch0, pos0 = v.camera.yaw, v.camera.pitch, v.camera.position.copy()
    m = v.mouse_buttons
    v.on_mouse_drag(80, 60, 100, 0, m.LEFT, 0)  # drag 100 px to the right
    assert v.camera.yaw == pytest.approx((yaw0 - 30.0) % 360.0)
    assert v.camera.pitch == pytest.approx(pitch0)
    assert np.linalg.norm(v.camera.position - pos0) > 1.0
    assert np.linalg.norm(v.camera.position) == pytest.approx(5.0)  # still orbiting the target
    v.begin_frame(0.1)
    v.end_frame()
    after = _centroid(_mask(v.get_pixels()))
    # the scene turns with the mouse: what is in front of the target moves right
    expected = v.camera.project((0.0, 0.0, 1.5), 160, 120)
    assert expected[0] - before[0] > 20
    assert after[0] == pytest.approx(expected[0], abs=2.0)
    v.on_mouse_drag(80, 60, 0, 50, m.LEFT, 0)
    assert v.camera.pitch == pytest.approx(pitch0 - 15.0)


def test_pan_and_zoom(make_viewer):
    v = _scene(make_viewer)
    v.render_sphere("ball", (0, 0, 0), None, 0.5, RED)
    px0 = v.get_pixels()
    area0 = _mask(px0).sum()
    c0 = _centroid(_mask(px0))
    v.on_mouse_scroll(80, 60, 0, 3)  # three notches closer
    assert v.camera.distance == pytest.approx(5.0 * 0.9 ** 3)
    v.redraw()
    area1 = _mask(v.get_pixels()).sum()
    assert area1 > 1.3 * area0
    m = v.mouse_buttons
    v.on_mouse_drag(80, 60, 20, 0, m.RIGHT, 0)  # pan: the sphere follows the mouse
    assert v.camera.target[0] < 0.0
    v.redraw()
    c1 = _centroid(_mask(v.get_pixels()))
    assert c1[0] - c0[0] == pytest.approx(20.0, abs=2.0)


def test_keys_fly_pause_step_screenshot(make_viewer, tmp_path):
    v = _scene(make_viewer, screenshot_dir=str(tmp_path))
    k = v.keys
    pos0 = v.camera.position.copy()
    v.on_key_press(k.W, 0)
    v.update_camera(0.1)
    v.on_key_release(k.W, 0)
    v.update_camera(0.1)  # released: no further motion
    moved = v.camera.position - pos0
    assert moved[2] == pytest.approx(-0.75 * 5.0 * 0.1)  # forward is -Z here
    assert abs(moved[0]) < 1e-9 and abs(moved[1]) < 1e-9

    assert v.is_paused() is False
    v.on_key_press(k.SPACE, 0)
    assert v.is_paused() is True
    v.on_key_press(k.N, 0)  # single step: one False, then paused again
    assert [v.is_paused(), v.is_paused()] == [False, True]
    v.on_key_press(k.SPACE, 0)
    assert v.is_paused() is False

    v.on_key_press(k.P, 0)
    v.on_key_press(k.F2, 0)
    assert len(list(tmp_path.glob("screenshot_*.png"))) == 2
    assert v.is_running()
    v.on_close()
    assert not v.is_running()


def test_points_instanced_and_nan_skipped(make_viewer):
    v = _scene(make_viewer)
    rng = np.random.default_rng(1)
    pts = rng.uniform(-1, 1, (1000, 3))
    pts[10] = np.nan
    v.begin_frame(0.25)
    with pytest.warns(RenderWarning, match=r"render_points\('dust'\) at frame 0 \(t=0.25 s\).*1 of 1000"):
        v.render_points("dust", pts, 0.03, colors=np.tile(RED, (1000, 1)))
    v.end_frame()
    assert v._points["dust"].count == 999  # one instanced draw of 999 spheres
    assert _mask(v.get_pixels()).sum() > 200
    with pytest.warns(RenderWarning, match=r"render_sphere\('ball'\) at frame 1"):
        v.begin_frame(0.5)
        v.render_sphere("ball", (np.nan, 0, 0), None, 1.0)
        v.end_frame()
    with pytest.raises(ValueError, match=r"render_points\('dust'\).*\(999, 3\)"):
        v.render_points("dust", pts, 0.03, colors=np.zeros((999, 3)))


def test_mesh_lines_instances_and_hud(make_viewer):
    v = _scene(make_viewer, show_hud=True, width=320, height=200)
    verts = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    v.render_mesh("quad", verts, [[0, 1, 2], [0, 2, 3]], colors=np.tile((0.1, 0.1, 0.9), (4, 1)))
    v.render_line_strip("line", np.array([[-2, -1.5, 1], [2, -1.5, 1]]), (1.0, 1.0, 0.0))
    v.render_instances("grains", "box", np.array([[-1.6, 0, 0], [1.6, 0, 0]]), scales=0.2,
                       colors=(0.1, 0.9, 0.1))
    v.begin_frame(1.5)
    v.end_frame()
    px = v.get_pixels().astype(int)
    blue = _mask(px, 2)
    assert blue[100, 160] and blue.sum() > 3000  # the quad fills the centre
    yellow = (px[..., 0] > 200) & (px[..., 1] > 200) & (px[..., 2] < 80)
    assert yellow.any(axis=1).sum() <= 3 and yellow.sum() > 100  # a 1-pixel horizontal line
    assert _mask(px, 1).sum() > 50  # two green instances
    hud = np.abs(px[:20, :200] - BG_U8).sum(axis=2) > 60  # text in the top-left corner
    assert hud.sum() > 50
    v.show_hud = False
    v.redraw()
    assert (np.abs(v.get_pixels()[:20, :200].astype(int) - BG_U8).sum(axis=2) > 60).sum() == 0


def test_grid_and_z_up(make_viewer):
    v = make_viewer(up_axis="Z", show_hud=False, background=BG)
    np.testing.assert_allclose(v.camera.up, [0, 0, 1])
    assert v.camera.position[2] > 0  # default camera looks down at the XY ground
    px = v.get_pixels()
    grid = np.abs(px.astype(int) - BG_U8).sum(axis=2) > 30
    assert grid[60:].sum() > 200  # grid lines below the horizon
    v.on_key_press(v.keys.G, 0)
    v.redraw()
    assert (np.abs(v.get_pixels().astype(int) - BG_U8).sum(axis=2) > 30).sum() == 0


def test_remove_and_persistence(make_viewer):
    v = _scene(make_viewer)
    v.render_sphere("ball", (0, 0, 0), None, 1.0, RED)
    v.begin_frame(0.0)
    v.end_frame()
    v.begin_frame(0.1)  # not re-rendered: still there
    v.end_frame()
    assert _mask(v.get_pixels()).sum() > 500
    v.remove("ball")
    v.redraw()
    assert _mask(v.get_pixels()).sum() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v.render_box("ball", (0, 0, 0), None, (1, 1, 1))  # name free again, any kind


def test_gif_recorder_frames(make_viewer, tmp_path):
    from PIL import Image

    from render import mp4_available, record

    v = _scene(make_viewer, width=64, height=48)
    n = 6
    with record(v, tmp_path / "frames", gif=str(tmp_path / "anim.gif"), fps=10) as rec:
        for i in range(n):
            v.begin_frame(i * 0.1)
            v.render_sphere("ball", (-1.5 + 0.6 * i, 0, 0), None, 0.5, RED)
            v.end_frame()
    assert len(rec.outputs["png"]) == n
    assert sorted(p.name for p in (tmp_path / "frames").iterdir())[0] == "frame_00000.png"
    with Image.open(tmp_path / "anim.gif") as gif:
        assert gif.n_frames == n
        assert gif.size == (64, 48)
        assert gif.info["duration"] == 100
    v.begin_frame(1.0)  # detached after the with block: no more files
    v.end_frame()
    assert len(list((tmp_path / "frames").iterdir())) == n
    with pytest.raises(OSError, match="missing"):
        record(v, None, gif=str(tmp_path / "missing" / "a.gif"))
    if not mp4_available():
        with pytest.raises(RuntimeError, match="imageio-ffmpeg"):
            record(v, None, mp4=str(tmp_path / "a.mp4"))
