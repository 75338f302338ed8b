"""The one place in render/ that imports pyglet.

pyglet decides between a real window system and headless EGL when
``pyglet.window`` is first imported, and that choice is fixed for the rest of
the process, so :func:`load_pyglet` sets ``pyglet.options["headless"]``
before that import and refuses a conflicting request later.

Headless mode needs EGL and Mesa's software rasteriser (llvmpipe) when there
is no GPU; the Debian packages are listed in ``render/SYSTEM_DEPS.txt``.
"""

from __future__ import annotations

import os
import sys
import types


class GLUnavailableError(RuntimeError):
    """No OpenGL context could be created (no display, no EGL, ...)."""


def load_pyglet(headless: bool) -> types.SimpleNamespace:
    """Import pyglet in the requested mode; returns the modules the viewer uses.

    Returns a namespace with ``gl`` (pyglet.gl), ``window`` (pyglet.window),
    ``key``, ``mouse`` and ``text``.
    Raises :class:`GLUnavailableError` with a hint when it cannot work.
    """
    window_loaded = "pyglet.window" in sys.modules
    try:
        import pyglet
    except ImportError as exc:  # pragma: no cover - pyglet is a dependency
        raise GLUnavailableError("pyglet is not installed (pip install pyglet>=2)") from exc
    if window_loaded:
        if bool(pyglet.options["headless"]) != bool(headless):
            raise GLUnavailableError(
                f"pyglet was already imported with headless={bool(pyglet.options['headless'])}; "
                f"cannot open a viewer with headless={headless} in the same process"
            )
    else:
        if not headless and sys.platform.startswith("linux") and not (
            os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        ):
            # Importing pyglet.window here would fail half-way and poison the import.
            raise GLUnavailableError(
                "no display (DISPLAY is not set): use OpenGLViewer(headless=True) for offscreen rendering"
            )
        pyglet.options["headless"] = bool(headless)
        pyglet.options["debug_gl"] = False  # a glGetError after every call is slow
    try:
        import pyglet.gl as gl
        import pyglet.text as text
        import pyglet.window as window
        from pyglet.window import key, mouse
    except Exception as exc:  # noqa: BLE001 - report any backend failure the same way
        raise GLUnavailableError(f"cannot initialise pyglet/OpenGL: {exc}") from exc
    return types.SimpleNamespace(pyglet=pyglet, gl=gl, window=window, key=key, mouse=mouse, text=text)
