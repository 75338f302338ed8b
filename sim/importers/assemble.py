"""Add an importer Description (description.py) to a sim.ModelBuilder.

Bodies get their mass, centre of mass and inertia from the file (an explicit inertial, or
the geoms' volumes times their density, as MuJoCo does), never from the builder's shape
defaults, so the numbers are the file's.  A body without mass that is welded to its parent
(a URDF frame link, an MJCF body without joints or mass) is merged into the parent: its
geoms and children move over, nothing physical changes.  A massless body that a joint
moves is an error (its joint would have no inertia to act on).
"""
from __future__ import annotations

import inspect
import math

import numpy as np

from .description import Body, geom_mass_properties
from .spatial import IDENTITY_QUAT, as_transform, flat, quat_mul, quat_to_matrix, transform_identity, transform_mul
from .xmlsource import ModelFileError

# our capsule's axis is local +Y, URDF/MJCF capsules and cylinders run along local +Z
Z_TO_Y = np.array([math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)])  # rotates +Y onto +Z


class ImportResult:
    """What an importer added to the builder.

    Attributes:
        bodies: {body name: builder body index} (merged massless bodies map to their parent's,
            -1 for the world); joints: {joint name: builder joint index} (several MJCF joints
            of one body share one d6 joint); joint_coord / joint_dof: {file joint name: index of
            its first coordinate in ``joint_q`` / first dof in ``joint_qd``, ``joint_f``} in this
            builder; shapes: builder shape indices added; actuators: list of
            description.Actuator, each with ``dof`` (index into ``Control.joint_f`` and the
            drive targets); warnings / notes: strings naming file, line and element;
            gravity (3,) and timestep [s] of an MJCF file (its <option>; gravity (0, 0, -9.81) and
            timestep None when absent; None for URDF); up_axis: "Z".
    """

    def __init__(self, path):
        self.path = path
        self.bodies = {}
        self.joints = {}
        self.joint_coord = {}
        self.joint_dof = {}
        self.shapes = []
        self.actuators = []
        self.warnings = []
        self.notes = []
        self.gravity = None
        self.timestep = None
        self.up_axis = "Z"

    def __repr__(self):
        return (f"ImportResult({self.path!r}: {len(set(self.bodies.values()) - {-1})} bodies, {len(self.joints)} "
                f"joints, {len(self.shapes)} shapes, {len(self.warnings)} warnings)")


def mass_properties(body: Body):
    """(mass, com, inertia) of a body from its inertial or its geoms; mass 0 when it has none."""
    if body.inertial is not None:
        i = body.inertial
        return float(i.mass), np.asarray(i.com, np.float64), np.asarray(i.inertia, np.float64)
    parts = [p for p in (geom_mass_properties(g) for g in body.geoms) if p is not None]
    mass = sum(p[0] for p in parts)
    if mass <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(p[0] * p[1] for p in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        d = c - com
        inertia += i + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def _combine(a, b, frame_b):
    """Mass properties of a and of b (given in a frame placed at ``frame_b`` in a's frame), in a's frame."""
    ma, ca, ia = a
    mb, cb, ib = b
    if mb <= 0:
        return a
    rot = quat_to_matrix(frame_b[1])
    cb = frame_b[0] + rot @ cb
    ib = rot @ ib @ rot.T
    m = ma + mb
    c = (ma * ca + mb * cb) / m
    out = np.zeros((3, 3))
    for mm, cc, ii in ((ma, ca, ia), (mb, cb, ib)):
        d = cc - c
        out += ii + mm * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return m, c, out


def add_description(desc, builder, xform, report, result, root_joint="fixed", collapse_fixed_joints=False):
    """Add ``desc`` to ``builder`` placed by ``xform``; fills ``result``.

    root_joint: how a root body without joints attaches to the world: "fixed" or "free".
    collapse_fixed_joints: merge every body welded to its parent into it (not only massless ones).
    """
    base = as_transform(xform)
    bodies = desc.bodies
    n = len(bodies)
    props = [mass_properties(b) for b in bodies]
    parent = [b.parent for b in bodies]
    frame = [b.frame for b in bodies]
    geoms = [[(transform_identity(), g) for g in b.geoms] for b in bodies]
    static_geoms = [(transform_identity(), g) for g in desc.static_geoms]
    merged_into = {}  # body -> the body (or -1) it was merged into, with its frame there
    for k in range(n):  # parents come before children
        b = bodies[k]
        welded = all(j.kind == "fixed" for j in b.joints) and not (not b.joints and b.parent == -1
                                                                    and root_joint == "free")
        if welded and (props[k][0] <= 0 or collapse_fixed_joints):
            p = parent[k]
            if p >= 0:
                props[p] = _combine(props[p], props[k], frame[k])
                geoms[p] += [(transform_mul(frame[k], t), g) for t, g in geoms[k]]
            else:
                static_geoms += [(transform_mul(frame[k], t), g) for t, g in geoms[k]]
            geoms[k] = []
            merged_into[k] = (p, frame[k])
            for c in range(k + 1, n):
                if parent[c] == k:
                    parent[c] = p
                    frame[c] = transform_mul(frame[k], frame[c])
            if props[k][0] <= 0:
                result.notes.append(f"{b.where}: body '{b.name}' has no mass and no joint: merged into "
                                    f"{'the world' if p < 0 else repr(bodies[p].name)}")
        elif props[k][0] <= 0:
            mover = f"joint '{b.joints[0].name}'" if b.joints else "its free joint to the world"
            raise ModelFileError(f"{report.who}: {b.where}: body '{b.name}' has no mass (no inertial and no geometry "
                                 f"with volume) but {mover} moves it; give it an inertial")
    # world poses at the zero configuration
    world = {}
    index = {}
    for k in range(n):
        if k in merged_into:
            continue
        pw = base if parent[k] < 0 else world[parent[k]]
        world[k] = transform_mul(pw, frame[k])
        m, c, i = props[k]
        try:
            index[k] = builder.add_body(xform=flat(world[k]), mass=m, inertia=i, com=c, name=bodies[k].name)
        except ValueError as e:
            raise ModelFileError(f"{report.who}: {bodies[k].where}: {e}") from None
    for k in range(n):
        if k in merged_into:
            p, f = merged_into[k]
            while p >= 0 and p in merged_into:
                p = merged_into[p][0]
            result.bodies[bodies[k].name] = index.get(p, -1)
        else:
            result.bodies[bodies[k].name] = index[k]
    for k, b in index.items():
        for t, g in geoms[k]:
            _add_geom(builder, g, transform_mul(t, (g.pos, g.quat)), b, report, result)
    for t, g in static_geoms:
        _add_geom(builder, g, transform_mul(base, transform_mul(t, (g.pos, g.quat))), -1, report, result)
    _add_joints(builder, bodies, index, parent, frame, base, root_joint, report, result, desc.path)


def _add_geom(builder, g, t, body, report, result):
    """Shape for geom ``g`` at transform ``t`` (body frame, or world for body -1)."""
    if not g.collide:
        return
    pos, q = t
    where = f"{g.where}"
    kw = dict(name=g.name, body=body)
    if body >= 0:
        kw["density"] = g.density
    try:
        if g.kind == "sphere":
            s = builder.add_shape_sphere(pos=pos, radius=g.size[0], rot=q, **kw)
        elif g.kind == "box":
            s = builder.add_shape_box(pos=pos, rot=q, half_extents=g.size, **kw)
        elif g.kind == "capsule":
            s = builder.add_shape_capsule(pos=pos, rot=quat_mul(q, Z_TO_Y), radius=g.size[0], half_height=g.size[1],
                                          **kw)
        elif g.kind == "cylinder":
            r, h = g.size
            if h > r:
                s = builder.add_shape_capsule(pos=pos, rot=quat_mul(q, Z_TO_Y), radius=r, half_height=h - r, **kw)
                how = f"a capsule of radius {r:g} m and the same length"
            else:
                s = builder.add_shape_sphere(pos=pos, radius=r, rot=q, **kw)
                how = f"a sphere of radius {r:g} m"
            _warn_once(report, where, f"cylinder collision shapes are not supported: approximated by {how} "
                                      f"(mass and inertia are the cylinder's)")
        elif g.kind == "ellipsoid":
            r = max(g.size)
            s = builder.add_shape_sphere(pos=pos, radius=r, rot=q, **kw)
            _warn_once(report, where, f"ellipsoid collision shapes are not supported: approximated by a sphere of "
                                      f"radius {r:g} m (mass and inertia are the ellipsoid's)")
        elif g.kind == "plane":
            if body >= 0:
                _warn_once(report, where, "a plane on a moving body is not supported (not added)")
                return
            # our plane's normal is local +Y, the file's local +Z
            s = builder.add_shape_plane(pos=pos, rot=quat_mul(q, Z_TO_Y), width=2 * g.size[0], length=2 * g.size[1],
                                        name=g.name)
        elif g.kind == "mesh":
            pts, tris = g.mesh
            if body >= 0 and "body" not in inspect.signature(builder.add_shape_mesh).parameters:
                _warn_once(report, where, "mesh collision shapes on moving bodies are not supported by this "
                                          "ModelBuilder yet (not added; the mesh still gives the body its mass if it "
                                          "has no inertial)")
                return
            kwm = dict(name=g.name)
            if body >= 0:
                kwm.update(body=body, density=g.density)
            s = builder.add_shape_mesh(pts, tris, pos=pos, rot=q, **kwm)
        else:  # pragma: no cover - the readers only make the kinds above
            raise ValueError(f"unknown geom kind {g.kind}")
    except ValueError as e:
        raise ModelFileError(f"{report.who}: {where}: {e}") from None
    result.shapes.append(s)


def _warn_once(report, where, msg):
    import warnings

    from .xmlsource import ModelImportWarning

    text = f"{where}: {msg}"
    if text not in report.warnings:
        report.warnings.append(text)
        warnings.warn(f"{report.who}: {text}", ModelImportWarning, stacklevel=5)


def _add_joints(builder, bodies, index, parent, frame, base, root_joint, report, result, desc_path):
    """One builder joint per body that remains: its file joints (several MJCF joints on one
    body become one compound d6 joint), a weld for a body without joints, or the root joint."""
    if not hasattr(builder, "add_joint_revolute"):
        if index:
            _warn_once(report, desc_path, "this ModelBuilder has no joints yet: the bodies are added unconnected")
        return
    for k in index:
        b = bodies[k]
        p = parent[k]
        pb = -1 if p < 0 else index[p]
        f = transform_mul(base, frame[k]) if p < 0 else frame[k]  # a world joint's frame is in world
        joints = [j for j in b.joints if j.kind != "fixed"] if b.joints else []
        if joints:
            name = "_".join(j.name for j in joints)
        elif b.joints:
            name = b.joints[0].name
        else:  # a root without a joint in the file
            name = f"{b.name}_root" if p < 0 and root_joint == "free" else f"{b.name}_weld"
        try:
            if not joints:
                if not b.joints and p < 0 and root_joint == "free":
                    j = builder.add_joint_free(index[k], parent=-1, name=name)
                else:
                    j = builder.add_joint_fixed(pb, index[k], parent_xform=flat(f),
                                                name=name)
            elif len(joints) == 1:
                j = _add_one(builder, joints[0], pb, index[k], f)
            else:
                j = _add_compound(builder, b, joints, pb, index[k], f)
        except ValueError as e:
            where = joints[0].where if joints else b.where
            raise ModelFileError(f"{report.who}: {where}: {e}") from None
        result.joints[name] = j
        qs, ds = builder.joint_q_start[j], builder.joint_qd_start[j]
        for n_before, jj in enumerate(joints):  # each file joint of a compound d6 maps to it too
            result.joints[jj.name] = j
            result.joint_coord[jj.name] = qs + n_before
            result.joint_dof[jj.name] = ds + n_before


def _add_one(builder, jd, parent, child, frame):
    anchor = (np.asarray(jd.pos, np.float64), IDENTITY_QUAT.copy())
    xp = flat(transform_mul(frame, anchor))
    xc = flat(anchor)
    if jd.kind == "free":
        if parent < 0:  # coordinates = the body's pose in world, as in MuJoCo
            return builder.add_joint_free(child, parent=-1, armature=jd.armature, damping=jd.damping, name=jd.name)
        return builder.add_joint_free(child, parent=parent, parent_xform=xp, child_xform=xc, armature=jd.armature,
                                      damping=jd.damping, name=jd.name)
    if jd.kind == "planar":  # slide in the plane normal to the axis, turn about it
        n = np.asarray(jd.axis, np.float64)
        u = np.cross(n, (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 1.0, 0.0))
        u /= np.linalg.norm(u)
        return builder.add_joint_d6(parent, child, linear_axes=[tuple(u), tuple(np.cross(n, u))],
                                    angular_axes=[tuple(n)], parent_xform=xp, child_xform=xc, damping=jd.damping,
                                    name=jd.name)
    if jd.kind == "ball":
        return builder.add_joint_ball(parent, child, parent_xform=xp, child_xform=xc, armature=jd.armature,
                                      damping=jd.damping, name=jd.name)
    lo, hi = jd.limit if jd.limit is not None else (None, None)
    add = builder.add_joint_revolute if jd.kind == "revolute" else builder.add_joint_prismatic
    return add(parent, child, parent_xform=xp, child_xform=xc, axis=tuple(jd.axis), limit_lower=lo, limit_upper=hi,
               target_ke=jd.target_ke, target_kd=jd.target_kd, target_pos=jd.target_pos, armature=jd.armature,
               damping=jd.damping, name=jd.name)


def _add_compound(builder, body, joints, parent, child, frame):
    """Several 1-dof joints on one body as one d6 joint: slides first, then hinges, all hinges
    through one anchor (MuJoCo applies them in file order; the d6 does the same)."""
    kinds = [j.kind for j in joints]
    if any(k not in ("revolute", "prismatic") for k in kinds):
        raise ValueError(f"body '{body.name}' combines joints of kinds {kinds}; several joints on one body must "
                         f"all be hinges or slides")
    n_lin = kinds.count("prismatic")
    if kinds != ["prismatic"] * n_lin + ["revolute"] * (len(kinds) - n_lin):
        raise ValueError(f"body '{body.name}': a slide joint after a hinge is not supported (the compound joint "
                         f"slides first, then turns)")
    if n_lin > 3 or len(kinds) - n_lin > 3:
        raise ValueError(f"body '{body.name}' has more than 3 slide or 3 hinge joints")
    hinges = [j for j in joints if j.kind == "revolute"]
    anchor = np.asarray(hinges[0].pos if hinges else joints[0].pos, np.float64)
    for j in hinges[1:]:
        if np.linalg.norm(np.asarray(j.pos) - anchor) > 1e-9:
            raise ValueError(f"body '{body.name}': hinge joints at different anchors ({anchor.tolist()} and "
                             f"{np.asarray(j.pos).tolist()}) are not supported")
    a = (anchor, IDENTITY_QUAT.copy())
    big = 1e10
    lo = [j.limit[0] if j.limit is not None else -big for j in joints]
    hi = [j.limit[1] if j.limit is not None else big for j in joints]
    return builder.add_joint_d6(parent, child, linear_axes=[tuple(j.axis) for j in joints[:n_lin]],
                                angular_axes=[tuple(j.axis) for j in joints[n_lin:]],
                                parent_xform=flat(transform_mul(frame, a)), child_xform=flat(a), limit_lower=lo,
                                limit_upper=hi, target_ke=[j.target_ke for j in joints],
                                target_kd=[j.target_kd for j in joints], target_pos=[j.target_pos for j in joints],
                                armature=[j.armature for j in joints],
                                damping=[j.damping for j in joints], name="_".join(j.name for j in joints))
