"""Cloth: the ModelBuilder part that adds triangles (membrane) and bending edges.

A triangle stores its rest shape as the inverse of its 2x2 rest edge matrix in a frame of
its own plane (``tri_poses``) and its rest area (``tri_areas``); a bending edge stores the
four particles of the two triangles that share it (the two opposite vertices first, then
the shared edge, as in Warp's builder) and the rest dihedral angle.  Material meanings are
in sim/cloth_forces.py.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .shapes import _check_quat, quat_to_matrix

#: defaults shared by add_triangle / add_cloth_grid / add_cloth_mesh
DEFAULT_TRI_KE = 100.0     # membrane shear modulus mu [N/m]
DEFAULT_TRI_KA = 100.0     # membrane Lame lambda [N/m] (area stiffness)
DEFAULT_TRI_KD = 10.0      # membrane strain-rate damping [N s/m]
DEFAULT_EDGE_KE = 100.0    # bending stiffness [N m / rad^2]
DEFAULT_EDGE_KD = 0.0      # bending damping [N m s / rad^2]


def _nonneg(value, who, what):
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"{who}: {what} must be finite and >= 0, got {value!r}")
    return float(value)


def triangle_rest(p0, p1, p2):
    """(inverse rest matrix (2, 2), area [m^2]) of a triangle; area 0 when degenerate.

    The rest matrix has the edges ``p1 - p0`` and ``p2 - p0`` as columns, written in an
    orthonormal frame of the triangle's plane whose first axis is along ``p1 - p0``.
    """
    e1, e2 = np.subtract(p1, p0), np.subtract(p2, p0)
    n = np.cross(e1, e2)
    area = 0.5 * np.linalg.norm(n)
    scale = max(np.dot(e1, e1), np.dot(e2, e2), 1e-300)
    if area <= 1e-9 * scale:   # collinear or coincident corners (relative to the triangle's size)
        return None, 0.0
    ax = e1 / np.linalg.norm(e1)
    ay = np.cross(n / np.linalg.norm(n), ax)
    dm = np.array([[e1 @ ax, e2 @ ax], [e1 @ ay, e2 @ ay]])
    return np.linalg.inv(dm), area


def dihedral_angle(x_o0, x_o1, x_e0, x_e1) -> float:
    """Signed angle [rad] between the normals of triangles (o0, e0, e1) and (o1, e1, e0); 0 when flat."""
    e = np.subtract(x_e1, x_e0)
    n1 = np.cross(np.subtract(x_e0, x_o0), np.subtract(x_e1, x_o0))
    n2 = np.cross(np.subtract(x_e1, x_o1), np.subtract(x_e0, x_o1))
    return float(np.arctan2(np.dot(np.cross(n1, n2), e / np.linalg.norm(e)), np.dot(n1, n2)))


class ClothBuilder:
    """Mixin: triangles with a membrane material and bending edges between them."""

    def _init_cloth(self):
        self.tri_indices = []       # (i, j, k) per triangle
        self.tri_poses = []         # inverse rest matrix (2, 2)
        self.tri_areas = []         # [m^2]
        self.tri_materials = []     # (ke, ka, kd, drag, lift)
        self.edge_indices = []      # (o0, o1, e0, e1): opposite vertices, then the shared edge
        self.edge_rest_angle = []   # [rad]
        self.edge_bending_properties = []   # (ke, kd)
        self.attachment_particle = []   # particle index per attachment
        self.attachment_body = []       # body index
        self.attachment_anchor = []     # the point in the body's frame [m]
        self.attachment_properties = []   # (ke, kd)
        self.air_velocity = (0.0, 0.0, 0.0)   # the wind [m/s] seen by tri_drag / tri_lift

    def _add_builder_e_cloth(self, other, offsets, xf, world):
        """add_builder's copy of cloth: indices shift by the particle offset; rest shapes (poses,
        areas, dihedral angles) do not change under the copy's rigid transform."""
        poff = offsets["particle"]
        self.tri_indices.extend(tuple(int(i) + poff for i in t) for t in other.tri_indices)
        self.edge_indices.extend(tuple(int(i) + poff if int(i) >= 0 else int(i) for i in e) for e in other.edge_indices)
        for name in ("tri_poses", "tri_areas", "tri_materials", "edge_rest_angle", "edge_bending_properties",
                     "attachment_anchor", "attachment_properties"):
            getattr(self, name).extend(getattr(other, name))
        self.attachment_particle.extend(int(p) + poff for p in other.attachment_particle)
        self.attachment_body.extend(int(b) + offsets["body"] for b in other.attachment_body)

    @property
    def tri_count(self) -> int:
        return len(self.tri_indices)

    @property
    def edge_count(self) -> int:
        return len(self.edge_indices)

    def _check_particle(self, i, who):
        i = int(i)
        if not 0 <= i < self.particle_count:
            raise ValueError(f"{who}: particle {i} does not exist ({self.particle_count} particles)")
        return i

    def add_triangle(self, i: int, j: int, k: int, tri_ke: float = DEFAULT_TRI_KE, tri_ka: float = DEFAULT_TRI_KA,
                     tri_kd: float = DEFAULT_TRI_KD, tri_drag: float = 0.0, tri_lift: float = 0.0,
                     _who: str = "add_triangle") -> float:
        """Add a membrane triangle over particles ``i, j, k`` at their current positions; returns its area [m^2].

        Args:
            tri_ke: shear modulus mu of the membrane [N/m] (StVK; see sim/cloth_forces.py).
            tri_ka: first Lame parameter lambda [N/m] (resists area change).
            tri_kd: damping of the strain rate [N s/m].
            tri_drag, tri_lift: aerodynamic coefficients [kg/m^3] (0: none).
        """
        who = _who
        idx = [self._check_particle(v, who) for v in (i, j, k)]
        t = self.tri_count
        if len(set(idx)) < 3:
            raise ValueError(f"{who}: triangle {t} repeats a particle: {tuple(idx)}")
        ke, ka, kd = (_nonneg(v, who, f"{name} of triangle {t}") for v, name in
                      ((tri_ke, "tri_ke"), (tri_ka, "tri_ka"), (tri_kd, "tri_kd")))
        drag, lift = _nonneg(tri_drag, who, f"tri_drag of triangle {t}"), _nonneg(tri_lift, who, f"tri_lift of triangle {t}")
        pose, area = triangle_rest(*(np.asarray(self.particle_q[v], np.float64) for v in idx))
        if pose is None:
            raise ValueError(f"{who}: triangle {t} {tuple(idx)} is degenerate (its corners are collinear or coincide)")
        self.tri_indices.append(tuple(idx))
        self.tri_poses.append(pose)
        self.tri_areas.append(area)
        self.tri_materials.append((ke, ka, kd, drag, lift))
        return area

    def add_edge(self, i: int, j: int, k: int, l: int, rest: float | None = None, edge_ke: float = DEFAULT_EDGE_KE,
                 edge_kd: float = DEFAULT_EDGE_KD, _who: str = "add_edge") -> int:
        """Add a bending edge; returns its index.

        ``i``, ``j`` are the vertices opposite the shared edge ``(k, l)`` in the two triangles
        (i, k, l) and (j, l, k).  ``rest``: rest dihedral angle [rad] (None: the current one).
        ``edge_ke`` [N m / rad^2] and ``edge_kd`` [N m s / rad^2]: bending stiffness and damping.
        """
        who = _who
        idx = [self._check_particle(v, who) for v in (i, j, k, l)]
        e = self.edge_count
        if len(set(idx)) < 4:
            raise ValueError(f"{who}: edge {e} repeats a particle: {tuple(idx)} (a non-manifold or folded pair?)")
        ke = _nonneg(edge_ke, who, f"edge_ke of edge {e}")
        kd = _nonneg(edge_kd, who, f"edge_kd of edge {e}")
        x = [np.asarray(self.particle_q[v], np.float64) for v in idx]
        if np.linalg.norm(x[3] - x[2]) < 1e-12:
            raise ValueError(f"{who}: edge {e} {tuple(idx)} has a shared edge of zero length")
        if rest is None:
            rest = dihedral_angle(*x)
        elif not np.isfinite(rest):
            raise ValueError(f"{who}: rest angle of edge {e} must be finite, got {rest!r}")
        self.edge_indices.append(tuple(idx))
        self.edge_rest_angle.append(float(rest))
        self.edge_bending_properties.append((ke, kd))
        return e

    def set_air_velocity(self, velocity) -> None:
        """The velocity of the air [m/s] (wind) against which ``tri_drag`` / ``tri_lift`` act (default 0)."""
        v = np.asarray(velocity, np.float64).reshape(-1)
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise ValueError(f"set_air_velocity: velocity must be 3 finite numbers [m/s], got {velocity!r}")
        self.air_velocity = tuple(float(c) for c in v)

    def add_cloth_attachment(self, particle: int, body: int, ke: float = 1.0e4, kd: float = 10.0) -> int:
        """Attach ``particle`` to ``body`` at the particle's current position (fixed in the body frame).

        A damped zero-length spring of stiffness ``ke`` [N/m] and damping ``kd`` [N s/m] pulls the
        particle to that point and the body back (sim/cloth_attachment.py): the particle follows
        the body frame and the cloth's force goes to the body.  Stepped by SolverSemiImplicit
        (``dt < 0.2 sqrt(m / ke)`` for the particle's mass m).  Returns the attachment index.
        """
        who = "add_cloth_attachment"
        p = self._check_particle(particle, who)
        b = int(body)
        if not 0 <= b < self.body_count:
            raise ValueError(f"{who}: body {b} does not exist ({self.body_count} bodies)")
        a = len(self.attachment_particle)
        ke = _nonneg(ke, who, f"ke of attachment {a}")
        kd = _nonneg(kd, who, f"kd of attachment {a}")
        pos, quat = np.asarray(self.body_q[b][:3], np.float64), np.asarray(self.body_q[b][3:], np.float64)
        anchor = quat_to_matrix(quat).T @ (np.asarray(self.particle_q[p], np.float64) - pos)
        self.attachment_particle.append(p)
        self.attachment_body.append(b)
        self.attachment_anchor.append(anchor)
        self.attachment_properties.append((ke, kd))
        return a

    def add_triangles_and_edges(self, indices, tri_ke=DEFAULT_TRI_KE, tri_ka=DEFAULT_TRI_KA, tri_kd=DEFAULT_TRI_KD,
                                tri_drag=0.0, tri_lift=0.0, edge_ke=DEFAULT_EDGE_KE, edge_kd=DEFAULT_EDGE_KD,
                                add_springs: bool = False, spring_ke: float = 0.0, spring_kd: float = 0.0,
                                who: str = "add_triangles", vertex_offset: int = 0):
        """Add triangles (m, 3) of existing particles and a bending edge for every interior edge.

        An edge shared by more than two triangles is an error (bending needs a manifold).
        Errors name vertices as ``particle - vertex_offset`` (the caller's mesh numbering).
        Returns (range of triangles, range of edges).
        """
        tris = np.asarray(indices, np.int64).reshape(-1, 3)
        t0, e0 = self.tri_count, self.edge_count
        for t in tris:
            self.add_triangle(*t, tri_ke=tri_ke, tri_ka=tri_ka, tri_kd=tri_kd, tri_drag=tri_drag, tri_lift=tri_lift,
                              _who=who)
        owners = {}
        for n, (a, b, c) in enumerate(tris.tolist()):
            for u, v, o in ((a, b, c), (b, c, a), (c, a, b)):
                owners.setdefault((min(u, v), max(u, v)), []).append((n, u, v, o))
        for (u, v), own in owners.items():
            if len(own) > 2:
                raise ValueError(f"{who}: mesh edge ({u - vertex_offset}, {v - vertex_offset}) is shared by {len(own)} triangles "
                                 f"{[o[0] for o in own]} (non-manifold; bending needs at most two)")
            if add_springs:
                self.add_spring(u, v, spring_ke, spring_kd)
            if len(own) == 2:
                (_, a1, b1, o1), (_, a2, b2, o2) = own
                if (a1, b1) == (a2, b2):
                    raise ValueError(f"{who}: triangles {own[0][0]} and {own[1][0]} share edge "
                                 f"({u - vertex_offset}, {v - vertex_offset}) "
                                     f"with the same orientation (inconsistent winding)")
                # triangle 1 is (o1, a1, b1): opposite o1, shared edge (a1, b1); triangle 2 runs (b1, a1) then
                self.add_edge(o1, o2, a1, b1, edge_ke=edge_ke, edge_kd=edge_kd, _who=who)
        return range(t0, self.tri_count), range(e0, self.edge_count)

    def add_cloth_grid(self, pos, rot, vel, dim_x: int, dim_y: int, cell_x: float, cell_y: float, mass: float,
                       reverse_winding: bool = False, fix_left: bool = False, fix_right: bool = False,
                       fix_top: bool = False, fix_bottom: bool = False, tri_ke: float = DEFAULT_TRI_KE,
                       tri_ka: float = DEFAULT_TRI_KA, tri_kd: float = DEFAULT_TRI_KD, tri_drag: float = 0.0,
                       tri_lift: float = 0.0, edge_ke: float = DEFAULT_EDGE_KE, edge_kd: float = DEFAULT_EDGE_KD,
                       add_springs: bool = False, spring_ke: float = 0.0, spring_kd: float = 0.0,
                       particle_radius: float | None = None, material: int = 0) -> range:
        """A rectangular cloth of ``dim_x * dim_y`` cells; returns the range of its particles.

        The grid lies in its local x-y plane, particle (x, y) at ``(x cell_x, y cell_y, 0)``
        (x fastest), then rotated by ``rot`` (quaternion x, y, z, w) and moved to ``pos`` [m].
        ``mass`` is the mass of each particle [kg]; particles on a fixed side (left: x = 0,
        right: x = dim_x, bottom: y = 0, top: y = dim_y) get mass 0.  Each cell is two
        triangles; every interior edge gets a bending edge.  Materials as add_triangle/add_edge.
        """
        who = "add_cloth_grid"
        nx, ny = int(dim_x), int(dim_y)
        if nx < 1 or ny < 1:
            raise ValueError(f"{who}: dim_x and dim_y must be >= 1, got ({dim_x}, {dim_y})")
        if not (cell_x > 0 and cell_y > 0):
            raise ValueError(f"{who}: cell_x and cell_y must be > 0, got ({cell_x}, {cell_y})")
        if not (np.isfinite(mass) and mass > 0):
            raise ValueError(f"{who}: mass must be finite and > 0, got {mass!r}")
        R = quat_to_matrix(_check_quat(rot, who))
        y, x = np.meshgrid(np.arange(ny + 1), np.arange(nx + 1), indexing="ij")
        local = np.stack([x.ravel() * cell_x, y.ravel() * cell_y, np.zeros(x.size)], axis=1)
        masses = np.full(x.size, float(mass))
        fixed = np.zeros(x.size, bool)
        fixed |= fix_left & (x.ravel() == 0)
        fixed |= fix_right & (x.ravel() == nx)
        fixed |= fix_bottom & (y.ravel() == 0)
        fixed |= fix_top & (y.ravel() == ny)
        masses[fixed] = 0.0
        start = self.particle_count
        particles = self.add_particles(local @ R.T + np.asarray(pos, np.float64), vel=vel, mass=masses,
                                       radius=particle_radius, material=material)

        def idx(i, j):
            return start + j * (nx + 1) + i

        tris = []
        for j in range(ny):
            for i in range(nx):
                a, b, c, d = idx(i, j), idx(i + 1, j), idx(i + 1, j + 1), idx(i, j + 1)
                # alternate the diagonal so the grid has no preferred shear direction
                cell = [(a, b, c), (a, c, d)] if (i + j) % 2 == 0 else [(a, b, d), (b, c, d)]
                tris += [(p, r, q) if reverse_winding else (p, q, r) for p, q, r in cell]
        self.add_triangles_and_edges(tris, tri_ke, tri_ka, tri_kd, tri_drag, tri_lift, edge_ke, edge_kd,
                                     add_springs, spring_ke, spring_kd, who=who)
        return particles

    def add_cloth_mesh(self, vertices, indices, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), scale: float = 1.0,
                       vel=(0.0, 0.0, 0.0), density: float = 0.1, tri_ke: float = DEFAULT_TRI_KE,
                       tri_ka: float = DEFAULT_TRI_KA, tri_kd: float = DEFAULT_TRI_KD, tri_drag: float = 0.0,
                       tri_lift: float = 0.0, edge_ke: float = DEFAULT_EDGE_KE, edge_kd: float = DEFAULT_EDGE_KD,
                       add_springs: bool = False, spring_ke: float = 0.0, spring_kd: float = 0.0,
                       particle_radius: float | None = None, material: int = 0) -> range:
        """Cloth from a triangle mesh; returns the range of its particles.

        Args:
            vertices: (n, 3) in the mesh's frame [m], placed at ``pos + rot * (scale * v)``.
            indices: (m, 3) or flat (3 m,) vertex indices, consistently wound.
            density: mass per area [kg/m^2]; each vertex gets a third of its triangles' masses.
            Materials as add_triangle / add_edge.
        """
        who = "add_cloth_mesh"
        v = np.asarray(vertices, np.float64)
        if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
            raise ValueError(f"{who}: vertices must be finite (n, 3), got shape {v.shape}")
        tris = np.asarray(indices)
        if not np.issubdtype(tris.dtype, np.integer) or tris.size % 3:
            raise ValueError(f"{who}: indices must be integers, 3 per triangle, got {tris.size} of dtype {tris.dtype}")
        tris = tris.reshape(-1, 3).astype(np.int64)
        if tris.size and (tris.min() < 0 or tris.max() >= len(v)):
            bad = int(np.nonzero((tris < 0) | (tris >= len(v)))[0][0])
            raise ValueError(f"{who}: triangle {bad} {tuple(tris[bad])} has a vertex outside 0..{len(v) - 1}")
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"{who}: scale must be finite and > 0, got {scale!r}")
        if not (np.isfinite(density) and density > 0):
            raise ValueError(f"{who}: density must be finite and > 0 [kg/m^2], got {density!r}")
        R = quat_to_matrix(_check_quat(rot, who))
        world = (scale * v) @ R.T + np.asarray(pos, np.float64)
        mass = np.zeros(len(v))
        for t, (a, b, c) in enumerate(tris):
            pose, area = triangle_rest(world[a], world[b], world[c])
            if pose is None:
                raise ValueError(f"{who}: triangle {t} {(int(a), int(b), int(c))} is degenerate "
                                 f"(its corners are collinear or coincide)")
            for p in (a, b, c):
                mass[p] += density * area / 3.0
        if np.any(mass <= 0):
            lonely = int(np.nonzero(mass <= 0)[0][0])
            raise ValueError(f"{who}: vertex {lonely} belongs to no triangle (it would have no mass)")
        start = self.particle_count
        particles = self.add_particles(world, vel=vel, mass=mass, radius=particle_radius, material=material)
        self.add_triangles_and_edges(tris + start, tri_ke, tri_ka, tri_kd, tri_drag, tri_lift, edge_ke, edge_kd,
                                     add_springs, spring_ke, spring_kd, who=who, vertex_offset=start)
        return particles

    def _finalize_cloth(self, m, device, requires_grad):
        def floats(values, shape, dtype=float):
            return kc.array(np.asarray(values, np.float32).reshape(shape), dtype=dtype, device=device,
                            requires_grad=requires_grad)

        nt, ne = self.tri_count, self.edge_count
        m.tri_count, m.edge_count = nt, ne
        m.tri_indices = kc.array(np.asarray(self.tri_indices, np.int32).reshape(nt, 3), dtype=kc.int32, device=device)
        m.tri_poses = floats(self.tri_poses, (nt, 2, 2), kc.mat22)
        m.tri_areas = floats(self.tri_areas, (nt,))
        m.tri_materials = floats(self.tri_materials, (nt, 5))
        m.edge_indices = kc.array(np.asarray(self.edge_indices, np.int32).reshape(ne, 4), dtype=kc.int32, device=device)
        m.edge_rest_angle = floats(self.edge_rest_angle, (ne,))
        m.edge_bending_properties = floats(self.edge_bending_properties, (ne, 2))
        m.air_velocity = kc.vec3(*self.air_velocity)
        na = len(self.attachment_particle)
        m.attachment_count = na
        m.attachment_particle = kc.array(np.asarray(self.attachment_particle, np.int32).reshape(na), dtype=kc.int32,
                                         device=device)
        m.attachment_body = kc.array(np.asarray(self.attachment_body, np.int32).reshape(na), dtype=kc.int32,
                                     device=device)
        m.attachment_anchor = floats(self.attachment_anchor, (na, 3), kc.vec3)
        m.attachment_properties = floats(self.attachment_properties, (na, 2))
