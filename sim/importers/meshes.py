"""Small triangle-mesh readers for the importers: STL (binary and ASCII) and Wavefront OBJ.

Each returns (points (n, 3) float64, triangles (m, 3) int64) in the file's units; vertices
of STL facets are merged when they are bit-identical so that the mesh is closed for the
volume integrals of mass properties.  ValueError with a reason for files they cannot read.
"""
from __future__ import annotations

import os
import struct

import numpy as np

MESH_FORMATS = (".stl", ".obj")


def load_mesh(path):
    ext = os.path.splitext(path)[1].lower()
    if ext == ".stl":
        return _load_stl(path)
    if ext == ".obj":
        return _load_obj(path)
    raise ValueError(f"mesh format '{ext}' is not supported (supported: {', '.join(MESH_FORMATS)})")


def _merge(corners):
    corners = np.asarray(corners, np.float64).reshape(-1, 3)
    if len(corners) == 0:
        raise ValueError("the mesh has no triangles")
    points, inverse = np.unique(corners, axis=0, return_inverse=True)
    return points, inverse.reshape(-1, 3).astype(np.int64)


def _load_stl(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) >= 84:
        n = struct.unpack_from("<I", data, 80)[0]
        if len(data) == 84 + 50 * n:  # binary: header, count, 50 bytes per facet
            rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                                count=n, offset=84)
            return _merge(rec["v"].astype(np.float64))
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise ValueError("not an ASCII STL, and its size does not match a binary STL's facet count") from None
    corners = []
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "vertex":
            if len(parts) != 4:
                raise ValueError(f"malformed STL vertex line '{line.strip()}'")
            corners.append([float(v) for v in parts[1:]])
    if len(corners) % 3:
        raise ValueError("ASCII STL facets must have 3 vertices each")
    return _merge(corners)


def _load_obj(path):
    points, tris = [], []
    with open(path, "r", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "v":
                points.append([float(v) for v in parts[1:4]])
            elif parts[0] == "f":
                idx = []
                for p in parts[1:]:
                    i = int(p.split("/")[0])
                    idx.append(i - 1 if i > 0 else len(points) + i)
                if len(idx) < 3:
                    raise ValueError(f"line {lineno}: a face needs at least 3 vertices")
                tris += [(idx[0], idx[k], idx[k + 1]) for k in range(1, len(idx) - 1)]  # fan
    if not tris:
        raise ValueError("the mesh has no faces")
    t = np.asarray(tris, np.int64)
    if t.min() < 0 or t.max() >= len(points):
        raise ValueError(f"face indices out of range (the file has {len(points)} vertices)")
    return np.asarray(points, np.float64).reshape(-1, 3), t
