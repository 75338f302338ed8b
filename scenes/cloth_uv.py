"""Texture coordinates of cloth meshes in scene files (kept from ``primvars:st``, or generated).

The written cloth (render/usd_writer.py ``render_cloth``) carries one (u, v) per vertex:
particles are the mesh's vertices, the topology never changes.
"""
from __future__ import annotations

import numpy as np


def planar_uvs(points) -> np.ndarray:
    """(N, 2) float32 in [0, 1]: the points projected on their best-fitting plane (grid-like sheets get the
    texture of a rectangle), the longer extent along u."""
    p = np.asarray(points, np.float64).reshape(-1, 3)
    c = p - p.mean(0)
    _, _, vt = np.linalg.svd(c, full_matrices=False)
    uv = c @ vt[:2].T
    lo, hi = uv.min(0), uv.max(0)
    return ((uv - lo) / np.maximum(hi - lo, 1e-12).max()).astype(np.float32)


def read_cloth_uvs(loader, prim, world_points) -> np.ndarray:
    """Per-vertex (N, 2) texture coordinates of a cloth Mesh prim: its ``primvars:st`` (vertex or varying
    interpolation as they are; faceVarying collapsed to the vertices, a seam keeping the first corner's value,
    with a warning), else :func:`planar_uvs` of ``world_points``."""
    from pxr import UsdGeom

    n = len(world_points)
    pv = UsdGeom.PrimvarsAPI(prim).GetPrimvar("st")
    values = pv.ComputeFlattened() if pv and pv.HasValue() else None
    if values is None or len(values) == 0:
        return planar_uvs(world_points)
    st = np.asarray(values, np.float64).reshape(-1, 2)
    interp = pv.GetInterpolation()
    if interp in ("vertex", "varying") and len(st) == n:
        return st.astype(np.float32)
    corners = loader.attr(prim, "faceVertexIndices", kind="ints")
    if interp == "faceVarying" and corners is not None and len(st) == len(corners):
        out = np.full((n, 2), np.nan)
        seams = 0
        for vtx, uv in zip(corners.tolist(), st):
            if np.isnan(out[vtx, 0]):
                out[vtx] = uv
            elif not np.allclose(out[vtx], uv):
                seams += 1
        if seams:
            loader.warn(prim, f"primvars:st has {seams} texture seams; cloth vertices keep one (u, v) each")
        return np.where(np.isnan(out), 0.0, out).astype(np.float32)
    loader.warn(prim, f"primvars:st ({interp}, {len(st)} values) does not fit the {n} cloth vertices; "
                      f"texture coordinates generated instead")
    return planar_uvs(world_points)
