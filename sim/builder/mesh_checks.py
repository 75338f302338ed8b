"""Triangle meshes for shapes: input checks, closedness, convex hulls (host side, numpy/scipy).

A mesh that gives a body its mass must bound a solid: closed (every edge shared by
exactly two triangles, once in each direction, so the winding is consistent) and wound
counter-clockwise seen from outside (positive enclosed volume).  The checks here name
the builder call in their errors.
"""
from __future__ import annotations

import numpy as np


def check_triangles(points, indices, who: str):
    """``points`` (n, 3) float64 and triangles (m, 3) int64 from the user's arrays, checked:
    a positive multiple of 3 indices, all in range, finite points."""
    pts = np.asarray(points, np.float64).reshape(-1, 3)
    idx = np.asarray(indices, np.int64).reshape(-1)
    if len(idx) == 0 or len(idx) % 3:
        raise ValueError(f"{who}: indices must hold a positive multiple of 3 entries, got {len(idx)}")
    if idx.min() < 0 or idx.max() >= len(pts):
        raise ValueError(f"{who}: indices must lie in [0, {len(pts)}), got [{idx.min()}, {idx.max()}]")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"{who}: points must be finite")
    return pts, idx.reshape(-1, 3)


def check_no_degenerate_triangles(points, tris, who: str):
    """Raise when a triangle repeats a vertex or has (relatively) zero area: its normal, which
    the contact sign and the mass integrals use, is undefined."""
    a, b, c = points[tris[:, 0]], points[tris[:, 1]], points[tris[:, 2]]
    area2 = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    longest = np.maximum(np.maximum(np.linalg.norm(b - a, axis=1), np.linalg.norm(c - b, axis=1)),
                         np.linalg.norm(a - c, axis=1))
    bad = np.nonzero((area2 <= 1e-10 * np.maximum(longest, 1e-30) ** 2) | (longest == 0))[0]
    if len(bad):
        t = int(bad[0])
        raise ValueError(f"{who}: triangle {t} {tris[t].tolist()} is degenerate (zero area; {len(bad)} such "
                         f"triangles): remove it")


def open_edge_count(tris) -> int:
    """Number of directed edges whose reverse is not used exactly once (0: closed and consistently wound)."""
    t = np.asarray(tris, np.int64).reshape(-1, 3)
    a = t.reshape(-1)
    b = t[:, [1, 2, 0]].reshape(-1)
    n = int(max(a.max(), b.max())) + 1
    fwd = a * n + b
    rev = b * n + a
    uniq, counts = np.unique(fwd, return_counts=True)
    dup = int((counts > 1).sum())
    return dup + int((~np.isin(rev, uniq)).sum())


def convex_hull(points, who: str):
    """(points (h, 3), triangles (f, 3)) of the convex hull of ``points``, wound counter-clockwise
    seen from outside and using only the hull's vertices."""
    try:
        from scipy.spatial import ConvexHull, QhullError
    except ImportError:  # pragma: no cover - scipy is a core dependency
        raise ImportError(f"{who}: is_convex=True needs scipy (pip install scipy)") from None
    pts = np.asarray(points, np.float64).reshape(-1, 3)
    try:
        hull = ConvexHull(pts)
    except (QhullError, ValueError) as e:
        raise ValueError(f"{who}: the points have no 3-d convex hull (flat or too few): "
                         f"{str(e).splitlines()[0]}") from None
    tris = hull.simplices.copy()
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0
    tris[flip] = tris[flip][:, [0, 2, 1]]
    used = np.unique(tris)
    remap = np.full(len(pts), -1, np.int64)
    remap[used] = np.arange(len(used))
    return pts[used], remap[tris]
