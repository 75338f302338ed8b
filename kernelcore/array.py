"""Typed n-dimensional arrays (1–4 dims) living on a device.

On the CPU an array is backed by a numpy buffer, so ``.numpy()`` is zero-copy and a
vec3 array maps to a numpy (n, 3) array.  Calling ``kc.array(dtype=..., ndim=...)``
without data gives the type annotation used in kernel signatures.
"""
from __future__ import annotations

import math

import numpy as np

from . import hooks
from . import types as T
from .device import Device, get_device, get_runtime
from .types import MAX_DIMS, ArrayType, array_ctypes  # noqa: F401  (the array type and its C layout are types)


def _normalize_shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        dims = tuple(shape)
        ok = all(isinstance(s, (int, float, np.integer, np.floating)) and not isinstance(s, bool) and s == int(s)
                 for s in dims)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or isinstance(shape, (str, bytes)):
        raise TypeError(f"array shape must be an int or a tuple of ints, got {shape!r}")
    shape = tuple(int(s) for s in dims)
    if not 1 <= len(shape) <= MAX_DIMS:
        raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, got shape {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape


def _allocation_error(shape, dtype):
    """One-line MemoryError naming what a failed allocation asked for."""
    nbytes = math.prod(shape) * T.size_of(dtype)
    return MemoryError(f"cannot allocate a kernelcore array of shape {tuple(shape)} and dtype {T.type_repr(dtype)}: "
                       f"{nbytes} bytes ({nbytes / 2**30:.4g} GiB)")


def _infer_dtype(data):
    if isinstance(data, np.ndarray):
        return T.type_from_annotation(data.dtype.type) if data.dtype != np.float64 else T.float64
    return T.float32


class array:
    """A typed array on a device. ``array(dtype=..., ndim=...)`` alone is an annotation."""

    def __new__(cls, data=None, dtype=None, shape=None, device=None, requires_grad=False, ndim=None, copy=True, **kw):
        if data is None and shape is None and "ptr" not in kw:
            return ArrayType(dtype if dtype is not None else T.float32, ndim or 1)
        return super().__new__(cls)

    def __init__(self, data=None, dtype=None, shape=None, device=None, requires_grad=False, ndim=None, copy=True, **kw):
        self.device = get_device(device)
        self._requires_grad = False
        self.grad = None
        self._tape_reads = False  # for verify_autograd_array_access
        if data is not None:
            dtype = T.type_from_annotation(dtype) if dtype is not None else _infer_dtype(data)
            host = _to_host_storage(data, dtype)
            self._init_storage(dtype, host.shape[: host.ndim - len(T.np_dtype_of(dtype)[1])], host, copy=copy)
        else:
            dtype = T.type_from_annotation(dtype if dtype is not None else T.float32)
            shape = _normalize_shape(shape)
            self._init_storage(dtype, shape, None)
        if requires_grad:
            self.requires_grad = True

    # -- storage ------------------------------------------------------------------------
    def _init_storage(self, dtype, shape, host, copy=True, zero=True):
        self.dtype = dtype
        np_dt, inner = T.np_dtype_of(dtype)
        full_shape = tuple(shape) + inner
        if self.device.is_cpu:
            if host is None:
                try:
                    buf = np.zeros(full_shape, dtype=np_dt) if zero else np.empty(full_shape, dtype=np_dt)
                except (MemoryError, ValueError):  # ValueError: more bytes than an address can count
                    raise _allocation_error(shape, dtype) from None
            else:
                buf = np.array(host, dtype=np_dt, copy=True) if copy else np.ascontiguousarray(host, dtype=np_dt)
                buf = buf.reshape(full_shape)
        else:
            from .interop.cuda_mem import device_buffer

            buf = device_buffer(full_shape, np_dt, self.device, host, zero)
        self._set_buffer(buf, len(shape))

    def _set_buffer(self, buf, ndim):
        self._buf = buf
        self.shape = tuple(int(s) for s in buf.shape[:ndim])
        self.strides = tuple(int(s) for s in buf.strides[:ndim])
        self.ndim = ndim
        self.size = math.prod(self.shape) if self.shape else 0  # np.prod costs ~2 us per array
        self.ptr = _buffer_ptr(buf)

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value and self.grad is None:
            self.grad = _alloc_like(self, zero=True)
        elif not value:
            self.grad = None
        self._requires_grad = bool(value)

    @property
    def is_contiguous(self):
        np_dt, inner = T.np_dtype_of(self.dtype)
        expected, s = [], T.size_of(self.dtype)
        for d in reversed(self.shape):
            expected.insert(0, s)
            s *= d
        return tuple(expected) == self.strides or self.size <= 1

    @property
    def vars(self):
        return {}

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"array({self.numpy()!r}, dtype={T.type_repr(self.dtype)}, device={self.device})"

    def __str__(self):
        return str(self.numpy())

    # -- conversion ---------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """Host numpy view (zero-copy on the CPU; a copy from a GPU)."""
        if self.device.is_cpu:
            return self._buf
        from .interop.cuda_mem import to_host

        return to_host(self._buf, T.np_dtype_of(self.dtype)[0])

    def list(self):
        """Python list of elements (vectors become kc vector values)."""
        a = self.numpy()
        if T.is_composite(self.dtype):
            flat = a.reshape((-1,) + self.dtype._shape)
            return [self.dtype(x) for x in flat]
        return a.ravel().tolist()

    @property
    def __array_interface__(self):
        if not self.device.is_cpu:
            raise TypeError("a CUDA array has no __array_interface__; use .numpy() to copy it to the host")
        return self._buf.__array_interface__

    @property
    def __cuda_array_interface__(self):
        if not self.device.is_cuda:
            raise AttributeError("__cuda_array_interface__ is only available on CUDA arrays")
        return self._buf.__cuda_array_interface__

    def __dlpack__(self, stream=None, **kwargs):
        """DLPack export (numpy, torch, JAX, CuPy consumers share the memory)."""
        from .interop.dlpack import array_dlpack

        return array_dlpack(self, stream, **kwargs)

    def __dlpack_device__(self):
        from .interop.dlpack import array_dlpack_device

        return array_dlpack_device(self)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    # -- views ----------------------------------------------------------------------------
    def __getitem__(self, key):
        """Slicing in Python scope gives a view sharing memory (and its gradient)."""
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > self.ndim:
            raise IndexError(f"too many indices for a {self.ndim}-d array")
        if any(isinstance(k, array) for k in key):
            return self._indexed_view(key)
        view_buf = self._buf[key]
        ndim = view_buf.ndim - len(T.np_dtype_of(self.dtype)[1])
        if ndim == 0:
            v = self.numpy()[key]
            return self.dtype(v) if T.is_composite(self.dtype) else v.item() if np.ndim(v) == 0 else v
        out = array.__new__(array, shape=1)
        out.device = self.device
        out.dtype = self.dtype
        out._set_buffer(view_buf, ndim)
        out._base = self
        out._requires_grad = self._requires_grad
        out.grad = self.grad[key] if self.grad is not None else None
        out._tape_reads = False
        return out

    def _indexed_view(self, key):
        """``a[idx]``, ``a[:, idx]``: index arrays (int32 kc arrays) give a kc.indexedarray (as in
        Warp), a view that shares memory; each other dimension must be taken whole (':')."""
        from .indexedarray import indexedarray

        for k in key:
            if not isinstance(k, array) and not (isinstance(k, slice) and k == slice(None)):
                raise IndexError(f"an index array can be combined only with ':' (whole dimensions), got {k!r}")
        return indexedarray(self, [k if isinstance(k, array) else None for k in key])

    def __setitem__(self, key, value):
        if not self.device.is_cpu:
            from .interop.cuda_mem import assign

            return assign(self._buf, key, value, T.np_dtype_of(self.dtype)[0])
        self.numpy()[key] = np.asarray(value)

    def reshape(self, shape):
        shape = _normalize_shape(shape)
        if not self.is_contiguous:
            raise ValueError("reshape needs a contiguous array")
        inner = T.np_dtype_of(self.dtype)[1]
        out = array.__new__(array, shape=1)
        out.device, out.dtype = self.device, self.dtype
        out._set_buffer(self._buf.reshape(shape + inner), len(shape))
        out._base = self
        out._requires_grad = self._requires_grad
        out.grad = self.grad.reshape(shape) if self.grad is not None else None
        out._tape_reads = False
        return out

    def flatten(self):
        return self.reshape((self.size,))

    # -- in-place ---------------------------------------------------------------------------
    def fill_(self, value):
        """Set every element to value (scalar, vector or struct value)."""
        if T.is_struct(self.dtype):
            raw = bytes(_struct_ctypes_value(self.dtype, value))
            v = np.frombuffer(raw, dtype=T.np_dtype_of(self.dtype)[0])[0]
        else:
            v = np.asarray(value._v if isinstance(value, T._CompositeValue) else T._scalar_value(value))
            if self._buf.dtype.kind in "iu" and (v.dtype.kind == "f" or type(value) is int and not -2**31 <= value < 2**32):
                _check_integer_range(v, self._buf.dtype, self.dtype)  # kc.full(n, nan, dtype=int) filled -2**31
        if not self.device.is_cpu:
            from .interop.cuda_mem import assign

            assign(self._buf, Ellipsis, v, T.np_dtype_of(self.dtype)[0])
            return self
        self._buf[...] = v
        return self

    def zero_(self):
        self._buf[...] = 0
        return self

    def assign(self, src):
        """Copy src into this array (differentiable on the tape, like kc.copy)."""
        if not isinstance(src, array):
            src = array(np.asarray(src), dtype=self.dtype, device=self.device)
        copy(self, src)
        return self

    def mark_read(self):
        self._tape_reads = True

    def mark_write(self):
        hooks.check_write_after_read(self, "a Python-side write")

    def to(self, device):
        """A copy of this array on another device."""
        out = empty(self.shape, self.dtype, device=device, requires_grad=self.requires_grad)
        copy(out, self)
        return out


hooks.fill("is_array", lambda value: isinstance(value, array))  # types.py (a lower layer) asks through it


def _buffer_ptr(buf):
    if isinstance(buf, np.ndarray):
        return buf.__array_interface__["data"][0] if buf.size else 0
    return buf.data.ptr if buf.size else 0


def _to_host_storage(data, dtype):
    if isinstance(data, array):
        return data.numpy()
    np_dt, inner = T.np_dtype_of(dtype)
    if T.is_struct(dtype):
        if isinstance(data, np.ndarray) and data.dtype.names is not None:
            return _struct_records(data, dtype, np_dt)
        raw = b"".join(bytes(_struct_ctypes_value(dtype, v)) for v in data)
        return np.frombuffer(raw, dtype=np_dt).copy()
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], T._CompositeValue):
        data = [d._v for d in data]
    a = np.asarray(data)
    if inner and a.shape[-len(inner):] != inner:
        if a.ndim >= 1 and a.shape[-1] == int(np.prod(inner)):
            a = a.reshape(a.shape[:-1] + inner)
        else:
            raise ValueError(f"data of shape {a.shape} cannot hold elements of {T.type_repr(dtype)} (need trailing {inner})")
    if a.ndim == len(inner):
        a = a.reshape((1,) + a.shape) if a.ndim else a.reshape(1)
    if a.ndim - len(inner) > MAX_DIMS:  # a descriptor holds MAX_DIMS extents: packing it would fail later
        raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, got data of shape {a.shape} for "
                         f"{T.type_repr(dtype)} elements")
    if np_dt.kind in "iu" and a.size and a.dtype.kind in "iuf":
        _check_integer_range(a, np_dt, dtype)
    return a


def _check_integer_range(a, np_dt, dtype):
    """Integer data that the element type cannot hold (2**40 for int32 became 0, NaN became
    INT_MIN) is an error. Either signedness of the width is accepted: -1 for a uint32 and
    0xFFFFFFFF for an int32 are bit patterns."""
    lo, hi = float(a.min()), float(a.max())
    bits = 8 * np_dt.itemsize
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo < -2.0 ** (bits - 1) or hi > 2.0 ** bits - 1:
        raise ValueError(f"data with values in [{a.min().item()!r}, {a.max().item()!r}] cannot be stored as {T.type_repr(dtype)} "
                         f"({bits}-bit integers)")


def _struct_records(data, stype, np_dt):
    """A numpy structured array with the fields of ``stype`` (any layout) in kernel layout."""
    if data.dtype == np_dt:
        return np.array(data, copy=True)
    missing = [n for n in np_dt.names if n not in data.dtype.names]
    extra = [n for n in data.dtype.names if n not in np_dt.names]
    if missing or extra:
        raise ValueError(f"structured array with fields {list(data.dtype.names)} cannot hold {stype._name} values "
                         f"(fields {list(np_dt.names)}): " + ("missing " + ", ".join(missing) if missing else "")
                         + ("; " if missing and extra else "") + ("unknown " + ", ".join(extra) if extra else ""))
    out = np.zeros(data.shape, dtype=np_dt)
    _copy_fields(out, data)
    return out


def _copy_fields(dst, src):
    """dst[name] = src[name] for every field, by name at every nesting level (numpy assigns
    structured values by position)."""
    for n in dst.dtype.names:
        if dst.dtype.fields[n][0].names is not None and src.dtype.fields[n][0].names is not None:
            _copy_fields(dst[n], src[n])
        else:
            dst[n] = src[n]


def _struct_ctypes_value(stype, value):
    return hooks.pack_struct(stype, value)


def _alloc_like(a, zero=True):
    g = array.__new__(array, shape=1)
    g.device = a.device
    g._requires_grad = False
    g.grad = None
    g._tape_reads = False
    g._init_storage(a.dtype, a.shape, None, zero=zero)
    return g


# -- constructors ------------------------------------------------------------------------------
def zeros(shape, dtype=float, device=None, requires_grad=False) -> array:
    return array(shape=shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty(shape, dtype=float, device=None, requires_grad=False) -> array:
    return zeros(shape, dtype, device, requires_grad)


def full(shape, value, dtype=None, device=None, requires_grad=False) -> array:
    if dtype is None:
        dtype = type(value) if isinstance(value, (T._CompositeValue, T.StructInstance)) else (T.int32 if isinstance(value, int) else T.float32)
    a = zeros(shape, dtype, device, requires_grad)
    a.fill_(value)
    return a


def ones(shape, dtype=float, device=None, requires_grad=False) -> array:
    return full(shape, 1, dtype, device, requires_grad)


def zeros_like(a, device=None, requires_grad=None) -> array:
    rg = a.requires_grad if requires_grad is None else requires_grad
    return zeros(a.shape, a.dtype, device or a.device, rg)


def empty_like(a, device=None, requires_grad=None) -> array:
    return zeros_like(a, device, requires_grad)


def ones_like(a, device=None, requires_grad=None) -> array:
    rg = a.requires_grad if requires_grad is None else requires_grad
    return ones(a.shape, a.dtype, device or a.device, rg)


def full_like(a, value, device=None, requires_grad=None) -> array:
    rg = a.requires_grad if requires_grad is None else requires_grad
    return full(a.shape, value, a.dtype, device or a.device, rg)


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    """Wrap numpy data as a kernel array (copied to the device)."""
    a = array(np.asarray(arr), dtype=dtype, device=device, requires_grad=requires_grad)
    if shape is not None:
        a = a.reshape(shape)
    return a


def array1d(dtype=float):
    return ArrayType(dtype, 1)


def array2d(dtype=float):
    return ArrayType(dtype, 2)


def array3d(dtype=float):
    return ArrayType(dtype, 3)


def array4d(dtype=float):
    return ArrayType(dtype, 4)


def _raw_copy(dest, src):
    if dest.shape != src.shape:
        raise ValueError(f"copy: shapes differ, destination {dest.shape} vs source {src.shape}")
    if dest.dtype is not src.dtype and T.size_of(dest.dtype) != T.size_of(src.dtype):
        raise TypeError(f"copy: dtypes differ, destination {T.type_repr(dest.dtype)} vs source {T.type_repr(src.dtype)}")
    if dest.device.is_cpu and src.device.is_cpu:
        dest._buf[...] = src._buf
    else:
        from .interop.cuda_mem import copy_between

        copy_between(dest, src)


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0):
    """Copy src into dest (also across devices); recorded on an active Tape so gradients flow."""
    if count or dest_offset or src_offset:
        n = count or (src.size - src_offset)
        d = dest.flatten()[dest_offset:dest_offset + n]
        s = src.flatten()[src_offset:src_offset + n]
        return copy(d, s)
    _raw_copy(dest, src)
    hooks.record_copy(dest, src)


def clone(src: array, device=None, requires_grad=None) -> array:
    """A new array with the contents of src (differentiable unless requires_grad=False)."""
    rg = src.requires_grad if requires_grad is None else requires_grad
    out = zeros(src.shape, src.dtype, device or src.device, rg)
    _raw_copy(out, src)
    if rg:
        hooks.record_copy(out, src)
    return out
