"""Brute-force numpy references and small mesh generators for the geometry tests."""
import numpy as np


def closest_point_triangles(p, a, b, c):
    """Closest points of p (3,) on triangles a, b, c (m, 3) each; returns (points (m, 3), dist2 (m,))."""
    p = np.asarray(p, np.float64)
    a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = np.einsum("ij,ij->i", ab, ap), np.einsum("ij,ij->i", ac, ap)
    bp = p - b
    d3, d4 = np.einsum("ij,ij->i", ab, bp), np.einsum("ij,ij->i", ac, bp)
    cp = p - c
    d5, d6 = np.einsum("ij,ij->i", ab, cp), np.einsum("ij,ij->i", ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = va + vb + vc
        v, w = vb / denom, vc / denom
        out = a + ab * v[:, None] + ac * w[:, None]
        t_ab = d1 / (d1 - d3)
        t_ac = d2 / (d2 - d6)
        t_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
    conds = [
        (d1 <= 0) & (d2 <= 0), (d3 >= 0) & (d4 <= d3), (vc <= 0) & (d1 >= 0) & (d3 <= 0),
        (d6 >= 0) & (d5 <= d6), (vb <= 0) & (d2 >= 0) & (d6 <= 0), (va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0),
    ]
    vals = [a, b, a + ab * t_ab[:, None], c, a + ac * t_ac[:, None], b + (c - b) * t_bc[:, None]]
    done = np.zeros(len(a), bool)
    res = out.copy()
    for cond, val in zip(conds, vals):
        sel = cond & ~done
        res[sel] = val[sel]
        done |= cond
    d2 = np.sum((res - p) ** 2, axis=1)
    return res, d2


def brute_closest(points, tris, queries):
    """(distance, face) of each query to the mesh (points (n, 3), tris (t, 3))."""
    a, b, c = points[tris[:, 0]], points[tris[:, 1]], points[tris[:, 2]]
    dist = np.empty(len(queries))
    face = np.empty(len(queries), dtype=np.int64)
    for i, q in enumerate(queries):
        _, d2 = closest_point_triangles(q, a, b, c)
        face[i] = int(np.argmin(d2))
        dist[i] = np.sqrt(d2[face[i]])
    return dist, face


def winding_number(points, tris, queries):
    """Generalised winding number of each query (exact sum of solid angles)."""
    a, b, c = (points[tris[:, k]].astype(np.float64) for k in range(3))
    out = np.empty(len(queries))
    for i, q in enumerate(queries):
        x, y, z = a - q, b - q, c - q
        lx, ly, lz = (np.linalg.norm(v, axis=1) for v in (x, y, z))
        num = np.einsum("ij,ij->i", x, np.cross(y, z))
        den = lx * ly * lz + np.einsum("ij,ij->i", x, y) * lz + np.einsum("ij,ij->i", x, z) * ly + np.einsum("ij,ij->i", y, z) * lx
        out[i] = np.sum(2.0 * np.arctan2(num, den)) / (4.0 * np.pi)
    return out


def brute_ray(points, tris, o, d, max_t=np.inf):
    """Closest hit (t, face) of a ray (t in multiples of |d|); (inf, -1) on a miss."""
    a, b, c = (points[tris[:, k]].astype(np.float64) for k in range(3))
    o, d = np.asarray(o, np.float64), np.asarray(d, np.float64)
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pv)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tv = o - a
        u = np.einsum("ij,ij->i", tv, pv) * inv
        qv = np.cross(tv, e1)
        v = (qv @ d) * inv
        t = np.einsum("ij,ij->i", e2, qv) * inv
    ok = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t < max_t)
    if not ok.any():
        return np.inf, -1
    t = np.where(ok, t, np.inf)
    f = int(np.argmin(t))
    return float(t[f]), f


def sphere_mesh(n_lat=24, n_lon=48, radius=1.0, noise=0.0, seed=0):
    """Closed latitude-longitude sphere (outward winding), optionally with radial noise."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(0, np.pi, n_lat + 1)[1:-1]
    phi = np.linspace(0, 2 * np.pi, n_lon, endpoint=False)
    tt, pp = np.meshgrid(theta, phi, indexing="ij")
    pts = np.stack([np.sin(tt) * np.cos(pp), np.sin(tt) * np.sin(pp), np.cos(tt)], -1).reshape(-1, 3)
    pts = np.concatenate([[[0, 0, 1]], pts, [[0, 0, -1]]])
    r = radius * (1.0 + noise * (rng.random(len(pts)) - 0.5))
    pts = pts * r[:, None]
    tris = []
    ring = lambda i, j: 1 + i * n_lon + (j % n_lon)  # noqa: E731
    for j in range(n_lon):
        tris.append([0, ring(0, j), ring(0, j + 1)])
    for i in range(n_lat - 2):
        for j in range(n_lon):
            a, b, c, d = ring(i, j), ring(i + 1, j), ring(i + 1, j + 1), ring(i, j + 1)
            tris.append([a, b, c])
            tris.append([a, c, d])
    last = len(pts) - 1
    for j in range(n_lon):
        tris.append([last, ring(n_lat - 2, j + 1), ring(n_lat - 2, j)])
    return pts.astype(np.float32), np.asarray(tris, np.int32)


def random_triangles(n, seed=0, size=0.3):
    """n independent random triangles in the unit cube (an open, non-manifold soup)."""
    rng = np.random.default_rng(seed)
    centres = rng.random((n, 1, 3))
    pts = (centres + size * (rng.random((n, 3, 3)) - 0.5)).reshape(-1, 3).astype(np.float32)
    return pts, np.arange(3 * n, dtype=np.int32).reshape(-1, 3)


def edge_use_counts(tris):
    """How many triangles use each undirected edge, and whether each directed edge is unique."""
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    und = np.sort(e, axis=1)
    _, counts = np.unique(und, axis=0, return_counts=True)
    _, dcounts = np.unique(e, axis=0, return_counts=True)
    return counts, dcounts
