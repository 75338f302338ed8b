"""Launching kernels that take kc.indexedarray arguments (kernelcore/indexedarray.py).

The frontend gives such a kernel one array argument per indexedarray (its data) followed by
one int32 index array per dimension. A launch therefore runs a lowered form of the kernel,
``IndexedKernel``, whose declared arguments are exactly those arrays, with each indexedarray
value spread into them (an empty array where a dimension is not indexed). Everything after
that (checks, packing, the Tape, adjoints, CUDA) sees plain arrays: gradients of reads and
writes through the view land in the data array's ``.grad``.
"""
from __future__ import annotations

from . import types as T
from .array import ArrayType, array
from .indexedarray import indexedarray
from .kernel import Kernel
from .types import IndexedArrayType


class IndexedKernel(Kernel):
    """A kernel with its indexedarray arguments spread into data and index arrays (see above)."""

    def __init__(self, base):
        self.base = base
        self.func, self.key, self.defn = base.func, base.key, base.defn
        self.enable_backward = base.enable_backward
        self.frontend_arg_types = base.arg_types   # what the frontend builds from (it spreads them itself)
        self.arg_names, self.arg_types = [], []
        for name, t in zip(base.arg_names, base.arg_types):
            if isinstance(t, IndexedArrayType):
                self.arg_names += [name] + [f"{name}__indices{k}" for k in range(t.ndim)]
                self.arg_types += [ArrayType(t.dtype, t.ndim)] + [ArrayType(T.int32, 1)] * t.ndim
            else:
                self.arg_names.append(name)
                self.arg_types.append(t)
        self.cname = base.cname   # the base kernel is never compiled itself
        self.module = base.module
        self._irs = {}
        self.module.register(self)

    def ir(self):
        from .frontend import build_ir
        from .module import options_key

        key = options_key()
        ir = self._irs.get(key)
        if ir is None:
            ir = self._irs[key] = build_ir(self.defn, self.frontend_arg_types, "kernel")
        return ir

    def __repr__(self):
        return f"<kernelcore kernel {self.key} (indexedarray arguments spread)>"


def lowered(kernel) -> IndexedKernel:
    v = kernel.__dict__.get("_indexed_lowered")
    if v is None:
        v = kernel.__dict__["_indexed_lowered"] = IndexedKernel(kernel)
    return v


def _spread(kernel, names_types, values, adjoint=False):
    out = []
    for (name, t), v in zip(names_types, values):
        if not isinstance(t, IndexedArrayType):
            out.append(v)
            continue
        if v is None:
            out += [None] * (1 + t.ndim)
        elif isinstance(v, indexedarray):
            if v.dtype is not t.dtype or v.ndim != t.ndim:
                raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {t!r}, got an indexedarray of "
                                f"{T.type_repr(v.dtype)} with {v.ndim} dimension(s)")
            # an adjoint buffer given as an indexedarray: its data receives the gradient
            out += [v.data] + ([None] * t.ndim if adjoint else list(v.indices))
        elif adjoint and isinstance(v, array):
            out += [v] + [None] * t.ndim
        else:
            what = "a kc.array" if isinstance(v, array) else type(v).__name__
            raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {t!r}, got {what}; wrap an array as "
                            f"kc.indexedarray(data, [index arrays or None per dimension])")
    return out


def spread_arguments(kernel, inputs, outputs, adj_inputs, adj_outputs):
    """(lowered kernel, inputs, outputs, adj_inputs, adj_outputs) with indexedarrays spread."""
    nt = list(zip(kernel.arg_names, kernel.arg_types))
    n_in = len(inputs)
    ins, outs = _spread(kernel, nt[:n_in], inputs), _spread(kernel, nt[n_in:], outputs)
    adj_in = _spread(kernel, nt[:n_in], adj_inputs, True) if adj_inputs is not None else None
    adj_out = _spread(kernel, nt[n_in:], adj_outputs, True) if adj_outputs is not None else None
    return lowered(kernel), ins, outs, adj_in, adj_out
