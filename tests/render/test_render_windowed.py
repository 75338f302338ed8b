"""Windowed (non-headless) mode on a virtual X display, if Xvfb is installed.

pyglet fixes headless vs. windowed per process, so this runs in a child
process under ``xvfb-run``.  Xvfb is optional (``apt-get install xvfb
xauth``); without it the test is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gl
REPO_ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, numpy as np, render
v = render.OpenGLViewer(200, 150, headless=False, title="windowed test", show_hud=False)
v.camera.look_at((0, 0, 5), (0, 0, 0))
gl, grabbed, flip = v.gl, {}, v.window.flip
def grab_then_flip():  # read what was blitted to the window's back buffer
    out = np.empty((150, 200, 4), np.uint8)
    gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, 0)
    gl.glReadBuffer(gl.GL_BACK)
    gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
    gl.glReadPixels(0, 0, 200, 150, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE, out.ctypes.data)
    grabbed["px"] = out[::-1, :, :3].copy()
    flip()
v.window.flip = grab_then_flip
v.begin_frame(0.0)
v.render_sphere("s", (0, 0, 0), None, 1.0, (0.9, 0.1, 0.1))
v.end_frame()
same = bool(np.array_equal(grabbed["px"], v.get_pixels()))
center = v.get_pixels()[75, 100].tolist()
v.window.dispatch_event("on_close")  # queued by pyglet like a real close-button event
v.begin_frame(0.1)
v.end_frame()  # end_frame dispatches window events
print(json.dumps({"same": same, "center": center, "running": v.is_running()}))
v.close()
"""


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="Xvfb not installed (apt-get install xvfb xauth)")
def test_window_shows_the_offscreen_image():
    out = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 640x480x24", sys.executable, "-c", SCRIPT],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["same"] is True
    assert result["center"][0] > 100 and result["center"][1] < 60
    assert result["running"] is False  # the window's close event stops the loop
