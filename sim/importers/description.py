"""The importers' intermediate description of a robot: a tree of bodies, each with the
joints that connect it to its parent, its inertial and its geoms.

URDF and MJCF are both read into this form (urdf.py, mjcf.py) and one function adds it to a
ModelBuilder (assemble.py).  Frames: a body's ``frame`` is its pose in its parent body's
frame (the world for roots) with every joint at zero; joint anchors, axes, inertials and
geoms are in the body's own frame.  Lengths in metres, angles in radians, masses in kg.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..builder import mesh_mass_properties
from .spatial import quat_to_matrix

JOINT_TYPES = ("revolute", "prismatic", "ball", "free", "fixed", "planar")
GEOM_KINDS = ("sphere", "box", "capsule", "cylinder", "ellipsoid", "plane", "mesh")


@dataclass
class Joint:
    """A joint moving its body relative to the parent body.

    kind: one of JOINT_TYPES; pos: anchor in the body frame (3,); axis: unit (3,) in the body
    frame (revolute, prismatic; the plane's normal for planar); limit: (lower, upper) [rad or
    m] or None; damping [N m s/rad or N s/m]; armature [kg m^2 or kg]; target_ke / target_kd:
    PD drive gains and default target (MJCF position / velocity actuators, joint stiffness
    towards springref); where: file:line element, for messages.
    """
    kind: str
    name: str
    where: str
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    limit: tuple | None = None
    damping: float = 0.0
    armature: float = 0.0
    target_ke: float = 0.0
    target_kd: float = 0.0
    target_pos: float = 0.0


@dataclass
class Inertial:
    """mass [kg], com (3,) [m] in the body frame, inertia (3, 3) about the COM in the body frame [kg m^2]."""
    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass
class Geom:
    """A shape on a body. ``size``: sphere (r,), box half extents (3,), capsule/cylinder
    (r, half length along local Z), ellipsoid radii (3,), plane (half x, half y); ``mesh``:
    (points (n, 3), triangles (m, 3)) already scaled, for kind "mesh"; ``pos``/``quat`` in the
    body frame; ``collide``: False for visual-only geoms; ``density`` [kg/m^3] or ``mass`` [kg]
    (``mass`` wins) for bodies without an explicit inertial."""
    kind: str
    name: str
    where: str
    size: tuple
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quat: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))
    mesh: tuple | None = None
    collide: bool = True
    density: float = 1000.0
    mass: float | None = None


@dataclass
class Body:
    name: str
    parent: int  # index into Description.bodies, -1: the world
    frame: tuple  # (p, q) in the parent's frame at the zero pose
    where: str
    joints: list = field(default_factory=list)
    inertial: Inertial | None = None
    geoms: list = field(default_factory=list)


@dataclass
class Actuator:
    """An MJCF actuator: ``kind`` "motor" (joint_f = gear * ctrl), "position" (PD drive,
    joint_target_pos = ctrl) or "velocity" (joint_target_vel = ctrl) on joint ``joint``;
    ``dof``: that joint's dof index in the model once imported."""
    kind: str
    name: str
    joint: str
    gear: float = 1.0
    ctrlrange: tuple | None = None
    kp: float = 0.0
    kv: float = 0.0
    dof: int | None = None


@dataclass
class Description:
    path: str
    bodies: list = field(default_factory=list)
    static_geoms: list = field(default_factory=list)  # geoms of the world body (MJCF)
    actuators: list = field(default_factory=list)
    gravity: tuple | None = None
    timestep: float | None = None


def geom_volume_properties(g: Geom):
    """(volume [m^3], centre (3,) in the geom frame, inertia (3, 3) about it for unit density) of a
    geom; None for kinds without volume (plane)."""
    s = g.size
    if g.kind == "sphere":
        r = s[0]
        v = 4.0 / 3.0 * math.pi * r ** 3
        return v, np.zeros(3), np.eye(3) * 0.4 * v * r * r
    if g.kind == "ellipsoid":
        a, b, c = s
        v = 4.0 / 3.0 * math.pi * a * b * c
        return v, np.zeros(3), np.diag([v / 5 * (b * b + c * c), v / 5 * (a * a + c * c), v / 5 * (a * a + b * b)])
    if g.kind == "box":
        hx, hy, hz = s
        v = 8.0 * hx * hy * hz
        return v, np.zeros(3), np.diag([v / 3 * (hy * hy + hz * hz), v / 3 * (hx * hx + hz * hz),
                                        v / 3 * (hx * hx + hy * hy)])
    if g.kind == "cylinder":
        r, h = s[0], s[1]
        v = math.pi * r * r * 2 * h
        t = v * (3 * r * r + 4 * h * h) / 12.0
        return v, np.zeros(3), np.diag([t, t, 0.5 * v * r * r])
    if g.kind == "capsule":  # axis along local Z
        r, h = s[0], s[1]
        v_cyl = math.pi * r * r * 2 * h
        v_caps = 4.0 / 3.0 * math.pi * r ** 3
        axial = v_cyl * r * r / 2 + v_caps * 0.4 * r * r
        # each hemisphere: 2/5 r^2 about its flat face, its centroid 3r/8 from it, h + 3r/8 from the centre
        transverse = v_cyl * (r * r / 4 + h * h / 3) + v_caps * (0.4 * r * r + h * h + 0.75 * h * r)
        return v_cyl + v_caps, np.zeros(3), np.diag([transverse, transverse, axial])
    if g.kind == "mesh":
        pts, tris = g.mesh
        m, com, inertia = mesh_mass_properties(pts, tris, 1.0)
        return m, com, inertia
    return None


def geom_mass_properties(g: Geom):
    """(mass, centre (3,) in the body frame, inertia (3, 3) about it in the body frame) or None."""
    props = geom_volume_properties(g)
    if props is None:
        return None
    v, c, i = props
    if v <= 0:
        return None
    mass = g.mass if g.mass is not None else g.density * v
    rot = quat_to_matrix(g.quat)
    return mass, g.pos + rot @ c, rot @ (i * (mass / v)) @ rot.T
