"""Render demo: a spinning icosphere and bouncing balls, to USD and to PNG + GIF.

No simulator is involved: the balls follow the closed-form path of an
elastic bounce under gravity, the mesh is rotated with numpy.

    python examples/render_demo.py --frames 60 --out-dir demo_out
    python examples/render_demo.py --no-headless        # interactive window

Outputs in ``--out-dir``: ``render_demo.usda`` (open with usdview or any
USD viewer), ``frames/frame_00000.png`` ... and ``render_demo.gif``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import render  # noqa: E402

GRAVITY = 9.81  # m/s^2


def icosphere(subdivisions: int = 1, radius: float = 1.0):
    """Icosphere: vertices (V, 3) float32 on a sphere of ``radius``, triangles (M, 3) int32."""
    t = (1.0 + 5 ** 0.5) / 2.0
    verts = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t],
             [0, -1, -t], [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    faces = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
             [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
             [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
    verts = [np.array(v, float) for v in verts]

    def mid(a: int, b: int, cache: dict) -> int:
        """Index of the midpoint of edge (a, b), shared by the two faces of the edge."""
        key = (min(a, b), max(a, b))
        if key not in cache:
            cache[key] = len(verts)
            verts.append((verts[a] + verts[b]) / 2.0)
        return cache[key]

    for _ in range(subdivisions):
        cache: dict[tuple, int] = {}
        new_faces = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b, cache), mid(b, c, cache), mid(c, a, cache)
            new_faces += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        faces = new_faces
    v = np.array(verts)
    v = radius * v / np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32), np.array(faces, np.int32)


def rotate_y(points: np.ndarray, angle: float) -> np.ndarray:
    """Rotate (N, 3) points about +Y by ``angle`` radians."""
    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return points @ rot.T


def bouncing_heights(t: float, drop_heights: np.ndarray, radius: float) -> np.ndarray:
    """Centre heights (m) at time ``t`` (s) of balls dropped from rest, bouncing elastically."""
    fall = drop_heights - radius  # free-fall distance to touching the ground
    t_fall = np.sqrt(2.0 * fall / GRAVITY)
    phase = np.mod(t + t_fall, 2.0 * t_fall) - t_fall  # time from the top of the current arc
    return drop_heights - 0.5 * GRAVITY * phase ** 2


class Scene:
    """The demo's analytic scene at any time."""

    def __init__(self, n_balls: int = 8, radius: float = 0.15) -> None:
        self.radius = radius
        angle = np.linspace(0.0, 2.0 * np.pi, n_balls, endpoint=False)
        self.xz = np.stack([2.2 * np.cos(angle), 2.2 * np.sin(angle)], 1)
        self.drop = np.linspace(1.0, 2.5, n_balls)
        self.colors = np.stack([0.5 + 0.5 * np.cos(angle), 0.5 + 0.5 * np.sin(angle),
                                np.full(n_balls, 0.9)], 1)
        self.mesh_v, self.mesh_i = icosphere(2, 0.8)
        # colour the icosphere by height so the rotation is visible
        h = (self.mesh_v[:, 1] + 0.8) / 1.6
        self.mesh_c = np.stack([0.9 * h, 0.4 + 0.3 * np.sin(6 * self.mesh_v[:, 0]), 1.0 - 0.8 * h], 1)
        self.trail: list[np.ndarray] = []

    def draw(self, renderer, t: float) -> None:
        y = bouncing_heights(t, self.drop, self.radius)
        centres = np.stack([self.xz[:, 0], y, self.xz[:, 1]], 1)
        renderer.render_points("balls", centres, self.radius, colors=self.colors)
        # squash along X so the mesh is not a perfect sphere: the rotation shows in the outline
        squashed = self.mesh_v * np.array([0.7, 1.0, 1.0], np.float32)
        verts = rotate_y(squashed, 0.8 * t) + np.array([0.0, 1.2, 0.0])
        renderer.render_mesh("icosphere", verts, self.mesh_i, colors=self.mesh_c)
        renderer.render_box("pedestal", (0.0, 0.2, 0.0), None, (0.5, 0.2, 0.5), (0.6, 0.6, 0.65))
        # a hair below y = 0 so the viewer's grid lines are not z-fighting with it
        renderer.render_plane("ground", (0.0, -0.005, 0.0), None, 7.0, 7.0, (0.35, 0.4, 0.35))
        self.trail.append(centres[0].copy())
        if len(self.trail) >= 2:
            renderer.render_line_strip("trail", np.array(self.trail[-60:]), (1.0, 0.9, 0.2))


def main(argv=None) -> dict:
    """Run the demo; returns the written paths ``{"usd": ..., "png": [...], "gif": ...}``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=60, help="number of frames (default 60)")
    parser.add_argument("--fps", type=float, default=30.0, help="frames per second (default 30)")
    parser.add_argument("--out-dir", default="render_demo_out", help="output folder")
    parser.add_argument("--headless", action=argparse.BooleanOptionalAction, default=True,
                        help="render offscreen (default); --no-headless opens a window")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--balls", type=int, default=8)
    args = parser.parse_args(argv)
    if args.frames < 1:
        parser.error("--frames must be >= 1")

    os.makedirs(args.out_dir, exist_ok=True)
    usd_path = os.path.join(args.out_dir, "render_demo.usda")
    gif_path = os.path.join(args.out_dir, "render_demo.gif")

    # USD: every frame at time code = frame index.
    scene = Scene(args.balls)
    with render.UsdRenderer(usd_path, fps=args.fps) as usd:
        for i in range(args.frames):
            usd.begin_frame(i / args.fps)
            scene.draw(usd, i / args.fps)
            usd.end_frame()

    # Viewer: same scene, recorded to PNG frames and a GIF.
    scene = Scene(args.balls)
    viewer = render.OpenGLViewer(args.width, args.height, headless=args.headless,
                                 title="render demo")
    viewer.camera.look_at((4.5, 3.2, 5.5), (0.0, 0.9, 0.0))
    try:
        with render.record(viewer, os.path.join(args.out_dir, "frames"), gif=gif_path,
                           fps=args.fps) as rec:
            for i in range(args.frames):
                if not viewer.is_running():
                    break
                viewer.begin_frame(i / args.fps)
                scene.draw(viewer, i / args.fps)
                viewer.end_frame()
    finally:
        viewer.close()
    outputs = {"usd": usd_path, **rec.outputs}
    print(f"wrote {usd_path}, {len(outputs['png'])} PNG frames, {outputs.get('gif')}")
    return outputs


if __name__ == "__main__":
    main()
