"""OpenGL viewer (pyglet 2, core-profile GLSL 330).

Importing this package does not import pyglet; :mod:`.backend` does that
when the first :class:`OpenGLViewer` is created.
"""

from .camera import Camera
from .viewer import OpenGLViewer

__all__ = ["Camera", "OpenGLViewer"]
