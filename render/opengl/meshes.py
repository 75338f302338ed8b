"""Triangle meshes of the unit primitive shapes, built with numpy.

Every builder returns ``(vertices, indices)``: ``vertices`` float32 (V, 6)
holding position xyz and outward unit normal xyz, ``indices`` uint32 (M, 3)
counter-clockwise seen from outside.  Shapes are in their local frame with
the long axis along +Y, sized so that the viewer's per-instance scale gives
the requested size:

* sphere: radius 1 (scale = radius)
* box: half-extents 1 (scale = half-extents)
* cylinder: radius 1, half-height 1 (scale = (r, h, r))
* plane: 2 x 2 in the XZ plane, normal +Y (scale = (w/2, 1, l/2))
* capsule: real radius and half-height (caps would distort under scaling)
"""

from __future__ import annotations

import numpy as np


def _pack(pos, nrm, idx):
    v = np.concatenate([np.asarray(pos, np.float32), np.asarray(nrm, np.float32)], axis=1)
    return np.ascontiguousarray(v), np.ascontiguousarray(np.asarray(idx, np.uint32).reshape(-1, 3))


def _grid_indices(rows: int, cols: int, offset: int = 0) -> np.ndarray:
    """Two triangles per cell of a (rows+1) x (cols+1) vertex grid (row-major)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = (r * (cols + 1) + c).ravel() + offset
    b, d = a + cols + 1, a + 1
    e = b + 1
    return np.stack([np.stack([a, b, d], 1), np.stack([d, b, e], 1)], 1).reshape(-1, 3)


def sphere(segments: int = 24, rings: int = 16, radius: float = 1.0, y_offset: float = 0.0,
           theta_range=(0.0, np.pi)):
    """UV sphere (or a band of it between polar angles ``theta_range``)."""
    theta = np.linspace(theta_range[0], theta_range[1], rings + 1)  # from +Y down
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    n = np.stack([np.sin(t) * np.sin(p), np.cos(t), np.sin(t) * np.cos(p)], -1).reshape(-1, 3)
    pos = n * radius + np.array([0.0, y_offset, 0.0])
    return _pack(pos, n, _grid_indices(rings, segments))


def box():
    """Cube with half-extent 1; 4 vertices per face so the faces are flat-shaded."""
    pos, nrm, idx = [], [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.zeros(3)
            u[(axis + 1) % 3] = 1.0
            v = np.cross(n, u)
            base = len(pos)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                pos.append(n + a * u + b * v)
                nrm.append(n)
            idx += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
    return _pack(pos, nrm, idx)


def _disk(y: float, ny: float, segments: int, radius: float, offset: int):
    phi = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    ring = np.stack([np.sin(phi) * radius, np.full_like(phi, y), np.cos(phi) * radius], 1)
    pos = np.vstack([[0.0, y, 0.0], ring])
    nrm = np.tile([0.0, ny, 0.0], (segments + 1, 1))
    i = np.arange(segments)
    j = (i + 1) % segments
    tris = np.stack([np.zeros(segments, int), 1 + i, 1 + j], 1) + offset
    if ny < 0:
        tris = tris[:, [0, 2, 1]]
    return pos, nrm, tris


def cylinder(segments: int = 32):
    """Closed cylinder, radius 1, from y = -1 to y = +1."""
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    t, p = np.meshgrid(np.array([1.0, -1.0]), phi, indexing="ij")
    nrm = np.stack([np.sin(p), np.zeros_like(p), np.cos(p)], -1).reshape(-1, 3)
    pos = nrm + np.stack([np.zeros_like(t), t, np.zeros_like(t)], -1).reshape(-1, 3)
    idx = _grid_indices(1, segments)
    parts_p, parts_n, parts_i = [pos], [nrm], [idx]
    off = len(pos)
    for y in (1.0, -1.0):
        dp, dn, di = _disk(y, y, segments, 1.0, off)
        parts_p.append(dp)
        parts_n.append(dn)
        parts_i.append(di)
        off += len(dp)
    return _pack(np.vstack(parts_p), np.vstack(parts_n), np.vstack(parts_i))


def capsule(radius: float, half_height: float, segments: int = 24, rings: int = 8):
    """Capsule along Y: cylinder of ``half_height`` plus two hemispheres of ``radius``."""
    top_v, top_i = sphere(segments, rings, radius, half_height, (0.0, np.pi / 2))
    bot_v, bot_i = sphere(segments, rings, radius, -half_height, (np.pi / 2, np.pi))
    # Side: the last ring of the top cap joined to the first ring of the bottom cap.
    ring = segments + 1
    n_top = len(top_v)
    a = np.arange(segments) + n_top - ring
    b = np.arange(segments) + n_top
    side = np.vstack([np.stack([a, b, a + 1], 1), np.stack([a + 1, b, b + 1], 1)])
    verts = np.vstack([top_v, bot_v])
    idx = np.vstack([top_i, bot_i + n_top, side])
    return np.ascontiguousarray(verts), np.ascontiguousarray(idx.astype(np.uint32))


def plane():
    """Square of half-size 1 in the XZ plane, normal +Y."""
    pos = [[-1, 0, -1], [-1, 0, 1], [1, 0, 1], [1, 0, -1]]
    return _pack(pos, [[0, 1, 0]] * 4, [[0, 1, 2], [0, 2, 3]])


def grid_lines(up_axis: str = "Y", half_size: int = 10, spacing: float = 1.0):
    """Ground grid as line segments: returns (positions (2L, 3), colors (2L, 3)) float32.

    The two lines through the origin are tinted like the axes they follow
    (X red, the other horizontal axis blue) to show orientation.
    """
    ticks = np.arange(-half_size, half_size + 1) * spacing
    ext = half_size * spacing
    pos, col = [], []
    base, x_col, h_col = (0.30, 0.31, 0.34), (0.75, 0.25, 0.25), (0.25, 0.35, 0.80)
    for t in ticks:
        # a line of constant x (along the second horizontal axis) and one of constant h
        pos += [[t, -ext], [t, ext], [-ext, t], [ext, t]]
        c1 = h_col if t == 0 else base
        c2 = x_col if t == 0 else base
        col += [c1, c1, c2, c2]
    hv = np.asarray(pos, np.float32)
    out = np.zeros((len(hv), 3), np.float32)
    out[:, 0] = hv[:, 0]
    if up_axis == "Y":
        out[:, 2] = hv[:, 1]
    else:
        out[:, 1] = hv[:, 1]
    return out, np.asarray(col, np.float32)
