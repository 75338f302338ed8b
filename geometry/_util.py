"""Input checking shared by the geometry classes: clear ValueErrors naming the argument."""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc


def check_device(device):
    name = str(device) if device is not None else "cpu"
    if not name.startswith("cpu"):
        raise NotImplementedError(f"geometry structures run on the CPU for now (device={device!r})")
    return "cpu"


def as_vec3_array(value, name: str, allow_empty: bool = False, keep: bool = True):
    """A contiguous kc vec3 array for `value` (kc.array of vec3, or anything numpy reads as (n, 3)).

    A contiguous kc vec3 array is kept as is (so later edits are seen by refit/rebuild);
    anything else is copied into a new float32 array.
    """
    if isinstance(value, kc.array):
        if value.dtype is kc.vec3 and value.ndim == 1 and value.is_contiguous and keep:
            arr = value
        elif value.dtype is kc.vec3 and value.ndim == 1:
            arr = kc.array(np.ascontiguousarray(value.numpy()), dtype=kc.vec3)
        else:
            np_v = np.asarray(value.numpy())
            arr = _vec3_from_numpy(np_v, name)
    else:
        arr = _vec3_from_numpy(np.asarray(value), name)
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name}: empty point set (need at least one point)")
    data = arr.numpy()
    if data.size and not np.all(np.isfinite(data)):
        raise ValueError(f"{name}: contains NaN or infinite coordinates")
    return arr


def _vec3_from_numpy(a, name):
    if a.dtype == object:
        raise ValueError(f"{name}: expected an array of 3-d points")
    if a.ndim == 1 and a.size == 0:
        a = a.reshape(0, 3)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (n, 3), got {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{name}: expected numeric coordinates, got dtype {a.dtype}")
    return kc.array(np.ascontiguousarray(a, dtype=np.float32), dtype=kc.vec3)


def positive_float(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a positive number, got {value!r}") from None
    if not (v > 0.0) or not math.isfinite(v):
        raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
    return v


def positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name}: must be positive, got {value}")
    return int(value)


def vec3_value(value, name: str) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64).reshape(-1)
    if v.size == 1:
        v = np.repeat(v, 3)
    if v.size != 3 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: expected three finite numbers, got {value!r}")
    return v
