"""HashGrid: neighbour queries over points in a uniform grid hashed into a fixed table."""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from . import _kernels, _native
from ._util import as_vec3_array, check_device, positive_float, positive_int

# Queries copy sorted ids in fixed-size blocks that may read past the last id
# (GEO_HASH_GRID_COPY_BLOCK in native/geo_hash_grid.h).
ID_PADDING = 32


class HashGrid:
    """Uniform grid of cells folded into a ``dim_x * dim_y * dim_z`` table (cells wrap around).

    ``build(points, radius)`` sorts the points by cell (cells ``radius`` wide, cut into up to
    8 slices along x when the points' x extent still fits the table unwrapped); inside
    kernels ``kc.hash_grid_query(grid.id, p, r)`` / ``kc.hash_grid_query_next(query, index)``
    iterate over candidate points: every point within ``r`` of ``p`` exactly once, plus others
    from the cells the ball around ``p`` meets (test the distance yourself; cells the ball
    misses inside the box ``p +- r`` are skipped). ``kc.hash_grid_point_id(grid.id, i)`` gives
    the original index of the i-th point in cell order (launch over it for memory locality).
    Space wraps around the table: far-apart points may share a table cell (more candidates,
    never missed neighbours), so size the table to the points' extent / radius when possible.

    Rebuilding every frame costs one pass over the points plus one over the table, with no
    allocation once ``reserve`` (or an earlier build) made room for the points.
    """

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device="cpu"):
        self.device = check_device(device)
        self.dim_x = positive_int(dim_x, "dim_x")
        self.dim_y = positive_int(dim_y, "dim_y")
        self.dim_z = positive_int(dim_z, "dim_z")
        ncells = self.dim_x * self.dim_y * self.dim_z
        if ncells >= 2 ** 31 - 1:
            raise ValueError(f"dim_x * dim_y * dim_z = {ncells} cells is too many (at most 2**31 - 2)")
        self._cell_starts = np.zeros(ncells + 1, dtype=np.int32)
        self._sorted_ids = np.zeros(0, dtype=np.int32)
        self._point_cells = np.zeros(0, dtype=np.int32)
        self._desc = _native.HashGridDesc()
        d = self._desc
        d.dim_x, d.dim_y, d.dim_z = self.dim_x, self.dim_y, self.dim_z
        d.cell_starts = _native.ptr(self._cell_starts)
        self.points = None
        self.radius = 0.0
        self.reserved = False

    @property
    def id(self) -> int:
        """Handle passed to kernels as a ``kc.uint64``."""
        return _native.ctypes.addressof(self._desc)

    def reserve(self, num_points: int):
        """Allocate room for num_points so that later builds of up to that many do not allocate."""
        n = int(num_points)
        if n + ID_PADDING > self._sorted_ids.shape[0]:
            self._sorted_ids = np.zeros(n + ID_PADDING, dtype=np.int32)
            self._point_cells = np.zeros(n, dtype=np.int32)
            self._desc.sorted_ids = _native.ptr(self._sorted_ids)
            self._desc.point_cells = _native.ptr(self._point_cells)
        self.reserved = True

    def build(self, points, radius: float):
        """Sort ``points`` (kc vec3 array or (n, 3) array; may be empty) into cells of width ``radius``.

        The grid keeps a reference to ``points``: query kernels read it as it is at query time.
        """
        r = positive_float(radius, "radius")
        pts = as_vec3_array(points, "points", allow_empty=True)
        n = pts.shape[0]
        self.reserve(n)
        self.points = pts
        self.radius = r
        d = self._desc
        d.num_points = n
        d.build_radius = r
        d.points = _native.ptr(pts)
        d.point_stride = pts.strides[0] if n else 12
        kc.launch(_kernels.hash_grid_build, dim=1, inputs=[self.id], record_tape=False)

    @property
    def num_points(self) -> int:
        return int(self._desc.num_points)

    def sorted_indices(self) -> np.ndarray:
        """Original point indices in cell order (a copy)."""
        return self._sorted_ids[: self.num_points].copy()
