"""Mesh: a triangle mesh over a BVH of its face bounds (closest point, rays, boxes)."""
from __future__ import annotations

import ctypes

import numpy as np

import kernelcore as kc

from . import _kernels, _native
from ._util import as_vec3_array, check_device, positive_int
from .bvh import Bvh, _host_threads


def _as_indices(indices, num_points):
    a = indices.numpy() if isinstance(indices, kc.array) else np.asarray(indices)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        raise ValueError(f"indices: expected integer vertex indices, got dtype {a.dtype}")
    if a.ndim == 2 and a.shape[1] == 3:
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ValueError(f"indices: expected a flat array of 3 * num_faces entries or shape (num_faces, 3), got {a.shape}")
    if a.size == 0:
        raise ValueError("indices: no faces (need at least one triangle)")
    if a.size % 3:
        raise ValueError(f"indices: length {a.size} is not a multiple of 3")
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= num_points:
        bad = int(np.nonzero((a < 0) | (a >= num_points))[0][0])
        raise ValueError(f"indices: entry {bad} = {int(a[bad])} is out of range for {num_points} points")
    if isinstance(indices, kc.array) and indices.dtype is kc.int32 and indices.ndim == 1 and indices.is_contiguous:
        return indices
    return kc.array(np.ascontiguousarray(a, dtype=np.int32), dtype=kc.int32)


class Mesh:
    """Triangle mesh: ``points`` (n, 3), ``indices`` (3 * num_faces, or (num_faces, 3)) vertex ids.

    Inside kernels (barycentric weights u, v of a face's first two vertices; the point is
    ``u * p0 + v * p1 + (1 - u - v) * p2``):

    - ``kc.mesh_query_point(mesh.id, p, max_dist)`` -> ``MeshQueryPoint`` (result, sign, face,
      u, v), sign by three axis-aligned rays (watertight meshes); ``_no_sign`` (sign 0),
      ``_sign_normal`` (angle-weighted pseudo-normal), ``_sign_winding_number`` (generalised
      winding number; needs ``support_winding_number=True``, else falls back to rays).
      The seeds' out-argument form ``mesh_query_point(id, p, max_dist, sign, face, u, v)``
      returning a bool is accepted too.
    - ``kc.mesh_query_ray(mesh.id, start, dir, max_t)`` -> ``MeshQueryRay`` (result, sign,
      face, t, u, v, normal): closest hit with t < max_t in multiples of |dir|.
    - ``kc.mesh_query_aabb(mesh.id, lo, hi)`` / ``kc.mesh_query_aabb_next(query, face)``.
    - ``kc.mesh_eval_position / mesh_eval_velocity (id, face, u, v)``, ``kc.mesh_eval_face_normal``.

    u, v of point queries and t, u, v of ray queries are differentiable with respect to the
    query point / ray. Degenerate (zero-area) faces are skipped by point queries and never
    hit by rays. After moving the points in place call ``refit()``.
    """

    def __init__(self, points, indices, velocities=None, support_winding_number: bool = False,
                 bvh_constructor=None, bvh_leaf_size: int = 4, device="cpu"):
        self.device = check_device(device)
        if bvh_constructor not in (None, "sah", "median", "lbvh"):
            raise ValueError(f"bvh_constructor: unknown constructor {bvh_constructor!r}")
        self._points = as_vec3_array(points, "points")
        n = self._points.shape[0]
        self.indices = _as_indices(indices, n)
        nf = self.indices.shape[0] // 3
        self._velocities = None
        if velocities is not None:
            self._velocities = as_vec3_array(velocities, "velocities")
            if self._velocities.shape[0] != n:
                raise ValueError(f"velocities: expected {n} entries (one per point), got {self._velocities.shape[0]}")
        self.support_winding_number = bool(support_winding_number)
        self._lowers = kc.zeros(nf, dtype=kc.vec3)
        self._uppers = kc.zeros(nf, dtype=kc.vec3)
        self.bvh = Bvh._for_mesh(self._lowers, self._uppers, positive_int(bvh_leaf_size, "bvh_leaf_size"))
        self._degenerate = np.zeros(nf, dtype=np.uint8)
        self._adjacency = np.zeros(3 * nf, dtype=np.int32)
        cap = 1 << int(np.ceil(np.log2(max(3 * nf, 16))))   # about 1.5 * nf distinct edges: load <= 0.5
        self._edge_keys = np.empty(cap, dtype=np.uint64)
        self._edge_vals = np.empty(cap, dtype=np.int32)
        self._vertex_normals = np.zeros((n, 3), dtype=np.float32)
        self._edge_normals = np.zeros((3 * nf, 3), dtype=np.float32)
        self._dipole = np.zeros(8 * max(2 * nf - 1, 1) if self.support_winding_number else 8, dtype=np.float32)
        self._face_normals = np.zeros((nf, 3), dtype=np.float32)
        self._corner_angles = np.zeros(3 * nf, dtype=np.float32)
        d = self._desc = _native.MeshDesc()
        d.bvh = self.bvh.id
        d.num_points, d.num_faces = n, nf
        d.support_winding_number = int(self.support_winding_number)
        d.indices = _native.ptr(self.indices)
        d.lowers, d.uppers = _native.ptr(self._lowers), _native.ptr(self._uppers)
        d.degenerate, d.adjacency = _native.ptr(self._degenerate), _native.ptr(self._adjacency)
        d.edge_keys, d.edge_vals, d.edge_mask = _native.ptr(self._edge_keys), _native.ptr(self._edge_vals), cap - 1
        d.vertex_normals, d.edge_normals = _native.ptr(self._vertex_normals), _native.ptr(self._edge_normals)
        d.node_dipole = _native.ptr(self._dipole)
        d.face_normals, d.corner_angles = _native.ptr(self._face_normals), _native.ptr(self._corner_angles)
        self._bind()
        self.rebuild()

    def _bind(self):
        self._desc.points = _native.ptr(self._points)
        self._desc.velocities = _native.ptr(self._velocities)

    @property
    def id(self) -> int:
        """Handle passed to kernels as a ``kc.uint64``."""
        return ctypes.addressof(self._desc)

    @property
    def points(self):
        """Vertex positions (kc vec3 array). Edit in place (or assign a same-sized array), then ``refit()``."""
        return self._points

    @points.setter
    def points(self, value):
        pts = as_vec3_array(value, "points")
        if pts.shape[0] != self.num_points:
            raise ValueError(f"points: expected {self.num_points} points, got {pts.shape[0]}")
        self._points = pts
        self._bind()

    @property
    def velocities(self):
        return self._velocities

    @velocities.setter
    def velocities(self, value):
        vel = None if value is None else as_vec3_array(value, "velocities")
        if vel is not None and vel.shape[0] != self.num_points:
            raise ValueError(f"velocities: expected {self.num_points} entries, got {vel.shape[0]}")
        self._velocities = vel
        self._bind()

    @property
    def num_points(self) -> int:
        return int(self._desc.num_points)

    @property
    def num_faces(self) -> int:
        return int(self._desc.num_faces)

    def refit(self):
        """Update face bounds, normals and the BVH after the points moved (topology kept)."""
        self.bvh._desc.num_threads = _host_threads()
        kc.launch(_kernels.mesh_refit, dim=1, inputs=[self.id], record_tape=False)

    def rebuild(self):
        """Build a new BVH (for points that moved far from where the tree was built)."""
        self.bvh._desc.num_threads = _host_threads()
        kc.launch(_kernels.mesh_build, dim=1, inputs=[self.id], record_tape=False)

    def degenerate_faces(self) -> np.ndarray:
        """Indices of the faces treated as degenerate (skipped by queries)."""
        return np.nonzero(self._degenerate)[0]

    def signed_distance(self, points, max_dist: float = 1.0e30, sign: str = "normal") -> np.ndarray:
        """Host helper: signed distance of each point (max_dist where no face is that close).

        sign: "rays" (three axis rays), "normal" (pseudo-normal) or "winding" (winding number).
        """
        modes = {"rays": 1, "normal": 2, "winding": 3}
        if sign not in modes:
            raise ValueError(f"sign: expected one of {sorted(modes)}, got {sign!r}")
        pts = as_vec3_array(points, "points", allow_empty=True)
        out = kc.zeros(pts.shape[0], dtype=float)
        kc.launch(_kernels.signed_distance, dim=pts.shape[0], inputs=[self.id, pts, float(max_dist), modes[sign], out], record_tape=False)
        return out.numpy().copy()
