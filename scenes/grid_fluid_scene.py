"""Grid-fluid (smoke) scenes: ``token kc:solver = "smoke"`` on the PhysicsScene.

Format (our attributes in the ``kc:`` namespace; lengths in metres):

* ``PhysicsScene``: ``kc:solver = "smoke"``, ``float kc:timeStep`` (frame time, default
  1/30), ``int kc:substeps`` (default 2), ``int kc:frames`` (default 60); the grid:
  ``int[] kc:fluid:res`` (2 or 3 cell counts), ``float kc:fluid:dx`` [m]; the fluid:
  ``kc:fluid:viscosity`` [m^2/s], ``kc:fluid:heatLift``, ``kc:fluid:smokeWeight``,
  ``kc:fluid:vorticity``, ``token kc:fluid:advection``; a source raising density and
  temperature every step in a box: ``float3 kc:fluid:sourceCenter``,
  ``float3 kc:fluid:sourceHalfExtents``, ``float kc:fluid:sourceDensity``,
  ``float kc:fluid:sourceTemperature``.  The domain is [0, res dx]; walls are free-slip.
* Solids: ``Sphere`` and ``Cube`` prims with ``PhysicsCollisionAPI`` (translation and
  radius / size with scale; no rotation).

Output: the grid has no particle model, so the runner writes its own USD.  UsdVol wants an
OpenVDB or Field3D file per frame and no maintained OpenVDB writer is on the package index
(pyopenvdb's last release is from 2020), so the documented fallback is a time-sampled
``Points`` prim ``/World/smoke`` at the centres of cells holding smoke (density above
``threshold``), with ``widths`` = dx and per-point ``primvars:density`` and
``primvars:displayOpacity`` (constant-interpolation ``displayColor``): any DCC tool reads
it as a point cloud / sprite volume.  Solids are written as Sphere/Cube prims.  Optionally
a PNG slice sequence (the middle z-layer in 3-D).  The viewer and ``--record`` draw the grid as point
sprites (render/grid_fluid.py).
"""
from __future__ import annotations

import os
import time

import numpy as np

import kernelcore as kc
import sim

from .usd_loader import SceneError


def is_grid_fluid_scene(path) -> bool:
    """True when the file's PhysicsScene names the smoke solver (cheap: reads one attribute)."""
    try:
        from pxr import Usd, UsdPhysics
    except ImportError:
        return False
    if not os.path.isfile(path):
        return False
    try:
        stage = Usd.Stage.Open(os.fspath(path))
    except Exception:  # noqa: BLE001 - the main loader reports malformed files
        return False
    if stage is None:
        return False
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Scene):
            a = prim.GetAttribute("kc:solver")
            return bool(a and a.HasAuthoredValue() and a.Get() == "smoke")
    return False


class GridFluidScene:
    """A smoke scene: solver settings, solids and a source."""

    grid_fluid = True

    def __init__(self, path):
        self.path = str(path)
        self.solver = "smoke"
        self.frame_dt, self.substeps, self.frames = 1.0 / 30.0, 2, 60
        self.res, self.dx = None, None
        self.scene_prim = None  # the PhysicsScene's path (errors in its values name it)
        self.fluid = {}
        self.spheres, self.boxes = [], []
        self.source = None
        self.warnings, self.notes, self.items = [], [], []
        self.up_axis = "Y"

    @property
    def dt(self):
        return self.frame_dt / self.substeps

    def describe(self) -> str:
        lines = [f"scene: {self.path}",
                 f"solver: smoke, frame dt {self.frame_dt:g} s, {self.substeps} substeps (dt {self.dt:g} s), "
                 f"{self.frames} frames, up axis {self.up_axis}",
                 f"grid: {self.res} cells of {self.dx:g} m, {len(self.spheres)} solid spheres, {len(self.boxes)} solid "
                 f"boxes, source: {'yes' if self.source else 'no'}"]
        lines += [f"  {p}: {d}" for p, d in self.items]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def make_solver(self, device=None):
        """The solver with the scene's solids; a value the solver refuses is a SceneError naming
        the prim it came from (the solver's own message says which value)."""
        try:
            s = sim.SolverGridFluid(self.res, dx=self.dx, device=device, **self.fluid)
        except ValueError as e:
            raise SceneError(self.path, str(e), self.scene_prim) from None
        for (c, r, where) in self.spheres:
            try:
                s.add_solid_sphere(c[:len(self.res)], r)
            except ValueError as e:
                raise SceneError(self.path, str(e), where) from None
        for (c, h, where) in self.boxes:
            try:
                s.add_solid_box(c[:len(self.res)], h[:len(self.res)])
            except ValueError as e:
                raise SceneError(self.path, str(e), where) from None
        return s


def _whole(path, where, name, v):
    """``v`` as an int; a fractional value (4.5 cells, 2.5 substeps) is an error, not truncated."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise SceneError(path, f"{name} must be whole numbers, got {v!r}", where) from None
    if not f.is_integer():
        raise SceneError(path, f"{name} must be whole numbers, got {v!r}", where)
    return int(f)


_FLUID_ATTRS = {"kc:fluid:viscosity": "viscosity", "kc:fluid:heatLift": "heat_lift",
                "kc:fluid:smokeWeight": "smoke_weight", "kc:fluid:vorticity": "vorticity",
                "kc:fluid:advection": "advection"}


def load_grid_fluid(path) -> GridFluidScene:
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.Open(os.fspath(path))
    sc = GridFluidScene(path)
    sc.up_axis = str(UsdGeom.GetStageUpAxis(stage))
    known = {"kc:solver", "kc:timeStep", "kc:substeps", "kc:frames", "kc:fluid:res", "kc:fluid:dx",
             "kc:fluid:sourceCenter", "kc:fluid:sourceHalfExtents", "kc:fluid:sourceDensity",
             "kc:fluid:sourceTemperature"} | set(_FLUID_ATTRS)
    for prim in stage.Traverse():
        where = str(prim.GetPath())
        if prim.IsA(UsdPhysics.Scene):
            for a in prim.GetAuthoredAttributes():
                n = a.GetName()
                if n.startswith("kc:") and n not in known:
                    raise SceneError(path, f"unknown attribute '{n}' on a smoke scene", where)
            get = lambda n, d=None: prim.GetAttribute(n).Get() if prim.GetAttribute(n).HasAuthoredValue() else d  # noqa: E731
            sc.frame_dt = float(get("kc:timeStep", sc.frame_dt))
            sc.substeps = _whole(path, where, "kc:substeps", get("kc:substeps", sc.substeps))
            sc.frames = _whole(path, where, "kc:frames", get("kc:frames", sc.frames))
            if not (np.isfinite(sc.frame_dt) and sc.frame_dt > 0):
                raise SceneError(path, f"kc:timeStep must be a number > 0, got {sc.frame_dt}", where)
            if sc.substeps < 1 or sc.frames < 0:
                raise SceneError(path, f"kc:substeps must be >= 1 and kc:frames >= 0, got {sc.substeps} and "
                                 f"{sc.frames}", where)
            res = get("kc:fluid:res")
            dx = get("kc:fluid:dx")
            if res is None or dx is None:
                raise SceneError(path, "a smoke scene needs int[] kc:fluid:res and float kc:fluid:dx", where)
            sc.res, sc.dx = tuple(_whole(path, where, "kc:fluid:res", r) for r in res), float(dx)
            sc.scene_prim = where
            for attr, kw in _FLUID_ATTRS.items():
                v = get(attr)
                if v is not None:
                    sc.fluid[kw] = str(v) if kw == "advection" else float(v)
            c = get("kc:fluid:sourceCenter")
            if c is not None:
                h = get("kc:fluid:sourceHalfExtents", Gf.Vec3f(0.05, 0.05, 0.05))
                sc.source = (tuple(float(x) for x in c), tuple(float(x) for x in h),
                             float(get("kc:fluid:sourceDensity", 1.0)), float(get("kc:fluid:sourceTemperature", 1.0)))
            sc.items.append((where, f"grid fluid {sc.res} cells of {sc.dx:g} m"))
        elif prim.HasAPI(UsdPhysics.CollisionAPI) and (prim.IsA(UsdGeom.Sphere) or prim.IsA(UsdGeom.Cube)):
            xf = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
            t = np.array(xf.ExtractTranslation(), np.float64)
            scale = np.array([Gf.Vec3d(*xf.GetRow3(k)).GetLength() for k in range(3)])
            if prim.IsA(UsdGeom.Sphere):
                sc.spheres.append((t, float(UsdGeom.Sphere(prim).GetRadiusAttr().Get()) * float(scale.max()), where))
            else:
                sc.boxes.append((t, 0.5 * float(UsdGeom.Cube(prim).GetSizeAttr().Get()) * scale, where))
            sc.items.append((where, "solid"))
        elif prim.GetTypeName() not in ("", "Xform", "Scope", "PhysicsScene"):
            sc.warnings.append(f"{where}: {prim.GetTypeName()} prim ignored by the smoke solver")
    if sc.res is None:
        raise SceneError(path, "no PhysicsScene with kc:solver = \"smoke\"")
    return sc


class GridFluidResult:
    """frames run, the last state, the USD path (or None), PNG paths, wall time [s]."""

    def __init__(self, frames, state, out, pngs, elapsed, what):
        self.frames, self.state, self.out, self.pngs = frames, state, out, pngs
        self.elapsed, self.what = elapsed, what
        self.compile_seconds = 0.0
        self.recorded = {}


def density_slice(solver, state):
    d = state.density.numpy()
    return d if d.ndim == 2 else d[:, :, d.shape[2] // 2]


def run_grid_fluid(scene, frames=None, substeps=None, device="cpu", out=None, png_dir=None, threshold=1e-3,
                   progress=False, renderers=(), view=None):
    """Simulate a smoke scene; write a USD point-cloud fallback (see the module docstring) and PNG slices.

    ``renderers``: renderers (viewer, headless recording viewer, ...) that draw each frame
    as point sprites (render/grid_fluid.py); ``view``: the interactive viewer among them,
    whose closed window ends the run early.
    """
    frames = scene.frames if frames is None else int(frames)
    substeps = scene.substeps if substeps is None else int(substeps)
    dt = scene.frame_dt / substeps
    solver = scene.make_solver(device)
    s0, s1 = solver.state(), solver.state()
    writer = _UsdSmokeWriter(out, scene, solver) if out else None
    pngs = []
    from render.grid_fluid import grid_fluid_bounds, render_grid_fluid

    for r in renderers:
        if hasattr(r, "frame_bounds"):
            r.frame_bounds(*grid_fluid_bounds(solver))

    def record(frame, state):
        if writer is not None:
            writer.frame(frame, state, threshold)
        for r in renderers:
            r.begin_frame(frame * scene.frame_dt)
            render_grid_fluid(r, "smoke", solver, state, threshold)
            r.end_frame()
        if png_dir:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            os.makedirs(png_dir, exist_ok=True)
            p = os.path.join(png_dir, f"density_{frame:04d}.png")
            plt.imsave(p, density_slice(solver, state).T[::-1], cmap="magma", vmin=0.0, vmax=1.0)
            pngs.append(p)

    t0 = time.perf_counter()
    if scene.source is not None:
        try:
            solver.emit(s0, *scene.source)
        except ValueError as e:  # the source's values: the scene's fault, not an internal error
            raise SceneError(scene.path, str(e), scene.scene_prim) from None
    record(0, s0)
    done = 0
    try:
        for f in range(1, frames + 1):
            if view is not None and not view.is_running():
                break  # the window was closed
            for _ in range(substeps):
                if scene.source is not None:
                    solver.emit(s0, *scene.source)
                solver.step(s0, s1, dt)
                s0, s1 = s1, s0
            bad = ~np.isfinite(s0.density.numpy())
            if bad.any():  # exit status 2 with the frames before it saved, as for particle scenes
                from .runner import SimulationError

                raise SimulationError(f, "density", int(bad.sum()), int(np.flatnonzero(bad)[0]),
                                      writer.save(done) if writer is not None else None)
            record(f, s0)
            done = f
            if progress:
                print(f"frame {f}/{frames}", flush=True)
    except KeyboardInterrupt:  # Ctrl-C keeps the frames written so far, as the particle runner does
        from .runner import SimulationInterrupted

        raise SimulationInterrupted(done, [writer.save(done)] if writer is not None else []) from None
    frames = done
    if writer is not None:
        writer.save(frames)
    cells = "x".join(str(r) for r in scene.res)
    return GridFluidResult(frames, s0, out, pngs, time.perf_counter() - t0, f"a {cells}-cell smoke grid")


class _UsdSmokeWriter:
    def __init__(self, path, scene, solver):
        from pxr import Sdf, Usd, UsdGeom

        self.path = os.fspath(path)
        self.stage = Usd.Stage.CreateNew(self.path)
        from .usd_loader import exact_rate

        self.fps = float(exact_rate(1.0 / scene.frame_dt))
        self.stage.SetTimeCodesPerSecond(self.fps)
        self.stage.SetFramesPerSecond(self.fps)
        UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.y)
        UsdGeom.SetStageMetersPerUnit(self.stage, 1.0)
        world = UsdGeom.Xform.Define(self.stage, "/World")
        self.stage.SetDefaultPrim(world.GetPrim())
        self.points = UsdGeom.Points.Define(self.stage, "/World/smoke")
        pv = UsdGeom.PrimvarsAPI(self.points)
        self.density = pv.CreatePrimvar("density", Sdf.ValueTypeNames.FloatArray, UsdGeom.Tokens.vertex)
        self.opacity = pv.CreatePrimvar("displayOpacity", Sdf.ValueTypeNames.FloatArray, UsdGeom.Tokens.vertex)
        pv.CreatePrimvar("displayColor", Sdf.ValueTypeNames.Color3fArray, UsdGeom.Tokens.constant).Set([(0.8, 0.8, 0.85)])
        self.points.GetPrim().SetDocumentation("grid-fluid smoke: cell centres holding smoke, primvars:density per "
                                               "cell (UsdVol fallback, see scenes/grid_fluid_scene.py)")
        self.dx, self.dim = solver.dx, solver.dim
        for k, (c, r, _) in enumerate(scene.spheres):
            s = UsdGeom.Sphere.Define(self.stage, f"/World/solid_sphere_{k}")
            s.GetRadiusAttr().Set(float(r))
            s.AddTranslateOp().Set(tuple(float(x) for x in c))
        for k, (c, h, _) in enumerate(scene.boxes):
            b = UsdGeom.Cube.Define(self.stage, f"/World/solid_box_{k}")
            b.GetSizeAttr().Set(2.0)
            b.AddTranslateOp().Set(tuple(float(x) for x in c))
            b.AddScaleOp().Set(tuple(float(x) for x in h))

    def frame(self, f, state, threshold):
        from pxr import Vt

        d = state.density.numpy()
        d3 = d if d.ndim == 3 else d[:, :, None]
        idx = np.argwhere(d3 > threshold)
        pos = (idx + 0.5) * self.dx
        if self.dim == 2:
            pos[:, 2] = 0.0
        vals = d3[d3 > threshold].astype(np.float32)
        self.points.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(pos.astype(np.float32)), f)
        self.points.GetWidthsAttr().Set(Vt.FloatArray.FromNumpy(np.full(len(vals), self.dx, np.float32)), f)
        self.density.Set(Vt.FloatArray.FromNumpy(vals), f)
        self.opacity.Set(Vt.FloatArray.FromNumpy(np.clip(vals, 0.0, 1.0)), f)

    def save(self, frames):
        """Write frames 0..frames; returns the path."""
        self.stage.SetStartTimeCode(0)
        self.stage.SetEndTimeCode(frames)
        self.stage.GetRootLayer().Save()
        return self.path
