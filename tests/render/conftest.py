"""Fixtures for the render/ tests.

GL tests (marked ``gl``) use :func:`make_viewer`, which opens headless EGL
viewers.  If no OpenGL context can be created they are skipped with the
reason, unless ``RENDER_REQUIRE_GL=1`` is set, which turns that into a
failure (for CI machines that are known to have Mesa/EGL, see
render/SYSTEM_DEPS.txt).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # allow plain `pytest` without an installed package
    sys.path.insert(0, str(REPO_ROOT))

_GL_STATE: dict = {}


def _gl_problem() -> str | None:
    """Why no headless GL context can be created here (None if it can); probed once."""
    if "problem" not in _GL_STATE:
        try:
            from render import OpenGLViewer

            OpenGLViewer(16, 16, headless=True, show_hud=False).close()
            _GL_STATE["problem"] = None
        except Exception as exc:  # noqa: BLE001 - any failure means "no GL here"
            _GL_STATE["problem"] = f"{type(exc).__name__}: {exc}"
    return _GL_STATE["problem"]


@pytest.fixture
def make_viewer():
    """Factory for headless viewers that are closed after the test."""
    problem = _gl_problem()
    if problem is not None:
        if os.environ.get("RENDER_REQUIRE_GL") == "1":
            pytest.fail(f"RENDER_REQUIRE_GL=1 but no OpenGL context: {problem}")
        pytest.skip(f"no headless OpenGL context (EGL/Mesa missing?): {problem}")
    from render import OpenGLViewer

    viewers = []

    def factory(width=160, height=120, **kwargs):
        kwargs.setdefault("headless", True)
        v = OpenGLViewer(width, height, **kwargs)
        viewers.append(v)
        return v

    yield factory
    for v in viewers:
        v.close()
