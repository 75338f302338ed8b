"""MJCF (MuJoCo's XML) -> the importers' Description.

Read: ``<include>`` (expanded in place, paths relative to the including file, then the main
file), ``<compiler>`` (angle, eulerseq, meshdir/assetdir, autolimits, inertiafromgeom),
``<option>`` (timestep, gravity), ``<default>`` classes (nested; ``class`` and
``childclass``), ``<worldbody>`` with nested ``<body>`` and ``<frame>`` (pos, quat, euler,
axisangle, xyaxes, zaxis), ``<inertial>``, joints (hinge, slide, ball, free / ``<freejoint>``;
range, limited, damping, armature, stiffness/springref as a PD drive), geoms (sphere, box, capsule, cylinder, ellipsoid, plane,
mesh; ``fromto``; mass or density), mesh assets (STL/OBJ), and motor / position / velocity
actuators on joints.  Everything else is a warning (physics the import does not reproduce:
tendons, equality constraints, friction loss, contact parameters, ...) or
a note (no physics: visuals, lights, cameras, sensors) naming the file, line and element.
"""
from __future__ import annotations

import math
import os

import numpy as np

from .description import Actuator, Body, Description, Geom, Inertial, Joint
from .meshes import load_mesh
from .spatial import (IDENTITY_QUAT, quat_between, quat_from_axis_angle, quat_from_euler, quat_from_matrix,
                      quat_normalize, quat_to_matrix, transform_mul)
from .xmlsource import ModelFileError, XmlFile

WHO = "parse_mjcf"
JOINT_KINDS = {"hinge": "revolute", "slide": "prismatic", "ball": "ball", "free": "free"}
GEOM_TYPES = ("sphere", "box", "capsule", "cylinder", "ellipsoid", "plane", "mesh")
ACTUATORS = ("motor", "position", "velocity")
OTHER_ACTUATORS = ("general", "intvelocity", "damper", "cylinder", "muscle", "adhesion", "plugin")
DEFAULT_TAGS = ("joint", "geom", "site", "camera", "light", "mesh", "material", "pair", "equality", "tendon",
                "general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle",
                "adhesion", "texture", "hfield", "skin", "flexcomp")
NO_PHYSICS = ("visual", "statistic", "size", "custom", "keyframe", "extension", "sensor")
PHYSICS_UNSUPPORTED = ("tendon", "equality", "contact", "deformable", "flex", "skin")
# geom attributes that tune contact: not mapped onto kernelcore materials
CONTACT_ATTRS = ("friction", "solref", "solimp", "solmix", "margin", "gap", "priority", "condim")
JOINT_READ = {"name", "class", "type", "pos", "axis", "range", "limited", "damping", "armature", "stiffness",
              "frictionloss", "ref", "springref"}
JOINT_IGNORED = {"group", "user", "margin", "solreflimit", "solimplimit", "solreffriction", "solimpfriction",
                 "actuatorfrclimited", "actuatorfrcrange", "actuatorgravcomp"}
GEOM_READ = {"name", "class", "type", "size", "pos", "quat", "euler", "axisangle", "xyaxes", "zaxis", "fromto",
             "mesh", "density", "mass", "contype", "conaffinity"}
GEOM_VISUAL = {"rgba", "material", "group", "user", "fluidshape", "fluidcoef", "hfield", "shellinertia"}


class MjcfReader:
    def __init__(self, path, report):
        self.main = XmlFile(path, WHO)
        self.report = report
        self.owner = {}
        self._own(self.main, self.main.root)
        self.main_dir = os.path.dirname(os.path.abspath(self.main.path))
        self.angle_scale = math.pi / 180.0  # MJCF's default unit is the degree
        self.eulerseq = "xyz"
        self.meshdir = self.main_dir
        self.autolimits = True
        self.inertiafromgeom = "auto"
        self.defaults = {}
        self.meshes = {}

    # -- sources and messages -------------------------------------------------------------------------
    def _own(self, src, root):
        for el in root.iter():
            self.owner[id(el)] = src

    def src(self, el):
        return self.owner.get(id(el), self.main)

    def where(self, el):
        return self.src(el).where(el)

    def error(self, el, msg):
        return self.src(el).error(el, msg)

    def warn(self, el, msg):
        self.report.warn(self.src(el), el, msg)

    def note(self, el, msg):
        self.report.note(self.src(el), el, msg)

    # -- attribute parsing -----------------------------------------------------------------------------
    def numbers(self, el, attrs, name, count=None, default=None):
        text = attrs.get(name)
        if text is None:
            return None if default is None else np.asarray(default, np.float64)
        try:
            v = np.asarray([float(x) for x in text.split()], np.float64)
        except ValueError:
            raise self.error(el, f"attribute {name}='{text}' must be numbers") from None
        if count is not None and v.shape != (count,):
            raise self.error(el, f"attribute {name}='{text}' must be {count} number(s)")
        if not np.all(np.isfinite(v)):
            raise self.error(el, f"attribute {name}='{text}' must be finite")
        return v

    def number(self, el, attrs, name, default=None):
        v = self.numbers(el, attrs, name, 1, None if default is None else [default])
        return None if v is None else float(v[0])

    def boolean(self, el, attrs, name, default):
        text = attrs.get(name)
        if text is None:
            return default
        if text not in ("true", "false", "auto"):
            raise self.error(el, f"attribute {name}='{text}' must be true, false or auto")
        return text

    def orientation(self, el, attrs):
        """Rotation quaternion (x, y, z, w) of an element's quat/axisangle/euler/xyaxes/zaxis."""
        given = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in attrs]
        if len(given) > 1:
            raise self.error(el, f"more than one orientation given ({', '.join(given)})")
        if not given:
            return IDENTITY_QUAT.copy()
        k = given[0]
        if k == "quat":
            w, x, y, z = self.numbers(el, attrs, "quat", 4)  # MJCF writes w first
            if math.sqrt(w * w + x * x + y * y + z * z) < 1e-12:
                raise self.error(el, "quat must be non-zero")
            return quat_normalize([x, y, z, w])
        if k == "axisangle":
            v = self.numbers(el, attrs, "axisangle", 4)
            if np.linalg.norm(v[:3]) < 1e-12:
                raise self.error(el, f"axisangle has a zero-length axis {v[:3].tolist()}")
            return quat_from_axis_angle(v[:3], v[3] * self.angle_scale)
        if k == "euler":
            return quat_from_euler(self.numbers(el, attrs, "euler", 3) * self.angle_scale, self.eulerseq)
        if k == "xyaxes":
            v = self.numbers(el, attrs, "xyaxes", 6)
            x = v[:3] / np.linalg.norm(v[:3])
            y = v[3:] - np.dot(v[3:], x) * x
            if np.linalg.norm(y) < 1e-12:
                raise self.error(el, "xyaxes: the two axes are parallel")
            y /= np.linalg.norm(y)
            return quat_from_matrix(np.stack([x, y, np.cross(x, y)], axis=1))
        z = self.numbers(el, attrs, "zaxis", 3)
        if np.linalg.norm(z) < 1e-12:
            raise self.error(el, "zaxis has zero length")
        return quat_between((0.0, 0.0, 1.0), z)

    def frame_of(self, el, attrs):
        return (self.numbers(el, attrs, "pos", 3, (0, 0, 0)), self.orientation(el, attrs))

    def attrs(self, el, cls):
        """The element's attributes over the defaults of its class (its own ``class`` or the
        inherited childclass)."""
        name = el.get("class", cls)
        if name not in self.defaults:
            raise self.error(el, f"default class '{name}' is not defined")
        d = dict(self.defaults[name].get(el.tag, {}))
        d.update(el.attrib)
        return d

    # -- the file -------------------------------------------------------------------------------------
    def read(self):
        root = self.main.root
        if root.tag != "mujoco":
            raise self.main.error(root, "the root element must be <mujoco> (is this an MJCF file?)")
        self.expand_includes(root, self.main, [os.path.abspath(self.main.path)])
        desc = Description(self.main.path)
        for el in root.findall("compiler"):
            self.read_compiler(el)
        self.defaults = {"main": {}}
        for el in root.findall("default"):
            self.read_default(el, {}, top=True)
        for el in root:
            tag = el.tag
            if tag in ("compiler", "default", "worldbody", "actuator", "asset"):
                continue
            if tag == "option":
                self.read_option(el, desc)
            elif tag in NO_PHYSICS:
                self.note(el, f"<{tag}> carries no dynamics for the simulator (not imported)")
            elif tag in PHYSICS_UNSUPPORTED:
                for c in el:
                    self.warn(c, f"<{tag}><{c.tag}> is not supported (ignored): the simulation lacks it")
            else:
                self.warn(el, f"element <{tag}> is not supported (ignored)")
        for el in root.findall("asset"):
            self.read_assets(el)
        for wb in root.findall("worldbody"):
            self.read_children(wb, -1, (np.zeros(3), IDENTITY_QUAT.copy()), "main", desc)
        for el in root.findall("actuator"):
            self.read_actuators(el, desc)
        return desc

    def expand_includes(self, el, src, stack):
        for i, c in enumerate(list(el)):
            if c.tag != "include":
                self.expand_includes(c, src, stack)
                continue
            fn = c.get("file")
            if not fn:
                raise src.error(c, "<include> needs a file attribute")
            cands = [fn] if os.path.isabs(fn) else [os.path.join(os.path.dirname(os.path.abspath(src.path)), fn),
                                                    os.path.join(self.main_dir, fn)]
            path = next((p for p in cands if os.path.isfile(p)), None)
            if path is None:
                raise src.error(c, f"included file '{fn}' not found (looked for {cands[0]})")
            if os.path.abspath(path) in stack:
                raise src.error(c, f"'{fn}' includes itself (through {' -> '.join(os.path.basename(s) for s in stack)})")
            try:
                inc = XmlFile(path, WHO)
            except ModelFileError as e:
                raise src.error(c, f"in the included file: {str(e).split(': ', 1)[1]}") from None
            if inc.root.tag != "mujoco":
                raise inc.error(inc.root, "an included file must have <mujoco> as its root element")
            self._own(inc, inc.root)
            self.expand_includes(inc.root, inc, stack + [os.path.abspath(path)])
            pos = list(el).index(c)
            el.remove(c)
            for k, child in enumerate(list(inc.root)):
                el.insert(pos + k, child)

    def read_compiler(self, el):
        a = el.attrib
        angle = a.get("angle", "degree")
        if angle not in ("degree", "radian"):
            raise self.error(el, f"angle must be 'degree' or 'radian', got '{angle}'")
        self.angle_scale = math.pi / 180.0 if angle == "degree" else 1.0
        seq = a.get("eulerseq", self.eulerseq)
        if len(seq) != 3 or any(ch not in "xyzXYZ" for ch in seq):
            raise self.error(el, f"eulerseq must be 3 letters of xyzXYZ, got '{seq}'")
        self.eulerseq = seq
        base = a.get("assetdir")
        if "meshdir" in a or base:
            d = a.get("meshdir", base)
            self.meshdir = d if os.path.isabs(d) else os.path.join(self.main_dir, d)
        if "autolimits" in a:
            self.autolimits = a["autolimits"] == "true"
        self.inertiafromgeom = a.get("inertiafromgeom", self.inertiafromgeom)
        if a.get("coordinate", "local") != "local":
            raise self.error(el, "coordinate='global' is not supported (MuJoCo removed it too)")
        for k in ("boundmass", "boundinertia", "settotalmass"):
            if k in a and float(a[k]) != (-1.0 if k == "settotalmass" else 0.0):
                self.warn(el, f"compiler attribute {k} is not supported (the masses are the file's)")
        if a.get("balanceinertia") == "true":
            self.warn(el, "compiler balanceinertia is not supported (inertias are used as given)")
        for k in ("fusestatic", "discardvisual", "strippath", "texturedir", "usethread", "alignfree",
                  "fitaabb", "inertiagrouprange", "exactmeshinertia", "saveinertial"):
            if k in a:
                self.note(el, f"compiler attribute {k} does not apply to this importer")

    def read_option(self, el, desc):
        a = el.attrib
        if "timestep" in a:
            desc.timestep = self.number(el, a, "timestep")
        if "gravity" in a:
            desc.gravity = tuple(self.numbers(el, a, "gravity", 3))
        for k in ("wind", "magnetic", "density", "viscosity"):
            v = self.numbers(el, a, k)
            if v is not None and np.any(v != 0) and k != "magnetic":
                self.warn(el, f"option {k} is not supported (the medium is ignored)")
        for k in ("integrator", "cone", "jacobian", "solver", "iterations", "tolerance", "impratio",
                  "noslip_iterations", "ls_iterations", "o_margin", "o_solref", "o_solimp", "sdf_iterations"):
            if k in a:
                self.note(el, f"option {k} is MuJoCo's solver setting (not used)")
        for c in el:
            self.warn(c, f"option <{c.tag}> is not supported (ignored)")

    def read_default(self, el, inherited, top=False):
        name = el.get("class", "main" if top else None)
        if name is None:
            raise self.error(el, "a nested <default> needs a class name")
        if name in self.defaults and not (top and name == "main" and not self.defaults["main"]):
            raise self.error(el, f"default class '{name}' is defined twice")
        own = {tag: dict(attrs) for tag, attrs in inherited.items()}
        for c in el:
            if c.tag == "default":
                continue
            if c.tag not in DEFAULT_TAGS:
                self.warn(c, f"defaults for <{c.tag}> are not supported (ignored)")
                continue
            own.setdefault(c.tag, {}).update(c.attrib)
        self.defaults[name] = own
        for c in el.findall("default"):
            self.read_default(c, own)

    def read_assets(self, el):
        for c in el:
            if c.tag == "mesh":
                a = self.attrs(c, "main")
                fn = a.get("file")
                name = a.get("name") or (os.path.splitext(os.path.basename(fn))[0] if fn else None)
                if not fn:
                    if "vertex" in a:
                        raise self.error(c, "meshes given by inline vertex lists are not supported (give a file)")
                    raise self.error(c, "<mesh> needs a file")
                path = fn if os.path.isabs(fn) else os.path.join(self.meshdir, fn)
                if not os.path.isfile(path):
                    raise self.error(c, f"mesh file '{fn}' not found (looked for {path})")
                try:
                    pts, tris = load_mesh(path)
                except (ValueError, OSError) as e:
                    raise self.error(c, f"cannot read mesh '{fn}': {e}") from None
                scale = self.numbers(c, a, "scale", 3, (1, 1, 1))
                if np.prod(scale) < 0:
                    tris = tris[:, ::-1]
                for k in ("refpos", "refquat", "smoothnormal", "maxhullvert", "inertia"):
                    if k in a:
                        self.warn(c, f"mesh attribute {k} is not supported (ignored)")
                self.meshes[name] = (pts * scale, tris, c)
            elif c.tag == "hfield":
                self.warn(c, "height fields are not supported (ignored)")
            else:
                self.note(c, f"asset <{c.tag}> carries no dynamics (not imported)")

    # -- bodies -------------------------------------------------------------------------------------------
    def read_children(self, el, body_index, frame, cls, desc):
        """Geoms, joints and child bodies under ``el`` (a body, the world body or a frame), whose
        own pose in the enclosing body is ``frame``."""
        body = desc.bodies[body_index] if body_index >= 0 else None
        for c in el:
            t = c.tag
            if t == "body":
                self.read_body(c, body_index, frame, cls, desc)
            elif t == "frame":
                a = self.attrs(c, cls) if "class" in c.attrib else c.attrib
                inner = transform_mul(frame, self.frame_of(c, a))
                self.read_children(c, body_index, inner, c.get("childclass", cls), desc)
            elif t == "geom":
                g = self.read_geom(c, cls, frame)
                if body is None:
                    desc.static_geoms.append(g)
                else:
                    body.geoms.append(g)
            elif t in ("joint", "freejoint"):
                if body is None:
                    raise self.error(c, "joints belong in a <body>, not in the world body")
                body.joints.append(self.read_joint(c, cls, frame))
            elif t == "inertial":
                if body is None:
                    raise self.error(c, "the world body has no inertial")
                body.inertial = self.read_inertial(c, frame)
            elif t in ("site", "camera", "light"):
                self.note(c, f"<{t}> carries no dynamics (not imported)")
            elif t == "composite" or t == "flexcomp":
                self.warn(c, f"<{t}> is not supported (ignored)")
            else:
                self.warn(c, f"element <{t}> inside a body is not supported (ignored)")

    def read_body(self, el, parent, frame, cls, desc):
        a = el.attrib
        name = a.get("name") or f"body_{len(desc.bodies)}"
        for k in ("mocap",):
            if a.get(k) == "true":
                self.warn(el, "mocap bodies are not supported: the body is simulated as a welded body")
        if float(a.get("gravcomp", "0") or 0) != 0:
            self.warn(el, "gravcomp is not supported (ignored)")
        body = Body(name, parent, transform_mul(frame, self.frame_of(el, a)), self.where(el))
        desc.bodies.append(body)
        k = len(desc.bodies) - 1
        self.read_children(el, k, (np.zeros(3), IDENTITY_QUAT.copy()), el.get("childclass", cls), desc)
        free = [j for j in body.joints if j.kind == "free"]
        if free and (len(body.joints) > 1 or parent != -1):
            raise ModelFileError(f"{WHO}: {free[0].where}: a free joint must be the only joint of a body that is a "
                                 f"child of the world body")
        if self.inertiafromgeom == "true" or (body.inertial is None and self.inertiafromgeom == "auto"):
            if body.inertial is not None:
                self.note(el, "inertiafromgeom='true': the <inertial> is replaced by the geoms' mass properties")
            body.inertial = None  # assemble.py computes it from the geoms
        elif body.inertial is None and self.inertiafromgeom == "false":
            raise self.error(el, "inertiafromgeom='false' but the body has no <inertial>")

    def read_inertial(self, el, frame):
        a = el.attrib
        mass = self.number(el, a, "mass")
        if mass is None or mass < 0:
            raise self.error(el, f"<inertial> needs a mass >= 0, got {a.get('mass')}")
        p, q = transform_mul(frame, self.frame_of(el, a))
        if "diaginertia" in a:
            tensor = np.diag(self.numbers(el, a, "diaginertia", 3))
        elif "fullinertia" in a:
            xx, yy, zz, xy, xz, yz = self.numbers(el, a, "fullinertia", 6)
            tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        else:
            raise self.error(el, "<inertial> needs diaginertia or fullinertia")
        rot = quat_to_matrix(q)
        return Inertial(mass, p, rot @ tensor @ rot.T)

    def read_joint(self, el, cls, frame):
        if el.tag == "freejoint":
            return Joint("free", el.get("name") or "", self.where(el))
        a = self.attrs(el, cls)
        t = a.get("type", "hinge")
        if t not in JOINT_KINDS:
            raise self.error(el, f"joint type '{t}' is not one of {', '.join(JOINT_KINDS)}")
        j = Joint(JOINT_KINDS[t], a.get("name") or "", self.where(el))
        p, q = frame
        j.pos = p + quat_to_matrix(q) @ self.numbers(el, a, "pos", 3, (0, 0, 0))
        if t in ("hinge", "slide"):
            axis = self.numbers(el, a, "axis", 3, (0, 0, 1))
            n = np.linalg.norm(axis)
            if n < 1e-9:
                raise self.error(el, f"the joint axis {axis.tolist()} has zero length")
            j.axis = quat_to_matrix(q) @ (axis / n)
        rng = self.numbers(el, a, "range", 2)
        limited = self.boolean(el, a, "limited", "auto")
        if limited == "true" or (limited == "auto" and self.autolimits and rng is not None):
            if rng is None:
                raise self.error(el, "limited='true' needs a range")
            if rng[0] >= rng[1] and t != "ball":
                raise self.error(el, f"range {rng.tolist()}: the lower limit must be below the upper")
            if t == "hinge":
                j.limit = (rng[0] * self.angle_scale, rng[1] * self.angle_scale)
            elif t == "slide":
                j.limit = (rng[0], rng[1])
            else:
                self.warn(el, f"limits of a {t} joint are not supported (ignored)")
        for k in ("damping", "armature"):
            v = self.number(el, a, k, 0.0)
            if v < 0:
                raise self.error(el, f"{k} must be >= 0, got {v:g}")
            setattr(j, k, v)
        stiffness = self.number(el, a, "stiffness", 0.0)
        if stiffness < 0:
            raise self.error(el, f"stiffness must be >= 0, got {stiffness:g}")
        if stiffness != 0.0:
            if t in ("hinge", "slide"):  # the spring k (springref - q) is a PD drive without damping
                j.target_ke = stiffness
                ref = self.number(el, a, "springref", 0.0)
                j.target_pos = ref * (self.angle_scale if t == "hinge" else 1.0)
            else:
                self.warn(el, f"stiffness of a {t} joint is not supported (ignored)")
        if self.number(el, a, "frictionloss", 0.0) != 0.0:
            self.warn(el, "joint frictionloss is not supported (ignored)")
        if self.number(el, a, "ref", 0.0) != 0.0:
            self.warn(el, "joint ref is not supported: the pose in the file is taken as the zero position")
        for k in a:
            if k not in JOINT_READ and k not in JOINT_IGNORED:
                self.warn(el, f"joint attribute '{k}' is not supported (ignored)")
        return j

    def read_geom(self, el, cls, frame):
        a = self.attrs(el, cls)
        t = a.get("type", "sphere")
        if t not in GEOM_TYPES:
            if t in ("hfield", "sdf"):
                raise self.error(el, f"geom type '{t}' is not supported")
            raise self.error(el, f"geom type '{t}' is not one of {', '.join(GEOM_TYPES)}")
        name = a.get("name") or f"geom_{self.src(el).line(el)}"
        size = self.numbers(el, a, "size", None, (0, 0, 0))
        pos, quat = self.frame_of(el, a)
        mesh = None
        if "fromto" in a and t in ("capsule", "cylinder", "box", "ellipsoid"):
            ft = self.numbers(el, a, "fromto", 6)
            d = ft[3:] - ft[:3]
            length = np.linalg.norm(d)
            if length < 1e-12:
                raise self.error(el, "fromto has zero length")
            pos, quat = 0.5 * (ft[:3] + ft[3:]), quat_between((0.0, 0.0, 1.0), d)
            half = 0.5 * length
        elif "fromto" in a:
            raise self.error(el, f"fromto does not apply to a {t} geom")
        else:
            half = None

        def need(k):
            if len(size) < k or np.any(size[:k] <= 0):
                raise self.error(el, f"a {t} geom needs {k} positive size value(s), got size='{a.get('size', '')}'")
            return size[:k]

        if t == "sphere":
            sz = (need(1)[0],)
        elif t in ("capsule", "cylinder"):
            r = need(1)[0]
            sz = (r, half if half is not None else need(2)[1])
        elif t in ("box", "ellipsoid"):
            if half is not None:
                sz = tuple(need(2)) + (half,)
            else:
                sz = tuple(need(3))
        elif t == "plane":
            sz = (float(size[0]) if len(size) > 0 and size[0] > 0 else 50.0,
                  float(size[1]) if len(size) > 1 and size[1] > 0 else 50.0)
        else:  # mesh
            mname = a.get("mesh")
            if mname not in self.meshes:
                raise self.error(el, f"mesh '{mname}' is not defined in <asset>")
            pts, tris, _ = self.meshes[mname]
            mesh = (pts, tris)
            sz = (1.0, 1.0, 1.0)
        fp, fq = transform_mul(frame, (pos, quat))
        g = Geom(t, name, self.where(el), sz, fp, fq, mesh=mesh)
        g.density = self.number(el, a, "density", 1000.0)
        g.mass = self.number(el, a, "mass")
        if g.density < 0 or (g.mass is not None and g.mass < 0):
            raise self.error(el, "density and mass must be >= 0")
        contype = int(float(a.get("contype", "1")))
        conaffinity = int(float(a.get("conaffinity", "1")))
        g.collide = bool(contype or conaffinity)
        if not g.collide:
            self.note(el, "contype = conaffinity = 0: a visual geom (mass only, no collision shape)")
        given = [k for k in CONTACT_ATTRS if k in a]
        if given and g.collide:
            self.warn(el, f"contact parameters {', '.join(given)} are not mapped onto kernelcore's contact model "
                          f"(its default material is used)")
        for k in a:
            if k not in GEOM_READ and k not in GEOM_VISUAL and k not in CONTACT_ATTRS:
                self.warn(el, f"geom attribute '{k}' is not supported (ignored)")
        return g

    # -- actuators -----------------------------------------------------------------------------------------
    def read_actuators(self, el, desc):
        joints = {j.name for b in desc.bodies for j in b.joints}
        for c in el:
            if c.tag not in ACTUATORS:
                self.warn(c, f"actuator <{c.tag}> is not supported (ignored)")
                continue
            a = self.attrs(c, "main")
            jn = a.get("joint")
            if jn is None:
                self.warn(c, "only actuators on a joint are supported (this one acts on "
                             f"{next((k for k in ('tendon', 'site', 'body') if k in a), 'nothing')}); ignored")
                continue
            if jn not in joints:
                raise self.error(c, f"joint '{jn}' is not defined")
            gear = self.numbers(c, a, "gear", None, (1,))
            act = Actuator(c.tag, a.get("name") or f"{c.tag}_{jn}", jn, float(gear[0]))
            if np.any(gear[1:] != 0):
                raise self.error(c, f"gear {gear.tolist()}: only the first component applies to a joint")
            rng = self.numbers(c, a, "ctrlrange", 2)
            if rng is not None and (self.boolean(c, a, "ctrllimited", "auto") == "true"
                                    or (self.autolimits and self.boolean(c, a, "ctrllimited", "auto") == "auto")):
                act.ctrlrange = (float(rng[0]), float(rng[1]))
            if c.tag == "position":
                act.kp = self.number(c, a, "kp", 1.0)
                act.kv = self.number(c, a, "kv", 0.0)
            elif c.tag == "velocity":
                act.kv = self.number(c, a, "kv", 1.0)
            if "forcerange" in a:
                self.warn(c, "forcerange is not enforced (the force is not clamped)")
            desc.actuators.append(act)
            joint = next(j for b in desc.bodies for j in b.joints if j.name == jn)
            if (joint.target_ke or joint.target_kd) and c.tag in ("position", "velocity"):
                self.warn(c, f"joint '{jn}' already has a drive (its stiffness or another actuator); this "
                             f"{c.tag} actuator replaces its gains")
            if c.tag == "position":
                joint.target_ke, joint.target_kd = act.kp * act.gear ** 2, act.kv * act.gear ** 2
                joint.target_pos = 0.0
            elif c.tag == "velocity":
                joint.target_kd = act.kv * act.gear ** 2
