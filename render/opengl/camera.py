"""Orbit / pan / zoom / fly camera (pure numpy, no GL).

The camera orbits ``target`` at ``distance``; ``yaw`` turns around the up
axis and ``pitch`` tilts towards it (both in degrees).  With yaw = pitch = 0
the camera looks along -Z from +Z for a Y-up scene and along +Y from -Y for
a Z-up scene.  All matrices are row-major 4x4 float32 acting on column
vectors (``clip = P @ V @ [x, y, z, 1]``); upload them with transpose=True.
"""

from __future__ import annotations

import math

import numpy as np


def _normalize(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class Camera:
    """Perspective camera; all lengths in scene units, angles in degrees."""

    PITCH_LIMIT = 89.0

    def __init__(self, up_axis: str = "Y", target=(0.0, 0.0, 0.0), distance: float = 8.0,
                 yaw: float = 30.0, pitch: float = 20.0, fov: float = 45.0,
                 near: float = 0.05, far: float = 1000.0) -> None:
        if up_axis not in ("Y", "Z"):
            raise ValueError(f"Camera: up_axis must be 'Y' or 'Z', got {up_axis!r}")
        self.up_axis = up_axis
        if up_axis == "Y":
            self.up = np.array([0.0, 1.0, 0.0])
            self._h1 = np.array([1.0, 0.0, 0.0])  # yaw = 90 deg puts the camera on +X
            self._h2 = np.array([0.0, 0.0, 1.0])  # yaw = 0 puts the camera on +Z
        else:
            self.up = np.array([0.0, 0.0, 1.0])
            self._h1 = np.array([1.0, 0.0, 0.0])
            self._h2 = np.array([0.0, -1.0, 0.0])
        self.target = np.asarray(target, np.float64).copy()
        self.distance = float(distance)
        self.yaw = float(yaw)
        self.pitch = float(pitch)
        self.fov = float(fov)  # vertical field of view, degrees
        self.near = float(near)
        self.far = float(far)

    # ------------------------------------------------------------ geometry
    def _offset_dir(self) -> np.ndarray:
        """Unit vector from target to camera."""
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        horiz = math.sin(y) * self._h1 + math.cos(y) * self._h2
        return math.cos(p) * horiz + math.sin(p) * self.up

    @property
    def position(self) -> np.ndarray:
        """Eye position (3,) in world space."""
        return self.target + self.distance * self._offset_dir()

    @position.setter
    def position(self, value) -> None:
        self.look_at(value, self.target)

    @property
    def forward(self) -> np.ndarray:
        return -self._offset_dir()

    @property
    def right(self) -> np.ndarray:
        return _normalize(np.cross(self.forward, self.up))

    @property
    def camera_up(self) -> np.ndarray:
        return np.cross(self.right, self.forward)

    def look_at(self, position, target) -> None:
        """Place the eye at ``position`` looking at ``target`` (sets distance/yaw/pitch)."""
        position = np.asarray(position, np.float64)
        self.target = np.asarray(target, np.float64).copy()
        off = position - self.target
        dist = float(np.linalg.norm(off))
        if dist < 1e-9:
            raise ValueError("Camera.look_at: position and target coincide")
        self.distance = dist
        d = off / dist
        self.pitch = math.degrees(math.asin(float(np.clip(d @ self.up, -1.0, 1.0))))
        self.pitch = float(np.clip(self.pitch, -self.PITCH_LIMIT, self.PITCH_LIMIT))
        self.yaw = math.degrees(math.atan2(float(d @ self._h1), float(d @ self._h2)))

    # ------------------------------------------------------------ controls
    def orbit(self, d_yaw: float, d_pitch: float) -> None:
        """Rotate around the target by the given angles (degrees)."""
        self.yaw = (self.yaw + d_yaw) % 360.0
        self.pitch = float(np.clip(self.pitch + d_pitch, -self.PITCH_LIMIT, self.PITCH_LIMIT))

    def pan(self, dx: float, dy: float) -> None:
        """Move target and eye sideways/up by (dx, dy) * distance (screen-relative)."""
        self.target = self.target + (dx * self.right + dy * self.camera_up) * self.distance

    def zoom(self, factor: float) -> None:
        """Multiply the distance to the target by ``factor`` (< 1 moves closer)."""
        self.distance = float(np.clip(self.distance * factor, 1e-3, 1e5))

    def fly(self, forward: float, right: float, up: float) -> None:
        """Translate eye and target together along the view axes (scene units)."""
        self.target = self.target + forward * self.forward + right * self.right + up * self.up

    # ------------------------------------------------------------ matrices
    def view_matrix(self) -> np.ndarray:
        """World -> eye, row-major (4, 4) float32."""
        eye = self.position
        f = self.forward
        s = self.right
        u = np.cross(s, f)
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = s, u, -f
        m[:3, 3] = -m[:3, :3] @ eye
        return m.astype(np.float32)

    def projection_matrix(self, aspect: float) -> np.ndarray:
        """Eye -> clip (OpenGL conventions), row-major (4, 4) float32."""
        f = 1.0 / math.tan(math.radians(self.fov) / 2.0)
        n, fa = self.near, self.far
        m = np.zeros((4, 4))
        m[0, 0] = f / aspect
        m[1, 1] = f
        m[2, 2] = (fa + n) / (n - fa)
        m[2, 3] = 2.0 * fa * n / (n - fa)
        m[3, 2] = -1.0
        return m.astype(np.float32)

    def project(self, point, width: int, height: int) -> np.ndarray:
        """Pixel coordinates (column, row from the top) of a world ``point``."""
        p = np.append(np.asarray(point, np.float64), 1.0)
        clip = self.projection_matrix(width / height).astype(np.float64) @ (
            self.view_matrix().astype(np.float64) @ p)
        ndc = clip[:3] / clip[3]
        return np.array([(ndc[0] + 1) * 0.5 * width, (1 - ndc[1]) * 0.5 * height])
