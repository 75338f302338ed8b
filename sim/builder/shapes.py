"""Collision shapes and the ground plane: the ModelBuilder part for shapes.

A shape with ``body=-1`` is a static collider and its ``pos``/``rot`` are in world; with
``body=b`` it moves with rigid body ``b`` (see bodies.py), ``pos``/``rot`` are in the
body frame and its ``density`` [kg/m^3] contributes to the body's mass properties.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from ..model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE
from .mesh_checks import check_no_degenerate_triangles, check_triangles, convex_hull, open_edge_count


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix (3, 3), row-major, of a quaternion (x, y, z, w) (normalised first)."""
    x, y, z, w = np.asarray(q, np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _check_quat(rot, who):
    q = np.asarray(rot, np.float64).reshape(-1)
    if q.shape != (4,) or not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-12:
        raise ValueError(f"{who}: rot must be a non-zero quaternion (x, y, z, w), got {rot!r}")
    return q / np.linalg.norm(q)


def _check_vec3(v, who, what, positive=False):
    a = np.asarray(v, np.float64).reshape(-1)
    if a.shape == (1,):
        a = np.repeat(a, 3)
    if a.shape != (3,) or not np.all(np.isfinite(a)) or (positive and np.any(a <= 0)):
        raise ValueError(f"{who}: {what} must be 3 finite{' positive' if positive else ''} numbers, got {v!r}")
    return a


class ShapeBuilder:
    """Mixin: collision shapes (sphere, box, capsule, plane, triangle mesh) and the ground."""

    def _init_shapes(self):
        self.shape_type = []
        self.shape_pos = []
        self.shape_quat = []
        self.shape_scale = []
        self.shape_material = []
        self.shape_body = []          # -1: static, else the index of the body that carries it
        self.shape_density = []       # [kg/m^3], used by body shapes only
        self.shape_mesh_data = []     # (points (n, 3), indices (3 m,)) for mesh shapes, else None: static in
        #                               world, on a body in the shape's own frame (scale baked in)
        self.shape_mesh_closed = []   # mesh shapes: bounds a solid (its density gives mass), else None
        self.shape_mesh_convex = []   # mesh shapes: is its own convex hull (is_convex=True), else None
        self.shape_name = []
        self.shape_world = []         # environment index (-1: shared, collides with every environment)
        self.ground = False
        self.ground_normal = (0.0, 1.0, 0.0)
        self.ground_offset = 0.0
        self.ground_material = 0

    @property
    def shape_count(self) -> int:
        return len(self.shape_type)

    def set_ground_plane(self, normal=(0.0, 1.0, 0.0), offset: float = 0.0, material: int = 0, enabled: bool = True):
        """Enable an infinite ground: the plane ``dot(normal, x) = offset`` [m], free side along ``normal``."""
        n = _check_vec3(normal, "set_ground_plane", "normal")
        norm = np.linalg.norm(n)
        if norm < 1e-12:
            raise ValueError("set_ground_plane: normal must be non-zero")
        self.ground = bool(enabled)
        self.ground_normal = tuple(n / norm)
        self.ground_offset = float(offset)
        self.ground_material = self._check_material(material, "set_ground_plane")

    def _add_shape(self, kind, pos, rot, scale, material, name, mesh=None, body=-1, density=1000.0,
                   mesh_closed=None, mesh_convex=None):
        who = f"add_shape_{kind}"
        body = int(body)
        if not -1 <= body < self.body_count:
            raise ValueError(f"{who}: body {body} does not exist ({self.body_count} bodies; -1 means static)")
        if body >= 0 and not (np.isfinite(density) and density > 0):
            raise ValueError(f"{who}: density must be finite and > 0, got {density!r}")
        if body >= 0 and kind == "plane":
            raise ValueError(f"{who}: {kind} shapes can only be static (body=-1), got body={body}")
        kinds = {"sphere": SHAPE_SPHERE, "box": SHAPE_BOX, "plane": SHAPE_PLANE, "mesh": SHAPE_MESH,
                 "capsule": SHAPE_CAPSULE}
        pos = tuple(_check_vec3(pos, who, "pos"))
        quat = tuple(_check_quat(rot, who))
        material = self._check_material(material, who)
        self.shape_type.append(kinds[kind])
        self.shape_pos.append(pos)
        self.shape_quat.append(quat)
        self.shape_scale.append(tuple(scale))
        self.shape_material.append(material)
        self.shape_body.append(body)
        self.shape_density.append(float(density))
        self.shape_mesh_data.append(mesh)
        self.shape_mesh_closed.append(mesh_closed)
        self.shape_mesh_convex.append(mesh_convex)
        self.shape_name.append(name or f"{kind}_{self.shape_count}")
        self.shape_world.append(getattr(self, "current_world", -1))
        return self.shape_count - 1

    def add_shape_sphere(self, pos=(0.0, 0.0, 0.0), radius: float = 0.5, material: int = 0, name: str | None = None,
                         body: int = -1, density: float = 1000.0, rot=(0.0, 0.0, 0.0, 1.0)) -> int:
        """Sphere of ``radius`` [m] centred at ``pos`` [m]; returns the shape index.

        ``body=-1``: static, ``pos`` in world; else carried by that body, ``pos``/``rot`` in
        the body frame, ``density`` [kg/m^3] gives its mass.
        """
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"add_shape_sphere: radius must be finite and > 0, got {radius!r}")
        return self._add_shape("sphere", pos, rot, (float(radius), 0.0, 0.0), material, name, body=body,
                               density=density)

    def add_shape_box(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), half_extents=(0.5, 0.5, 0.5),
                      material: int = 0, name: str | None = None, body: int = -1, density: float = 1000.0) -> int:
        """Box centred at ``pos`` [m], rotated by ``rot`` (x, y, z, w), ``half_extents`` [m].

        ``body=-1``: static (world frame); else in the frame of that body, ``density`` [kg/m^3].
        """
        he = _check_vec3(half_extents, "add_shape_box", "half_extents", positive=True)
        return self._add_shape("box", pos, rot, tuple(he), material, name, body=body, density=density)

    def add_shape_capsule(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius: float = 0.05,
                          half_height: float = 0.1, material: int = 0, name: str | None = None, body: int = -1,
                          density: float = 1000.0) -> int:
        """Capsule: the points within ``radius`` [m] of the segment from -``half_height`` to
        +``half_height`` [m] along its local Y axis, centred at ``pos``, rotated by ``rot``.

        ``body=-1``: static (world frame); else in the frame of that body, ``density`` [kg/m^3].
        """
        for what, v in (("radius", radius), ("half_height", half_height)):
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"add_shape_capsule: {what} must be finite and > 0, got {v!r}")
        return self._add_shape("capsule", pos, rot, (float(radius), float(half_height), 0.0), material, name,
                               body=body, density=density)

    def add_shape_plane(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), width: float = 0.0, length: float = 0.0,
                        material: int = 0, name: str | None = None) -> int:
        """Static plane through ``pos`` with normal = local +Y rotated by ``rot``.

        Collision treats it as an infinite half-space (the normal side is free);
        ``width``/``length`` [m] (local X/Z) are kept for rendering only.
        """
        return self._add_shape("plane", pos, rot, (float(width), float(length), 0.0), material, name)

    def add_shape_mesh(self, points, indices=None, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0),
                       scale=(1.0, 1.0, 1.0), material: int = 0, name: str | None = None, body: int = -1,
                       density: float = 1000.0, is_convex: bool | None = None) -> int:
        """Triangle mesh shape; ``points`` (n, 3) [m] in local space, ``indices`` (3 m,) or (m, 3).

        Triangles are wound counter-clockwise seen from outside (the inside tests and the
        mass integrals rely on it).  ``scale`` multiplies the local points, then ``rot``
        and ``pos`` place them.

        ``body=-1``: a static collider (terrain, bowls; may be open), its transform baked into
        world vertices.  ``body=b``: carried by body ``b``, ``pos``/``rot`` in the body frame;
        the mesh must be closed (every edge shared by two triangles) and its ``density``
        [kg/m^3] x enclosed volume gives the body its mass, centre of mass and inertia, unless
        the body was given a mass (``add_body(mass=...)``, then an open mesh adds none).
        Contacts query it in its own frame through a BVH (``geometry.Mesh``), so nothing is
        rebuilt while the body moves.

        ``is_convex=True``: the shape is the convex hull of ``points`` (``indices`` may be None);
        None or False: the triangles as given.
        """
        who = "add_shape_mesh"
        if is_convex not in (None, True, False):
            raise ValueError(f"{who}: is_convex must be None, True or False, got {is_convex!r}")
        if indices is None and not is_convex:
            raise ValueError(f"{who}: indices are required unless is_convex=True (the convex hull of the points)")
        s = _check_vec3(scale, who, "scale", positive=True)
        q = _check_quat(rot, who)
        p = _check_vec3(pos, who, "pos")
        if is_convex:
            pts = np.asarray(points, np.float64).reshape(-1, 3)
            if not np.all(np.isfinite(pts)):
                raise ValueError(f"{who}: points must be finite")
            pts, tris = convex_hull(pts * s, who)
        else:
            pts, tris = check_triangles(points, indices, who)
            pts = pts * s
        body = int(body)
        if not -1 <= body < self.body_count:
            raise ValueError(f"{who}: body {body} does not exist ({self.body_count} bodies; -1 means static)")
        closed = None
        if body >= 0:
            check_no_degenerate_triangles(pts, tris, who)
            closed = open_edge_count(tris) == 0
            if closed:
                volume = np.einsum("ij,ij->i", pts[tris[:, 0]], np.cross(pts[tris[:, 1]], pts[tris[:, 2]])).sum()
                if not volume > 0:
                    raise ValueError(f"{who}: the mesh on body {body} encloses volume {volume / 6:g} m^3: wind its "
                                     f"triangles counter-clockwise seen from outside")
            elif self.body_mass_given[body] is None:
                raise ValueError(f"{who}: the mesh on body {body} is open ({open_edge_count(tris)} edges not shared "
                                 f"by exactly two triangles), so density={density!r} gives no mass: close the mesh or "
                                 f"give add_body(mass=..., inertia=...)")
            # kept in the shape's own frame (pos/rot stay in shape_pos/shape_rot, applied per step)
            mesh = (pts, tris.reshape(-1).astype(np.int32))
        else:
            mesh = (pts @ quat_to_matrix(q).T + p, tris.reshape(-1).astype(np.int32))
        return self._add_shape("mesh", pos, rot, tuple(s), material, name, mesh=mesh, body=body, density=density,
                               mesh_closed=closed, mesh_convex=bool(is_convex))

    def _finalize_shapes(self, m, device, requires_grad):
        k = self.shape_count
        m.shape_count = k
        m.shape_name = list(self.shape_name)
        m.shape_type = kc.array(np.asarray(self.shape_type, np.int32).reshape(k), dtype=kc.int32, device=device)
        m.shape_pos = kc.array(np.asarray(self.shape_pos, np.float32).reshape(k, 3), dtype=kc.vec3, device=device)
        m.shape_quat = np.asarray(self.shape_quat, np.float32).reshape(k, 4)
        rots = np.stack([quat_to_matrix(q) for q in self.shape_quat]) if k else np.zeros((0, 3, 3))
        m.shape_rot = kc.array(rots.astype(np.float32).reshape(k, 3, 3), dtype=kc.mat33, device=device)
        m.shape_scale = kc.array(np.asarray(self.shape_scale, np.float32).reshape(k, 3), dtype=kc.vec3, device=device)
        m.shape_material = kc.array(np.asarray(self.shape_material, np.int32).reshape(k), dtype=kc.int32, device=device)
        m.shape_body = kc.array(np.asarray(self.shape_body, np.int32).reshape(k), dtype=kc.int32, device=device)
        m.shape_world = kc.array(np.asarray(self.shape_world, np.int32).reshape(k), dtype=kc.int32, device=device)
        m.shape_density = kc.array(np.asarray(self.shape_density, np.float32).reshape(k), dtype=float, device=device)
        mesh_ids = np.zeros(k, np.uint64)
        m.shape_meshes = []
        m.shape_mesh_points = {}
        all_meshes = [s for s in range(k) if self.shape_type[s] == SHAPE_MESH]
        # particles and bodies collide with the static ones in world; body meshes move (sim/collide_body_mesh.py)
        m.mesh_shape_indices = [s for s in all_meshes if self.shape_body[s] < 0]
        m.body_mesh_shape_indices = [s for s in all_meshes if self.shape_body[s] >= 0]
        m.shape_mesh_convex = {s: bool(self.shape_mesh_convex[s]) for s in all_meshes}
        if all_meshes:
            import geometry  # only when the scene has meshes

            for s in all_meshes:
                pts, idx = self.shape_mesh_data[s]
                mesh = geometry.Mesh(kc.array(pts.astype(np.float32), dtype=kc.vec3, device=device),
                                     kc.array(idx, dtype=kc.int32, device=device))
                m.shape_meshes.append(mesh)
                m.shape_mesh_points[s] = (pts.astype(np.float32), idx)
                mesh_ids[s] = np.uint64(mesh.id)
        m.shape_mesh = kc.array(mesh_ids, dtype=kc.uint64, device=device)
        m.mesh_shapes = kc.array(np.asarray(m.mesh_shape_indices, np.int32).reshape(-1), dtype=kc.int32, device=device)
        m.body_mesh_shapes = kc.array(np.asarray(m.body_mesh_shape_indices, np.int32).reshape(-1), dtype=kc.int32,
                                      device=device)
        m.ground = bool(self.ground)
        m.ground_normal = kc.vec3(*self.ground_normal)
        m.ground_offset = float(self.ground_offset)
        m.ground_material = int(self.ground_material)
