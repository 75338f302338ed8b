"""Marching cubes over a dense scalar grid (closed, consistently wound, shared vertices)."""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from . import _kernels
from ._util import vec3_value


def marching_cubes(field, spacing=1.0, iso: float = 0.0, origin=(0.0, 0.0, 0.0), return_mesh: bool = False):
    """Extract the surface ``field == iso`` of a dense (nx, ny, nz) grid.

    field[i, j, k] is the value at ``origin + spacing * (i, j, k)`` (spacing a number or three).
    Returns ``(points (v, 3) float32, indices (3 * t,) int32)``, or a ``geometry.Mesh`` with
    ``return_mesh=True`` (ValueError when the surface is empty). One vertex sits on each grid
    edge the surface crosses, so triangles share vertices; triangles wind counter-clockwise
    seen from the side where field > iso (normals point towards increasing values), and the
    surface is closed wherever it stays inside the grid. Ambiguous cube faces separate their
    corners below iso.
    """
    f = np.asarray(field.numpy() if isinstance(field, kc.array) else field)
    if f.ndim != 3 or min(f.shape) < 2:
        raise ValueError(f"field: expected a 3-d grid with at least 2 samples per axis, got shape {f.shape}")
    if not np.issubdtype(f.dtype, np.number):
        raise ValueError(f"field: expected numbers, got dtype {f.dtype}")
    f = np.ascontiguousarray(f, dtype=np.float32)
    if not np.all(np.isfinite(f)):
        raise ValueError("field: contains NaN or infinite values")
    iso = float(iso)
    if not np.isfinite(iso):
        raise ValueError(f"iso: must be finite, got {iso!r}")
    h = vec3_value(spacing, "spacing")
    if np.any(h <= 0):
        raise ValueError(f"spacing: must be positive, got {spacing!r}")
    o = vec3_value(origin, "origin")
    nx, ny, nz = f.shape

    # one vertex per crossed grid edge, placed by linear interpolation
    below = f < np.float32(iso)
    edge_ids = np.full((nx, ny, nz, 3), -1, dtype=np.int32)
    pts = []
    count = 0
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        cross = below[tuple(lo)] != below[tuple(hi)]
        idx = np.argwhere(cross)
        m = idx.shape[0]
        edge_ids[idx[:, 0], idx[:, 1], idx[:, 2], axis] = np.arange(count, count + m, dtype=np.int32)
        f0 = f[tuple(lo)][cross].astype(np.float64)
        f1 = f[tuple(hi)][cross].astype(np.float64)
        t = np.clip((iso - f0) / (f1 - f0), 0.0, 1.0)
        p = idx.astype(np.float64)
        p[:, axis] += t
        pts.append(p)
        count += m
    points = (np.concatenate(pts) * h + o).astype(np.float32) if count else np.zeros((0, 3), np.float32)

    if count == 0:
        indices = np.zeros(0, dtype=np.int32)
    else:
        fa = kc.array(f, dtype=kc.float32)
        cells = (nx - 1, ny - 1, nz - 1)
        counts = kc.zeros(cells, dtype=kc.int32)
        kc.launch(_kernels.mc_count, dim=cells, inputs=[fa, iso, counts], record_tape=False)
        packed = counts.numpy().reshape(-1)
        ntri, ncen = packed % 256, packed // 256
        tri_offsets = (np.cumsum(ntri) - ntri).astype(np.int32).reshape(cells)
        vert_offsets = (count + np.cumsum(ncen) - ncen).astype(np.int32).reshape(cells)
        total = int(ntri.sum())
        tris = kc.zeros(max(3 * total, 1), dtype=kc.int32)
        # cells whose loops need a centre vertex (rare: see geo_marching.h) append one each
        all_points = kc.array(np.concatenate([points, np.zeros((int(ncen.sum()), 3), np.float32)]), dtype=kc.vec3)
        kc.launch(_kernels.mc_emit, dim=cells,
                  inputs=[fa, kc.array(edge_ids.reshape(-1), dtype=kc.int32), iso, kc.array(tri_offsets, dtype=kc.int32), tris,
                          kc.array(vert_offsets, dtype=kc.int32), all_points], record_tape=False)
        indices = tris.numpy()[: 3 * total].copy()
        points = all_points.numpy().copy()
    if return_mesh:
        from .mesh import Mesh

        if indices.size == 0:
            raise ValueError(f"field: the iso-surface at iso={iso} is empty (no sign change)")
        return Mesh(points, indices)
    return points, indices
