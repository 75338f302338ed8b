"""examples/render_demo.py runs end to end with small sizes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _load_demo():
    spec = importlib.util.spec_from_file_location("render_demo", REPO_ROOT / "examples" / "render_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bounce_is_analytic_free_fall():
    demo = _load_demo()
    h = demo.bouncing_heights(np.array([0.0, 0.1]), np.array([2.0, 2.0]), 0.0)
    np.testing.assert_allclose(h, [2.0, 2.0 - 0.5 * 9.81 * 0.01])
    t_fall = np.sqrt(2 * 1.85 / 9.81)
    assert demo.bouncing_heights(t_fall, np.array(2.0), 0.15) == pytest.approx(0.15)  # touches ground
    assert demo.bouncing_heights(2 * t_fall, np.array(2.0), 0.15) == pytest.approx(2.0)  # back on top
    v, f = demo.icosphere(1)
    assert v.shape == (42, 3) and f.shape == (80, 3)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)


@pytest.mark.gl
def test_demo_writes_usd_png_gif(tmp_path, make_viewer):
    import imageio.v3 as iio
    from PIL import Image
    from pxr import Usd

    make_viewer(16, 16)  # skips cleanly if there is no GL context
    demo = _load_demo()
    out = demo.main(["--frames", "8", "--out-dir", str(tmp_path), "--width", "128", "--height", "96"])

    stage = Usd.Stage.Open(out["usd"])
    assert stage.GetEndTimeCode() == 7
    assert stage.GetPrimAtPath("/root/icosphere").GetAttribute("points").GetNumTimeSamples() == 8
    assert len(stage.GetPrimAtPath("/root/balls").GetAttribute("points").Get(3)) == 8

    assert len(out["png"]) == 8
    first, last = iio.imread(out["png"][0]), iio.imread(out["png"][-1])
    assert first.shape == (96, 128, 3)
    assert first.std() > 20  # not a blank image
    assert len(np.unique(first.reshape(-1, 3), axis=0)) > 50
    assert np.abs(first.astype(int) - last.astype(int)).mean() > 0.5  # things moved
    with Image.open(out["gif"]) as gif:
        assert gif.n_frames == 8 and gif.size == (128, 96)
