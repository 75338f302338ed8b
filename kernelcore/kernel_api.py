"""Names used inside kernels that are not table builtins (resolved by the frontend)."""
from __future__ import annotations


def tid():
    """Thread index: ``i = kc.tid()`` (flat) or ``i, j = kc.tid()`` for multi-dimensional launches."""
    raise RuntimeError("kc.tid() can only be called inside a kernel")


def printf(fmt, *args):
    """C printf inside kernels (scalar arguments)."""
    raise RuntimeError("kc.printf() can only be called inside a kernel")


def identity(n, dtype=float):
    """n x n identity matrix (also usable in Python scope)."""
    from . import types as T
    import numpy as np

    return T.matrix((n, n), dtype)(np.eye(n))


def constant(value):
    """Mark a module-level value as a compile-time constant usable in kernels."""
    return value
