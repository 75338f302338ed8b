"""URDF (the ROS robot description format) -> the importers' Description.

Read: links (inertial, collision geometry box/sphere/cylinder/mesh), joints (revolute,
continuous, prismatic, fixed, floating, planar as a 3-dof d6 joint), origins (xyz, rpy),
axes, limits, dynamics damping.  Every element the importer does not reproduce is a warning
(physics lost: mimic, friction, ...) or a note (no physics: visuals, materials,
gazebo and transmission blocks) naming the file, line and element.
"""
from __future__ import annotations

import os

import numpy as np

from .description import Body, Description, Geom, Inertial, Joint
from .meshes import load_mesh
from .spatial import quat_from_rpy, quat_to_matrix, transform_identity
from .xmlsource import XmlFile

WHO = "parse_urdf"
JOINT_KINDS = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed",
               "floating": "free", "planar": "planar"}


class UrdfReader:
    def __init__(self, path, report, density=1000.0):
        self.src = XmlFile(path, WHO)
        self.report = report
        self.density = float(density)
        self.dir = os.path.dirname(os.path.abspath(self.src.path))

    # -- attribute helpers ---------------------------------------------------------------------------------
    def numbers(self, el, name, count, default=None):
        text = el.get(name)
        if text is None:
            if default is None:
                raise self.src.error(el, f"attribute '{name}' is missing")
            return np.asarray(default, np.float64)
        try:
            v = np.asarray([float(x) for x in text.split()], np.float64)
        except ValueError:
            raise self.src.error(el, f"attribute {name}='{text}' must be {count} number(s)") from None
        if v.shape != (count,) or not np.all(np.isfinite(v)):
            raise self.src.error(el, f"attribute {name}='{text}' must be {count} finite number(s)")
        return v

    def number(self, el, name, default=None):
        return float(self.numbers(el, name, 1, None if default is None else [default])[0])

    def origin(self, el):
        """(p, q) of the <origin> child of ``el`` (identity when absent)."""
        o = el.find("origin")
        if o is None:
            return transform_identity()
        return (self.numbers(o, "xyz", 3, (0, 0, 0)), quat_from_rpy(self.numbers(o, "rpy", 3, (0, 0, 0))))

    # -- reading -------------------------------------------------------------------------------------------
    def read(self):
        src, root = self.src, self.src.root
        if root.tag != "robot":
            raise src.error(root, "the root element must be <robot> (is this a URDF file?)")
        for el in root.iter():
            if el.tag.startswith("xacro:"):
                raise src.error(el, "xacro macros are not URDF: expand the file with `xacro` first")
        links, joints = {}, []
        for el in root:
            if el.tag == "link":
                name = el.get("name")
                if not name:
                    raise src.error(el, "a link needs a name")
                if name in links:
                    raise src.error(el, f"link '{name}' is defined twice (first at line {src.line(links[name])})")
                links[name] = el
            elif el.tag == "joint":
                joints.append(el)
            elif el.tag in ("material", "gazebo", "transmission", "ros2_control"):
                self.report.note(src, el, f"<{el.tag}> carries no dynamics for the simulator (not imported)")
            else:
                self.report.warn(src, el, f"element <{el.tag}> is not supported (ignored)")
        if not links:
            raise src.error(root, "the robot has no <link>")
        parent_of = {}  # child link -> (parent link, joint element)
        for el in joints:
            name = el.get("name")
            if not name:
                raise src.error(el, "a joint needs a name")
            p, c = el.find("parent"), el.find("child")
            if p is None or c is None or not p.get("link") or not c.get("link"):
                raise src.error(el, "a joint needs <parent link=...> and <child link=...>")
            pl, cl = p.get("link"), c.get("link")
            for what, ln in (("parent", pl), ("child", cl)):
                if ln not in links:
                    raise src.error(el, f"{what} link '{ln}' is not defined")
            if pl == cl:
                raise src.error(el, f"joint connects link '{pl}' to itself")
            if cl in parent_of:
                first = parent_of[cl][1]
                raise src.error(el, f"link '{cl}' already has a parent: joint '{first.get('name')}' (line "
                                    f"{src.line(first)}) connects it to '{parent_of[cl][0]}'")
            parent_of[cl] = (pl, el)
        roots = [n for n in links if n not in parent_of]
        if not roots:
            raise src.error(root, f"the joints form a cycle (every link has a parent): {self.cycle(parent_of)}")
        children = {}
        for cl, (pl, el) in parent_of.items():
            children.setdefault(pl, []).append((cl, el))
        order = []
        stack = list(reversed(roots))
        while stack:  # depth first, children in file order
            n = stack.pop()
            order.append(n)
            stack += [c for c, _ in reversed(children.get(n, []))]
        missing = [n for n in links if n not in order]
        if missing:
            raise src.error(root, f"the joints form a cycle: {self.cycle({k: v for k, v in parent_of.items() if k in missing})}")
        if len(roots) > 1:
            raise src.error(links[roots[1]], f"the robot has {len(roots)} root links ({', '.join(roots)}); a URDF "
                                             f"must be one tree (connect them with joints)")
        desc = Description(self.src.path)
        index = {}
        for n in order:
            el = links[n]
            if n == roots[0] and n == "world" and el.find("inertial") is None and el.find("collision") is None:
                index[n] = -1  # the conventional fixed 'world' link: the simulator's world
                self.report.note(src, el, "link 'world' is the world frame (bodies jointed to it hang from the world)")
                continue
            if n in parent_of:
                pl, jel = parent_of[n]
                body = Body(n, index[pl], self.origin(jel), src.where(el))
                body.joints = self.read_joint(jel)
            else:
                body = Body(n, -1, transform_identity(), src.where(el))
            self.read_link(el, body)
            index[n] = len(desc.bodies)
            desc.bodies.append(body)
        return desc

    def cycle(self, parent_of):
        n = next(iter(parent_of))
        seen = [n]
        while parent_of[n][0] not in seen:
            n = parent_of[n][0]
            seen.append(n)
        start = seen.index(parent_of[n][0])
        loop = seen[start:] + [seen[start]]
        return " <- ".join(f"'{x}'" for x in loop)

    def read_joint(self, el):
        src = self.src
        t = el.get("type")
        if t not in JOINT_KINDS:
            raise src.error(el, f"joint type '{t}' is not a URDF joint type ({', '.join(JOINT_KINDS)})")
        kind = JOINT_KINDS[t]
        j = Joint(kind, el.get("name"), src.where(el))
        known = {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic", "calibration", "safety_controller"}
        for c in el:
            if c.tag not in known:
                self.report.warn(src, c, f"element <{c.tag}> of a joint is not supported (ignored)")
        if kind in ("revolute", "prismatic", "planar"):
            a = el.find("axis")
            axis = self.numbers(a, "xyz", 3, (1, 0, 0)) if a is not None else np.array([1.0, 0.0, 0.0])
            n = np.linalg.norm(axis)
            if n < 1e-9:
                raise src.error(a if a is not None else el, f"the joint axis {axis.tolist()} has zero length")
            j.axis = axis / n
            lim = el.find("limit")
            if t in ("revolute", "prismatic"):
                if lim is None:
                    raise src.error(el, f"a {t} joint needs a <limit> element (URDF requires it; use type "
                                        f"'continuous' for an unlimited revolute joint)")
                lo, hi = self.number(lim, "lower", 0.0), self.number(lim, "upper", 0.0)
                if lo > hi:
                    raise src.error(lim, f"lower limit {lo:g} is above the upper limit {hi:g}")
                j.limit = (lo, hi)
            if lim is not None and (lim.get("effort") is not None or lim.get("velocity") is not None):
                self.report.note(src, lim, "effort and velocity limits are not enforced by the simulator")
        elif el.find("axis") is not None and t != "planar":
            self.report.note(src, el.find("axis"), f"<axis> has no meaning for a {t} joint (ignored)")
        dyn = el.find("dynamics")
        if dyn is not None:
            j.damping = self.number(dyn, "damping", 0.0)
            if j.damping < 0:
                raise src.error(dyn, f"damping must be >= 0, got {j.damping:g}")
            if self.number(dyn, "friction", 0.0) != 0.0:
                self.report.warn(src, dyn, "joint friction (Coulomb) is not supported (ignored)")
        if el.find("mimic") is not None:
            self.report.warn(src, el.find("mimic"), f"mimic joints are not supported: joint '{j.name}' moves "
                                                    f"independently of '{el.find('mimic').get('joint')}'")
        for tag in ("calibration", "safety_controller"):
            if el.find(tag) is not None:
                self.report.note(src, el.find(tag), f"<{tag}> is not used by the simulator")
        return [j]

    def read_link(self, el, body):
        src = self.src
        for c in el:
            if c.tag not in ("inertial", "visual", "collision"):
                self.report.warn(src, c, f"element <{c.tag}> of a link is not supported (ignored)")
        inn = el.find("inertial")
        if inn is not None:
            m_el, i_el = inn.find("mass"), inn.find("inertia")
            if m_el is None:
                raise src.error(inn, "<inertial> needs a <mass value=...>")
            mass = self.number(m_el, "value")
            if mass < 0:
                raise src.error(m_el, f"mass must be >= 0, got {mass:g}")
            names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
            v = dict(zip(names, (self.number(i_el, n, 0.0) for n in names))) if i_el is not None else \
                dict.fromkeys(names, 0.0)
            tensor = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                               [v["ixz"], v["iyz"], v["izz"]]])
            p, q = self.origin(inn)
            rot = quat_to_matrix(q)
            # the tensor is given in the inertial frame; the body frame sees R I R^T
            body.inertial = Inertial(mass, p, rot @ tensor @ rot.T)
        for c in el.findall("collision"):
            g = self.read_geometry(c, body)
            if g is not None:
                body.geoms.append(g)
        visuals = el.findall("visual")
        if visuals:
            self.report.note(src, visuals[0], f"{len(visuals)} <visual> element(s) of link '{body.name}' are not "
                                              f"imported (the collision geometry is simulated and drawn)")

    def read_geometry(self, el, body):
        src = self.src
        geo = el.find("geometry")
        if geo is None or len(geo) != 1:
            raise src.error(geo if geo is not None else el, "<geometry> needs exactly one shape element")
        shape = geo[0]
        p, q = self.origin(el)
        name = el.get("name") or f"{body.name}_collision_{len(body.geoms)}"
        where = src.where(shape)
        if shape.tag == "box":
            size = self.numbers(shape, "size", 3)
            if np.any(size <= 0):
                raise src.error(shape, f"box size must be > 0, got {size.tolist()}")
            return Geom("box", name, where, tuple(0.5 * size), p, q, density=self.density)
        if shape.tag == "sphere":
            r = self.number(shape, "radius")
            if r <= 0:
                raise src.error(shape, f"sphere radius must be > 0, got {r:g}")
            return Geom("sphere", name, where, (r,), p, q, density=self.density)
        if shape.tag in ("cylinder", "capsule"):
            r, length = self.number(shape, "radius"), self.number(shape, "length")
            if r <= 0 or length <= 0:
                raise src.error(shape, f"{shape.tag} radius and length must be > 0, got {r:g}, {length:g}")
            return Geom(shape.tag, name, where, (r, 0.5 * length), p, q, density=self.density)
        if shape.tag == "mesh":
            fn = shape.get("filename")
            if not fn:
                raise src.error(shape, "<mesh> needs a filename")
            path = self.resolve(fn, shape)
            try:
                pts, tris = load_mesh(path)
            except (ValueError, OSError) as e:
                raise src.error(shape, f"cannot read mesh '{fn}' ({path}): {e}") from None
            scale = self.numbers(shape, "scale", 3, (1, 1, 1))
            if np.prod(scale) < 0:  # a mirror turns the triangles inside out
                tris = tris[:, ::-1]
            return Geom("mesh", name, where, tuple(scale), p, q, mesh=(pts * scale, tris), density=self.density)
        raise src.error(shape, f"unknown geometry <{shape.tag}> (box, sphere, cylinder, mesh)")

    def resolve(self, fn, el):
        """File path of a mesh reference: package://pkg/rel (searched upwards from the URDF's folder),
        file://abs, or a path relative to the URDF."""
        cands = []
        if fn.startswith("package://"):
            rest = fn[len("package://"):]
            pkg, _, rel = rest.partition("/")
            d = self.dir
            while True:
                if os.path.basename(d) == pkg:
                    cands.append(os.path.join(d, rel))
                cands.append(os.path.join(d, pkg, rel))
                parent = os.path.dirname(d)
                if parent == d:
                    break
                d = parent
            cands.append(os.path.join(self.dir, rel))
        elif fn.startswith("file://"):
            cands.append(fn[len("file://"):])
        else:
            cands.append(fn if os.path.isabs(fn) else os.path.join(self.dir, fn))
        for c in cands:
            if os.path.isfile(c):
                return c
        raise self.src.error(el, f"mesh file '{fn}' not found (looked for {cands[0]}"
                                 + (f" and {len(cands) - 1} other place(s))" if len(cands) > 1 else ")"))
