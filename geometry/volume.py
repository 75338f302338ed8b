"""Volume: a sparse voxel grid of float values in bricks of 8^3 voxels.

Voxel (i, j, k) sits at index-space point (i, j, k); world = voxel_size * ijk + translation
(or a general 3x3 ``transform``). Voxels outside the allocated bricks read ``background``.

Inside kernels: ``kc.volume_sample_f(id, uvw, kc.Volume.LINEAR or kc.Volume.CLOSEST)`` at
index-space uvw (``kc.volume_sample_world`` takes world points), ``volume_sample_grad_f``,
``volume_lookup_f``, ``volume_store_f``, ``volume_world_to_index``, ``volume_index_to_world``
(and the ``_dir`` variants). LINEAR samples are trilinear and differentiable in position.

NanoVDB (.nvdb) files are not read: the format is not implemented here (see
``Volume.load_from_nvdb``).
"""
from __future__ import annotations

import ctypes

import numpy as np

import kernelcore as kc

from . import _kernels, _native
from ._util import as_vec3_array, check_device, positive_float, vec3_value

BRICK = 8


class Volume:
    CLOSEST = 0
    LINEAR = 1

    def __init__(self, brick_coords, brick_data, transform=None, translation=(0.0, 0.0, 0.0), bg_value=0.0,
                 device="cpu"):
        """Low-level constructor: brick_coords (b, 3) int brick indices (voxel ijk // 8), brick_data
        (b, 8, 8, 8) float32 indexed [k, j, i] within the brick, transform a 3x3 index-to-world
        matrix (default identity) or a scalar voxel size."""
        self.device = check_device(device)
        coords = np.ascontiguousarray(np.asarray(brick_coords, dtype=np.int64).reshape(-1, 3))
        if coords.size and (coords.min() < -(1 << 20) or coords.max() >= (1 << 20)):
            raise ValueError("brick_coords: brick indices must lie in [-2**20, 2**20)")
        if len(np.unique(coords, axis=0)) != len(coords):
            raise ValueError("brick_coords: duplicate bricks")
        data = np.ascontiguousarray(np.asarray(brick_data, dtype=np.float32).reshape(-1, BRICK, BRICK, BRICK))
        if data.shape[0] != coords.shape[0]:
            raise ValueError(f"brick_data: {data.shape[0]} bricks for {coords.shape[0]} brick_coords")
        if transform is None:
            transform = 1.0
        xf = np.asarray(transform, dtype=np.float64)
        if xf.ndim == 0 or xf.size == 1:
            xf = np.eye(3) * positive_float(float(xf.reshape(-1)[0]), "voxel_size")
        if xf.shape != (3, 3) or not np.all(np.isfinite(xf)) or abs(np.linalg.det(xf)) < 1e-30:
            raise ValueError(f"transform: expected an invertible 3x3 matrix or a positive voxel size, got {transform!r}")
        t = vec3_value(translation, "translation")
        bg = float(bg_value)
        if not np.isfinite(bg):
            raise ValueError(f"bg_value: must be finite, got {bg_value!r}")
        self._coords = coords.astype(np.int32)
        self._data = data
        cap = 1 << int(np.ceil(np.log2(max(2 * len(coords), 16))))
        self._keys = np.empty(cap, dtype=np.uint64)
        self._vals = np.empty(cap, dtype=np.int32)
        d = self._desc = _native.VolumeDesc()
        d.xform[:] = xf.reshape(-1).astype(np.float32).tolist()
        d.inv_xform[:] = np.linalg.inv(xf).reshape(-1).astype(np.float32).tolist()
        d.translation[:] = t.astype(np.float32).tolist()
        d.background = bg
        d.num_bricks = len(coords)
        d.table_mask = cap - 1
        d.table_keys, d.table_vals = _native.ptr(self._keys), _native.ptr(self._vals)
        d.data, d.brick_coords = _native.ptr(self._data), _native.ptr(self._coords)
        self.transform = xf
        self.translation = t
        self.background = bg
        kc.launch(_kernels.volume_build_table, dim=1, inputs=[self.id], record_tape=False)

    # ---- builders ---------------------------------------------------------------------------
    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0, device="cpu"):
        """A volume holding a dense (nx, ny, nz) grid: ndarray[i, j, k] at world min_world + voxel_size * (i, j, k).

        Only bricks holding a value different from bg_value are stored.
        """
        a = np.asarray(ndarray)
        if a.ndim != 3 or min(a.shape) < 1:
            raise ValueError(f"ndarray: expected a non-empty 3-d array, got shape {a.shape}")
        if not np.issubdtype(a.dtype, np.number):
            raise ValueError(f"ndarray: expected numbers, got dtype {a.dtype}")
        a = a.astype(np.float32)
        if not np.all(np.isfinite(a)):
            raise ValueError("ndarray: contains NaN or infinite values")
        vs = positive_float(voxel_size, "voxel_size")
        nb = [(s + BRICK - 1) // BRICK for s in a.shape]
        padded = np.full([n * BRICK for n in nb], np.float32(bg_value), dtype=np.float32)
        padded[: a.shape[0], : a.shape[1], : a.shape[2]] = a
        # (bx, 8, by, 8, bz, 8) -> (bx, by, bz, k, j, i)
        bricks = padded.reshape(nb[0], BRICK, nb[1], BRICK, nb[2], BRICK).transpose(0, 2, 4, 5, 3, 1)
        keep = np.any(bricks != np.float32(bg_value), axis=(3, 4, 5))
        coords = np.argwhere(keep)
        return cls(coords, bricks[keep], vs, vec3_value(min_world, "min_world"), bg_value, device)

    @classmethod
    def allocate_by_voxels(cls, voxel_points, voxel_size=1.0, translation=(0.0, 0.0, 0.0), bg_value=0.0, device="cpu"):
        """Allocate the bricks holding the voxels nearest to world points (n, 3), values bg_value.

        Integer (n, 3) input is taken as voxel ijk directly. Fill values with ``kc.volume_store_f``.
        """
        vs = positive_float(voxel_size, "voxel_size")
        t = vec3_value(translation, "translation")
        ijk = cls._voxel_coords(voxel_points, vs, t, "voxel_points")
        coords = np.unique(np.floor_divide(ijk, BRICK), axis=0)
        data = np.full((len(coords), BRICK, BRICK, BRICK), np.float32(bg_value), dtype=np.float32)
        return cls(coords, data, vs, t, bg_value, device)

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size=1.0, bg_value=0.0, translation=(0.0, 0.0, 0.0), device="cpu"):
        """Allocate 8^3 bricks: integer (n, 3) tile_points are voxel ijk, float ones world points."""
        return cls.allocate_by_voxels(tile_points, voxel_size, translation, bg_value, device)

    @staticmethod
    def _voxel_coords(points, vs, t, name):
        raw = points.numpy() if isinstance(points, kc.array) else np.asarray(points)
        if raw.ndim == 2 and raw.shape[1] == 3 and np.issubdtype(raw.dtype, np.integer):
            ijk = raw.astype(np.int64)
        else:
            p = as_vec3_array(points, name).numpy().astype(np.float64)
            ijk = np.floor((p - t) / vs + 0.5).astype(np.int64)
        if ijk.shape[0] == 0:
            raise ValueError(f"{name}: empty point set")
        return ijk

    @classmethod
    def from_mesh_sdf(cls, mesh, voxel_size, band_width=None, sign="normal", padding=None, device="cpu"):
        """Signed distance field of a Mesh (negative inside) sampled at voxel centres.

        Values are clamped to [-band_width, band_width] (default 3 voxels); bricks entirely
        outside the mesh and farther than band_width from it are not stored and read
        +band_width (the background). The grid covers the mesh bounds plus ``padding``
        (default band_width), with index (0, 0, 0) at the padded lower corner.
        sign: "normal" (pseudo-normals), "winding" or "rays".
        """
        from .mesh import Mesh

        if not isinstance(mesh, Mesh):
            raise ValueError(f"mesh: expected a geometry.Mesh, got {type(mesh).__name__}")
        modes = {"rays": 1, "normal": 2, "winding": 3}
        if sign not in modes:
            raise ValueError(f"sign: expected one of {sorted(modes)}, got {sign!r}")
        vs = positive_float(voxel_size, "voxel_size")
        band = positive_float(band_width if band_width is not None else 3.0 * vs, "band_width")
        pad = float(padding) if padding is not None else band
        pts = mesh.points.numpy()
        lo, hi = pts.min(axis=0) - pad, pts.max(axis=0) + pad
        n = np.ceil((hi - lo) / vs).astype(np.int64) + 1
        nb = (n + BRICK - 1) // BRICK
        if int(np.prod(nb)) > 1 << 22:
            raise ValueError(f"voxel_size: {vs} gives {int(np.prod(n))} voxels over the mesh bounds (too many)")
        cand = np.stack(np.meshgrid(*[np.arange(b) for b in nb], indexing="ij"), -1).reshape(-1, 3)
        centres = lo + (cand * BRICK + (BRICK - 1) / 2.0) * vs
        sd = mesh.signed_distance(centres.astype(np.float32), 1.0e30, sign)
        half_diag = np.sqrt(3.0) * (BRICK - 1) / 2.0 * vs
        keep = (sd < 0.0) | (np.abs(sd) <= band + half_diag)
        coords = cand[keep]
        data = np.zeros((len(coords), BRICK, BRICK, BRICK), dtype=np.float32)
        vol = cls(coords, data, vs, lo, band, device)
        if len(coords):
            kc.launch(_kernels.volume_fill_sdf, dim=len(coords) * BRICK ** 3,
                      inputs=[vol.id, mesh.id, band, modes[sign]], record_tape=False)
        return vol

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device="cpu"):
        """Not supported: reading NanoVDB's binary layout is not implemented in this package."""
        raise NotImplementedError("geometry.Volume cannot read NanoVDB (.nvdb) data; build volumes with "
                                  "load_from_numpy, allocate_by_voxels or from_mesh_sdf")

    # ---- properties --------------------------------------------------------------------------
    @property
    def id(self) -> int:
        """Handle passed to kernels as a ``kc.uint64``."""
        return ctypes.addressof(self._desc)

    @property
    def num_bricks(self) -> int:
        return int(self._desc.num_bricks)

    def get_voxel_size(self):
        """Lengths of the index axes in world units."""
        return tuple(float(x) for x in np.linalg.norm(self.transform, axis=0))

    def get_tiles(self) -> np.ndarray:
        """(b, 3) voxel ijk of each brick's first voxel."""
        return self._coords.astype(np.int64) * BRICK

    def brick_values(self) -> np.ndarray:
        """(b, 8, 8, 8) brick values indexed [brick, k, j, i] (a view: edits are seen by kernels)."""
        return self._data

    def index_to_world(self, ijk) -> np.ndarray:
        return np.asarray(ijk, dtype=np.float64) @ self.transform.T + self.translation

    def world_to_index(self, xyz) -> np.ndarray:
        return (np.asarray(xyz, dtype=np.float64) - self.translation) @ np.linalg.inv(self.transform).T
