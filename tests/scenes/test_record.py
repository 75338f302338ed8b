"""kcsim run --record: headless frames to a GIF or a folder of PNGs (no ffmpeg needed)."""
import numpy as np
import pytest

pytest.importorskip("pxr")

from scenes.cli import main as kcsim  # noqa: E402

pytestmark = pytest.mark.gl


@pytest.fixture(scope="module")
def gl_available():
    try:
        from render import OpenGLViewer

        OpenGLViewer(16, 16, headless=True, show_hud=False).close()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no headless OpenGL context: {exc}")


def test_record_gif_and_png_folder(gl_available, tmp_path, capsys):
    from PIL import Image

    gif = tmp_path / "run.gif"
    assert kcsim(["run", "spring_net", "--frames", "3", "--record", str(gif), "--no-progress"]) == 0
    assert f"recorded {gif} (gif)" in capsys.readouterr().out
    with Image.open(gif) as im:
        assert im.size == (640, 480) and im.n_frames == 4  # frame 0 and three simulated frames
    frames = tmp_path / "frames"
    assert kcsim(["run", "spring_net", "--frames", "2", "--record", str(frames), "--no-progress"]) == 0
    pngs = sorted(frames.glob("*.png"))
    assert [p.name for p in pngs] == ["frame_00000.png", "frame_00001.png", "frame_00002.png"]
    import imageio.v3 as iio

    first, last = iio.imread(pngs[0]), iio.imread(pngs[-1])
    assert first.shape == (480, 640, 3) and first.std() > 10  # a scene, not a blank image
    assert np.abs(first.astype(int) - last.astype(int)).sum() > 0  # the net moved


def test_record_what_the_viewer_shows(gl_available, tmp_path):
    from PIL import Image

    import scenes
    from render import OpenGLViewer

    v = OpenGLViewer(120, 90, headless=True, show_hud=False)
    try:
        gif = tmp_path / "view.gif"
        res = scenes.run(scenes.load("spring_net"), frames=2, viewer=v, record=str(gif), progress=False)
        assert res.recorded["gif"] == str(gif)
        with Image.open(gif) as im:
            assert im.size == (120, 90)  # the viewer's own frames, not a second offscreen viewer
    finally:
        v.close()
