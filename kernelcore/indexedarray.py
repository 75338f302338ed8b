"""``kc.indexedarray``: an array read and written through per-dimension index arrays (Warp's
``indexedarray``).

``kc.indexedarray(data=a, indices=[rows, None])`` views the elements ``a[rows[i], j]``: its
shape is ``(len(rows), a.shape[1])``. Inside a kernel argument declared
``kc.indexedarray(dtype=..., ndim=...)`` (or ``kc.indexedarray1d(dtype=...)``, ...), loads,
stores and atomics go through the index arrays to ``a``; their adjoints land in ``a.grad``.
``kc.indexedarray(dtype=..., ndim=...)`` without data is the type annotation.

How a kernel receives it: the launch passes the data array and one int32 index array per
dimension (empty where the dimension is not indexed) to a lowered form of the kernel
(kernelcore/indexed_launch.py), whose code maps each index through ``kc::indexed_index``
(kc_array.h). No copy is made: writes through the view change ``a``.
"""
from __future__ import annotations

import numpy as np

from . import types as T
from .array import array
from .types import IndexedArrayType

__all__ = ["indexedarray", "indexedarray1d", "indexedarray2d", "indexedarray3d", "indexedarray4d", "IndexedArrayType"]


def _check_index_array(idx, k, data):
    if not isinstance(idx, array):
        raise TypeError(f"indexedarray: indices[{k}] must be a kc.array of int32 (or None), got {type(idx).__name__}")
    if idx.dtype is not T.int32 or idx.ndim != 1:
        raise TypeError(f"indexedarray: indices[{k}] must be a 1-d array of int32, got a {idx.ndim}-d array of "
                        f"{T.type_repr(idx.dtype)}")
    if idx.device != data.device:
        raise ValueError(f"indexedarray: indices[{k}] is on device '{idx.device}' but the data is on '{data.device}'")


class indexedarray:
    """A view of ``data`` through per-dimension int32 index arrays (``None``: not indexed).

    ``indexedarray(dtype=..., ndim=...)`` alone is the kernel argument annotation.
    Shape: ``len(indices[k])`` along an indexed dimension k, ``data.shape[k]`` elsewhere.
    """

    def __new__(cls, data=None, indices=None, dtype=None, ndim=None):
        if data is None:
            if indices is not None:
                raise ValueError("indexedarray: indices given without data")
            return IndexedArrayType(dtype if dtype is not None else T.float32, ndim or 1)
        return super().__new__(cls)

    def __init__(self, data=None, indices=None, dtype=None, ndim=None):
        if not isinstance(data, array):
            raise TypeError(f"indexedarray: data must be a kc.array, got {type(data).__name__}")
        if dtype is not None and T.type_from_annotation(dtype) is not data.dtype:
            raise ValueError(f"indexedarray: dtype {T.type_repr(T.type_from_annotation(dtype))} does not match the "
                             f"data's dtype {T.type_repr(data.dtype)}")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(f"indexedarray: ndim={ndim} does not match the data's {data.ndim} dimensions")
        if indices is None:
            indices = []
        elif isinstance(indices, array):
            indices = [indices]
        elif not isinstance(indices, (list, tuple)):
            raise TypeError(f"indexedarray: indices must be a kc.array or a list of them (None for a dimension that "
                            f"is not indexed), got {type(indices).__name__}")
        if len(indices) > data.ndim:
            raise ValueError(f"indexedarray: {len(indices)} index arrays for {data.ndim}-d data")
        self.data = data
        self.indices = list(indices) + [None] * (data.ndim - len(indices))
        shape = list(data.shape)
        for k, idx in enumerate(self.indices):
            if idx is not None:
                _check_index_array(idx, k, data)
                shape[k] = idx.shape[0]
        self.shape = tuple(shape)
        self.dtype = data.dtype
        self.ndim = data.ndim
        self.device = data.device
        self.size = int(np.prod(self.shape)) if self.shape else 0

    @property
    def type(self) -> IndexedArrayType:
        return IndexedArrayType(self.dtype, self.ndim)

    @property
    def requires_grad(self):
        return self.data.requires_grad

    def __len__(self):
        return self.shape[0]

    def numpy(self) -> np.ndarray:
        """A numpy copy of the viewed elements (gathered through the index arrays)."""
        out = self.data.numpy()
        for k, idx in enumerate(self.indices):
            if idx is not None:
                out = np.take(out, idx.numpy(), axis=k)
        return np.array(out, copy=True)

    def _element_key(self):
        """The numpy index (np.ix_ over every dimension) of the viewed elements of ``data``."""
        axes = [idx.numpy() if idx is not None else np.arange(n) for idx, n in zip(self.indices, self.data.shape)]
        return np.ix_(*axes)

    def assign(self, src):
        """Write ``src`` (numpy values, a kc array or an indexedarray of this shape) into the viewed elements."""
        if isinstance(src, (array, indexedarray)):
            src = src.numpy()
        self.data[self._element_key()] = src

    def fill_(self, value):
        """Set every viewed element of ``data`` to ``value``."""
        self.data[self._element_key()] = np.asarray(value.value if isinstance(value, T.scalar_base) else value)

    def zero_(self):
        self.fill_(0)

    def __repr__(self):
        return f"indexedarray({self.numpy()!r}, dtype={T.type_repr(self.dtype)}, device={self.device})"

    def __str__(self):
        return str(self.numpy())


def _with_ndim(ndim):
    def make(*args, **kwargs):
        kwargs["ndim"] = ndim
        return indexedarray(*args, **kwargs)

    make.__name__ = f"indexedarray{ndim}d"
    make.__doc__ = f"A {ndim}-d kc.indexedarray, or its annotation when no data is given."
    return make


indexedarray1d = _with_ndim(1)
indexedarray2d = _with_ndim(2)
indexedarray3d = _with_ndim(3)
indexedarray4d = _with_ndim(4)
