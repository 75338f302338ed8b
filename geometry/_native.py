"""ctypes mirrors of the native descriptors (geometry/native/*.h) and the header registration.

Each Python structure object (HashGrid, Bvh, Mesh, Volume) keeps its buffers in numpy / kc
arrays and one of these descriptors pinned in Python; its ``id`` is the descriptor's address,
which the native builtins cast back. The layouts are plain (pointers and sizes) so they can
be copied to device memory as they are.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from kernelcore.builtins import add_native_header

NATIVE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native")
# every header is registered (not only the last): the kernel cache key hashes registered headers
HEADERS = ["geo_common.h", "geo_hash_grid.h", "geo_bvh.h", "geo_mesh.h", "geo_volume.h", "geo_marching.h"]


def register_headers():
    for h in HEADERS:
        add_native_header(os.path.join(NATIVE_DIR, h))


_p = ctypes.c_void_p
_i32 = ctypes.c_int32
_f32 = ctypes.c_float


class HashGridDesc(ctypes.Structure):
    _fields_ = [("dim_x", _i32), ("dim_y", _i32), ("dim_z", _i32), ("num_points", _i32),
                ("build_radius", _f32), ("_pad0", _i32), ("cell_width", _f32 * 3), ("inv_cell_width", _f32 * 3),
                ("split", _i32 * 3), ("_pad1", _i32),
                ("point_stride", ctypes.c_int64), ("points", _p), ("sorted_ids", _p), ("cell_starts", _p),
                ("point_cells", _p)]


class BvhDesc(ctypes.Structure):
    _fields_ = [("num_items", _i32), ("num_nodes", _i32), ("leaf_size", _i32), ("max_depth", _i32),
                ("num_threads", _i32), ("_pad", _i32), ("lower_stride", ctypes.c_int64), ("upper_stride", ctypes.c_int64),
                ("lowers", _p), ("uppers", _p), ("nodes", _p), ("items", _p), ("centers", _p), ("stack", _p)]


class MeshDesc(ctypes.Structure):
    _fields_ = [("bvh", _p), ("points", _p), ("velocities", _p), ("indices", _p),
                ("num_points", _i32), ("num_faces", _i32), ("support_winding_number", _i32), ("_pad", _i32),
                ("lowers", _p), ("uppers", _p), ("degenerate", _p), ("adjacency", _p),
                ("edge_keys", _p), ("edge_vals", _p), ("edge_mask", ctypes.c_uint64),
                ("vertex_normals", _p), ("edge_normals", _p), ("node_dipole", _p),
                ("face_normals", _p), ("corner_angles", _p)]


class VolumeDesc(ctypes.Structure):
    _fields_ = [("xform", _f32 * 9), ("translation", _f32 * 3), ("inv_xform", _f32 * 9),
                ("background", _f32), ("num_bricks", _i32), ("table_mask", ctypes.c_uint32), ("_pad", _i32),
                ("table_keys", _p), ("table_vals", _p), ("data", _p), ("brick_coords", _p)]


BVH_NODE_DTYPE = np.dtype([("lo", np.float32, 3), ("a", np.int32), ("hi", np.float32, 3), ("b", np.int32)])
assert BVH_NODE_DTYPE.itemsize == 32


def ptr(a) -> int:
    """Address of a numpy array's (or kc array's) first element (0 for None)."""
    if a is None:
        return 0
    if isinstance(a, np.ndarray):
        return a.ctypes.data
    return int(a.ptr)
