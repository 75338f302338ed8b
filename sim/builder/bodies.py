"""Rigid bodies: the ModelBuilder part that adds bodies and works out their mass properties.

Maximal coordinates: each body has a frame (``body_q``, a transform: position and
quaternion x, y, z, w of the body frame in world) and a state velocity ``body_qd``
(linear velocity of the centre of mass in world, then angular velocity in world).

Mass, centre of mass and inertia come from the body's shapes (density x volume,
parallel-axis theorem) unless they are given to :meth:`BodyBuilder.add_body`.
"""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc

from ..model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_SPHERE
from .shapes import _check_quat, _check_vec3, quat_to_matrix


def shape_mass_properties(kind: int, scale, density: float):
    """Mass [kg] and inertia (3, 3) about the shape's centre in its own frame [kg m^2].

    ``scale``: sphere (r, _, _), box half extents, capsule (r, half height along Y, _) [m];
    ``density`` [kg/m^3].  Other shape kinds have no mass (static colliders only).
    """
    if kind == SHAPE_SPHERE:
        r = scale[0]
        m = density * 4.0 / 3.0 * math.pi * r ** 3
        return m, np.eye(3) * (0.4 * m * r * r)
    if kind == SHAPE_BOX:
        hx, hy, hz = scale
        m = density * 8.0 * hx * hy * hz
        return m, np.diag([m / 3.0 * (hy * hy + hz * hz), m / 3.0 * (hx * hx + hz * hz), m / 3.0 * (hx * hx + hy * hy)])
    if kind == SHAPE_CAPSULE:
        r, h = scale[0], scale[1]
        m_cyl = density * math.pi * r * r * 2.0 * h
        m_caps = density * 4.0 / 3.0 * math.pi * r ** 3  # the two hemispheres together
        # each hemisphere: 2/5 m r^2 about its flat face, moved to its centroid (3 r / 8 away) and
        # then to the capsule centre (h + 3 r / 8 away): m (2/5 r^2 + h^2 + 3/4 h r) for the pair
        axial = m_cyl * r * r / 2.0 + m_caps * 0.4 * r * r
        transverse = m_cyl * (r * r / 4.0 + h * h / 3.0) + m_caps * (0.4 * r * r + h * h + 0.75 * h * r)
        return m_cyl + m_caps, np.diag([transverse, axial, transverse])
    return 0.0, np.zeros((3, 3))


def mesh_mass_properties(points, triangles, density: float):
    """Mass [kg], centre of mass (3,) [m] and inertia about it (3, 3) [kg m^2] of the solid
    bounded by a closed triangle mesh, from its volume integrals.

    ``points`` (n, 3) [m]; ``triangles`` (m, 3) vertex indices wound counter-clockwise seen
    from outside; ``density`` [kg/m^3].  Each triangle spans a tetrahedron with the origin;
    their signed volumes, first and second moments add up to the solid's (the parts outside
    cancel), so any closed mesh works, convex or not.  ValueError when the enclosed volume
    is not positive (an open mesh, or triangles wound inwards).
    """
    p = np.asarray(points, np.float64).reshape(-1, 3)
    t = np.asarray(triangles, np.int64).reshape(-1, 3)
    a, b, c = p[t[:, 0]], p[t[:, 1]], p[t[:, 2]]
    det = np.einsum("ij,ij->i", a, np.cross(b, c))  # 6 x the signed volume of (0, a, b, c)
    volume = det.sum() / 6.0
    if not volume > 1e-12 * max(1.0, float(np.abs(p).max()) ** 3):
        raise ValueError(f"mesh encloses volume {volume:g} m^3: it must be closed with its triangles wound "
                         f"counter-clockwise seen from outside")
    s = a + b + c
    com = (det[:, None] * s).sum(0) / 24.0 / volume  # each tetrahedron's centroid is s / 4
    # covariance of each tetrahedron with a vertex at the origin: det / 120 (a a^T + b b^T + c c^T + s s^T)
    cov = np.einsum("i,ijk->jk", det, np.einsum("ij,ik->ijk", a, a) + np.einsum("ij,ik->ijk", b, b)
                    + np.einsum("ij,ik->ijk", c, c) + np.einsum("ij,ik->ijk", s, s)) / 120.0
    cov = cov - volume * np.outer(com, com)  # about the centre of mass
    mass = density * volume
    inertia = density * (np.trace(cov) * np.eye(3) - cov)
    return mass, com, inertia


def combine_mass_properties(parts):
    """Total mass, centre of mass (3,) and inertia about it (3, 3) of ``parts``.

    ``parts``: iterable of (mass [kg], centre (3,) [m], rotation (3, 3), inertia about the
    centre in the part's frame (3, 3)); the result is in the common frame.
    """
    parts = list(parts)
    mass = sum(p[0] for p in parts)
    if mass <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(p[0] * np.asarray(p[1]) for p in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, rot, i_local in parts:
        d = np.asarray(c) - com
        inertia += rot @ i_local @ rot.T + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))  # parallel axes
    return mass, com, inertia


class BodyBuilder:
    """Mixin: rigid bodies (their shapes are added through the ShapeBuilder with ``body=``)."""

    def _init_bodies(self):
        self.body_q = []          # (px, py, pz, qx, qy, qz, qw)
        self.body_qd = []         # (vx, vy, vz, wx, wy, wz): COM velocity and angular velocity, world
        self.body_mass_given = []
        self.body_inertia_given = []
        self.body_com_given = []
        self.body_name = []
        self.body_world = []      # environment index (-1: shared), see add_builder

    @property
    def body_count(self) -> int:
        return len(self.body_q)

    def add_body(self, xform=None, mass: float | None = None, inertia=None, com=None, name: str | None = None,
                 vel=(0.0, 0.0, 0.0), ang_vel=(0.0, 0.0, 0.0)) -> int:
        """Add a rigid body and return its index.

        Args:
            xform: ``kc.transform(p, q)`` (or 7 numbers p, q x y z w) — the body frame in world [m].
            mass: [kg] (> 0); None: the sum of its shapes' masses.
            inertia: (3, 3) about the centre of mass, body frame [kg m^2]; None: from the
                shapes (scaled to ``mass`` when a mass is given).
            com: centre of mass in the body frame (3,) [m]; None: from the shapes.
            name: a label (default ``body_<index>``).
            vel: initial linear velocity of the centre of mass, world (3,) [m/s].
            ang_vel: initial angular velocity, world (3,) [rad/s].
        """
        who = "add_body"
        t = np.zeros(7) if xform is None else np.asarray(list(xform), np.float64).reshape(-1)
        if xform is None:
            t[6] = 1.0
        if t.shape != (7,) or not np.all(np.isfinite(t)):
            raise ValueError(f"{who}: xform must be a transform (p, q) of 7 finite numbers, got {xform!r}")
        if np.linalg.norm(t[3:]) < 1e-12:
            raise ValueError(f"{who}: the rotation of xform must be a non-zero quaternion (x, y, z, w), "
                             f"got {tuple(t[3:].tolist())}")
        q = _check_quat(t[3:], who)
        if mass is not None and not (np.isfinite(mass) and mass > 0):
            raise ValueError(f"{who}: mass must be finite and > 0, got {mass!r}")
        if inertia is not None:
            inertia = self._check_inertia(inertia, who)
        if com is not None:
            com = _check_vec3(com, who, "com")
        v = _check_vec3(vel, who, "vel")
        w = _check_vec3(ang_vel, who, "ang_vel")
        self.body_q.append(tuple(t[:3]) + tuple(q))
        self.body_qd.append(tuple(v) + tuple(w))
        self.body_mass_given.append(None if mass is None else float(mass))
        self.body_inertia_given.append(inertia)
        self.body_com_given.append(com)
        self.body_name.append(name or f"body_{self.body_count - 1}")
        self.body_world.append(getattr(self, "current_world", -1))
        return self.body_count - 1

    @staticmethod
    def _check_inertia(inertia, who):
        a = np.asarray(inertia, np.float64)
        if a.shape == (3,):
            a = np.diag(a)
        if a.shape != (3, 3) or not np.all(np.isfinite(a)):
            raise ValueError(f"{who}: inertia must be a finite (3, 3) matrix (or 3 diagonal values), got {inertia!r}")
        if not np.allclose(a, a.T, rtol=1e-6, atol=1e-12 * max(1.0, np.abs(a).max())):
            raise ValueError(f"{who}: inertia must be symmetric, got {a.tolist()}")
        ev = np.linalg.eigvalsh(a)
        # principal moments must be positive and obey the triangle inequality (a real mass distribution)
        if ev.min() <= 0 or ev[0] + ev[1] < ev[2] * (1 - 1e-6):
            raise ValueError(f"{who}: inertia is degenerate (principal moments {ev.tolist()})")
        return a

    def _body_mass_properties(self, b):
        """(mass, com (3,), inertia (3, 3)) of body ``b`` from its shapes and the given overrides."""
        parts = []
        for s in range(self.shape_count):
            if self.shape_body[s] == b and self.shape_type[s] == SHAPE_MESH:
                if self.shape_mesh_closed[s]:  # an open mesh (allowed with a given mass) adds no mass
                    pts, idx = self.shape_mesh_data[s]
                    m, c, i_local = mesh_mass_properties(pts, idx.reshape(-1, 3), self.shape_density[s])
                    rot = quat_to_matrix(self.shape_quat[s])
                    parts.append((m, np.asarray(self.shape_pos[s]) + rot @ c, rot, i_local))
            elif self.shape_body[s] == b:
                m, i_local = shape_mass_properties(self.shape_type[s], self.shape_scale[s], self.shape_density[s])
                if m > 0:
                    parts.append((m, self.shape_pos[s], quat_to_matrix(self.shape_quat[s]), i_local))
        mass, com, inertia = combine_mass_properties(parts)
        given_m, given_i, given_c = self.body_mass_given[b], self.body_inertia_given[b], self.body_com_given[b]
        who = f"finalize: body {b} ('{self.body_name[b]}')"
        if given_m is not None:
            if mass > 0:
                inertia = inertia * (given_m / mass)  # same distribution, the given mass
            mass = given_m
        if mass <= 0:
            raise ValueError(f"{who} has no mass: give add_body(mass=...) or shapes with a density > 0")
        if given_c is not None:
            if parts:  # the shapes' inertia moved to the given centre of mass (parallel axes)
                d = com - given_c
                inertia = inertia + mass * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
            com = given_c
        if given_i is not None:
            inertia = given_i
        try:
            self._check_inertia(inertia, who)
        except ValueError:
            raise ValueError(f"{who} has a degenerate inertia {np.round(inertia, 9).tolist()}: give add_body(inertia=...)"
                             " or shapes with volume") from None
        return mass, com, inertia

    def _finalize_bodies(self, m, device, requires_grad):
        n = self.body_count
        props = [self._body_mass_properties(b) for b in range(n)]
        mass = np.array([p[0] for p in props], np.float64).reshape(n)
        com = np.array([p[1] for p in props], np.float64).reshape(n, 3)
        inertia = np.array([p[2] for p in props], np.float64).reshape(n, 3, 3)
        inv_inertia = np.linalg.inv(inertia) if n else inertia

        def arr(values, dtype):
            return kc.array(np.asarray(values, np.float32), dtype=dtype, device=device, requires_grad=requires_grad)

        m.body_count = n
        m.body_name = list(self.body_name)
        m.body_q = arr(np.asarray(self.body_q, np.float64).reshape(n, 7), kc.transform)
        m.body_qd = arr(np.asarray(self.body_qd, np.float64).reshape(n, 6), kc.spatial_vector)
        m.body_mass = arr(mass, float)
        m.body_inv_mass = arr(1.0 / mass, float)
        m.body_com = arr(com, kc.vec3)
        m.body_inertia = arr(inertia, kc.mat33)
        m.body_inv_inertia = arr(inv_inertia, kc.mat33)
        m.body_world = kc.array(np.asarray(self.body_world, np.int32).reshape(n), dtype=kc.int32, device=device)
