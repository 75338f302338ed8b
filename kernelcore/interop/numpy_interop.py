"""numpy dtypes <-> kernelcore scalar types (numpy is a core dependency)."""
from __future__ import annotations

import numpy as np

from .. import types as T


def dtype_to_numpy(dtype) -> np.dtype:
    """numpy dtype of a kernelcore type's scalar components (vec3 -> float32)."""
    dtype = T.type_from_annotation(dtype)
    if T.is_struct(dtype):
        raise TypeError(f"struct type {T.type_repr(dtype)} has no numpy scalar dtype")
    return T.np_dtype_of(dtype)[0]


def dtype_from_numpy(np_dtype):
    """kernelcore scalar type of a numpy dtype (np.float32 -> kc.float32)."""
    dt = np.dtype(np_dtype)
    t = T._np_to_scalar.get(dt) if dt.isnative else None
    if t is None:
        raise TypeError(f"numpy dtype {dt} has no kernelcore equivalent")
    return t
