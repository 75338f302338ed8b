"""DLPack: kc arrays as producers (``__dlpack__``) and any producer as a kc array.

A kc array's buffer is a numpy (CPU) or CuPy (CUDA) array, both DLPack producers, so
exporting hands out their capsule: the consumer keeps the buffer alive, no copy is made.
Importing accepts any object with ``__dlpack__``/``__dlpack_device__`` (numpy, torch,
JAX, CuPy, kc arrays) and also a bare legacy ``"dltensor"`` capsule (numpy views of
those are read-only, as numpy cannot know whether the producer allows writes; kernels
still write through them).
"""
from __future__ import annotations

import ctypes
import enum

import numpy as np

from .. import types as T


class DLDeviceType(enum.IntEnum):
    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    CUDA_MANAGED = 13


CPU_DEVICE_TYPES = (DLDeviceType.CPU, DLDeviceType.CUDA_HOST)
CUDA_DEVICE_TYPES = (DLDeviceType.CUDA, DLDeviceType.CUDA_MANAGED)


# -- export ----------------------------------------------------------------------------------
def _check_exportable(a):
    if T.is_struct(a.dtype):
        raise BufferError(f"arrays of struct {T.type_repr(a.dtype)} cannot be exported through DLPack")


def array_dlpack(a, stream=None, **kwargs):
    """``kc.array.__dlpack__``: the capsule of the array's buffer (shape includes element components)."""
    _check_exportable(a)
    if a.device.is_cpu:
        if stream is not None:
            raise BufferError("stream must be None for a CPU array")
        return a._buf.__dlpack__(**kwargs)
    return a._buf.__dlpack__(stream=stream, **kwargs)


def array_dlpack_device(a):
    if a.device.is_cpu:
        return (DLDeviceType.CPU, 0)
    return (DLDeviceType.CUDA, a.device.ordinal)


def to_dlpack(a):
    """A DLPack capsule sharing the memory of kc array ``a``."""
    return array_dlpack(a)


# -- import ----------------------------------------------------------------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):  # the leading fields of DLTensor
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


class _Capsule:
    """Wraps a bare DLPack capsule as a producer object (for np/cupy.from_dlpack)."""

    def __init__(self, capsule):
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        name = get_name(capsule)
        if name == b"dltensor":
            offset = 0  # DLManagedTensor starts with its DLTensor
        elif name == b"dltensor_versioned":
            offset = 8 + 8 + 8 + 8  # version (2 x uint32), manager_ctx, deleter, flags
        else:
            used = name is not None and name.startswith(b"used_")
            raise TypeError("this DLPack capsule was already consumed (a capsule can be imported once)" if used
                            else f"not a DLPack capsule (name {name!r})")
        get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
        get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        head = _DLTensorHead.from_address(get_ptr(capsule, name) + offset)
        self._device = (head.device.device_type, head.device.device_id)
        self._capsule = capsule

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def from_dlpack(obj, dtype=None):
    """A kc array sharing the memory of a DLPack producer (or capsule), on its CPU or CUDA device.

    ``dtype`` may be a vector/matrix type whose components are the trailing dimensions.
    """
    from ..array import array
    from ..device import get_device
    from .external import is_torch_tensor, wrap_buffer

    if isinstance(obj, array):
        return obj if dtype is None else wrap_buffer(obj._buf, dtype, obj.device, owner=obj)
    if is_torch_tensor(obj):
        obj = obj.detach()  # torch refuses to export tensors that require grad
    if _is_capsule(obj):
        obj = _Capsule(obj)
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ (or a DLPack capsule), got {type(obj).__name__}")
    dev_type, dev_id = obj.__dlpack_device__()
    if dev_type in CPU_DEVICE_TYPES:
        buf = np.from_dlpack(obj)
        return wrap_buffer(buf, dtype, get_device("cpu"), owner=obj, what=f"DLPack {type(obj).__name__}")
    if dev_type in CUDA_DEVICE_TYPES:
        from . import cuda_mem

        device = get_device(f"cuda:{dev_id}")
        with cuda_mem.device_context(device):
            buf = cuda_mem.cupy().from_dlpack(obj)
        return wrap_buffer(buf, dtype, device, owner=obj, what=f"DLPack {type(obj).__name__}")
    raise ValueError(f"DLPack device type {int(dev_type)} is not supported (kernelcore runs on CPU and CUDA devices)")
