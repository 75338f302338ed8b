"""kc.config.verify_nan: stop at the first launch that writes a NaN or an infinity.

After every forward launch, the float arrays the kernel writes are checked; during
``Tape.backward()``, after every adjoint, the gradients of the launch's arrays are checked.
The error names the kernel (and its file:line), the argument, the first bad index and
component, and for an adjoint which forward launch it reverses (its position on the tape),
so a NaN that appears a thousand steps into a rollout is caught where it is born instead of
surfacing in the loss.  The check copies each array to the host (numpy) once: cheap on the
CPU, a device-to-host copy per launch on CUDA.
"""
from __future__ import annotations

import numpy as np

from .array import ArrayType, array


class NonFiniteError(FloatingPointError):
    """A launch wrote a NaN or an infinity (kc.config.verify_nan)."""


def _first_bad(a):
    """(index, component, value) of the first non-finite element of ``a``, or None."""
    if not isinstance(a, array) or a.size == 0:
        return None
    v = a.numpy()
    if v.dtype.kind != "f":
        return None
    bad = ~np.isfinite(v)
    if not bad.any():
        return None
    pos = tuple(int(i) for i in np.argwhere(bad)[0])
    nd = a.ndim
    return pos[:nd], pos[nd:], float(v[pos])


def _where(kernel):
    defn = getattr(kernel, "defn", None)
    return f" ({defn.file}:{defn.firstline})" if defn is not None and getattr(defn, "file", None) else ""


def _describe(index, comp, value):
    idx = index[0] if len(index) == 1 else index
    comp_txt = f", component {comp[0] if len(comp) == 1 else comp}" if comp else ""
    return f"{value} at index {idx}{comp_txt}"


#: a stack of lists: while one is open (see ``collecting``), a forward hit is recorded in it instead of
#: raised, so that a caller (a sim solver's step) can finish and name the quantity it belongs to
_collectors: list = []


class collecting:
    """``with collecting() as hits:`` forward NaN/Inf hits go into the list ``hits`` (the first one
    only: later launches are not checked once one is found) instead of raising at once."""

    def __enter__(self):
        self.hits = []
        _collectors.append(self.hits)
        return self.hits

    def __exit__(self, *exc):
        _collectors.remove(self.hits)


def check_forward(kernel, ir, params):
    """Raise NonFiniteError if a float array the kernel writes holds a NaN/Inf."""
    if _collectors and _collectors[-1]:
        return  # the first hit of this step is already known; the step's own report follows
    for name, t, p in zip(kernel.arg_names, kernel.arg_types, params):
        if isinstance(t, ArrayType) and name in ir.array_writes:
            hit = _first_bad(p)
            if hit is not None:
                msg = f"verify_nan: kernel '{kernel.key}'{_where(kernel)} wrote {_describe(*hit)} of argument '{name}'"
                if _collectors:
                    _collectors[-1].append(msg)
                    return
                raise NonFiniteError(msg)


def check_adjoint(kernel, params, position):
    """Raise NonFiniteError if a gradient of the launch's arrays holds a NaN/Inf after its adjoint ran.

    ``position``: the index of the forward launch in ``tape.launches``."""
    for name, t, p in zip(kernel.arg_names, kernel.arg_types, params):
        if isinstance(t, ArrayType) and isinstance(p, array) and p.grad is not None:
            hit = _first_bad(p.grad)
            if hit is not None:
                raise NonFiniteError(f"verify_nan: adjoint of kernel '{kernel.key}'{_where(kernel)} (reversing tape.launches[{position}], "
                                     f"the forward launch of '{kernel.key}' recorded there) wrote "
                                     f"{_describe(*hit)} into the gradient of argument '{name}'")
