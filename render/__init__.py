"""render: write simulation frames to USD and show them in an OpenGL viewer.

Inputs are numpy arrays or anything with a ``.numpy()`` method; nothing here
imports sim/ or kernelcore/.  The heavy dependencies are imported lazily:
``pxr`` (usd-core) only by :mod:`render.usd_writer` when a
:class:`UsdRenderer` is created, ``pyglet`` only by
:mod:`render.opengl.backend` when an :class:`OpenGLViewer` is created, and
imageio only when frames are written.  So ``import render`` is cheap.

Public API::

    UsdRenderer(path, fps=60, up_axis="Y", scaling=1.0)
    OpenGLViewer(width=1280, height=720, headless=False, title=..., up_axis="Y")
    FrameRecorder(viewer, out_dir, ...) / record(viewer, out_dir, ...)

Both renderers share the interface of :class:`render.base.RendererBase`:
``begin_frame(time)``, ``render_points``, ``render_mesh``, ``render_sphere``,
``render_box``, ``render_capsule``, ``render_cylinder``, ``render_plane``,
``render_line_strip``, ``render_instances``, ``end_frame()``, ``close()``.
"""

from .base import RendererBase
from .opengl import OpenGLViewer
from .recorder import FrameRecorder, mp4_available, record
from .usd_writer import UsdRenderer
from .validation import RenderWarning

__all__ = [
    "FrameRecorder",
    "OpenGLViewer",
    "RenderWarning",
    "RendererBase",
    "UsdRenderer",
    "mp4_available",
    "record",
]
