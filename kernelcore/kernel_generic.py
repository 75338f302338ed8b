"""Generic kernels: ``typing.Any`` argument annotations, specialised per concrete argument types.

A kernel whose arguments are annotated ``typing.Any`` or ``kc.array(dtype=typing.Any, ndim=N)``
is generic: it is never compiled itself. Each launch infers the concrete types of its generic
arguments from the values passed (an array's dtype and ndim; a Python float is float32, an int
int32, a bool bool; a kc scalar/vector/matrix value its own type) and runs the specialisation for
those types, built and compiled on first use and cached on the kernel. ``kc.overload(kernel,
types)`` declares a specialisation up front; a launch whose values fit a declared overload uses
it (so ``kc.overload(k, [kc.array(dtype=kc.float64), kc.float64])`` takes a Python float as a
float64), the first declared one that fits winning.

A specialisation is an ordinary kernel (its own C++ name, IR, adjoint, Tape entries); only its
argument types differ from the generic one's.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from . import types as T
from .array import ArrayType, array
from .function import _match_param


def is_generic_type(t) -> bool:
    return t is Any or (isinstance(t, ArrayType) and t.dtype is Any)


def _kernel_class():
    from .kernel import Kernel

    return Kernel


class KernelSpecialization(_kernel_class()):
    """One instance of a generic kernel for concrete argument types."""

    generic = False

    def __init__(self, base, arg_types):
        self.base = base
        self.func, self.key, self.defn = base.func, base.key, base.defn
        self.enable_backward = base.enable_backward
        self.arg_names = list(base.arg_names)
        self.arg_types = list(arg_types)
        sig = ",".join(T.type_key(t) for t in self.arg_types)
        self.cname = f"{base.cname}_{hashlib.sha256(sig.encode()).hexdigest()[:8]}"
        self.module = base.module
        self._irs = {}
        self.module.register(self)

    def __repr__(self):
        shown = ", ".join(T.type_repr(t) for t in self.arg_types)
        return f"<kernelcore kernel {self.key}[{shown}]>"


def _signature(types) -> tuple:
    return tuple(T.type_key(t) for t in types)


def specialise(kernel, concrete):
    """The cached specialisation of generic ``kernel`` for the concrete argument types."""
    key = _signature(concrete)
    spec = kernel.specializations.get(key)
    if spec is None:
        spec = kernel.specializations[key] = KernelSpecialization(kernel, concrete)
    return spec


def overload(kernel, arg_types):
    """``kc.overload(kernel, [types...])`` or ``kc.overload(kernel, {name: type})``: declare the
    specialisation of generic ``kernel`` for these concrete argument types; returns it."""
    Kernel = _kernel_class()
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kc.overload needs a @kc.kernel, got {type(kernel).__name__}")
    if not kernel.generic:
        raise TypeError(f"kc.overload: kernel '{kernel.key}' is not generic (no typing.Any argument); "
                        "only generic kernels take overloads")
    names = kernel.arg_names
    if isinstance(arg_types, dict):
        unknown = [n for n in arg_types if n not in names]
        if unknown:
            raise TypeError(f"kc.overload: kernel '{kernel.key}' has no argument named {unknown[0]!r} "
                            f"(arguments: {', '.join(names)})")
        # arguments with concrete annotations may be left out of the dict
        arg_types = [arg_types.get(n, t if not is_generic_type(t) else None) for n, t in zip(names, kernel.arg_types)]
        missing = [n for n, t in zip(names, arg_types) if t is None]
        if missing:
            raise TypeError(f"kc.overload: kernel '{kernel.key}' needs a type for its generic argument '{missing[0]}'")
    arg_types = list(arg_types)
    if len(arg_types) != len(names):
        raise TypeError(f"kc.overload: kernel '{kernel.key}' takes {len(names)} arguments ({', '.join(names)}), "
                        f"got {len(arg_types)} types")
    concrete = []
    for n, p, t in zip(names, kernel.arg_types, arg_types):
        try:
            t = T.type_from_annotation(t)
        except (KeyError, TypeError):
            pass
        if not (isinstance(t, ArrayType) or T.is_scalar(t) or T.is_composite(t) or T.is_struct(t) or t is Any):
            raise TypeError(f"kc.overload: kernel '{kernel.key}' argument '{n}': {t!r} is not a kernel type")
        if is_generic_type(t):
            raise TypeError(f"kc.overload: kernel '{kernel.key}' argument '{n}': {T.type_repr(t)} is not a concrete type")
        c = _match_param(p, t)
        if c is None:
            raise TypeError(f"kc.overload: kernel '{kernel.key}' argument '{n}' is declared {T.type_repr(p)}; "
                            f"{T.type_repr(t)} does not fit it")
        concrete.append(c)
    spec = specialise(kernel, concrete)
    if spec not in kernel.explicit_overloads:
        kernel.explicit_overloads.append(spec)
    return spec


_PY_TYPES = {float: T.float32, int: T.int32, bool: T.bool_}


def infer_type(value):
    """The kernel type a launch argument value specialises a generic parameter to, or None."""
    t = _PY_TYPES.get(type(value))
    if t is not None:
        return t
    if isinstance(value, array):
        return ArrayType(value.dtype, value.ndim)
    if isinstance(value, np.ndarray):
        from .interop.numpy_interop import dtype_from_numpy

        try:
            return ArrayType(dtype_from_numpy(value.dtype), value.ndim)
        except (TypeError, ValueError, KeyError):
            return None
    if isinstance(value, np.generic):
        from .interop.numpy_interop import dtype_from_numpy

        try:
            return dtype_from_numpy(value.dtype)
        except (TypeError, ValueError, KeyError):
            return None
    if isinstance(value, T.scalar_base) or T.is_composite(type(value)) or T.is_struct(type(value)):
        return type(value)
    return None


def _fits(t, value) -> bool:
    """Whether a launch value can be passed for a concrete parameter type ``t`` of an overload."""
    if isinstance(t, ArrayType):
        a = infer_type(value)
        return isinstance(a, ArrayType) and a.ndim == t.ndim and a.dtype is t.dtype
    if type(value) is float:
        return T.is_float(t)
    if type(value) in (int, np.int32, np.int64):
        return T.is_scalar(t) and t is not T.bool_
    return infer_type(value) == t


def resolve(kernel, params):
    """The specialisation of generic ``kernel`` that a launch with ``params`` runs."""
    generic = [k for k, t in enumerate(kernel.arg_types) if is_generic_type(t)]
    for spec in kernel.explicit_overloads:
        if all(_fits(spec.arg_types[k], params[k]) for k in generic):
            return spec
    concrete = list(kernel.arg_types)
    for k in generic:
        name, p, v = kernel.arg_names[k], kernel.arg_types[k], params[k]
        a = infer_type(v)
        if a is None:
            what = "None" if v is None else type(v).__name__
            raise TypeError(f"kernel '{kernel.key}' argument '{name}' is generic ({T.type_repr(p)}): cannot infer a "
                            f"kernel type from a {what} value; pass a typed value or declare kc.overload(...)")
        c = _match_param(p, a)
        if c is None:
            raise TypeError(f"kernel '{kernel.key}' argument '{name}' is declared {T.type_repr(p)}; "
                            f"got {T.type_repr(a)}")
        concrete[k] = c
    return specialise(kernel, concrete)
