"""Bvh: bounding volume hierarchy over axis-aligned boxes (binned-SAH build, refit)."""
from __future__ import annotations

import ctypes

import numpy as np

import kernelcore as kc

from . import _kernels, _native
from ._util import as_vec3_array, check_device, positive_int


def _host_threads() -> int:
    from kernelcore.device import num_threads

    return num_threads()


class Bvh:
    """Hierarchy over n boxes given by ``lowers`` and ``uppers`` (kc vec3 arrays or (n, 3) arrays).

    Inside kernels: ``kc.bvh_query_aabb(bvh.id, lower, upper)`` and ``kc.bvh_query_ray(bvh.id,
    start, dir)`` with ``kc.bvh_query_next(query, index)`` iterate over the items whose box
    overlaps the query box / is crossed by the ray (each item once, in no particular order).
    After moving the boxes (edit the arrays in place), call ``refit()``; ``rebuild()`` builds a
    new tree for boxes that moved far.

    leaf_size: items per leaf (1 suits overlap queries; meshes use 4 for closest points).
    """

    def __init__(self, lowers, uppers, leaf_size: int = 1, device="cpu"):
        self.device = check_device(device)
        lo = as_vec3_array(lowers, "lowers")
        hi = as_vec3_array(uppers, "uppers")
        if lo.shape[0] != hi.shape[0]:
            raise ValueError(f"lowers and uppers have different lengths ({lo.shape[0]} and {hi.shape[0]})")
        bad = np.nonzero(np.any(lo.numpy() > hi.numpy(), axis=1))[0]
        if bad.size:
            raise ValueError(f"uppers: box {int(bad[0])} has upper < lower ({bad.size} such boxes)")
        self._setup(lo, hi, positive_int(leaf_size, "leaf_size"))
        self.rebuild()

    def _setup(self, lo, hi, leaf_size):
        n = lo.shape[0]
        if n >= 2 ** 30:
            raise ValueError(f"lowers: too many items ({n})")
        self.lowers, self.uppers = lo, hi
        self.leaf_size = leaf_size
        self._nodes = np.zeros(max(2 * n - 1, 1), dtype=_native.BVH_NODE_DTYPE)
        self._items = np.zeros(n, dtype=np.int32)
        self._centers = np.zeros(13 * n, dtype=np.float32)
        self._stack = np.zeros(2 * 10 * 96, dtype=np.int32)   # two stacks: 4 ints + 6 floats per entry
        d = self._desc = _native.BvhDesc()
        d.num_items = n
        d.leaf_size = leaf_size
        d.lowers, d.uppers = _native.ptr(lo), _native.ptr(hi)
        d.lower_stride, d.upper_stride = lo.strides[0], hi.strides[0]
        d.nodes, d.items = _native.ptr(self._nodes), _native.ptr(self._items)
        d.centers, d.stack = _native.ptr(self._centers), _native.ptr(self._stack)

    @classmethod
    def _for_mesh(cls, lowers, uppers, leaf_size):
        """A tree over a mesh's face bounds; the mesh's native build fills and builds it."""
        self = cls.__new__(cls)
        self.device = "cpu"
        self._setup(lowers, uppers, leaf_size)
        return self

    @property
    def id(self) -> int:
        """Handle passed to kernels as a ``kc.uint64``."""
        return ctypes.addressof(self._desc)

    @property
    def num_items(self) -> int:
        return int(self._desc.num_items)

    @property
    def num_nodes(self) -> int:
        return int(self._desc.num_nodes)

    @property
    def depth(self) -> int:
        return int(self._desc.max_depth)

    def rebuild(self):
        """Build the tree from the current boxes (on up to two host threads)."""
        self._desc.num_threads = _host_threads()
        kc.launch(_kernels.bvh_build, dim=1, inputs=[self.id], record_tape=False)

    def refit(self):
        """Recompute node bounds after the boxes moved (tree topology kept)."""
        kc.launch(_kernels.bvh_refit, dim=1, inputs=[self.id], record_tape=False)

    def nodes(self) -> np.ndarray:
        """The node table (structured array: lo, a, hi, b; a leaf has b < 0 and covers items[a:a-b])."""
        return self._nodes[: self.num_nodes].copy()
