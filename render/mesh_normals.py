"""Per-vertex normals of a triangle mesh (numpy), for writing deforming meshes such as cloth."""
from __future__ import annotations

import numpy as np


def vertex_normals(points, tris) -> np.ndarray:
    """Unit normals (N, 3) float32 at the vertices: the sum of the adjacent triangles' area-weighted
    normals (their unnormalised cross products), following the winding of ``tris`` (M, 3).

    A vertex of no triangle, or whose triangles cancel, gets (0, 0, 0)."""
    p = np.asarray(points, np.float64).reshape(-1, 3)
    t = np.asarray(tris, np.int64).reshape(-1, 3)
    face = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    n = np.zeros_like(p)
    for k in range(3):
        np.add.at(n, t[:, k], face)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return (n / np.where(length > 0, length, 1.0)).astype(np.float32)
