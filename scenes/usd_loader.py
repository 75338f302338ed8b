"""Read a USD scene (.usda/.usd/.usdc) into a sim.ModelBuilder plus solver settings.

This is the only module of scenes/ that imports ``pxr`` (usd-core), lazily in
:func:`load_usd`.  The scene format (our own attributes live in the ``kc:`` namespace):

* ``PhysicsScene`` (UsdPhysics.Scene, at most one): ``physics:gravityDirection`` and
  ``physics:gravityMagnitude`` (defaults: minus the stage up axis, 9.81 m/s^2);
  ``float kc:timeStep`` — frame time step [s] (default 1/60); ``int kc:substeps``
  (default 10); ``token kc:solver`` — ``"semi_implicit"`` (default), ``"dem"``, ``"pbf"``,
  ``"featherstone"`` or ``"mpm"`` (continuum particles, ``kc:mpm:*`` settings: see :mod:`scenes.usd_mpm`);
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
  ``Sphere``, ``Capsule`` and ``Mesh`` colliders at or below it are its shapes (a Mesh
  must be closed unless the body has a ``physics:mass``; ``Plane`` colliders stay
  static: an error on a body).  ``PhysicsMeshCollisionAPI`` with
  ``physics:approximation = "convexHull"`` makes a Mesh collide as its convex hull.  ``physics:velocity``
  [units/s] and ``physics:angularVelocity`` [deg/s] set its initial motion.
  ``physics:rigidBodyEnabled = false`` makes it a static collider, as UsdPhysics defines.
  ``PhysicsMassAPI`` on the body: ``physics:mass`` [kg], ``physics:centerOfMass`` (body
  frame), ``physics:diagonalInertia`` with ``physics:principalAxes`` override what the
  shapes give; ``physics:density`` [kg/m^3] on the body or one of its colliders sets
  the shapes' density (default 1000).  ``PhysicsMassAPI`` on a prim that is not part of
  a body has no effect (a warning).
* Physics materials: a ``material:binding:physics`` (or a plain ``material:binding`` to
  a material with ``PhysicsMaterialAPI``) on the prim or an ancestor (e.g. its body)
  gives ``physics:dynamicFriction`` (Coulomb ``mu``) and ``physics:restitution``;
  ``kc:material:*`` on the prim override them.
* ``bool kc:toi`` on the PhysicsScene: time-of-impact contacts (``SolverSemiImplicit(toi=True)``).
* ``kc:solver = "pbf"`` (position-based fluid, ``sim.SolverPBF``): every particle is fluid;
  the PhysicsScene gives ``float kc:fluid:smoothingLength`` (kernel radius h [units]),
  ``point3f kc:fluid:lower`` / ``kc:fluid:upper`` (the domain box), and optionally
  ``float kc:fluid:restDensity`` [kg/m^3] (default 1000), ``int kc:fluid:iterations``,
  ``float kc:fluid:xsph``, ``float kc:fluid:vorticity`` [m/s].  Author the particles'
  ``kc:mass`` as rest density times spacing^3 (``kc:density`` gives sphere masses).
* Robots: an ``Xform`` with ``asset kc:robot = @arm.urdf@`` (URDF or MJCF, ``bool
  kc:robot:floating`` for a free URDF base) imports that file at the prim's transform.
* Joints between rigid bodies: ``PhysicsRevoluteJoint``, ``PhysicsPrismaticJoint``,
  ``PhysicsSphericalJoint``, ``PhysicsFixedJoint`` with limits, ``PhysicsDriveAPI`` and
  ``PhysicsArticulationRootAPI`` (see scenes/usd_joints.py); a scene with joints is stepped
  by ``SolverFeatherstone`` unless ``kc:solver`` says otherwise (``"featherstone"`` can be
  named too).
* Cloth: a ``Mesh`` with ``bool kc:cloth = true`` (docs/cloth.md): ``float kc:cloth:density``
  [kg/m^2], ``kc:cloth:triKe``, ``kc:cloth:triKa`` [N/m], ``kc:cloth:triKd``, ``kc:cloth:edgeKe``,
  ``kc:cloth:edgeKd``, ``kc:radius`` [m], ``kc:velocity``, ``kc:fixedIndices``, ``kc:material:*``;
  ``kc:cloth:triDrag``, ``kc:cloth:triLift`` [kg/m^3];
  ``float kc:cloth:selfContact`` (thickness [m]) on the PhysicsScene turns self-contact on,
  ``vector3f kc:cloth:wind`` [m/s] sets the air velocity;
  ``kc:solver = "xpbd"`` picks SolverXPBD, ``"vbd"`` SolverVBD.
* ``Xform``, ``Scope``, cameras, lights, materials and shaders carry no physics; other
  geometry without ``PhysicsCollisionAPI`` is visual only (a note).

Nothing is ignored silently: every authored prim, attribute, relationship and applied
API schema is either read or reported.  ``kc:`` attributes are checked against
:mod:`scenes.schema` (a misspelling is an error suggesting the nearest known name).  A
UsdPhysics/UsdGeom feature that kcsim does not support yet (joints, kinematic bodies,
animated transforms, other collider types, unused attributes, ...) is a *warning*
naming the prim and the feature, collected in ``Scene.warnings`` — an error when loading
with ``strict=True`` (``kcsim --strict``).  An unresolved sublayer or reference, an
unknown prim type and a scene with nothing to simulate are errors.

Lengths are in stage units scaled by ``metersPerUnit`` when the stage authors it
(else metres).  Every problem raises :class:`SceneError` naming the file and prim.
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
from fractions import Fraction

import numpy as np

import sim

from . import schema, usd_mpm
from .cloth_uv import read_cloth_uvs
from .usd_joints import JOINT_PRIM_TYPES, UsdJointReader, UsdRobotReader

SOLVERS = ("semi_implicit", "dem", "pbf", "featherstone", "mpm", "xpbd", "vbd")
# prims with no physics meaning: their own attributes are presentation only
IGNORED_TYPES = {"", "Xform", "Scope", "Camera", "Material", "Shader", "NodeGraph", "GeomSubset",
                 "SkelRoot", "Skeleton", "SkelAnimation", "RenderSettings", "RenderProduct", "RenderVar",
                 "GeomCamera"}
COLLIDER_TYPES = {"Mesh", "Cube", "Sphere", "Capsule", "Plane"}
# collider types that can be shapes of a rigid body (Plane colliders are static only)
BODY_SHAPE_TYPES = {"Cube", "Sphere", "Capsule", "Mesh"}
# UsdGeom prims that can be drawn but not (yet) collide: visual only without PhysicsCollisionAPI
VISUAL_TYPES = {"Cylinder", "Cone", "BasisCurves", "NurbsCurves", "NurbsPatch", "PointInstancer",
                "HermiteCurves", "TetMesh", "Capsule_1", "Cylinder_1"}
# attributes that only affect how a prim looks (never physics): read by nobody, reported to nobody
PRESENTATION_ATTRS = {"visibility", "purpose", "extent", "xformOpOrder", "doubleSided", "normals",
                      "subdivisionScheme", "interpolateBoundary", "faceVaryingLinearInterpolation",
                      "triangleSubdivisionRule", "cornerIndices", "cornerSharpnesses", "creaseIndices",
                      "creaseLengths", "creaseSharpnesses"}
PRESENTATION_PREFIXES = ("primvars:", "xformOp:", "ui:", "info:", "inputs:", "outputs:", "userProperties:",
                         "texCoord", "st")
# what a plain custom attribute on a rigid body's Xform was probably meant to be
_BODY_HINTS = ("physics:mass", "physics:density", "physics:velocity", "physics:angularVelocity")
PRESENTATION_RELS = {"proxyPrim", "material:binding", "material:binding:full", "material:binding:preview"}
# bytes of memory per particle while loading and simulating (numpy temporaries, the
# builder's Python lists, the model and two states); measured with 1e6 particles
# (scenes/README.md), rounded up
BYTES_PER_PARTICLE = 1000
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
        fps: frames per second as an exact Fraction (60, or 30000/1001 for NTSC rates);
        particle_groups: [(prim path, range of particle indices)] per Points prim;
        spring_groups: {prim path: range of spring indices} of Points prims with springs;
        group_colors: {prim path: RGB} from the prim's displayColor or its material;
        shape_paths: prim path of each collider (shape index order);
        items: [(prim path, description)] of everything loaded; notes: [str] of visual-only
        prims and other things that need no physics; warnings: [str] of features kcsim
        does not support yet that were ignored (errors with ``strict``).
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
        self.spring_groups = {}
        self.group_colors = {}
        self.shape_paths = []
        self.toi = False
        self.fluid = {}     # SolverPBF keywords (kc:solver = "pbf")
        self.mpm = None  # usd_mpm.MPMSettings of a kc:solver = "mpm" scene
        self.cloth_groups = {}            # prim path -> (particle range, triangles (m, 3) local to the range)
        self.cloth_uvs = {}               # prim path -> texture coordinates (n, 2) of its vertices
        self.cloth_self_contact = 0.0     # thickness [m] of cloth self-contact (0: off)
        self.items = []
        self.notes = []
        self.warnings = []

    @property
    def fps(self) -> Fraction:
        """Frames per second as an exact rational (1 / frame_dt snapped to a denominator <= 1001)."""
        return exact_rate(1.0 / self.frame_dt)

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
        if self.solver == "pbf":
            try:
                return sim.SolverPBF(model, **self.fluid)
            except ValueError as e:
                raise SceneError(self.path, f"kc:fluid settings: {e}") from None
        if self.solver == "featherstone":  # robots (scenes/robot_loader.py)
            return sim.SolverFeatherstone(model)
        if self.solver == "mpm":
            try:
                return self.mpm.make_solver(model)
            except ValueError as e:
                raise SceneError(self.path, str(e).replace("SolverMPM: ", "MPM: "), self.mpm.prim_path) from None
        if self.solver == "xpbd":
            return sim.SolverXPBD(model)
        contact = sim.ClothSelfContact(model, thickness=self.cloth_self_contact) if self.cloth_self_contact > 0 else None
        if self.solver == "vbd":
            return sim.SolverVBD(model, self_contact=contact)
        return sim.SolverSemiImplicit(model, toi=self.toi, self_contact=contact)

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
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def exact_rate(rate: float) -> Fraction:
    """``rate`` [1/s] as an exact film/video rate when it is one within float32 precision:
    a whole number (60.0000024 -> 60) or an NTSC rate N*1000/1001 (29.97003 -> 30000/1001);
    any other rate is kept as the float it is."""
    for f in (Fraction(round(rate)), Fraction(round(rate * 1.001) * 1000, 1001)):
        if f > 0 and abs(float(f) - rate) <= 1e-6 * rate:
            return f
    return Fraction(rate)


def load_usd(path, strict: bool = False) -> Scene:
    """Read the scene file at ``path`` (see the module docstring for the format).

    ``strict``: an unsupported feature (see ``Scene.warnings``) raises SceneError instead.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise SceneError(path, "file not found" if not os.path.exists(path) else "not a file")
    try:
        from pxr import Usd, UsdGeom, UsdPhysics, Gf  # noqa: F401  (usd-core, only here)
    except ImportError as e:  # pragma: no cover - usd-core is a dependency
        raise SceneError(path, f"usd-core is needed to read scenes ({e}); pip install usd-core") from None
    try:
        with _quiet_stderr():  # USD prints composition problems itself; we report them once below
            stage = Usd.Stage.Open(path)
    except Exception as e:
        raise SceneError(path, f"malformed USD: {_first_line(e)}") from None
    if stage is None:
        raise SceneError(path, "malformed USD: the stage could not be opened")
    errors = stage.GetCompositionErrors()
    if errors:
        more = f" (and {len(errors) - 1} more composition error(s))" if len(errors) > 1 else ""
        raise SceneError(path, f"unresolved layer or reference: {_first_line(errors[0])}{more}")
    return _Reader(path, stage, strict).read()


@contextlib.contextmanager
def _quiet_stderr():
    """Silence what C++ code writes to file descriptor 2 (USD's own warning printer)."""
    try:
        fd = os.dup(2)
    except OSError:  # no stderr at all
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(fd, 2)
            os.close(fd)


def _first_line(e):
    text = " ".join(str(e).split())
    # pxr errors look like "Error in '...' at line N in file F : 'message'"; keep the message
    if " : '" in text:
        text = text.split(" : '", 1)[1].rstrip("'")
    return text[:400]


class _Reader(UsdJointReader, UsdRobotReader):
    def __init__(self, path, stage, strict=False):
        from pxr import Gf, Usd, UsdGeom, UsdPhysics

        self.Gf, self.Usd, self.UsdGeom, self.UsdPhysics = Gf, Usd, UsdGeom, UsdPhysics
        self.path, self.stage, self.strict = path, stage, bool(strict)
        self.scene = Scene(path)
        self.cache = UsdGeom.XformCache(Usd.TimeCode.EarliestTime())
        self.used = {}  # prim path -> names of attributes/relationships read (or already reported)
        self.kinds = {}  # prim path -> schema kind for the kc: check ("Points", "collider", ...)
        self.bound_materials = set()  # paths of physics materials bound to something
        self.particles_planned = 0
        self.solver_given = False
        self.mpu = 1.0
        if stage.HasAuthoredMetadata("metersPerUnit"):
            self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
            if not (self.mpu > 0 and math.isfinite(self.mpu)):
                raise SceneError(path, f"metersPerUnit must be > 0, got {self.mpu}")
        up = UsdGeom.GetStageUpAxis(stage) if stage.HasAuthoredMetadata("upAxis") else "Y"
        self.scene.up_axis = "Z" if str(up) == "Z" else "Y"
        self.bodies = {}  # prim path -> body index
        self._init_joints()

    # -- helpers ---------------------------------------------------------------------------------
    def err(self, prim, msg):
        return SceneError(self.path, msg, prim.GetPath() if prim is not None else None)

    def warn(self, prim, msg):
        """Report a feature kcsim does not support yet (an error in strict mode)."""
        if self.strict:
            raise self.err(prim, msg + " (an error because of --strict)")
        where = f"prim {prim.GetPath()}: " if prim is not None else ""
        text = where + msg
        if text not in self.scene.warnings:
            self.scene.warnings.append(text)

    def use(self, prim, *names):
        self.used.setdefault(prim.GetPath(), set()).update(names)

    def attr(self, prim, name, default=None, kind="float"):
        """Value of attribute ``name`` converted to ``kind`` ("float", "int", "bool", "token",
        "vec3", "int3", "floats", "ints", "vec3s", "int2s"), or ``default`` when absent."""
        self.use(prim, name)
        a = prim.GetAttribute(name)
        if not a or not a.HasAuthoredValue():
            return default
        if a.GetNumTimeSamples() > 1:
            self.warn(prim, f"attribute '{name}' is animated ({a.GetNumTimeSamples()} time samples); "
                            f"kcsim reads its first sample only")
        v = a.Get(self.Usd.TimeCode.EarliestTime())
        if v is None:
            return default
        try:
            if kind == "float":
                if isinstance(v, (str, bool)):
                    raise TypeError
                if hasattr(v, "__len__"):
                    return np.asarray(list(v), np.float64)
                out = float(v)
            elif kind == "int":
                if isinstance(v, (str, bool)) or hasattr(v, "__len__"):
                    raise TypeError
                out = int(v)
                if out != v:
                    raise TypeError
            elif kind == "bool":
                if not isinstance(v, (bool, int)) or isinstance(v, float):
                    raise TypeError
                return bool(v)
            elif kind == "token":
                if not isinstance(v, str):
                    raise TypeError
                return str(v)
            elif kind == "vec3":
                out = np.asarray(list(v), np.float64)
                if out.shape != (3,):
                    raise TypeError
            elif kind == "int3":
                out = _integers(list(v))
                if out.shape != (3,):
                    raise TypeError
            elif kind == "floats":
                out = np.asarray(list(v), np.float64).reshape(-1)
            elif kind == "ints":
                out = _integers(list(v)).reshape(-1)
            elif kind == "vec3s":
                out = np.asarray([list(x) for x in v], np.float64).reshape(-1, 3)
            elif kind == "int2s":
                out = _integers([list(x) for x in v]).reshape(-1, 2)
            else:  # pragma: no cover
                raise ValueError(kind)
        except (TypeError, ValueError):
            raise self.err(prim, f"attribute '{name}' has the wrong type (expected {kind}, got "
                                 f"{a.GetTypeName()} {str(v)[:60]})") from None
        if kind in ("float", "vec3", "floats", "vec3s") and not np.all(np.isfinite(out)):
            raise self.err(prim, f"attribute '{name}' is not finite: {str(v)[:60]}")
        return out

    def world(self, prim):
        """(4, 4) local-to-world matrix as numpy, row-vector convention (p_world = p @ M)."""
        self.check_static_transform(prim)
        m = self.cache.GetLocalToWorldTransform(prim)
        out = np.array([[m[i][j] for j in range(4)] for i in range(4)], np.float64)
        if not np.all(np.isfinite(out)):
            raise self.err(prim, "the transform (xformOps of the prim or a parent) is not finite")
        lin = out[:3, :3]
        if abs(np.linalg.det(lin)) <= 1e-12 * np.abs(lin).max() ** 3:  # all points would collapse onto a plane
            raise self.err(prim, "the transform (xformOps of the prim or a parent) is singular (a zero scale?)")
        return out

    def check_static_transform(self, prim):
        """Warn when the prim's transform (or an ancestor's) is animated: kcsim uses the first sample."""
        p = prim
        while p and not p.IsPseudoRoot():
            xf = self.UsdGeom.Xformable(p)
            if xf and xf.TransformMightBeTimeVarying():
                what = "collider" if self.kinds.get(prim.GetPath()) == "collider" else "prim"
                self.warn(prim, f"animated transform (time-sampled xformOps on {p.GetPath()}) is not supported "
                                f"yet; the {what} is placed at its first sample and stays there")
                return
            p = p.GetParent()

    def decompose(self, prim, allow_shear=False):
        """(translation [m], rotation quaternion (x, y, z, w), scale (3,)) of the prim's world transform."""
        self.world(prim)  # checks: static, finite
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
        """kc material parameters from a bound UsdPhysics material (prim or ancestor, e.g. the
        prim's rigid body), {} if none.  ``material:binding:physics`` wins over a plain
        ``material:binding``, which counts only when its target has PhysicsMaterialAPI."""
        p = prim
        while p and not p.IsPseudoRoot():
            for rel_name in ("material:binding:physics", "material:binding"):
                rel = p.GetRelationship(rel_name)
                if not (rel and rel.HasAuthoredTargets()):
                    continue
                targets = rel.GetTargets()
                mat = self.stage.GetPrimAtPath(targets[0]) if targets else None
                if rel_name == "material:binding":
                    if mat is None or not mat.IsValid() or not mat.HasAPI(self.UsdPhysics.MaterialAPI):
                        continue  # a visual material binding (presentation only)
                self.use(p, rel_name)
                if mat is None or not mat.IsValid():
                    raise self.err(p, f"material:binding:physics targets {targets[0] if targets else 'nothing'}, "
                                      f"which does not exist")
                if not mat.HasAPI(self.UsdPhysics.MaterialAPI):
                    self.warn(p, f"material:binding:physics targets {mat.GetPath()}, which has no "
                                 f"PhysicsMaterialAPI (ignored)")
                    return {}
                return self.read_physics_material(mat, prim)
            p = p.GetParent()
        return {}

    def read_physics_material(self, mat, prim):
        """{mu, restitution} of a Material prim with PhysicsMaterialAPI bound to ``prim``."""
        self.bound_materials.add(mat.GetPath())
        params = {}
        mu = self.attr(mat, "physics:dynamicFriction")
        mu_s = self.attr(mat, "physics:staticFriction")
        if mu is None and mu_s is not None:
            mu = mu_s
        elif mu is not None and mu_s is not None and abs(mu - mu_s) > 1e-9:
            self.warn(mat, f"physics:staticFriction {mu_s:g} differs from physics:dynamicFriction "
                           f"{mu:g}; kcsim has one Coulomb coefficient and uses the dynamic one")
        if mu is not None:
            params["mu"] = float(mu)
        e = self.attr(mat, "physics:restitution")
        if e is not None:
            params["restitution"] = float(e)
        if self.attr(mat, "physics:density") is not None and self.kinds.get(prim.GetPath()) == "Points":
            self.warn(mat, "physics:density of a physics material is not used for particles (their mass "
                           "comes from kc:mass or kc:density)")
        return params

    def material(self, prim):
        """Material index for the prim's physics material and kc:material:* attributes (0 = default)."""
        params = self.physics_material(prim)
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
            raise self.err(prim, str(e).replace("add_material: ", "material: ")) from None

    def display_color(self, prim):
        """The prim's constant displayColor (RGB) or None."""
        self.use(prim, "primvars:displayColor")
        a = prim.GetAttribute("primvars:displayColor")
        if not a or not a.HasAuthoredValue():
            return None
        v = a.Get(self.Usd.TimeCode.EarliestTime())
        try:
            c = np.asarray([list(x) for x in v] if hasattr(v[0], "__len__") else [list(v)], np.float64)
        except (TypeError, IndexError):
            return None
        return tuple(float(x) for x in c[0]) if c.shape[1:] == (3,) and np.all(np.isfinite(c[0])) else None

    # -- reading ------------------------------------------------------------------------------------
    def prims(self):
        Usd = self.Usd
        return [p for p in Usd.PrimRange.Stage(self.stage, Usd.TraverseInstanceProxies())]

    def read(self):
        UsdPhysics = self.UsdPhysics
        prims = self.prims()
        scenes = [p for p in prims if p.IsA(UsdPhysics.Scene)]
        if len(scenes) > 1:
            raise self.err(scenes[1], f"more than one PhysicsScene (first is {scenes[0].GetPath()})")
        self.read_physics_scene(scenes[0] if scenes else None)
        for prim in prims:
            if not prim.IsA(UsdPhysics.Scene):
                try:
                    self.read_prim(prim)
                except SceneError:
                    raise
                except ValueError as e:  # the builder's own checks (e.g. a non-finite transform)
                    raise self.err(prim, str(e)) from None
        self.read_joints()
        if getattr(self.scene.builder, "joint_count", 0) and hasattr(sim, "SolverFeatherstone") and \
                not self.solver_given:
            self.scene.solver = "featherstone"
        if self.scene.solver == "featherstone":
            self.free_loose_bodies()
        for prim in prims:  # after all bindings are known
            self.check_unused(prim)
        self.check_undefined()
        b = self.scene.builder
        if b.particle_count == 0 and b.body_count == 0:
            raise SceneError(self.path, "nothing to simulate: the scene has no Points prim (particles) and no "
                                        "rigid body (PhysicsRigidBodyAPI); see scenes/library/*.usda for examples")
        if b.particle_count == 0:
            self.scene.notes.append("the scene has no particles (rigid bodies only)")
        return self.scene

    def check_kc_names(self, prim, kind):
        """A misspelled or misplaced kc: attribute is an error, found before it is missed."""
        for name in prim.GetPropertyNames():
            if name.startswith("kc:") and prim.GetAttribute(name).HasAuthoredValue():
                problem = schema.check_kc_attribute(name, kind)
                if problem:
                    raise self.err(prim, problem)

    def read_prim(self, prim):
        UsdPhysics = self.UsdPhysics
        t = str(prim.GetTypeName())
        path = prim.GetPath()
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            # disabled: a static collider, as USD Physics defines it
            if self.attr(prim, "physics:rigidBodyEnabled", True, kind="bool"):
                if t == "Points":
                    raise self.err(prim, "PhysicsRigidBodyAPI on a Points prim is not supported (particles are "
                                         "simulated one by one; put the body's colliders under an Xform)")
                self.read_rigid_body(prim)
        if prim.GetAttribute("kc:robot").HasAuthoredValue():
            if t not in ("Xform", ""):
                raise self.err(prim, f"kc:robot belongs on an Xform prim, not a {t}")
            self.read_robot(prim)
        elif t == "Mesh" and prim.GetAttribute("kc:cloth").HasAuthoredValue() and \
                self.attr(prim, "kc:cloth", False, kind="bool"):
            self.kinds[path] = "Cloth"
            self.check_kc_names(prim, "Cloth")
            self.read_cloth(prim)
        elif t == "Points":
            self.kinds[path] = "Points"
            self.check_kc_names(prim, "Points")
            self.read_points(prim)
        elif t == "Cube" and self.scene.solver == "mpm" and prim.GetAttribute("kc:mpm:material").HasAuthoredValue():
            self.kinds[path] = "mpm Cube"  # a block of continuum material (scenes/usd_mpm.py)
            self.check_kc_names(prim, "mpm Cube")
            usd_mpm.read_cube_block(self, prim)
        elif t in COLLIDER_TYPES:
            has_api = prim.HasAPI(UsdPhysics.CollisionAPI)
            enabled = has_api and self.attr(prim, "physics:collisionEnabled", True, kind="bool")
            if enabled:
                self.kinds[path] = "collider"
                self.check_kc_names(prim, "collider")
                getattr(self, "read_" + t.lower())(prim)
            else:
                self.kinds[path] = "visual"
                why = "collision disabled" if has_api else "without PhysicsCollisionAPI"
                self.scene.notes.append(f"{path}: {t} {why} (visual only, ignored)")
        elif t in VISUAL_TYPES:
            self.kinds[path] = "visual"
            if prim.HasAPI(UsdPhysics.CollisionAPI):
                self.warn(prim, f"a {t} collider is not supported yet (colliders: "
                                f"{', '.join(sorted(COLLIDER_TYPES))}); the prim is ignored")
            else:
                self.scene.notes.append(f"{path}: {t} (visual only, ignored)")
        elif t in JOINT_PRIM_TYPES:
            self.collect_joint(prim)  # added by read_joints once every body is known
        elif t.startswith("Physics"):
            self.kinds[path] = "unsupported"
            self.warn(prim, f"{t} is not supported yet (ignored)")
        elif t in IGNORED_TYPES or t.endswith("Light"):
            self.kinds[path] = "Material" if t == "Material" else "ignored"
            if prim.HasAPI(UsdPhysics.CollisionAPI):
                self.warn(prim, f"PhysicsCollisionAPI on a prim of type '{t or 'untyped'}' is not supported "
                                f"(colliders: {', '.join(sorted(COLLIDER_TYPES))}); ignored")
        else:
            raise self.err(prim, f"unsupported prim type '{t}'{schema.suggest(t, schema.KNOWN_TYPES)} "
                                 f"(supported: Points, {', '.join(sorted(COLLIDER_TYPES))} colliders, Xform, "
                                 f"Scope, PhysicsScene)")

    def check_unused(self, prim):
        """Report every authored property and physics API of ``prim`` that nothing read."""
        path = prim.GetPath()
        kind = self.kinds.get(path, "ignored")
        used = self.used.get(path, set())
        in_body = self.body_prim_of(prim) is not None
        for api in prim.GetAppliedSchemas():
            api = str(api)
            if self.joint_api_read(path, api):
                continue  # read by usd_joints
            if api in ("PhysicsCollisionAPI",) and kind in ("collider", "visual", "unsupported", "ignored"):
                continue  # read (or reported) with the prim
            if api == "PhysicsRigidBodyAPI" and "physics:rigidBodyEnabled" in used:
                continue  # read: a body, or a disabled one (a static collider, as USD Physics defines it)
            if api == "PhysicsMassAPI" and in_body:
                continue  # read by read_rigid_body / density (its unread attributes are reported below)
            if api == "PhysicsMaterialAPI":
                if path not in self.bound_materials:
                    self.scene.notes.append(f"{path}: physics material not bound to any prim (unused)")
                used = used | {n for n in prim.GetPropertyNames() if n.startswith("physics:")}
                continue
            if api.startswith(("Physics", "Physx", "PhysX")):
                if api == "PhysicsMassAPI":
                    hint = " (particle mass comes from kc:mass or kc:density)" if kind == "Points" else ""
                    self.warn(prim, f"PhysicsMassAPI has no effect on a prim that is not part of a rigid body "
                                    f"(no PhysicsRigidBodyAPI on it or an ancestor); physics:mass and friends are "
                                    f"ignored{hint}")
                elif api == "PhysicsMeshCollisionAPI":
                    approx = self.attr(prim, "physics:approximation", "none", kind="token")
                    if approx not in ("none", "convexHull"):  # both read by read_mesh
                        self.warn(prim, f"physics:approximation '{approx}' is not supported; the triangle "
                                        f"mesh itself collides")
                else:
                    self.warn(prim, f"{api} is not supported yet (ignored)")
                used = used | {n for n in prim.GetPropertyNames() if n.startswith(("physics:", "physx"))}
        for a in prim.GetAuthoredAttributes():
            name = a.GetName()
            if name in used:
                continue
            if name.startswith("kc:"):
                check_kind = kind if kind in ("PhysicsScene", "Points", "collider", "mpm Cube") else ""
                problem = schema.check_kc_attribute(name, check_kind)
                if problem and check_kind == "" and name in schema.KC_ATTRIBUTES["collider"] and kind == "visual":
                    self.warn(prim, f"attribute '{name}' has no effect: the prim has no PhysicsCollisionAPI")
                elif problem:
                    raise self.err(prim, problem)
                else:
                    self.warn(prim, f"attribute '{name}' has no effect here (nothing reads it with the other "
                                    f"attributes given)")
            elif kind in ("ignored", "visual") and ":" not in name and not self.schema_attribute(prim, name) \
                    and name not in PRESENTATION_ATTRS:
                # a plain custom attribute (``float mass = 3`` on a body's Xform) is no presentation
                # data a tool writes (those are namespaced): most likely meant for the simulation
                hints = [h for h in _BODY_HINTS if h.split(":")[1].lower() == name.lower()] \
                    if prim.HasAPI(self.UsdPhysics.RigidBodyAPI) else ()
                self.warn(prim, f"attribute '{name}' is not used by kcsim (ignored)"
                                + (f"; did you mean '{hints[0]}'?" if hints else ""))
            elif kind in ("ignored", "Material", "visual", "unsupported") and not name.startswith("physics:"):
                continue  # presentation prims: all their non-physics attributes are presentation
            elif name in PRESENTATION_ATTRS or name.startswith(PRESENTATION_PREFIXES):
                continue
            elif name.startswith("physics:"):
                hint = {"physics:mass": " (use kc:mass)", "physics:density": " (use kc:density)",
                        "physics:velocity": " (use velocities or kc:velocity)"}.get(name, "") if kind == "Points" else ""
                self.warn(prim, f"UsdPhysics attribute '{name}' is not supported here (ignored){hint}")
            else:
                names = list(prim.GetPrimDefinition().GetPropertyNames()) if prim.GetTypeName() else []
                if name in names:
                    self.warn(prim, f"{prim.GetTypeName()} attribute '{name}' is not supported yet (ignored)")
                else:
                    self.warn(prim, f"attribute '{name}' is not used by kcsim (ignored)"
                                    f"{schema.suggest(name, [n for n in names if n not in PRESENTATION_ATTRS])}")
        for r in prim.GetAuthoredRelationships():
            name = r.GetName()
            if name in used or name in PRESENTATION_RELS or name.startswith("material:binding:collection"):
                continue
            if kind in ("ignored", "Material", "visual") and not name.startswith("physics:"):
                continue
            if name == "material:binding:physics":
                self.warn(prim, "material:binding:physics has no effect here (the prim is not simulated)")
            else:
                self.warn(prim, f"relationship '{name}' is not supported (ignored)")

    @staticmethod
    def schema_attribute(prim, name):
        """Is ``name`` a property of ``prim``'s type or applied schemas (not a custom one)?"""
        return name in prim.GetPrimDefinition().GetPropertyNames()

    def check_undefined(self):
        """'over' prims that compose to nothing (e.g. overriding a path that no layer defines)."""
        for prim in self.stage.TraverseAll():
            if not prim.IsDefined() and not prim.IsAbstract() and prim.GetAuthoredProperties():
                self.warn(prim, "'over' with no definition under it (a misspelled path, or a missing "
                                "reference?); ignored")

    def read_physics_scene(self, prim):
        sc = self.scene
        up = np.array([0.0, 0.0, 1.0]) if sc.up_axis == "Z" else np.array([0.0, 1.0, 0.0])
        direction, magnitude = -up, 9.81
        damping = 0.0
        if self.stage.HasAuthoredMetadata("timeCodesPerSecond"):  # the scene's own rate as default
            tcps = float(self.stage.GetTimeCodesPerSecond())
            if tcps > 0 and math.isfinite(tcps):
                sc.frame_dt = 1.0 / tcps
        if prim is not None:
            self.kinds[prim.GetPath()] = "PhysicsScene"
            self.check_kc_names(prim, "PhysicsScene")
            self.use(prim, "physics:gravityDirection", "physics:gravityMagnitude")
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
            elif mag is not None and s.GetGravityMagnitudeAttr().HasAuthoredValue() and mag != -math.inf:
                # -inf is UsdPhysics' "use the default gravity"; +inf and NaN are mistakes
                raise self.err(prim, f"physics:gravityMagnitude is not finite: {mag}")
            dt = self.attr(prim, "kc:timeStep")
            if dt is not None:
                if np.ndim(dt) or not dt > 0:
                    raise self.err(prim, f"kc:timeStep must be a number > 0, got {dt}")
                rate = exact_rate(1.0 / float(dt))  # 0.016666668 (float32 of 1/60) -> exactly 1/60 s
                sc.frame_dt = 1.0 / float(rate)
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
            self.solver_given = solver is not None
            if solver is not None:
                if solver not in SOLVERS:
                    raise self.err(prim, f"kc:solver must be one of {SOLVERS}, got '{solver}'"
                                         f"{schema.suggest(solver, SOLVERS)}")
                if solver == "featherstone" and not hasattr(sim, "SolverFeatherstone"):
                    raise self.err(prim, "kc:solver 'featherstone' is not available in this build of sim")
                sc.solver = solver
            sc.toi = bool(self.attr(prim, "kc:toi", False, kind="bool"))
            self.read_fluid(prim, sc)
            if sc.solver == "mpm":
                sc.mpm = usd_mpm.read_scene_settings(self, prim)
                sc.items.append((str(prim.GetPath()), sc.mpm.describe()))
            thickness = self.attr(prim, "kc:cloth:selfContact", 0.0)
            if np.ndim(thickness) or not (np.isfinite(thickness) and thickness >= 0):
                raise self.err(prim, f"kc:cloth:selfContact must be a thickness >= 0 [m], got {thickness}")
            sc.cloth_self_contact = float(thickness)
            wind = self.attr(prim, "kc:cloth:wind", np.zeros(3), kind="vec3")
            if not np.all(np.isfinite(wind)):
                raise self.err(prim, f"kc:cloth:wind must be 3 finite numbers [m/s], got {wind}")
            damping = self.attr(prim, "kc:particleDamping", 0.0)
            if np.ndim(damping) or damping < 0:
                raise self.err(prim, f"kc:particleDamping must be a number >= 0, got {damping}")
            sc.items.append((str(prim.GetPath()), "PhysicsScene"))
        sc.builder = sim.ModelBuilder(gravity=tuple(direction * magnitude), particle_damping=float(damping))
        if prim is not None:
            sc.builder.set_air_velocity(wind * self.mpu)

    def read_fluid(self, prim, sc):
        """SolverPBF settings from the PhysicsScene's kc:fluid:* attributes (needed with kc:solver = "pbf")."""
        names = {"kc:fluid:smoothingLength": ("smoothing_length", "float", self.mpu),
                 "kc:fluid:lower": ("lower", "vec3", self.mpu), "kc:fluid:upper": ("upper", "vec3", self.mpu),
                 "kc:fluid:restDensity": ("rest_density", "float", 1.0),
                 "kc:fluid:iterations": ("iterations", "int", None), "kc:fluid:xsph": ("xsph", "float", 1.0),
                 "kc:fluid:vorticity": ("vorticity_confinement", "float", 1.0)}
        got = {}
        for name, (key, kind, scale) in names.items():
            v = self.attr(prim, name, kind=kind)
            if v is not None:
                got[key] = v if scale is None else np.asarray(v, np.float64) * scale
        if sc.solver != "pbf":
            for name in names:
                if prim.GetAttribute(name).HasAuthoredValue():
                    self.warn(prim, f"{name} has no effect unless kc:solver = \"pbf\"")
            return
        for name, key in (("kc:fluid:smoothingLength", "smoothing_length"), ("kc:fluid:lower", "lower"),
                          ("kc:fluid:upper", "upper")):
            if key not in got:
                raise self.err(prim, f"kc:solver = \"pbf\" needs {name}")
        fluid = {"smoothing_length": float(got.pop("smoothing_length")),
                 "bounds": (tuple(got.pop("lower")), tuple(got.pop("upper"))),
                 "rest_density": float(got.pop("rest_density", 1000.0))}
        fluid.update({k: (int(v) if k == "iterations" else float(v)) for k, v in got.items()})
        sc.fluid = fluid

    def plan_particles(self, prim, n, what):
        """Refuse a particle count that cannot fit in memory, before allocating anything."""
        self.particles_planned += int(n)
        need = self.particles_planned * BYTES_PER_PARTICLE
        avail = _available_memory()
        if self.particles_planned >= 2 ** 31 or (avail is not None and need > avail):
            limit = f"; {_bytes(avail)} are available" if avail is not None else ""
            raise self.err(prim, f"{what} gives {int(n):,} particles ({self.particles_planned:,} in the scene so far), "
                                 f"which need about {_bytes(need)} of memory to load and simulate{limit}")

    def read_points(self, prim):
        b = self.scene.builder
        path = str(prim.GetPath())
        pts = self.attr(prim, "points", kind="vec3s")
        dims = self.attr(prim, "kc:grid:dims", kind="int3")
        spacing = None
        M = self.world(prim)
        if dims is not None:
            if np.any(dims < 1):
                raise self.err(prim, f"kc:grid:dims must be >= 1, got {dims.tolist()}")
            spacing = self.attr(prim, "kc:grid:spacing")
            if spacing is None or np.ndim(spacing) or not spacing > 0:
                raise self.err(prim, f"kc:grid:spacing must be a number > 0 with kc:grid:dims, got {spacing}")
            if pts is not None and len(pts):
                raise self.err(prim, "give either points or kc:grid:dims, not both")
            self.plan_particles(prim, math.prod(int(d) for d in dims), f"kc:grid:dims {tuple(int(d) for d in dims)}")
            lower = self.attr(prim, "kc:grid:lower", np.zeros(3), kind="vec3")
            jitter = self.attr(prim, "kc:grid:jitter", 0.0)
            if np.ndim(jitter) or jitter < 0:
                raise self.err(prim, f"kc:grid:jitter must be a number >= 0, got {jitter}")
            seed = self.attr(prim, "kc:grid:seed", 0, kind="int")
            k, j, i = np.meshgrid(np.arange(dims[2]), np.arange(dims[1]), np.arange(dims[0]), indexing="ij")
            local = lower + spacing * np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1)
            if jitter:
                local = local + np.random.default_rng(seed).uniform(-jitter, jitter, local.shape)
            pts = local
        else:
            for name in ("kc:grid:spacing", "kc:grid:lower", "kc:grid:jitter", "kc:grid:seed"):
                if prim.GetAttribute(name).HasAuthoredValue():
                    self.warn(prim, f"{name} has no effect without kc:grid:dims")
                    self.use(prim, name)
            if pts is not None:
                self.plan_particles(prim, len(pts), "points")
        if pts is None or len(pts) == 0:
            raise self.err(prim, "Points prim without points (author 'points' or 'kc:grid:dims')")
        n = len(pts)
        world = (np.hstack([pts, np.ones((n, 1))]) @ M)[:, :3] * self.mpu
        vel = self.attr(prim, "velocities", kind="vec3s")
        if vel is None:
            v = self.attr(prim, "kc:velocity", np.zeros(3), kind="vec3")
            vel = np.tile(v, (n, 1))
        else:
            if prim.GetAttribute("kc:velocity").HasAuthoredValue():
                raise self.err(prim, "give either velocities or kc:velocity, not both")
            if len(vel) != n:
                raise self.err(prim, f"velocities has {len(vel)} entries for {n} points")
        vel = vel @ M[:3, :3] * self.mpu
        radius = self.attr(prim, "kc:radius")
        if radius is None:
            widths = self.attr(prim, "widths")
            if widths is None:
                raise self.err(prim, "particle radius missing (author 'kc:radius' or 'widths')")
            radius = 0.5 * np.asarray(widths, np.float64)
            name_r = "widths"
        else:
            name_r = "kc:radius"
            if prim.GetAttribute("widths").HasAuthoredValue():
                self.warn(prim, "widths is ignored because kc:radius is given")
                self.use(prim, "widths")
        radius = self._per_point(prim, name_r, radius, n) * self.mpu
        if np.any(radius <= 0):
            bad = int(np.argmax(radius <= 0))
            scale = 2.0 if name_r == "widths" else 1.0
            raise self.err(prim, f"{name_r} must be > 0, got {scale * radius[bad] / self.mpu:g} (point {bad})")
        volume = 0.0
        if self.scene.solver == "mpm":  # continuum particles: a material model and a volume each
            mpm_material, volume = usd_mpm.read_continuum(self, prim, n, spacing, radius)
        mass = self.attr(prim, "kc:mass")
        density = self.attr(prim, "kc:density")
        if mass is not None and density is not None:
            raise self.err(prim, "give either kc:mass or kc:density, not both")
        if density is not None:
            if np.ndim(density) or density < 0:
                raise self.err(prim, f"kc:density must be a number >= 0, got {density}")
            mass = density * (volume if self.scene.solver == "mpm" else 4.0 / 3.0 * math.pi * radius ** 3)
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
        mat = mpm_material if self.scene.solver == "mpm" else self.material(prim)
        start = b.particle_count
        rng = b.add_particles(world, vel, mass, radius, material=mat, volume=volume)
        first_spring = b.spring_count
        springs = self.read_springs(prim, start, n, dims)
        self.scene.particle_groups.append((path, rng))
        if springs:
            self.scene.spring_groups[path] = range(first_spring, b.spring_count)
        color = self.display_color(prim)
        if color is not None:
            self.scene.group_colors[path] = color
        desc = f"Points: {n} particles, radius {radius.min():g}-{radius.max():g} m, mass {mass.sum():g} kg total"
        if springs:
            desc += f", {springs} springs"
        self.scene.items.append((path, desc))

    def read_springs(self, prim, start, n, dims):
        b = self.scene.builder
        idx = self.attr(prim, "kc:springs:indices", kind="int2s")
        grid = self.attr(prim, "kc:springs:grid", False, kind="bool")
        if idx is None and not grid:
            for name in ("kc:springs:ke", "kc:springs:kd", "kc:springs:shear"):
                if prim.GetAttribute(name).HasAuthoredValue():
                    self.warn(prim, f"{name} has no effect without kc:springs:indices or kc:springs:grid")
                    self.use(prim, name)
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
                raise self.err(prim, "kc:springs:grid needs a generated grid (kc:grid:dims); with explicit "
                                     "points give the pairs in kc:springs:indices")
            shear = self.attr(prim, "kc:springs:shear", True, kind="bool")
            b.add_spring_grid(start, int(dims[0]), int(dims[1]), int(dims[2]), float(ke), float(kd), shear=shear)
        elif prim.GetAttribute("kc:springs:shear").HasAuthoredValue():
            self.warn(prim, "kc:springs:shear has no effect without kc:springs:grid")
            self.use(prim, "kc:springs:shear")
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
                self.use(prim, "physics:principalAxes")
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
        """physics:density [kg/m^3] of a body's collider (or of its body), default 1000; static
        colliders have no mass (a PhysicsMassAPI on them is reported by check_unused)."""
        if self.body_prim_of(prim) is None:
            return 1000.0
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
        shape = self.scene.builder.add_shape_capsule(t, _quat_mul(q, to_axis), radius, half,
                                                     material=self.material(prim), name=prim.GetName(), body=body,
                                                     density=self.density(prim))
        where = f" (body {body})" if body >= 0 else ""
        self.add_collider(prim, shape, f"Capsule collider{where}: radius {radius:g} m, half height {half:g} m")

    # -- colliders ------------------------------------------------------------------------------------
    def add_collider(self, prim, shape, desc):
        self.scene.shape_paths.append(str(prim.GetPath()))
        color = self.display_color(prim)
        if color is not None:
            self.scene.group_colors[str(prim.GetPath())] = color
        self.scene.items.append((str(prim.GetPath()), desc))

    def read_mesh(self, prim):
        pts, tris = self.mesh_faces(prim, "collision Mesh")
        approx = "none"
        if prim.HasAPI(self.UsdPhysics.MeshCollisionAPI):
            approx = self.attr(prim, "physics:approximation", "none", kind="token")
        convex = approx == "convexHull"  # other approximations: a warning from check_unused
        b = self.scene.builder
        if self.body_prim_of(prim) is not None:
            # a body's mesh keeps its own frame (queried there as the body moves): pos/rot in the body frame
            body, t, q, sc = self.shape_frame(prim)
            local = pts * sc * self.mpu
            if np.prod(sc) < 0:  # a mirroring scale flips the winding
                tris = [(a, c, b_) for a, b_, c in tris]
            try:
                s = b.add_shape_mesh(local, np.asarray(tris, np.int32), pos=t, rot=q, material=self.material(prim),
                                     name=prim.GetName(), body=body, density=self.density(prim),
                                     is_convex=True if convex else None)
            except ValueError as e:
                raise self.err(prim, str(e)) from None
            what = "convex hull" if convex else f"{len(tris)} triangles"
            self.add_collider(prim, s, f"Mesh collider (body {body}): {len(pts)} vertices, {what}")
            return
        world, tris = self.mesh_to_world(prim, pts, tris)
        s = b.add_shape_mesh(world, np.asarray(tris, np.int32), material=self.material(prim), name=prim.GetName(),
                             is_convex=True if convex else None)
        what = "convex hull" if convex else f"{len(tris)} triangles"
        self.add_collider(prim, s, f"Mesh collider: {len(pts)} vertices, {what}")

    def mesh_faces(self, prim, what):
        """(points (n, 3) in the prim's own frame [stage units], triangles [(i, j, k)]) of a Mesh prim
        (faces fan-triangulated, winding from ``orientation``)."""
        pts = self.attr(prim, "points", kind="vec3s")
        counts = self.attr(prim, "faceVertexCounts", kind="ints")
        indices = self.attr(prim, "faceVertexIndices", kind="ints")
        if pts is None or counts is None or indices is None or len(pts) == 0 or len(counts) == 0:
            raise self.err(prim, f"{what} needs points, faceVertexCounts and faceVertexIndices")
        if np.any(counts < 3) or counts.sum() != len(indices):
            raise self.err(prim, f"faceVertexCounts (sum {counts.sum()}, each >= 3) do not match "
                                 f"{len(indices)} faceVertexIndices")
        if indices.min() < 0 or indices.max() >= len(pts):
            raise self.err(prim, f"faceVertexIndices must lie in [0, {len(pts)})")
        holes = self.attr(prim, "holeIndices", kind="ints")
        if holes is not None and len(holes):
            self.warn(prim, f"holeIndices ({len(holes)} faces) are not supported; the holes collide like faces")
        orient = self.attr(prim, "orientation", "rightHanded", kind="token")
        tris = []
        k = 0
        for c in counts:  # fan triangulation
            face = indices[k:k + c]
            for m in range(1, c - 1):
                tris.append((face[0], face[m], face[m + 1]) if orient != "leftHanded" else (face[0], face[m + 1], face[m]))
            k += c
        return pts, tris

    def mesh_to_world(self, prim, pts, tris):
        """(world points (n, 3) [m], triangles) of a Mesh prim's own points; a mirroring transform flips the winding."""
        M = self.world(prim)
        world = (np.hstack([pts, np.ones((len(pts), 1))]) @ M)[:, :3] * self.mpu
        if np.linalg.det(M[:3, :3]) < 0:  # mirrored transform flips the winding
            tris = [(a, c, b_) for a, b_, c in tris]
        return world, tris

    def mesh_triangles(self, prim, what):
        """(world points (n, 3) [m], triangles [(i, j, k)]) of a Mesh prim (faces fan-triangulated)."""
        pts, tris = self.mesh_faces(prim, what)
        return self.mesh_to_world(prim, pts, tris)

    def read_cloth(self, prim):
        """A Mesh with ``bool kc:cloth = true``: its vertices become cloth particles, its faces triangles."""
        path = str(prim.GetPath())
        if self.body_prim_of(prim) is not None:
            raise self.err(prim, "cloth cannot be part of a rigid body (attach it with kc:fixedIndices instead)")
        world, tris = self.mesh_triangles(prim, "cloth Mesh")
        b = self.scene.builder
        params = {}
        for name, arg, default in (("kc:cloth:density", "density", 0.2), ("kc:cloth:triKe", "tri_ke", 100.0),
                                   ("kc:cloth:triKa", "tri_ka", 100.0), ("kc:cloth:triKd", "tri_kd", 1.0),
                                   ("kc:cloth:edgeKe", "edge_ke", 1e-3), ("kc:cloth:edgeKd", "edge_kd", 0.0),
                                   ("kc:cloth:triDrag", "tri_drag", 0.0), ("kc:cloth:triLift", "tri_lift", 0.0)):
            v = self.attr(prim, name, default)
            if np.ndim(v) or not np.isfinite(v):
                raise self.err(prim, f"{name} must be a single finite number, got {v}")
            params[arg] = float(v)
        radius = self.attr(prim, "kc:radius", 0.005)
        vel = self.attr(prim, "kc:velocity", np.zeros(3), kind="vec3")
        start = b.particle_count
        try:
            rng = b.add_cloth_mesh(world, np.asarray(tris, np.int64), vel=vel, particle_radius=float(radius),
                                   material=self.material(prim), **params)
        except ValueError as e:
            raise self.err(prim, str(e)) from None
        fixed = self.attr(prim, "kc:fixedIndices", kind="ints")
        if fixed is not None and len(fixed):
            if fixed.min() < 0 or fixed.max() >= len(world):
                raise self.err(prim, f"kc:fixedIndices must lie in [0, {len(world)}), got [{fixed.min()}, {fixed.max()}]")
            for i in fixed:
                b.particle_mass[start + int(i)] = 0.0
                b.particle_qd[start + int(i)] = (0.0, 0.0, 0.0)
        self.scene.particle_groups.append((path, rng))
        self.scene.cloth_groups[path] = (rng, np.asarray(tris, np.int32))
        self.scene.cloth_uvs[path] = read_cloth_uvs(self, prim, world)
        color = self.display_color(prim)
        if color is not None:
            self.scene.group_colors[path] = color
        self.scene.items.append((path, f"cloth: {len(world)} particles, {len(tris)} triangles"))

    def read_cube(self, prim):
        size = self.attr(prim, "size", 2.0)
        if np.ndim(size) or not size > 0:
            raise self.err(prim, f"size must be > 0, got {size}")
        body, t, q, s = self.shape_frame(prim)
        he = 0.5 * size * np.abs(s) * self.mpu
        if np.any(he <= 0):
            raise self.err(prim, f"scale must be non-zero, got {s.tolist()}")
        shape = self.scene.builder.add_shape_box(t, q, he, material=self.material(prim), name=prim.GetName(),
                                                 body=body, density=self.density(prim))
        where = f" (body {body})" if body >= 0 else ""
        self.add_collider(prim, shape, f"Cube collider{where}: half extents {np.round(he, 4).tolist()} m")

    def read_sphere(self, prim):
        r = self.attr(prim, "radius", 1.0)
        if np.ndim(r) or not r > 0:
            raise self.err(prim, f"radius must be > 0, got {r}")
        body, t, q, s = self.shape_frame(prim)
        s = np.abs(s)
        if s.max() - s.min() > 1e-6 * s.max():
            raise self.err(prim, f"non-uniform scale {s.tolist()} on a Sphere collider is not supported")
        radius = r * s[0] * self.mpu
        shape = self.scene.builder.add_shape_sphere(t, radius, material=self.material(prim), name=prim.GetName(),
                                                    body=body, density=self.density(prim), rot=q)
        where = f" (body {body})" if body >= 0 else ""
        self.add_collider(prim, shape, f"Sphere collider{where}: radius {radius:g} m")

    def read_plane(self, prim):
        if self.body_prim_of(prim) is not None:
            raise self.err(prim, "Plane colliders on rigid bodies are not supported (static only)")
        axis = self.attr(prim, "axis", "Z", kind="token")
        width = float(self.attr(prim, "width", 2.0))
        length = float(self.attr(prim, "length", 2.0))
        if not (width > 0 and length > 0):
            raise self.err(prim, f"width and length must be > 0, got width={width:g}, length={length:g}")
        t, q, s = self.decompose(prim)
        s2 = math.sqrt(0.5)
        # our plane's normal is local +Y with width along X and length along Z; USD's is along `axis`
        to_axis = {"Y": (0.0, 0.0, 0.0, 1.0), "Z": (s2, 0.0, 0.0, s2), "X": (0.0, 0.0, -s2, s2)}.get(axis)
        if to_axis is None:
            raise self.err(prim, f"axis must be X, Y or Z, got '{axis}'")
        rot = _quat_mul(q, to_axis)
        # USD Plane: width along the first other axis, length along the second; approximate sizes for display
        ws = {"X": (s[1], s[2]), "Y": (s[0], s[2]), "Z": (s[0], s[1])}[axis]
        shape = self.scene.builder.add_shape_plane(t, rot, width * abs(ws[0]) * self.mpu,
                                                   length * abs(ws[1]) * self.mpu,
                                                   material=self.material(prim), name=prim.GetName())
        normal = _rotate(rot, (0.0, 1.0, 0.0))
        self.add_collider(prim, shape, f"Plane collider: normal ({normal[0]:.3g}, {normal[1]:.3g}, "
                                       f"{normal[2]:.3g}) through ({t[0]:g}, {t[1]:g}, {t[2]:g})")


def _integers(values):
    """int64 array of ``values``; TypeError when one is not a whole number (2.5 is not 2)."""
    a = np.asarray(values, np.float64)
    if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
        raise TypeError
    return a.astype(np.int64)


def _available_memory():
    """Bytes of memory available to a new allocation (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _bytes(n):
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1e3:.0f} kB"


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
