"""Read a USD scene (.usda/.usd/.usdc) into a sim.ModelBuilder plus solver settings.

This is the only module of scenes/ that imports ``pxr`` (usd-core), lazily in
:func:`load_usd`.  The scene format (our own attributes live in the ``kc:`` namespace):

* ``PhysicsScene`` (UsdPhysics.Scene, at most one): ``physics:gravityDirection`` and
  ``physics:gravityMagnitude`` (defaults: minus the stage up axis, 9.81 m/s^2);
  ``float kc:timeStep`` — frame time step [s] (default 1/60); ``int kc:substeps``
  (default 10); ``token kc:solver`` — ``"semi_implicit"`` (default) or ``"dem"``;
  ``int kc:frames`` — default frame count of a run (100); ``float kc:particleDamping``
  — linear drag [1/s].
* ``Points``: a particle set.  Positions from ``points`` (or generated with
  ``int3 kc:grid:dims``, ``float kc:grid:spacing``, ``point3f kc:grid:lower``,
  ``float kc:grid:jitter``, ``int kc:grid:seed``), ``velocities`` or
  ``vector3f kc:velocity``, ``float kc:radius`` (scalar or array; else half the
  ``widths``), ``float kc:mass`` (scalar or array) or ``float kc:density`` [kg/m^3],
  ``int[] kc:fixedIndices`` (kinematic particles), springs from ``int2[]
  kc:springs:indices`` or ``bool kc:springs:grid`` (neighbours of a generated grid,
  ``bool kc:springs:shear``), with ``float kc:springs:ke`` [N/m] and
  ``kc:springs:kd`` [N s/m].  Contact material: ``kc:material:ke``,
  ``kc:material:restitution``, ``kc:material:mu``, ``kc:material:cohesion``,
  ``kc:material:cohesionDistance``.
* Static colliders: ``Mesh``, ``Cube``, ``Sphere``, ``Capsule`` and ``Plane`` prims with
  ``PhysicsCollisionAPI`` (the same ``kc:material:*`` attributes apply).  A Plane
  collides as an infinite half-space on the side its axis points to.  Without the API
  these prims are visual only and ignored.
* Rigid bodies: a prim with ``PhysicsRigidBodyAPI`` (an ``Xform`` or itself a collider)
  is a body whose frame is the prim's world transform (without scale); the ``Cube``,
  ``Sphere`` and ``Capsule`` colliders at or below it are its shapes.
  ``physics:velocity`` [units/s] and ``physics:angularVelocity`` [deg/s] set its initial
  motion.  ``PhysicsMassAPI``: ``physics:mass`` [kg], ``physics:centerOfMass`` (body
  frame), ``physics:diagonalInertia`` with ``physics:principalAxes`` on the body override
  what the shapes give; ``physics:density`` [kg/m^3] on the body or a collider sets the
  shapes' density (default 1000).
* Physics materials: a ``Material`` with ``PhysicsMaterialAPI`` bound to a collider or
  body (``material:binding:physics`` or ``material:binding``) gives ``physics:restitution``
  and ``physics:dynamicFriction`` (mu); ``kc:material:*`` attributes on the prim win.
* ``bool kc:toi`` on the PhysicsScene: time-of-impact contacts (``SolverSemiImplicit(toi=True)``).
* ``Xform``, ``Scope``, cameras, lights, materials and shaders are ignored; any other
  prim type is an error.

Lengths are in stage units scaled by ``metersPerUnit`` when the stage authors it
(else metres).  Every problem raises :class:`SceneError` naming the file and prim.
"""
from __future__ import annotations

import math
import os

import numpy as np

import sim

SOLVERS = ("semi_implicit", "dem")
IGNORED_TYPES = {"", "Xform", "Scope", "Camera", "Material", "Shader", "NodeGraph", "GeomSubset",
                 "PhysicsMaterial", "SkelRoot", "Skeleton", "RenderSettings", "RenderProduct", "RenderVar"}
COLLIDER_TYPES = {"Mesh", "Cube", "Sphere", "Capsule", "Plane"}
BODY_SHAPE_TYPES = {"Cube", "Sphere", "Capsule"}
MATERIAL_ATTRS = {"ke": "ke", "restitution": "restitution", "mu": "mu", "cohesion": "cohesion",
                  "cohesionDistance": "cohesion_distance"}


class SceneError(ValueError):
    """A scene file could not be read; the message names the file, the prim and the problem."""

    def __init__(self, path, message, prim=None):
        self.path, self.prim = str(path), (str(prim) if prim is not None else None)
        where = f"{self.path}" + (f": prim {self.prim}" if self.prim else "")
        super().__init__(f"{where}: {message}")


class Scene:
    """What a scene file describes: a ModelBuilder and how to simulate it.

    Attributes:
        path: the file; builder: sim.ModelBuilder; solver: "semi_implicit" or "dem";
        frame_dt: time between frames [s]; substeps: solver steps per frame;
        frames: default number of frames; up_axis: "Y" or "Z";
        particle_groups: [(name, range of particle indices)] per Points prim;
        items: [(prim path, description)] of everything loaded; notes: [str] of things ignored.
    """

    def __init__(self, path):
        self.path = str(path)
        self.builder = None
        self.solver = "semi_implicit"
        self.frame_dt = 1.0 / 60.0
        self.substeps = 10
        self.frames = 100
        self.up_axis = "Y"
        self.particle_groups = []
        self.toi = False
        self.items = []
        self.notes = []

    @property
    def dt(self) -> float:
        """Solver time step [s]."""
        return self.frame_dt / self.substeps

    def finalize(self, device="cpu", requires_grad=False):
        return self.builder.finalize(device=device, requires_grad=requires_grad)

    def make_solver(self, model):
        """The solver named by the scene for ``model``."""
        if self.solver == "dem":
            return sim.SolverDEM(model)
        return sim.SolverSemiImplicit(model, toi=self.toi)

    def describe(self) -> str:
        b = self.builder
        lines = [f"scene: {self.path}",
                 f"solver: {self.solver}, frame dt {self.frame_dt:g} s, {self.substeps} substeps "
                 f"(dt {self.dt:g} s), {self.frames} frames, up axis {self.up_axis}",
                 f"gravity: ({b.gravity[0]:g}, {b.gravity[1]:g}, {b.gravity[2]:g}) m/s^2",
                 f"particles: {b.particle_count}, springs: {b.spring_count}, bodies: {b.body_count}, "
                 f"shapes: {b.shape_count}, materials: {b.material_count}" + (", time of impact" if self.toi else "")]
        lines += [f"  {p}: {d}" for p, d in self.items]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def load_usd(path) -> Scene:
    """Read the scene file at ``path`` (see the module docstring for the format)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise SceneError(path, "file not found" if not os.path.exists(path) else "not a file")
    try:
        from pxr import Usd, UsdGeom, UsdPhysics, Gf  # noqa: F401  (usd-core, only here)
    except ImportError as e:  # pragma: no cover - usd-core is a dependency
        raise SceneError(path, f"usd-core is needed to read scenes ({e}); pip install usd-core") from None
    try:
        stage = Usd.Stage.Open(path)
    except Exception as e:
        raise SceneError(path, f"malformed USD: {_first_line(e)}") from None
    if stage is None:
        raise SceneError(path, "malformed USD: the stage could not be opened")
    return _Reader(path, stage).read()


def _first_line(e):
    text = " ".join(str(e).split())
    # pxr errors look like "Error in '...' at line N in file F : 'message'"; keep the message
    if " : '" in text:
        text = text.split(" : '", 1)[1].rstrip("'")
    return text[:400]


class _Reader:
    def __init__(self, path, stage):
        from pxr import Gf, Usd, UsdGeom, UsdPhysics

        self.Gf, self.Usd, self.UsdGeom, self.UsdPhysics = Gf, Usd, UsdGeom, UsdPhysics
        self.path, self.stage = path, stage
        self.scene = Scene(path)
        self.cache = UsdGeom.XformCache(Usd.TimeCode.EarliestTime())
        self.mpu = 1.0
        if stage.HasAuthoredMetadata("metersPerUnit"):
            self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
            if not (self.mpu > 0 and math.isfinite(self.mpu)):
                raise SceneError(path, f"metersPerUnit must be > 0, got {self.mpu}")
        up = UsdGeom.GetStageUpAxis(stage) if stage.HasAuthoredMetadata("upAxis") else "Y"
        self.scene.up_axis = "Z" if str(up) == "Z" else "Y"
        self.bodies = {}  # prim path -> body index

    # -- helpers ---------------------------------------------------------------------------------
    def err(self, prim, msg):
        return SceneError(self.path, msg, prim.GetPath() if prim is not None else None)

    def attr(self, prim, name, default=None, kind="float"):
        """Value of attribute ``name`` converted to ``kind`` ("float", "int", "bool", "token",
        "vec3", "int3", "floats", "ints", "vec3s", "int2s"), or ``default`` when absent."""
        a = prim.GetAttribute(name)
        if not a or not a.HasAuthoredValue():
            return default
        v = a.Get(self.Usd.TimeCode.EarliestTime())
        if v is None:
            return default
        try:
            if kind == "float":
                if hasattr(v, "__len__"):
                    return np.asarray(list(v), np.float64)
                out = float(v)
            elif kind == "int":
                out = int(v)
                if out != v:
                    raise TypeError
            elif kind == "bool":
                return bool(v)
            elif kind == "token":
                return str(v)
            elif kind in ("vec3", "int3"):
                out = np.asarray(list(v), np.float64 if kind == "vec3" else np.int64)
                if out.shape != (3,):
                    raise TypeError
            elif kind == "floats":
                out = np.asarray(list(v), np.float64).reshape(-1)
            elif kind == "ints":
                out = np.asarray(list(v), np.int64).reshape(-1)
            elif kind == "vec3s":
                out = np.asarray([list(x) for x in v], np.float64).reshape(-1, 3)
            elif kind == "int2s":
                out = np.asarray([list(x) for x in v], np.int64).reshape(-1, 2)
            else:  # pragma: no cover
                raise ValueError(kind)
        except (TypeError, ValueError):
            raise self.err(prim, f"attribute '{name}' has the wrong type (expected {kind}, got {type(v).__name__} "
                                 f"{str(v)[:60]})") from None
        if kind in ("float", "vec3", "floats", "vec3s") and not np.all(np.isfinite(out)):
            raise self.err(prim, f"attribute '{name}' is not finite: {str(v)[:60]}")
        return out

    def world(self, prim):
        """(4, 4) local-to-world matrix as numpy, row-vector convention (p_world = p @ M)."""
        m = self.cache.GetLocalToWorldTransform(prim)
        return np.array([[m[i][j] for j in range(4)] for i in range(4)], np.float64)

    def decompose(self, prim, allow_shear=False):
        """(translation [m], rotation quaternion (x, y, z, w), scale (3,)) of the prim's world transform."""
        m = self.cache.GetLocalToWorldTransform(prim)
        xf = self.Gf.Transform(m)
        t = np.asarray(list(xf.GetTranslation()), np.float64) * self.mpu
        s = np.asarray(list(xf.GetScale()), np.float64)
        rq = xf.GetRotation().GetQuat()
        im = rq.GetImaginary()
        q = (float(im[0]), float(im[1]), float(im[2]), float(rq.GetReal()))
        po = xf.GetPivotOrientation().GetQuat()
        if abs(po.GetReal()) < 0.999999 and not allow_shear:
            raise self.err(prim, "shear or non-orthogonal scale in the transform is not supported for colliders")
        return t, q, s

    def physics_material(self, prim):
        """{restitution, mu} from a PhysicsMaterialAPI material bound to ``prim`` (or its body)."""
        for rel_name in ("material:binding:physics", "material:binding"):
            rel = prim.GetRelationship(rel_name)
            targets = rel.GetTargets() if rel else []
            if targets:
                mat = self.stage.GetPrimAtPath(targets[0])
                if not mat or not mat.IsValid():
                    raise self.err(prim, f"{rel_name} points at {targets[0]}, which does not exist")
                if not mat.HasAPI(self.UsdPhysics.MaterialAPI):
                    continue
                out = {}
                for usd_name, py_name in (("physics:restitution", "restitution"), ("physics:dynamicFriction", "mu")):
                    v = self.attr(mat, usd_name)
                    if v is not None:
                        out[py_name] = float(v)
                return out
        return {}

    def material(self, prim):
        """Material index for the prim's kc:material:* attributes and bound physics material (0 = default)."""
        params = {}
        owner = self.body_prim_of(prim)
        if owner is not None and owner != prim:
            params.update(self.physics_material(owner))
        params.update(self.physics_material(prim))
        for usd_name, py_name in MATERIAL_ATTRS.items():
            v = self.attr(prim, f"kc:material:{usd_name}")
            if v is not None:
                if np.ndim(v):
                    raise self.err(prim, f"kc:material:{usd_name} must be a single value")
                params[py_name] = float(v) * (self.mpu if py_name == "cohesion_distance" else 1.0)
        if not params:
            return 0
        b = self.scene.builder
        base = dict(ke=b.material_ke[0], restitution=b.material_restitution[0], mu=b.material_mu[0],
                    cohesion=b.material_cohesion[0], cohesion_distance=b.material_cohesion_distance[0])
        base.update(params)
        try:
            return b.add_material(**base)
        except ValueError as e:
            raise self.err(prim, str(e).replace("add_material: ", "kc:material: ")) from None

    # -- reading ------------------------------------------------------------------------------------
    def read(self):
        stage, UsdPhysics = self.stage, self.UsdPhysics
        scenes = [p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]
        if len(scenes) > 1:
            raise self.err(scenes[1], f"more than one PhysicsScene (first is {scenes[0].GetPath()})")
        self.read_physics_scene(scenes[0] if scenes else None)
        for prim in stage.Traverse():
            t = str(prim.GetTypeName())
            if prim.IsA(UsdPhysics.Scene):
                continue
            if prim.HasAPI(UsdPhysics.RigidBodyAPI):
                self.read_rigid_body(prim)
            if t == "Points":
                self.read_points(prim)
            elif t in COLLIDER_TYPES:
                if prim.HasAPI(UsdPhysics.CollisionAPI):
                    getattr(self, "read_" + t.lower())(prim)
                else:
                    self.scene.notes.append(f"{prim.GetPath()}: {t} without PhysicsCollisionAPI (visual only, ignored)")
            elif t in IGNORED_TYPES or t.endswith("Light"):
                if prim.HasAPI(UsdPhysics.CollisionAPI):
                    raise self.err(prim, f"PhysicsCollisionAPI on a prim of type '{t or 'untyped'}' is not supported "
                                         f"(colliders: {', '.join(sorted(COLLIDER_TYPES))})")
            else:
                raise self.err(prim, f"unsupported prim type '{t}' (supported: Points, "
                                     f"{', '.join(sorted(COLLIDER_TYPES))} colliders, Xform, Scope, PhysicsScene)")
        if self.scene.builder.particle_count == 0:
            self.scene.notes.append("the scene has no particles")
        return self.scene

    def read_physics_scene(self, prim):
        sc = self.scene
        up = np.array([0.0, 0.0, 1.0]) if sc.up_axis == "Z" else np.array([0.0, 1.0, 0.0])
        direction, magnitude = -up, 9.81
        damping = 0.0
        if prim is not None:
            s = self.UsdPhysics.Scene(prim)
            d = s.GetGravityDirectionAttr().Get()
            if d is not None and np.linalg.norm(list(d)) > 0:
                direction = np.asarray(list(d), np.float64)
                if not np.all(np.isfinite(direction)):
                    raise self.err(prim, "physics:gravityDirection is not finite")
                direction /= np.linalg.norm(direction)
            mag = s.GetGravityMagnitudeAttr().Get()
            if mag is not None and math.isfinite(mag):
                if mag < 0:
                    raise self.err(prim, f"physics:gravityMagnitude must be >= 0, got {mag}")
                magnitude = float(mag) * self.mpu
            dt = self.attr(prim, "kc:timeStep")
            if dt is not None:
                if np.ndim(dt) or not dt > 0:
                    raise self.err(prim, f"kc:timeStep must be a number > 0, got {dt}")
                sc.frame_dt = float(dt)
            sub = self.attr(prim, "kc:substeps", kind="int")
            if sub is not None:
                if sub < 1:
                    raise self.err(prim, f"kc:substeps must be >= 1, got {sub}")
                sc.substeps = sub
            frames = self.attr(prim, "kc:frames", kind="int")
            if frames is not None:
                if frames < 0:
                    raise self.err(prim, f"kc:frames must be >= 0, got {frames}")
                sc.frames = frames
            solver = self.attr(prim, "kc:solver", kind="token")
            if solver is not None:
                if solver not in SOLVERS:
                    raise self.err(prim, f"kc:solver must be one of {SOLVERS}, got '{solver}'")
                sc.solver = solver
            sc.toi = bool(self.attr(prim, "kc:toi", False, kind="bool"))
            damping = self.attr(prim, "kc:particleDamping", 0.0)
            if np.ndim(damping) or damping < 0:
                raise self.err(prim, f"kc:particleDamping must be a number >= 0, got {damping}")
            sc.items.append((str(prim.GetPath()), "PhysicsScene"))
        sc.builder = sim.ModelBuilder(gravity=tuple(direction * magnitude), particle_damping=float(damping))

    def read_points(self, prim):
        b, UsdGeom = self.scene.builder, self.UsdGeom
        name = prim.GetName()
        pts = self.attr(prim, "points", kind="vec3s")
        dims = self.attr(prim, "kc:grid:dims", kind="int3")
        M = self.world(prim)
        if dims is not None:
            if np.any(dims < 1):
                raise self.err(prim, f"kc:grid:dims must be >= 1, got {dims.tolist()}")
            spacing = self.attr(prim, "kc:grid:spacing")
            if spacing is None or np.ndim(spacing) or not spacing > 0:
                raise self.err(prim, f"kc:grid:spacing must be a number > 0 with kc:grid:dims, got {spacing}")
            lower = self.attr(prim, "kc:grid:lower", np.zeros(3), kind="vec3")
            jitter = float(self.attr(prim, "kc:grid:jitter", 0.0))
            seed = self.attr(prim, "kc:grid:seed", 0, kind="int")
            k, j, i = np.meshgrid(np.arange(dims[2]), np.arange(dims[1]), np.arange(dims[0]), indexing="ij")
            local = lower + spacing * np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1)
            if jitter:
                local = local + np.random.default_rng(seed).uniform(-jitter, jitter, local.shape)
            if pts is not None and len(pts):
                raise self.err(prim, "give either points or kc:grid:dims, not both")
            pts = local
        if pts is None or len(pts) == 0:
            raise self.err(prim, "Points prim without points (author 'points' or 'kc:grid:dims')")
        n = len(pts)
        world = (np.hstack([pts, np.ones((n, 1))]) @ M)[:, :3] * self.mpu
        vel = self.attr(prim, "velocities", kind="vec3s")
        if vel is None:
            v = self.attr(prim, "kc:velocity", np.zeros(3), kind="vec3")
            vel = np.tile(v, (n, 1))
        elif len(vel) != n:
            raise self.err(prim, f"velocities has {len(vel)} entries for {n} points")
        vel = vel @ M[:3, :3] * self.mpu
        radius = self.attr(prim, "kc:radius")
        if radius is None:
            widths = self.attr(prim, "widths")
            if widths is None:
                raise self.err(prim, "particle radius missing (author 'kc:radius' or 'widths')")
            radius = 0.5 * np.asarray(widths, np.float64)
        radius = self._per_point(prim, "kc:radius", radius, n) * self.mpu
        if np.any(radius <= 0):
            bad = int(np.argmax(radius <= 0))
            raise self.err(prim, f"kc:radius must be > 0, got {radius[bad] / self.mpu:g} (point {bad})")
        mass = self.attr(prim, "kc:mass")
        density = self.attr(prim, "kc:density")
        if mass is not None and density is not None:
            raise self.err(prim, "give either kc:mass or kc:density, not both")
        if density is not None:
            if np.ndim(density) or density < 0:
                raise self.err(prim, f"kc:density must be a number >= 0, got {density}")
            mass = density * 4.0 / 3.0 * math.pi * radius ** 3
        elif mass is None:
            raise self.err(prim, "particle mass missing (author 'kc:mass' [kg] or 'kc:density' [kg/m^3])")
        mass = self._per_point(prim, "kc:mass", mass, n)
        if np.any(mass < 0):
            bad = int(np.argmax(mass < 0))
            raise self.err(prim, f"kc:mass must be >= 0, got {mass[bad]:g} (point {bad})")
        fixed = self.attr(prim, "kc:fixedIndices", kind="ints")
        if fixed is not None and len(fixed):
            if fixed.min() < 0 or fixed.max() >= n:
                raise self.err(prim, f"kc:fixedIndices must lie in [0, {n}), got [{fixed.min()}, {fixed.max()}]")
            mass = mass.copy()
            mass[fixed] = 0.0
            vel = vel.copy()
            vel[fixed] = 0.0
        mat = self.material(prim)
        start = b.particle_count
        rng = b.add_particles(world, vel, mass, radius, material=mat)
        springs = self.read_springs(prim, start, n, dims)
        self.scene.particle_groups.append((name, rng))
        desc = f"Points: {n} particles, radius {radius.min():g}-{radius.max():g} m, mass {mass.sum():g} kg total"
        if springs:
            desc += f", {springs} springs"
        self.scene.items.append((str(prim.GetPath()), desc))

    def read_springs(self, prim, start, n, dims):
        b = self.scene.builder
        idx = self.attr(prim, "kc:springs:indices", kind="int2s")
        grid = self.attr(prim, "kc:springs:grid", False, kind="bool")
        if idx is None and not grid:
            return 0
        ke = self.attr(prim, "kc:springs:ke")
        kd = self.attr(prim, "kc:springs:kd", 0.0)
        if ke is None or np.ndim(ke) or ke < 0:
            raise self.err(prim, f"kc:springs:ke must be a number >= 0 when springs are given, got {ke}")
        if np.ndim(kd) or kd < 0:
            raise self.err(prim, f"kc:springs:kd must be a number >= 0, got {kd}")
        first = b.spring_count
        if idx is not None and len(idx):
            if idx.min() < 0 or idx.max() >= n or np.any(idx[:, 0] == idx[:, 1]):
                raise self.err(prim, f"kc:springs:indices must be pairs of distinct indices in [0, {n})")
            for i, j in idx:
                b.add_spring(start + int(i), start + int(j), float(ke), float(kd))
        if grid:
            if dims is None:
                raise self.err(prim, "kc:springs:grid needs a generated grid (kc:grid:dims)")
            shear = self.attr(prim, "kc:springs:shear", True, kind="bool")
            b.add_spring_grid(start, int(dims[0]), int(dims[1]), int(dims[2]), float(ke), float(kd), shear=shear)
        return b.spring_count - first

    def _per_point(self, prim, name, value, n):
        v = np.asarray(value, np.float64).reshape(-1)
        if v.size == 1:
            return np.full(n, float(v[0]))
        if v.size != n:
            raise self.err(prim, f"{name} has {v.size} values for {n} points (give one or one per point)")
        return v

    # -- rigid bodies ---------------------------------------------------------------------------------
    def body_prim_of(self, prim):
        """The nearest prim at or above ``prim`` that is a rigid body, or None."""
        p = prim
        while p and p.IsValid() and not p.IsPseudoRoot():
            if str(p.GetPath()) in self.bodies:
                return p
            p = p.GetParent()
        return None

    def read_rigid_body(self, prim):
        b = self.scene.builder
        if self.body_prim_of(prim.GetParent()) is not None:
            raise self.err(prim, "a rigid body inside another rigid body is not supported")
        t, q, _ = self.decompose(prim, allow_shear=True)
        vel = self.attr(prim, "physics:velocity", np.zeros(3), kind="vec3") * self.mpu
        ang = np.radians(self.attr(prim, "physics:angularVelocity", np.zeros(3), kind="vec3"))
        mass = inertia = com = None
        if prim.HasAPI(self.UsdPhysics.MassAPI):
            m = self.attr(prim, "physics:mass")
            if m is not None and m != 0:  # 0: not authored (USD's convention)
                if not m > 0:
                    raise self.err(prim, f"physics:mass must be > 0, got {m}")
                mass = float(m)
            c = self.attr(prim, "physics:centerOfMass", kind="vec3")
            if c is not None and np.all(np.isfinite(c)) and np.all(np.abs(c) < 1e30):
                com = c * self.mpu
            d = self.attr(prim, "physics:diagonalInertia", kind="vec3")
            if d is not None and np.any(d != 0):
                pa = prim.GetAttribute("physics:principalAxes")
                axes = pa.Get() if pa and pa.HasAuthoredValue() else None
                rot = np.eye(3)
                if axes is not None:
                    im = axes.GetImaginary()
                    rot = _quat_matrix((im[0], im[1], im[2], axes.GetReal()))
                inertia = rot @ np.diag(d * self.mpu * self.mpu) @ rot.T
        try:
            idx = b.add_body(tuple(t) + tuple(q), mass=mass, inertia=inertia, com=com, name=prim.GetName(),
                             vel=vel, ang_vel=ang)
        except ValueError as e:
            raise self.err(prim, str(e).replace("add_body: ", "")) from None
        self.bodies[str(prim.GetPath())] = idx
        self.scene.items.append((str(prim.GetPath()), f"rigid body {idx}" + (f", mass {mass:g} kg" if mass else "")))

    def shape_frame(self, prim):
        """(body index or -1, pos, rot quaternion, scale (3,)) of a collider prim: in its body's frame when it
        belongs to a rigid body, else in world."""
        t, q, s = self.decompose(prim)
        owner = self.body_prim_of(prim)
        if owner is None:
            return -1, t, q, s
        bt, bq, _ = self.decompose(owner, allow_shear=True)
        inv = (-bq[0], -bq[1], -bq[2], bq[3])
        return self.bodies[str(owner.GetPath())], _rotate(inv, t - bt), _quat_mul(inv, q), s

    def density(self, prim):
        """physics:density [kg/m^3] of a collider (or its body), default 1000."""
        for p in (prim, self.body_prim_of(prim)):
            if p is not None and p.HasAPI(self.UsdPhysics.MassAPI):
                d = self.attr(p, "physics:density")
                if d is not None and d != 0:
                    if not d > 0:
                        raise self.err(p, f"physics:density must be > 0, got {d}")
                    return float(d) / self.mpu ** 3
        return 1000.0

    def read_capsule(self, prim):
        r = self.attr(prim, "radius", 0.5)
        h = self.attr(prim, "height", 1.0)
        axis = self.attr(prim, "axis", "Z", kind="token")
        for name, v in (("radius", r), ("height", h)):
            if np.ndim(v) or not v > 0:
                raise self.err(prim, f"{name} must be > 0, got {v}")
        s2 = math.sqrt(0.5)
        # our capsule runs along local Y; USD's along `axis`
        to_axis = {"Y": (0.0, 0.0, 0.0, 1.0), "Z": (s2, 0.0, 0.0, s2), "X": (0.0, 0.0, -s2, s2)}.get(axis)
        if to_axis is None:
            raise self.err(prim, f"axis must be X, Y or Z, got '{axis}'")
        body, t, q, s = self.shape_frame(prim)
        s = np.abs(s)
        if s.max() - s.min() > 1e-6 * s.max():
            raise self.err(prim, f"non-uniform scale {s.tolist()} on a Capsule collider is not supported")
        radius, half = r * s[0] * self.mpu, 0.5 * h * s[0] * self.mpu
        self.scene.builder.add_shape_capsule(t, _quat_mul(q, to_axis), radius, half, material=self.material(prim),
                                             name=prim.GetName(), body=body, density=self.density(prim))
        where = f"body {body}" if body >= 0 else "static"
        self.scene.items.append((str(prim.GetPath()), f"Capsule collider ({where}): radius {radius:g} m, "
                                                       f"half height {half:g} m"))

    # -- colliders ------------------------------------------------------------------------------------
    def read_mesh(self, prim):
        if self.body_prim_of(prim) is not None:
            raise self.err(prim, "Mesh colliders on rigid bodies are not supported (static only)")
        pts = self.attr(prim, "points", kind="vec3s")
        counts = self.attr(prim, "faceVertexCounts", kind="ints")
        indices = self.attr(prim, "faceVertexIndices", kind="ints")
        if pts is None or counts is None or indices is None or len(pts) == 0 or len(counts) == 0:
            raise self.err(prim, "collision Mesh needs points, faceVertexCounts and faceVertexIndices")
        if np.any(counts < 3) or counts.sum() != len(indices):
            raise self.err(prim, f"faceVertexCounts (sum {counts.sum()}, each >= 3) do not match "
                                 f"{len(indices)} faceVertexIndices")
        if indices.min() < 0 or indices.max() >= len(pts):
            raise self.err(prim, f"faceVertexIndices must lie in [0, {len(pts)})")
        orient = self.attr(prim, "orientation", "rightHanded", kind="token")
        tris = []
        k = 0
        for c in counts:  # fan triangulation
            face = indices[k:k + c]
            for m in range(1, c - 1):
                tris.append((face[0], face[m], face[m + 1]) if orient != "leftHanded" else (face[0], face[m + 1], face[m]))
            k += c
        M = self.world(prim)
        world = (np.hstack([pts, np.ones((len(pts), 1))]) @ M)[:, :3] * self.mpu
        if np.linalg.det(M[:3, :3]) < 0:  # mirrored transform flips the winding
            tris = [(a, c, b_) for a, b_, c in tris]
        b = self.scene.builder
        b.add_shape_mesh(world, np.asarray(tris, np.int32), material=self.material(prim), name=prim.GetName())
        self.scene.items.append((str(prim.GetPath()), f"Mesh collider: {len(pts)} vertices, {len(tris)} triangles"))

    def read_cube(self, prim):
        size = self.attr(prim, "size", 2.0)
        if np.ndim(size) or not size > 0:
            raise self.err(prim, f"size must be > 0, got {size}")
        body, t, q, s = self.shape_frame(prim)
        he = 0.5 * size * np.abs(s) * self.mpu
        if np.any(he <= 0):
            raise self.err(prim, f"scale must be non-zero, got {s.tolist()}")
        self.scene.builder.add_shape_box(t, q, he, material=self.material(prim), name=prim.GetName(), body=body,
                                         density=self.density(prim))
        where = f" (body {body})" if body >= 0 else ""
        self.scene.items.append((str(prim.GetPath()), f"Cube collider{where}: half extents {np.round(he, 4).tolist()} m"))

    def read_sphere(self, prim):
        r = self.attr(prim, "radius", 1.0)
        if np.ndim(r) or not r > 0:
            raise self.err(prim, f"radius must be > 0, got {r}")
        body, t, q, s = self.shape_frame(prim)
        s = np.abs(s)
        if s.max() - s.min() > 1e-6 * s.max():
            raise self.err(prim, f"non-uniform scale {s.tolist()} on a Sphere collider is not supported")
        radius = r * s[0] * self.mpu
        self.scene.builder.add_shape_sphere(t, radius, material=self.material(prim), name=prim.GetName(), body=body,
                                            density=self.density(prim), rot=q)
        where = f" (body {body})" if body >= 0 else ""
        self.scene.items.append((str(prim.GetPath()), f"Sphere collider{where}: radius {radius:g} m"))

    def read_plane(self, prim):
        if self.body_prim_of(prim) is not None:
            raise self.err(prim, "Plane colliders on rigid bodies are not supported (static only)")
        axis = self.attr(prim, "axis", "Z", kind="token")
        width = float(self.attr(prim, "width", 2.0))
        length = float(self.attr(prim, "length", 2.0))
        t, q, s = self.decompose(prim)
        s2 = math.sqrt(0.5)
        # our plane's normal is local +Y with width along X and length along Z; USD's is along `axis`
        to_axis = {"Y": (0.0, 0.0, 0.0, 1.0), "Z": (s2, 0.0, 0.0, s2), "X": (0.0, 0.0, -s2, s2)}.get(axis)
        if to_axis is None:
            raise self.err(prim, f"axis must be X, Y or Z, got '{axis}'")
        rot = _quat_mul(q, to_axis)
        # USD Plane: width along the first other axis, length along the second; approximate sizes for display
        ws = {"X": (s[1], s[2]), "Y": (s[0], s[2]), "Z": (s[0], s[1])}[axis]
        self.scene.builder.add_shape_plane(t, rot, width * abs(ws[0]) * self.mpu, length * abs(ws[1]) * self.mpu,
                                           material=self.material(prim), name=prim.GetName())
        normal = _rotate(rot, (0.0, 1.0, 0.0))
        self.scene.items.append((str(prim.GetPath()), f"Plane collider: normal ({normal[0]:.3g}, {normal[1]:.3g}, "
                                                       f"{normal[2]:.3g}) through ({t[0]:g}, {t[1]:g}, {t[2]:g})"))


def _quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def _rotate(q, v):
    return _quat_matrix(q) @ np.asarray(v, np.float64)


def _quat_matrix(q):
    from sim.builder import quat_to_matrix

    return quat_to_matrix(q)
