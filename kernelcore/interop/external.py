"""External arrays as kc arrays, without copying: wrapping buffers, CUDA arrays, launch inputs.

A kc array views a numpy (CPU) or CuPy (CUDA) buffer whose trailing dimensions hold the
components of one element (an (n, 3) float32 buffer is an n-array of vec3).
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..device import get_device, is_cuda_available
from . import cuda_mem
from .numpy_interop import dtype_from_numpy


def wrap_buffer(buf, dtype, device, owner=None, what="array"):
    """A kc array sharing ``buf`` (numpy or CuPy array) as elements of ``dtype``.

    ``dtype=None`` takes the buffer's scalar type and all of its dimensions.  ``owner`` is
    kept alive as long as the kc array (the object the memory belongs to).
    """
    from ..array import MAX_DIMS, array

    if dtype is None:
        dtype = dtype_from_numpy(buf.dtype)
    dtype = T.type_from_annotation(dtype)
    if T.is_struct(dtype):
        raise TypeError(f"{what}: arrays of struct {T.type_repr(dtype)} cannot wrap external memory")
    np_dt, inner = T.np_dtype_of(dtype)
    if np.dtype(buf.dtype) != np_dt:
        raise TypeError(f"{what} of dtype {np.dtype(buf.dtype)} cannot be viewed as {T.type_repr(dtype)} (needs {np_dt})")
    if inner:
        if tuple(buf.shape[-len(inner):]) != tuple(inner):
            raise ValueError(f"{what} of shape {tuple(buf.shape)} cannot hold {T.type_repr(dtype)} elements "
                             f"(its trailing dimensions must be {tuple(inner)})")
        packed = np_dt.itemsize
        for d, s in zip(reversed(inner), reversed(buf.strides[-len(inner):])):
            if d > 1 and s != packed:
                raise ValueError(f"{what}: the components of each {T.type_repr(dtype)} element must be contiguous "
                                 f"(strides {tuple(buf.strides)})")
            packed *= d
    ndim = buf.ndim - len(inner)
    if not 1 <= ndim <= MAX_DIMS:
        raise ValueError(f"{what} of shape {tuple(buf.shape)} gives a {ndim}-d array of {T.type_repr(dtype)}; "
                         f"kernelcore arrays have 1 to {MAX_DIMS} dimensions")
    out = array.__new__(array, shape=1)
    out.device = device
    out.dtype = dtype
    out._requires_grad = False
    out.grad = None
    out._tape_reads = False
    out._set_buffer(buf, ndim)
    out._owner = owner
    return out


def has_cuda_array_interface(obj) -> bool:
    try:
        return getattr(obj, "__cuda_array_interface__", None) is not None
    except Exception:  # some producers raise other errors for host data
        return False


def from_cuda_array_interface(obj, dtype=None):
    """A kc CUDA array sharing the memory of any object with ``__cuda_array_interface__``."""
    if not is_cuda_available():
        raise ValueError(f"a {type(obj).__name__} exposing __cuda_array_interface__ (device memory) was given, but CUDA "
                         "is not available on this machine; copy it to the host first")
    buf = cuda_mem.wrap_cuda_array_interface(obj)
    return wrap_buffer(buf, dtype, get_device(f"cuda:{buf.device.id}"), owner=obj, what=f"CUDA {type(obj).__name__}")


def from_cupy(x, dtype=None, requires_grad=False):
    """A kc array viewing a CuPy array (zero-copy)."""
    a = from_cuda_array_interface(x, dtype)
    if requires_grad:
        a.requires_grad = True
    return a


def to_cupy(a):
    """A CuPy array viewing a kc CUDA array (zero-copy)."""
    if not a.device.is_cuda:
        raise TypeError(f"to_cupy needs a CUDA array, got one on '{a.device}' (use .numpy() for host data)")
    return a._buf


def is_torch_tensor(obj) -> bool:
    return type(obj).__module__.split(".", 1)[0] == "torch" and hasattr(obj, "detach")


def resolve_external(value, dtype):
    """What kc.launch makes of a non-kc argument.

    torch tensors, CUDA arrays and DLPack producers on a GPU become kc arrays; DLPack
    producers in host memory become a numpy view (checked like any numpy argument); other
    values come back unchanged.
    """
    if is_torch_tensor(value):
        from .torch_interop import from_torch

        return from_torch(value, dtype=dtype, requires_grad=False)
    if hasattr(value, "__array_interface__") or isinstance(value, np.ndarray):
        return value
    if has_cuda_array_interface(value):
        return from_cuda_array_interface(value, dtype)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        from .dlpack import CPU_DEVICE_TYPES, from_dlpack

        if value.__dlpack_device__()[0] in CPU_DEVICE_TYPES:
            return np.from_dlpack(value)
        return from_dlpack(value, dtype)
    return value
