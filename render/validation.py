"""Input checking shared by every renderer.

All public ``render_*`` calls funnel their arguments through these helpers so
that the USD writer and the OpenGL viewer reject (or skip) exactly the same
inputs with the same messages.  Only numpy is imported here.

Conventions used by the messages: ``call`` is the public method name (e.g.
``"render_points"``), ``name`` is the user's object name.  Errors are
``ValueError`` naming the call, the object and the offending shape; NaN/inf
positions are *not* errors but are skipped with a :class:`RenderWarning`.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np


class RenderWarning(UserWarning):
    """Warning category for skipped (non-finite) render items."""


def to_numpy(value, dtype=np.float32) -> np.ndarray:
    """Return ``value`` as a numpy array of ``dtype``.

    Objects with a ``.numpy()`` method (e.g. kernelcore arrays, torch tensors
    on the CPU) are converted through it, so render/ never has to import the
    library that produced them.
    """
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    return np.asarray(value, dtype=dtype)


def _where(call: str, name: str) -> str:
    return f"{call}({name!r})"


def points3(call: str, name: str, arg: str, value, allow_empty: bool = True) -> np.ndarray:
    """Validate an (N, 3) array of positions (metres); returns float32 (N, 3)."""
    arr = to_numpy(value, np.float32)
    if arr.ndim == 1 and arr.size == 3:
        arr = arr.reshape(1, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(
            f"{_where(call, name)}: {arg} must have shape (N, 3), got shape {arr.shape}"
        )
    if not allow_empty and arr.shape[0] == 0:
        raise ValueError(f"{_where(call, name)}: {arg} is empty, shape {arr.shape}")
    return np.ascontiguousarray(arr)


def vec3(call: str, name: str, arg: str, value) -> np.ndarray:
    """Validate a single 3-vector; returns float64 (3,)."""
    arr = to_numpy(value, np.float64).reshape(-1)
    if arr.shape != (3,):
        raise ValueError(f"{_where(call, name)}: {arg} must have 3 components, got shape {arr.shape}")
    return arr


def quat(call: str, name: str, value) -> np.ndarray:
    """Validate a rotation quaternion stored (x, y, z, w); returns it normalised.

    ``None`` means identity.  A zero-length quaternion is an error; a
    non-finite one is returned unchanged so the caller can skip the item.
    """
    if value is None:
        return np.array([0.0, 0.0, 0.0, 1.0])
    arr = to_numpy(value, np.float64).reshape(-1)
    if arr.shape != (4,):
        raise ValueError(
            f"{_where(call, name)}: rot must be a quaternion (x, y, z, w) with 4 components, "
            f"got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        return arr
    norm = float(np.linalg.norm(arr))
    if norm < 1e-12:
        raise ValueError(f"{_where(call, name)}: rot has zero length: {arr.tolist()}")
    return arr / norm


def quats(call: str, name: str, value, n: int) -> np.ndarray:
    """Validate (n, 4) quaternions (x, y, z, w); ``None`` = identity. Returns normalised float32."""
    if value is None:
        out = np.zeros((n, 4), np.float32)
        out[:, 3] = 1.0
        return out
    arr = to_numpy(value, np.float32)
    if arr.ndim == 1 and arr.shape == (4,):
        arr = np.broadcast_to(arr, (n, 4))
    if arr.shape != (n, 4):
        raise ValueError(
            f"{_where(call, name)}: rotations must have shape ({n}, 4) or (4,), got shape {arr.shape}"
        )
    norm = np.linalg.norm(arr, axis=1, keepdims=True)
    if np.any(norm[np.isfinite(norm)] < 1e-12):
        raise ValueError(f"{_where(call, name)}: rotations contain a zero-length quaternion")
    return np.ascontiguousarray(arr / norm, dtype=np.float32)


def scalar(call: str, name: str, arg: str, value, positive: bool = True) -> float:
    """Validate a scalar size (metres); must be > 0 when ``positive`` (NaN passes through)."""
    arr = to_numpy(value, np.float64)
    if arr.size != 1:
        raise ValueError(f"{_where(call, name)}: {arg} must be a scalar, got shape {arr.shape}")
    v = float(arr.reshape(()))
    if positive and np.isfinite(v) and v <= 0.0:
        raise ValueError(f"{_where(call, name)}: {arg} must be > 0, got {v}")
    return v


def radii(call: str, name: str, value, n: int):
    """Validate point radii: a scalar (float) or an (n,) array (float32)."""
    arr = to_numpy(value, np.float32)
    if arr.size == 1 and arr.ndim <= 1:
        return scalar(call, name, "radius", arr)
    if arr.shape != (n,):
        raise ValueError(
            f"{_where(call, name)}: radius must be a scalar or have shape ({n},) to match points, "
            f"got shape {arr.shape}"
        )
    if np.any(arr[np.isfinite(arr)] <= 0):
        raise ValueError(f"{_where(call, name)}: radius values must be > 0")
    return np.ascontiguousarray(arr)


def colors(call: str, name: str, value, n: int | None):
    """Validate colours: ``None``, one RGB triple (3,), or per-item (n, 3).

    Values are RGB in [0, 1]; only ``uint8`` arrays are read as 0..255 (so a
    plain ``(1, 0, 0)`` of Python ints is still red).  Returns float32 (3,) or
    (n, 3) clipped to [0, 1], or None.
    """
    if value is None:
        return None
    raw = value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value
    raw = np.asarray(raw)
    arr = raw.astype(np.float32)
    if raw.dtype == np.uint8:
        arr = arr / 255.0
    if arr.shape == (3,) or (arr.shape == (1, 3) and n != 1):
        return np.clip(arr.reshape(3), 0.0, 1.0)
    if n is not None and arr.shape == (n, 3):
        return np.ascontiguousarray(np.clip(arr, 0.0, 1.0))
    expected = f"(3,) or ({n}, 3)" if n is not None else "(3,)"
    raise ValueError(
        f"{_where(call, name)}: colors has shape {arr.shape} but {n} items were given; "
        f"expected shape {expected}"
    )


def triangles(call: str, name: str, value, n_points: int) -> np.ndarray:
    """Validate triangle indices (flat (3M,) or (M, 3)); returns int32 (M, 3)."""
    arr = to_numpy(value, np.int64)
    flat = arr.reshape(-1)
    if arr.ndim not in (1, 2) or (arr.ndim == 2 and arr.shape[1] != 3) or flat.size % 3 != 0:
        raise ValueError(
            f"{_where(call, name)}: indices must be (M, 3) or a flat array with a multiple of 3 "
            f"entries, got shape {arr.shape}"
        )
    if flat.size and (flat.min() < 0 or flat.max() >= n_points):
        raise ValueError(
            f"{_where(call, name)}: indices out of range [0, {n_points}) for points of shape "
            f"({n_points}, 3): min {int(flat.min())}, max {int(flat.max())}"
        )
    return np.ascontiguousarray(flat.reshape(-1, 3), dtype=np.int32)


def finite_rows(arr: np.ndarray) -> np.ndarray:
    """Boolean mask of rows whose entries are all finite."""
    finite = np.isfinite(arr)
    return finite.all(axis=tuple(range(1, arr.ndim))) if arr.ndim > 1 else finite


def warn_skipped(call: str, name: str, frame: int, time: float, what: str) -> None:
    """Warn that (part of) an item was not rendered because of NaN/inf values."""
    warnings.warn(
        f"{_where(call, name)} at frame {frame} (t={time:.6g} s): {what}",
        RenderWarning,
        stacklevel=4,
    )


_PALETTE = np.array(
    [
        [0.90, 0.35, 0.25],
        [0.25, 0.60, 0.90],
        [0.35, 0.80, 0.40],
        [0.95, 0.75, 0.20],
        [0.65, 0.45, 0.85],
        [0.20, 0.80, 0.80],
        [0.90, 0.50, 0.70],
        [0.60, 0.60, 0.60],
    ],
    dtype=np.float32,
)


def default_color(name: str) -> np.ndarray:
    """A stable colour per object name (crc32, not ``hash``, so it is the same every run)."""
    return _PALETTE[zlib.crc32(name.encode("utf-8")) % len(_PALETTE)].copy()
