"""Write simulation frames to a USD file (``.usd``/``.usdc`` crate or ``.usda`` text).

This is the only module of render/ that imports ``pxr`` (usd-core), and it
does so lazily inside :class:`UsdRenderer`, so ``import render`` stays cheap.

Layout of the written stage (``defaultPrim`` = ``/root``)::

    /root                       Xform (uniform ``scaling`` as a scale op)
      /<points name>            Points          points, widths, displayColor
      /<mesh name>              Mesh            points, faceVertexCounts/Indices
      /<shape name>             Xform           translate / orient / scale ops
        /geom                   Sphere | Cube | Capsule | Cylinder | Plane
      /<line strip name>        BasisCurves     linear, one curve
      /<line list name>         BasisCurves     linear, one 2-vertex curve per segment
      /<instances name>         PointInstancer  positions, orientations, scales
        /prototypes/proto       unit Sphere | Cube | Cylinder | Capsule

Time code = ``time * fps`` (rounded to 1e-6); ``timeCodesPerSecond`` = ``framesPerSecond`` = fps.
A name with slashes ("World/grains") becomes a prim path under ``/root``
(``/root/World/grains``), so a caller can mirror its own hierarchy.  Points carry
``widths`` (diameters; constant or per point), ``displayColor`` and, when given,
``velocities`` in scene units per second (UsdGeom's convention: DCC tools divide by
``timeCodesPerSecond`` themselves for motion blur).

Why it stays fast for thousands of frames: every prim and attribute is
created once and cached by name; per frame the values are only compared
with the previous ones and queued; ``end_frame`` writes the queue straight
into the root layer with ``Sdf.Layer.SetTimeSample`` inside one
``Sdf.ChangeBlock`` (no stage traversal, one change notification per frame).
Values that did not change are not written again; when a value changes
after a pause a "hold" sample is written at the last frame it was seen, so
USD's linear interpolation does not blend across the pause.
"""

from __future__ import annotations

import os

import numpy as np

from .base import RendererBase

_EXTENSIONS = (".usd", ".usda", ".usdc")


def _pxr():
    """Import usd-core on first use (keeps ``import render`` free of pxr)."""
    from pxr import Gf, Sdf, Tf, Usd, UsdGeom, Vt

    return Gf, Sdf, Tf, Usd, UsdGeom, Vt


def check_writable(path: str, who: str) -> str:
    """Return the absolute ``path`` after proving we can create/append to it.

    Raises OSError (or ValueError for a bad extension) naming the path, so a
    bad output location fails at construction, not after a long simulation.
    A real write probe is used because ``os.access`` always says yes to root.
    """
    apath = os.path.abspath(os.fspath(path))
    if os.path.isdir(apath):
        raise IsADirectoryError(21, f"{who}: output path is a directory", apath)
    ext = os.path.splitext(apath)[1].lower()
    if ext not in _EXTENSIONS:
        raise ValueError(f"{who}: output path {path!r} must end in one of {_EXTENSIONS}")
    parent = os.path.dirname(apath)
    if not os.path.isdir(parent):
        raise FileNotFoundError(2, f"{who}: output directory does not exist for {path!r}", parent)
    existed = os.path.exists(apath)
    try:
        fd = os.open(apath, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.close(fd)
    except OSError as exc:
        raise OSError(exc.errno, f"{who}: output path is not writable ({exc.strerror})", apath) from exc
    if not existed:
        os.unlink(apath)
    return apath


class _Track:
    """One time-sampled attribute written sparsely (see module docstring)."""

    __slots__ = ("path", "key", "vt", "written_tc", "seen_tc")

    def __init__(self, path) -> None:
        self.path = path  # Sdf.Path of the attribute
        self.key = None  # last value, in a comparable form (numpy array / tuple)
        self.vt = None  # last value as written (Vt/Gf object)
        self.written_tc = None
        self.seen_tc = None


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b)
    return a == b


class _WidthsInterpolation:
    """Lets ``widths`` (a schema attribute, not a primvars: one) share the primvar code."""

    def __init__(self, geom) -> None:
        self.geom = geom

    def SetInterpolation(self, value: str) -> None:  # noqa: N802 - mirrors UsdGeom.Primvar
        self.geom.SetWidthsInterpolation(value)


class _Obj:
    """Cached prim + tracks for one named object."""

    __slots__ = ("kind", "prim", "tracks", "interp", "primvars", "count_attr", "hidden", "reach", "created_tc")

    def __init__(self, kind, prim) -> None:
        self.kind = kind
        self.prim = prim
        self.tracks: dict[str, _Track] = {}
        self.interp: dict[str, str] = {}  # primvar name -> "constant" | "vertex"
        self.primvars: dict = {}  # primvar name -> UsdGeom.Primvar (may live on a child prim)
        self.count_attr = None  # attribute whose array length = number of vertices/instances
        self.hidden = False
        self.reach = 0.0  # PointInstancer: bounding radius of the unit prototype
        self.created_tc = 0.0


class UsdRenderer(RendererBase):
    """Record frames into a USD stage and save it to ``path``.

    Args:
        path: output file; ``.usda`` writes text, ``.usd``/``.usdc`` write the
            binary crate format.  Checked for writability immediately.
        fps: time codes per second (a number or a ``fractions.Fraction``, e.g.
            ``Fraction(30000, 1001)``); a frame at ``time`` seconds is stored at
            time code ``time * fps``.  Pass 60, not 59.99999687: the writer
            stores what it is given.
        up_axis: ``"Y"`` or ``"Z"`` (stage ``upAxis`` metadata; data is
            written as given, not rotated).
        scaling: uniform scale applied by the ``/root`` Xform;
            ``metersPerUnit`` is set to ``1 / scaling`` so real-world sizes
            stay correct (e.g. ``scaling=100`` stores centimetres).

    Use ``begin_frame(t)`` / ``render_*`` / ``end_frame()`` per frame, then
    ``save()`` or ``close()`` (also on leaving a ``with`` block).  The stage
    lives in memory until saved; ``self.stage`` gives access to it.
    """

    def __init__(self, path, fps: float = 60, up_axis: str = "Y", scaling: float = 1.0) -> None:
        super().__init__()
        self.path = check_writable(path, "UsdRenderer")
        if up_axis not in ("Y", "Z"):
            raise ValueError(f"UsdRenderer: up_axis must be 'Y' or 'Z', got {up_axis!r}")
        if not (fps > 0):
            raise ValueError(f"UsdRenderer: fps must be > 0, got {fps!r}")
        if not (scaling > 0):
            raise ValueError(f"UsdRenderer: scaling must be > 0, got {scaling!r}")
        self.fps = float(fps)
        self.up_axis = up_axis
        self.scaling = float(scaling)
        Gf, Sdf, Tf, Usd, UsdGeom, Vt = _pxr()
        self._Gf, self._Sdf, self._Tf, self._UsdGeom, self._Vt = Gf, Sdf, Tf, UsdGeom, Vt
        # In-memory stage, exported on save(): avoids clashes in the layer
        # registry when the same path is written twice in one process.
        self.stage = Usd.Stage.CreateInMemory("render.usda")
        self._layer = self.stage.GetRootLayer()
        UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.y if up_axis == "Y" else UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(self.stage, 1.0 / self.scaling)
        self.stage.SetTimeCodesPerSecond(self.fps)
        self.stage.SetFramesPerSecond(self.fps)
        root = UsdGeom.Xform.Define(self.stage, "/root")
        self.stage.SetDefaultPrim(root.GetPrim())
        if self.scaling != 1.0:
            root.AddScaleOp().Set(Gf.Vec3f(self.scaling))
        self._objects: dict[str, _Obj] = {}
        self._paths: set[str] = {"/root"}
        self._pending: list = []
        self._tc = 0.0
        self._start_tc = None
        self._end_tc = None
        self._closed = False

    # ------------------------------------------------------------ frames
    def _begin_frame(self) -> None:
        if self._closed:
            raise RuntimeError(f"UsdRenderer({self.path!r}) is closed")
        # Rounded to 1e-6 frame so that e.g. t = 0.3 s at 10 fps is time code 3, not 3.0000000000000004.
        self._tc = round(self.time * self.fps, 6)
        self._pending.clear()

    def _end_frame(self) -> None:
        tc = self._tc
        self._start_tc = tc if self._start_tc is None else min(self._start_tc, tc)
        self._end_tc = tc if self._end_tc is None else max(self._end_tc, tc)
        layer = self._layer
        with self._Sdf.ChangeBlock():
            for path, t, value in self._pending:
                layer.SetTimeSample(path, t, value)
            layer.startTimeCode = self._start_tc
            layer.endTimeCode = self._end_tc
        self._pending.clear()

    @property
    def start_time_code(self):
        return self._start_tc

    @property
    def end_time_code(self):
        return self._end_tc

    # ------------------------------------------------------------ writing
    def _set(self, obj: _Obj, attr: str, key, make) -> None:
        """Queue ``make(key)`` for ``obj``'s attribute ``attr`` at this frame if it changed."""
        tr = obj.tracks[attr]
        tc = self._tc
        if tr.key is not None and _same(tr.key, key):
            tr.seen_tc = tc
            return
        if tr.key is not None and tr.seen_tc != tr.written_tc:
            self._pending.append((tr.path, tr.seen_tc, tr.vt))  # hold the old value
        vt = make(key)
        self._pending.append((tr.path, tc, vt))
        tr.key = key.copy() if isinstance(key, np.ndarray) else key
        tr.vt = vt
        tr.written_tc = tr.seen_tc = tc

    def _track(self, obj: _Obj, attr_name: str, attr) -> None:
        obj.tracks[attr_name] = _Track(attr.GetPath())

    def _show(self, obj: _Obj) -> None:
        if obj.hidden:
            obj.hidden = False
            self._set_visibility(obj, "inherited")

    def _hide(self, name: str) -> None:
        obj = self._objects.get(name)
        if obj is not None:
            obj.hidden = True
            self._set_visibility(obj, "invisible")

    def _vec3f(self, a):
        return self._Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(a, dtype=np.float32).reshape(-1, 3))

    def _set_primvar(self, obj: _Obj, pv: str, values, n: int, make) -> None:
        """Write a primvar that is one value (constant) or one per vertex/instance.

        ``values``: for ``widths`` a float or (n,); for colours (3,) or (n, 3).
        The interpolation is chosen on the first write; a later per-item value
        upgrades a constant primvar, a later single value is broadcast.
        """
        vals = np.asarray(values, np.float32)
        per_item = vals.ndim == (1 if pv == "widths" else 2)
        cur = obj.interp.get(pv)
        if cur is None:
            cur = "vertex" if per_item else "constant"
            obj.primvars[pv].SetInterpolation(cur)
            obj.interp[pv] = cur
        elif cur == "constant" and per_item:
            self._upgrade_to_vertex(obj, pv, make)
            cur = "vertex"
        if cur == "vertex" and not per_item:
            vals = np.broadcast_to(vals, (n,) + vals.shape)
        elif cur == "constant":
            vals = vals.reshape(1) if pv == "widths" else vals.reshape(1, 3)
        self._set(obj, pv, np.ascontiguousarray(vals), make)

    def _upgrade_to_vertex(self, obj: _Obj, pv: str, make) -> None:
        """A primvar written as constant now gets per-item values: re-expand its old samples."""
        tr = obj.tracks[pv]
        layer = self._layer
        if tr.key is not None and tr.seen_tc != tr.written_tc:
            layer.SetTimeSample(tr.path, tr.seen_tc, tr.vt)
        for t in layer.ListTimeSamplesForPath(tr.path):
            old = np.asarray(layer.QueryTimeSample(tr.path, t), np.float32)
            count = len(obj.count_attr.Get(t) or [])
            new = np.broadcast_to(old[:1], (count,) + old.shape[1:])
            layer.SetTimeSample(tr.path, t, make(np.ascontiguousarray(new)))
        obj.primvars[pv].SetInterpolation("vertex")
        obj.interp[pv] = "vertex"
        tr.key = tr.vt = tr.written_tc = tr.seen_tc = None

    # ------------------------------------------------------------ prims
    def _prim_path(self, name: str) -> str:
        Tf = self._Tf
        parts = [Tf.MakeValidIdentifier(p) for p in name.split("/") if p]
        path = "/root/" + "/".join(parts or ["_"])
        base, i = path, 1
        while path in self._paths:
            path = f"{base}_{i}"
            i += 1
        self._paths.add(path)
        # Parents of "a/b" names become Xforms (typeless prims would not carry transforms).
        parent = path.rsplit("/", 1)[0]
        if not self.stage.GetPrimAtPath(parent):
            self._UsdGeom.Xform.Define(self.stage, parent)
        return path

    def _new_obj(self, name: str, kind: str, prim, count_attr=None) -> _Obj:
        obj = _Obj(kind, prim)
        obj.count_attr = count_attr
        obj.created_tc = self._tc
        self._objects[name] = obj
        if self._start_tc is not None and self._tc > self._start_tc:
            # Appears after the first frame: invisible before it was created.
            self._set_visibility(obj, "invisible", self._start_tc)
            self._set_visibility(obj, "inherited")
        return obj

    def _set_visibility(self, obj: _Obj, value: str, tc=None) -> None:
        """Time-sample ``visibility`` (created on first use, most objects never need it)."""
        if "visibility" not in obj.tracks:
            self._track(obj, "visibility", self._UsdGeom.Imageable(obj.prim).CreateVisibilityAttr())
            if tc is None and obj.created_tc < self._tc:
                # The first sample would hold backwards in time: pin "visible" at creation.
                self._pending.append((obj.tracks["visibility"].path, obj.created_tc,
                                      self._Vt.Token("inherited")))
        if tc is None:
            self._set(obj, "visibility", value, self._Vt.Token)  # a token, not a string
        else:
            self._pending.append((obj.tracks["visibility"].path, tc, self._Vt.Token(value)))

    def _color_primvar(self, obj: _Obj, prim) -> None:
        pv = self._UsdGeom.PrimvarsAPI(prim).CreatePrimvar(
            "displayColor", self._Sdf.ValueTypeNames.Color3fArray)
        obj.primvars["displayColor"] = pv
        self._track(obj, "displayColor", pv.GetAttr())

    def _set_color(self, obj: _Obj, colors, n: int) -> None:
        self._set_primvar(obj, "displayColor", colors, n, self._vec3f)

    def _set_extent(self, obj: _Obj, lo, hi) -> None:
        self._set(obj, "extent", np.array([lo, hi], np.float32), self._vec3f)

    # ---------------------------------------------------------- backends
    def _draw_points(self, name, points, radius, colors, velocities=None) -> None:
        obj = self._objects.get(name)
        if obj is None:
            geom = self._UsdGeom.Points.Define(self.stage, self._prim_path(name))
            obj = self._new_obj(name, "points", geom.GetPrim(), geom.GetPointsAttr())
            self._track(obj, "points", geom.CreatePointsAttr())
            self._track(obj, "velocities", geom.CreateVelocitiesAttr())
            self._track(obj, "extent", geom.CreateExtentAttr())
            # The schema's own ``widths`` attribute (what renderers read for Points).
            obj.primvars["widths"] = _WidthsInterpolation(geom)
            self._track(obj, "widths", geom.CreateWidthsAttr())
            self._color_primvar(obj, geom.GetPrim())
        self._show(obj)
        n = points.shape[0]
        self._set(obj, "points", points, self._vec3f)
        if velocities is not None:
            self._set(obj, "velocities", velocities, self._vec3f)
        widths = 2.0 * np.asarray(radius, np.float32)
        self._set_primvar(obj, "widths", widths, n, self._Vt.FloatArray.FromNumpy)
        r = float(np.max(radius)) if n else 0.0
        if n:
            self._set_extent(obj, points.min(0) - r, points.max(0) + r)
        else:
            self._set_extent(obj, np.zeros(3), np.zeros(3))
        self._set_color(obj, colors, n)

    def _draw_mesh(self, name, points, tris, colors) -> None:
        obj = self._objects.get(name)
        if obj is None:
            geom = self._UsdGeom.Mesh.Define(self.stage, self._prim_path(name))
            obj = self._new_obj(name, "mesh", geom.GetPrim(), geom.GetPointsAttr())
            self._track(obj, "points", geom.CreatePointsAttr())
            self._track(obj, "extent", geom.CreateExtentAttr())
            self._track(obj, "faceVertexCounts", geom.CreateFaceVertexCountsAttr())
            self._track(obj, "faceVertexIndices", geom.CreateFaceVertexIndicesAttr())
            # Simulation meshes are polygonal, with arbitrary winding.
            geom.CreateSubdivisionSchemeAttr().Set(self._UsdGeom.Tokens.none)
            geom.CreateDoubleSidedAttr().Set(True)
            self._color_primvar(obj, geom.GetPrim())
        self._show(obj)
        int_array = self._Vt.IntArray.FromNumpy
        self._set(obj, "points", points, self._vec3f)
        self._set(obj, "faceVertexCounts", np.full(tris.shape[0], 3, np.int32), int_array)
        self._set(obj, "faceVertexIndices", tris.reshape(-1), int_array)
        if points.shape[0]:
            self._set_extent(obj, points.min(0), points.max(0))
        else:
            self._set_extent(obj, np.zeros(3), np.zeros(3))
        self._set_color(obj, colors, points.shape[0])

    def render_cloth(self, name: str, points, indices, uvs=None, colors=None) -> None:
        """A deforming mesh (cloth): ``render_mesh`` plus per-vertex normals written every frame
        (area-weighted, from the winding of ``indices``) and, when given, texture coordinates
        ``uvs`` (N, 2) written once as ``primvars:st`` (vertex interpolation: the topology is constant).
        """
        pts = np.asarray(points, np.float32).reshape(-1, 3)
        self.render_mesh(name, points, indices, colors)
        obj = self._objects.get(name)
        if obj is None or obj.kind != "mesh" or not np.isfinite(pts).all():
            return   # render_mesh skipped it (and said why)
        geom = self._UsdGeom.Mesh(obj.prim)
        if "normals" not in obj.tracks:
            self._track(obj, "normals", geom.CreateNormalsAttr())
            geom.SetNormalsInterpolation(self._UsdGeom.Tokens.vertex)
            if uvs is not None:
                st = np.asarray(uvs, np.float32)
                if st.shape != (pts.shape[0], 2) or not np.isfinite(st).all():
                    raise ValueError(f"render_cloth({name!r}): uvs must be finite ({pts.shape[0]}, 2), got shape {st.shape}")
                pv = self._UsdGeom.PrimvarsAPI(obj.prim).CreatePrimvar(
                    "st", self._Sdf.ValueTypeNames.TexCoord2fArray, self._UsdGeom.Tokens.vertex)
                pv.Set(self._Vt.Vec2fArray.FromNumpy(st))
        from .mesh_normals import vertex_normals

        self._set(obj, "normals", vertex_normals(pts, np.asarray(indices).reshape(-1, 3)), self._vec3f)

    def _draw_shape(self, name, kind, pos, rot, scale, color) -> None:
        Gf, UsdGeom = self._Gf, self._UsdGeom
        obj = self._objects.get(name)
        if obj is None:
            path = self._prim_path(name)
            xf = UsdGeom.Xform.Define(self.stage, path)
            obj = self._new_obj(name, kind, xf.GetPrim())
            self._track(obj, "translate", xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).GetAttr())
            self._track(obj, "orient", xf.AddOrientOp(UsdGeom.XformOp.PrecisionFloat).GetAttr())
            self._track(obj, "scale", xf.AddScaleOp(UsdGeom.XformOp.PrecisionFloat).GetAttr())
            gpath = path + "/geom"
            if kind == "sphere":
                geom = UsdGeom.Sphere.Define(self.stage, gpath)  # radius 1, scaled
            elif kind == "box":
                geom = UsdGeom.Cube.Define(self.stage, gpath)  # size 2 = half-extent 1, scaled
            elif kind == "cylinder":
                geom = UsdGeom.Cylinder.Define(self.stage, gpath)  # r 1, half-height 1, scaled
                geom.CreateAxisAttr(UsdGeom.Tokens.y)
                geom.CreateRadiusAttr(1.0)
                geom.CreateHeightAttr(2.0)
            elif kind == "plane":
                geom = UsdGeom.Plane.Define(self.stage, gpath)  # 2 x 2, normal +Y, scaled
                geom.CreateAxisAttr(UsdGeom.Tokens.y)
                geom.CreateWidthAttr(2.0)
                geom.CreateLengthAttr(2.0)
                geom.CreateExtentAttr(self._vec3f([[-1, 0, -1], [1, 0, 1]]))
            elif kind == "capsule":
                # Hemispherical caps do not survive non-uniform scaling: real sizes.
                geom = UsdGeom.Capsule.Define(self.stage, gpath)
                geom.CreateAxisAttr(UsdGeom.Tokens.y)
                self._track(obj, "radius", geom.CreateRadiusAttr())
                self._track(obj, "height", geom.CreateHeightAttr())
                self._track(obj, "extent", geom.CreateExtentAttr())
            else:  # pragma: no cover - guarded by base class
                raise ValueError(kind)
            self._color_primvar(obj, geom.GetPrim())
        self._show(obj)
        p, q = pos, rot
        self._set(obj, "translate", (float(p[0]), float(p[1]), float(p[2])), lambda v: Gf.Vec3d(*v))
        self._set(obj, "orient", (float(q[3]), float(q[0]), float(q[1]), float(q[2])),
                  lambda v: Gf.Quatf(*v))  # Gf wants (real, i, j, k)
        if kind == "capsule":
            r, h = float(scale[0]), float(scale[1])
            self._set(obj, "scale", (1.0, 1.0, 1.0), lambda v: Gf.Vec3f(*v))
            self._set(obj, "radius", r, float)
            self._set(obj, "height", 2.0 * h, float)
            self._set_extent(obj, [-r, -h - r, -r], [r, h + r, r])
        else:
            self._set(obj, "scale", tuple(float(s) for s in scale), lambda v: Gf.Vec3f(*v))
        self._set_color(obj, color, 1)

    def _draw_line_strip(self, name, vertices, color) -> None:
        obj = self._objects.get(name)
        if obj is None:
            geom = self._UsdGeom.BasisCurves.Define(self.stage, self._prim_path(name))
            obj = self._new_obj(name, "line_strip", geom.GetPrim(), geom.GetPointsAttr())
            geom.CreateTypeAttr(self._UsdGeom.Tokens.linear)
            self._track(obj, "points", geom.CreatePointsAttr())
            self._track(obj, "curveVertexCounts", geom.CreateCurveVertexCountsAttr())
            self._track(obj, "extent", geom.CreateExtentAttr())
            geom.CreateWidthsAttr(self._Vt.FloatArray([self.line_width]))
            geom.SetWidthsInterpolation(self._UsdGeom.Tokens.constant)
            self._color_primvar(obj, geom.GetPrim())
        self._show(obj)
        self._set(obj, "points", vertices, self._vec3f)
        self._set(obj, "curveVertexCounts", np.array([vertices.shape[0]], np.int32),
                  self._Vt.IntArray.FromNumpy)
        self._set_extent(obj, vertices.min(0), vertices.max(0))
        self._set_color(obj, color, vertices.shape[0])

    def _draw_line_list(self, name, vertices, indices, color) -> None:
        obj = self._objects.get(name)
        if obj is None:
            geom = self._UsdGeom.BasisCurves.Define(self.stage, self._prim_path(name))
            obj = self._new_obj(name, "line_list", geom.GetPrim(), geom.GetPointsAttr())
            geom.CreateTypeAttr(self._UsdGeom.Tokens.linear)
            self._track(obj, "points", geom.CreatePointsAttr())
            self._track(obj, "curveVertexCounts", geom.CreateCurveVertexCountsAttr())
            self._track(obj, "extent", geom.CreateExtentAttr())
            geom.CreateWidthsAttr(self._Vt.FloatArray([self.line_width]))
            geom.SetWidthsInterpolation(self._UsdGeom.Tokens.constant)
            self._color_primvar(obj, geom.GetPrim())
        self._show(obj)
        seg = vertices[indices.reshape(-1)]
        self._set(obj, "points", seg, self._vec3f)
        self._set(obj, "curveVertexCounts", np.full(indices.shape[0], 2, np.int32), self._Vt.IntArray.FromNumpy)
        if seg.shape[0]:
            self._set_extent(obj, seg.min(0), seg.max(0))
        else:
            self._set_extent(obj, np.zeros(3), np.zeros(3))
        self._set_color(obj, color, seg.shape[0])

    #: width (scene units) written for line strips (BasisCurves ``widths``)
    line_width = 0.01

    def _draw_instances(self, name, prototype, positions, rotations, scales, colors) -> None:
        UsdGeom, Vt = self._UsdGeom, self._Vt
        obj = self._objects.get(name)
        if obj is None:
            path = self._prim_path(name)
            inst = UsdGeom.PointInstancer.Define(self.stage, path)
            obj = self._new_obj(name, "instances", inst.GetPrim(), inst.GetPositionsAttr())
            UsdGeom.Scope.Define(self.stage, path + "/prototypes")
            ppath = path + "/prototypes/proto"
            if prototype == "sphere":
                UsdGeom.Sphere.Define(self.stage, ppath)
            elif prototype == "box":
                UsdGeom.Cube.Define(self.stage, ppath)
            else:
                cls = UsdGeom.Cylinder if prototype == "cylinder" else UsdGeom.Capsule
                g = cls.Define(self.stage, ppath)
                g.CreateAxisAttr(UsdGeom.Tokens.y)
                g.CreateRadiusAttr(1.0)
                g.CreateHeightAttr(2.0)
                hh = 1.0 if prototype == "cylinder" else 2.0
                g.CreateExtentAttr(self._vec3f([[-1, -hh, -1], [1, hh, 1]]))
            inst.CreatePrototypesRel().SetTargets([ppath])
            self._track(obj, "protoIndices", inst.CreateProtoIndicesAttr())
            self._track(obj, "positions", inst.CreatePositionsAttr())
            self._track(obj, "orientations", inst.CreateOrientationsAttr())
            self._track(obj, "scales", inst.CreateScalesAttr())
            self._track(obj, "extent", inst.CreateExtentAttr())
            self._color_primvar(obj, inst.GetPrim())
            obj.reach = 2.0 if prototype == "capsule" else float(np.sqrt(3.0))
        self._show(obj)
        n = positions.shape[0]
        self._set(obj, "protoIndices", np.zeros(n, np.int32), Vt.IntArray.FromNumpy)
        self._set(obj, "positions", positions, self._vec3f)
        # PointInstancer orientations are half-precision quaternions, stored (i, j, k, real)
        # in memory, which matches our (x, y, z, w) layout.
        self._set(obj, "orientations", rotations.astype(np.float16), Vt.QuathArray.FromNumpy)
        self._set(obj, "scales", scales, self._vec3f)
        # Conservative bounds: a bounding sphere of the prototype around each instance.
        if n:
            reach = obj.reach * np.abs(scales).max(axis=1, keepdims=True)
            self._set_extent(obj, (positions - reach).min(0), (positions + reach).max(0))
        else:
            self._set_extent(obj, np.zeros(3), np.zeros(3))
        self._set_color(obj, colors, n)

    def abort_frame(self) -> None:
        """Drop the frame begun by ``begin_frame`` (e.g. interrupted half-way); no-op between frames."""
        if self._in_frame:
            self._pending.clear()
            self._in_frame = False
            self.frame -= 1

    # ------------------------------------------------------------- output
    def save(self) -> str:
        """Write the stage to ``path`` (format from the extension); returns the path."""
        if self._in_frame:
            raise RuntimeError("UsdRenderer.save: call end_frame() first")
        if self._start_tc is not None:
            self._layer.startTimeCode = self._start_tc
            self._layer.endTimeCode = self._end_tc
        if not self._layer.Export(self.path):
            raise OSError(f"UsdRenderer: failed to write {self.path!r}")
        return self.path

    def close(self) -> None:
        """Save (if not yet closed) and release the stage; safe to call twice."""
        if self._closed:
            return
        if self._in_frame:
            self.end_frame()
        self.save()
        self._closed = True
