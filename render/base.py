"""The renderer interface shared by :class:`UsdRenderer` and :class:`OpenGLViewer`.

The public ``render_*`` methods live here: they validate and normalise their
arguments (see :mod:`render.validation`), drop non-finite items with a
warning, and hand clean numpy arrays to the backend hooks (``_draw_*``).

Conventions (both backends):

* positions and sizes are in scene units (metres by default), float;
* ``rot`` is a unit quaternion stored ``(x, y, z, w)``;
* capsules and cylinders extend along their local **Y** axis;
* box ``extents`` are *half*-extents; plane ``width``/``length`` are full sizes
  along local X / local Z, the plane normal is local +Y;
* colours are RGB in [0, 1] (``uint8`` arrays are read as 0..255);
* objects are identified by ``name``; re-rendering a name updates it, an
  object that is not re-rendered keeps its last state.
"""

from __future__ import annotations

import numpy as np

from . import validation as V

# Prototype shapes understood by render_instances (unit size, see each backend).
INSTANCE_PROTOTYPES = ("sphere", "box", "cylinder", "capsule")


class RendererBase:
    """Frame bookkeeping and argument checking common to all renderers."""

    #: whether ``render_*`` may be called outside ``begin_frame``/``end_frame``
    _needs_frame = True

    def __init__(self) -> None:
        self.time = 0.0  # simulation time of the current/last frame, seconds
        self.frame = -1  # index of the current/last frame (0-based)
        self._in_frame = False
        self._kinds: dict[str, str] = {}

    # ------------------------------------------------------------------ frames
    def begin_frame(self, time: float) -> None:
        """Start a frame at simulation time ``time`` (seconds)."""
        t = float(time)
        if not np.isfinite(t):
            raise ValueError(f"begin_frame: time must be finite, got {time!r}")
        if self._in_frame:
            raise RuntimeError("begin_frame called twice without end_frame")
        self.time = t
        self.frame += 1
        self._in_frame = True
        self._begin_frame()

    def end_frame(self) -> None:
        """Finish the current frame (the USD writer commits it, the viewer draws it)."""
        if not self._in_frame:
            raise RuntimeError("end_frame called without begin_frame")
        self._in_frame = False
        self._end_frame()

    def _check_call(self, call: str, name: str, kind: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{call}: name must be a non-empty string, got {name!r}")
        if self._needs_frame and not self._in_frame:
            raise RuntimeError(f"{call}({name!r}): call begin_frame(time) first")
        old = self._kinds.setdefault(name, kind)
        if old != kind:
            raise ValueError(f"{call}({name!r}): name is already used by a {old} object")

    def _skip(self, call: str, name: str, what: str) -> None:
        V.warn_skipped(call, name, self.frame, self.time, what)
        self._hide(name)

    # ------------------------------------------------------------- public API
    def render_points(self, name: str, points, radius, colors=None, velocities=None) -> None:
        """Spheres at ``points`` (N, 3) with ``radius`` (scalar or (N,)), colours (3,) or (N, 3).

        ``velocities`` (N, 3) [units/s], optional: written to USD (``velocities``, what
        DCC tools read for motion blur); the viewer ignores them.
        Points with non-finite coordinates (or velocities) are dropped (with a warning).
        """
        call = "render_points"
        self._check_call(call, name, "points")
        pts = V.points3(call, name, "points", points)
        n = pts.shape[0]
        rad = V.radii(call, name, radius, n)
        col = V.colors(call, name, colors, n)
        vel = None
        if velocities is not None:
            vel = V.points3(call, name, "velocities", velocities)
            if vel.shape[0] != n:
                raise ValueError(f"{call}({name!r}): velocities must have shape ({n}, 3), got shape {vel.shape}")
        ok = V.finite_rows(pts)
        if vel is not None:
            ok &= V.finite_rows(vel)
        if isinstance(rad, np.ndarray):
            ok &= np.isfinite(rad)
        elif not np.isfinite(rad):
            self._skip(call, name, "radius is not finite; skipped")
            return
        if not ok.all():
            V.warn_skipped(
                call, name, self.frame, self.time,
                f"skipped {int((~ok).sum())} of {n} points with NaN/inf values",
            )
            pts = pts[ok]
            if vel is not None:
                vel = vel[ok]
            if isinstance(rad, np.ndarray):
                rad = rad[ok]
            if col is not None and col.ndim == 2:
                col = col[ok]
        self._draw_points(name, pts, rad, col if col is not None else V.default_color(name), velocities=vel)

    def render_mesh(self, name: str, points, indices, colors=None) -> None:
        """Triangle mesh: vertices (N, 3), indices (M, 3) or (3M,), colours (3,) or per-vertex (N, 3).

        A mesh with any non-finite vertex is skipped for this frame (with a warning).
        """
        call = "render_mesh"
        self._check_call(call, name, "mesh")
        pts = V.points3(call, name, "points", points)
        tris = V.triangles(call, name, indices, pts.shape[0])
        col = V.colors(call, name, colors, pts.shape[0])
        if not np.isfinite(pts).all():
            self._skip(call, name, "points contain NaN/inf; mesh skipped")
            return
        self._draw_mesh(name, pts, tris, col if col is not None else V.default_color(name))

    def render_cloth(self, name: str, points, indices, uvs=None, colors=None) -> None:
        """A deforming mesh drawn smooth: ``render_mesh`` plus per-vertex normals (area-weighted, from
        the winding of ``indices``), recomputed every frame; ``uvs`` (N, 2) texture coordinates are
        checked and kept where the backend has a use for them (the USD writer writes them).

        A mesh with any non-finite vertex is skipped for this frame (with a warning).
        """
        call = "render_cloth"
        self._check_call(call, name, "mesh")
        pts = V.points3(call, name, "points", points)
        tris = V.triangles(call, name, indices, pts.shape[0])
        col = V.colors(call, name, colors, pts.shape[0])
        st = None
        if uvs is not None:
            st = np.asarray(uvs, np.float32)
            if st.shape != (pts.shape[0], 2) or not np.isfinite(st).all():
                raise ValueError(f"{call}({name!r}): uvs must be finite ({pts.shape[0]}, 2), got shape {st.shape}")
        if not np.isfinite(pts).all():
            self._skip(call, name, "points contain NaN/inf; mesh skipped")
            return
        self._draw_cloth(name, pts, tris, st, col if col is not None else V.default_color(name))

    def _draw_cloth(self, name, points, tris, uvs, colors) -> None:
        """Backends without smooth shading draw cloth as a plain mesh."""
        self._draw_mesh(name, points, tris, colors)

    def render_sphere(self, name: str, pos, rot, radius, color=None) -> None:
        """Sphere of ``radius`` centred at ``pos`` (3,), orientation ``rot`` (x, y, z, w)."""
        call = "render_sphere"
        self._check_call(call, name, "sphere")
        r = V.scalar(call, name, "radius", radius)
        self._shape(call, name, "sphere", pos, rot, np.array([r, r, r]), color)

    def render_box(self, name: str, pos, rot, extents, color=None) -> None:
        """Box with half-extents ``extents`` (3,) along its local axes."""
        call = "render_box"
        self._check_call(call, name, "box")
        ext = V.vec3(call, name, "extents", extents)
        if np.any(ext[np.isfinite(ext)] <= 0):
            raise ValueError(f"{call}({name!r}): extents must be > 0, got {ext.tolist()}")
        self._shape(call, name, "box", pos, rot, ext, color)

    def render_capsule(self, name: str, pos, rot, radius, half_height, color=None) -> None:
        """Capsule along local Y: cylinder of half-height ``half_height`` plus hemispherical caps."""
        call = "render_capsule"
        self._check_call(call, name, "capsule")
        r = V.scalar(call, name, "radius", radius)
        h = V.scalar(call, name, "half_height", half_height, positive=False)
        if np.isfinite(h) and h < 0:
            raise ValueError(f"{call}({name!r}): half_height must be >= 0, got {h}")
        self._shape(call, name, "capsule", pos, rot, np.array([r, h, r]), color)

    def render_cylinder(self, name: str, pos, rot, radius, half_height, color=None) -> None:
        """Closed cylinder along local Y with ``radius`` and ``half_height``."""
        call = "render_cylinder"
        self._check_call(call, name, "cylinder")
        r = V.scalar(call, name, "radius", radius)
        h = V.scalar(call, name, "half_height", half_height)
        self._shape(call, name, "cylinder", pos, rot, np.array([r, h, r]), color)

    def render_plane(self, name: str, pos, rot, width, length, color=None) -> None:
        """Rectangle of full size ``width`` (local X) by ``length`` (local Z), normal local +Y."""
        call = "render_plane"
        self._check_call(call, name, "plane")
        w = V.scalar(call, name, "width", width)
        ln = V.scalar(call, name, "length", length)
        self._shape(call, name, "plane", pos, rot, np.array([0.5 * w, 1.0, 0.5 * ln]), color)

    def render_line_strip(self, name: str, vertices, color=None) -> None:
        """Connected line through ``vertices`` (N, 3); skipped if any vertex is non-finite."""
        call = "render_line_strip"
        self._check_call(call, name, "line_strip")
        verts = V.points3(call, name, "vertices", vertices)
        if verts.shape[0] < 2:
            raise ValueError(f"{call}({name!r}): need at least 2 vertices, got shape {verts.shape}")
        col = V.colors(call, name, color, None)
        if not np.isfinite(verts).all():
            self._skip(call, name, "vertices contain NaN/inf; line strip skipped")
            return
        self._draw_line_strip(name, verts, col if col is not None else V.default_color(name))

    def render_line_list(self, name: str, vertices, indices, color=None) -> None:
        """Separate line segments: ``vertices`` (N, 3), ``indices`` (S, 2) (or (2S,)) pairs of
        vertex indices, one segment each (springs, edges); skipped if a used vertex is non-finite."""
        call = "render_line_list"
        self._check_call(call, name, "line_list")
        verts = V.points3(call, name, "vertices", vertices)
        idx = np.asarray(V.to_numpy(indices, np.int64))
        if idx.size % 2 or (idx.ndim == 2 and idx.shape[1] != 2) or idx.ndim > 2:
            raise ValueError(f"{call}({name!r}): indices must have shape (S, 2) or (2S,), got shape {idx.shape}")
        idx = idx.reshape(-1, 2)
        if idx.size and (idx.min() < 0 or idx.max() >= verts.shape[0]):
            raise ValueError(f"{call}({name!r}): indices must lie in [0, {verts.shape[0]}), "
                             f"got [{idx.min()}, {idx.max()}]")
        col = V.colors(call, name, color, None)
        if idx.size and not np.isfinite(verts[idx.reshape(-1)]).all():
            self._skip(call, name, "vertices contain NaN/inf; line list skipped")
            return
        self._draw_line_list(name, verts, idx.astype(np.int32), col if col is not None else V.default_color(name))

    def render_instances(self, name: str, prototype: str, positions, rotations=None,
                         scales=None, colors=None) -> None:
        """Many copies of one unit ``prototype`` shape (one draw call / one PointInstancer).

        prototype: one of ``"sphere"`` (radius 1), ``"box"`` (half-extents 1),
        ``"cylinder"`` (radius 1, half-height 1), ``"capsule"`` (radius 1,
        half-height 1); positions (N, 3); rotations (N, 4) (x, y, z, w) or None;
        scales: None, scalar, (N,) or (N, 3) multiplying the unit shape;
        colors (3,) or (N, 3).  Instances with non-finite values are dropped.
        """
        call = "render_instances"
        self._check_call(call, name, "instances")
        if prototype not in INSTANCE_PROTOTYPES:
            raise ValueError(f"{call}({name!r}): prototype must be one of {INSTANCE_PROTOTYPES}, got {prototype!r}")
        pos = V.points3(call, name, "positions", positions)
        n = pos.shape[0]
        rots = V.quats(call, name, rotations, n)
        if scales is None:
            scl = np.ones((n, 3), np.float32)
        else:
            s = V.to_numpy(scales, np.float32)
            if s.size == 1:
                scl = np.full((n, 3), float(s.reshape(())), np.float32)
            elif s.shape == (n,):
                scl = np.repeat(s[:, None], 3, axis=1)
            elif s.shape in ((n, 3), (3,)):
                scl = np.ascontiguousarray(np.broadcast_to(s, (n, 3)), dtype=np.float32)
            else:
                raise ValueError(f"{call}({name!r}): scales must be scalar, ({n},) or ({n}, 3), got shape {s.shape}")
        col = V.colors(call, name, colors, n)
        ok = V.finite_rows(pos) & V.finite_rows(rots) & V.finite_rows(scl)
        if not ok.all():
            V.warn_skipped(call, name, self.frame, self.time,
                           f"skipped {int((~ok).sum())} of {n} instances with NaN/inf values")
            pos, rots, scl = pos[ok], rots[ok], scl[ok]
            if col is not None and col.ndim == 2:
                col = col[ok]
        self._draw_instances(name, prototype, pos, rots, scl,
                              col if col is not None else V.default_color(name))

    # --------------------------------------------------------------- helpers
    def _shape(self, call, name, kind, pos, rot, scale, color) -> None:
        p = V.vec3(call, name, "pos", pos)
        q = V.quat(call, name, rot)
        col = V.colors(call, name, color, None)
        if not (np.isfinite(p).all() and np.isfinite(q).all() and np.isfinite(scale).all()):
            self._skip(call, name, "pos/rot/size contain NaN/inf; skipped")
            return
        self._draw_shape(name, kind, p, q, scale, col if col is not None else V.default_color(name))

    # ------------------------------------------------------- backend hooks
    def _begin_frame(self) -> None:  # pragma: no cover - trivial default
        pass

    def _end_frame(self) -> None:  # pragma: no cover - trivial default
        pass

    def _hide(self, name: str) -> None:
        """Hide ``name`` for the current frame (its data was skipped)."""

    def _draw_points(self, name, points, radius, colors, velocities=None) -> None:
        raise NotImplementedError

    def _draw_line_list(self, name, vertices, indices, color) -> None:
        """vertices (N, 3) float32, indices (S, 2) int32, color (3,)."""
        raise NotImplementedError

    def _draw_mesh(self, name, points, tris, colors) -> None:
        raise NotImplementedError

    def _draw_shape(self, name, kind, pos, rot, scale, color) -> None:
        """kind in sphere/box/capsule/cylinder/plane; ``scale`` (3,) as set by the public call:
        sphere (r, r, r); box half-extents; capsule/cylinder (r, half_height, r);
        plane (width/2, 1, length/2)."""
        raise NotImplementedError

    def _draw_line_strip(self, name, vertices, color) -> None:
        raise NotImplementedError

    def _draw_instances(self, name, prototype, positions, rotations, scales, colors) -> None:
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - overridden
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
