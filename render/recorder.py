"""Record viewer frames to PNG files, an animated GIF and (optionally) MP4.

Usage::

    viewer = OpenGLViewer(320, 240, headless=True)
    with record(viewer, "out/frames", gif="out/anim.gif") as rec:
        for i in range(60):
            viewer.begin_frame(i / 30)
            ...
            viewer.end_frame()          # each drawn frame is captured
    print(rec.outputs)                  # {"png": [...], "gif": "...", ...}

GIF frames are kept in memory until :meth:`FrameRecorder.close` (about
W*H*3 bytes each); use ``every`` to keep fewer.  Pillow's GIF writer merges
consecutive identical frames into one longer frame, so a GIF of a still
scene has fewer frames than were captured.

MP4 needs the optional ``imageio-ffmpeg`` package (``pip install
imageio-ffmpeg``): ``mp4=True`` without it raises RuntimeError at
construction; :func:`mp4_available` tells whether it is installed.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np


def mp4_available() -> bool:
    """True when imageio-ffmpeg is installed, so MP4 files can be written."""
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def _out_path(path, who: str) -> str:
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(2, f"{who}: output directory does not exist for {path!r}", parent)
    return path


class FrameRecorder:
    """Collects frames from a viewer (anything with ``get_pixels()``).

    Args:
        viewer: an :class:`~render.OpenGLViewer` (or any object whose
            ``get_pixels()`` returns uint8 (H, W, 3)).
        out_dir: folder for PNG frames (created if missing); None = no PNGs.
        prefix: PNG names are ``{prefix}_{index:05d}.png``.
        gif: path of an animated GIF written on close, or None.
        mp4: path of an MP4 written on close (needs imageio-ffmpeg), or None.
        fps: playback rate of the GIF/MP4, frames per second.
        every: keep one frame out of ``every`` captured.
        attach: capture automatically after each ``viewer.end_frame()``;
            otherwise call :meth:`capture` yourself.
    """

    def __init__(self, viewer, out_dir=None, prefix: str = "frame", gif=None, mp4=None,
                 fps: float = 30.0, every: int = 1, attach: bool = True) -> None:
        if mp4 is not None and not mp4_available():
            raise RuntimeError("FrameRecorder: MP4 output needs imageio-ffmpeg (pip install imageio-ffmpeg)")
        if fps <= 0 or int(every) < 1:
            raise ValueError(f"FrameRecorder: need fps > 0 and every >= 1, got fps={fps}, every={every}")
        self.viewer = viewer
        self.out_dir = None if out_dir is None else os.fspath(out_dir)
        if self.out_dir is not None:
            os.makedirs(self.out_dir, exist_ok=True)
        self.prefix = prefix
        self.gif = None if gif is None else _out_path(gif, "FrameRecorder")
        self.mp4 = None if mp4 is None else _out_path(mp4, "FrameRecorder")
        self.fps = float(fps)
        self.every = int(every)
        self.png_paths: list[str] = []
        self.frames: list[np.ndarray] = []  # kept for GIF / MP4 only
        self.outputs: dict = {}
        self._seen = 0
        self._attached = False
        self._closed = False
        if attach and hasattr(viewer, "add_frame_callback"):
            viewer.add_frame_callback(self._on_frame)
            self._attached = True

    def _on_frame(self, viewer) -> None:
        self.capture()

    def capture(self) -> np.ndarray | None:
        """Grab the viewer's current image; returns it, or None if skipped by ``every``."""
        if self._closed:
            raise RuntimeError("FrameRecorder is closed")
        index = self._seen
        self._seen += 1
        if index % self.every:
            return None
        pixels = self.viewer.get_pixels()
        if self.out_dir is not None:
            import imageio.v3 as iio

            path = os.path.join(self.out_dir, f"{self.prefix}_{len(self.png_paths):05d}.png")
            iio.imwrite(path, pixels, extension=".png")
            self.png_paths.append(path)
        if self.gif is not None or self.mp4 is not None:
            self.frames.append(pixels)
        return pixels

    def close(self) -> dict:
        """Detach, write the GIF/MP4; returns ``{"png": [...], "gif": path, "mp4": path}``."""
        if self._closed:
            return self.outputs
        self._closed = True
        if self._attached:
            self.viewer.remove_frame_callback(self._on_frame)
        self.outputs = {"png": list(self.png_paths)}
        if self.frames:
            import imageio.v3 as iio

            if self.gif is not None:
                # Pillow takes the frame duration in milliseconds; loop=0 loops forever.
                iio.imwrite(self.gif, np.stack(self.frames), extension=".gif",
                            duration=1000.0 / self.fps, loop=0)
                self.outputs["gif"] = self.gif
            if self.mp4 is not None:
                iio.imwrite(self.mp4, np.stack(self.frames), extension=".mp4", fps=self.fps,
                            plugin="FFMPEG")
                self.outputs["mp4"] = self.mp4
        self.frames = []
        return self.outputs

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def record(viewer, out_dir=None, **kwargs) -> FrameRecorder:
    """Start recording ``viewer``; use as a context manager (see :class:`FrameRecorder`)."""
    return FrameRecorder(viewer, out_dir, **kwargs)
