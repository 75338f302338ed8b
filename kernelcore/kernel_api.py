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


def static(value):
    """``kc.static(expr)`` inside a kernel: ``expr`` is evaluated in Python when the kernel is
    built (module names, enclosing functions' names and the counters of unrolled loops are
    visible) and its value used as a constant, e.g. ``range(kc.static(N))``, or as the
    function to call, e.g. ``kc.static(table[k])(x)``. In Python scope it returns ``value``."""
    return value
