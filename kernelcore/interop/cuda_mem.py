"""Device memory through CuPy: the only file that imports CuPy.

A CUDA kc.array keeps a ``cupy.ndarray`` as its buffer, laid out exactly like the numpy
buffer of a CPU array (element components as trailing dimensions).  Struct elements are
stored as raw bytes (a trailing ``uint8`` dimension of the struct's size) because CuPy
has no structured dtypes; ``to_host`` gives them back their numpy void dtype.
"""
from __future__ import annotations

import numpy as np

_cupy = None


def cupy():
    """The cupy module, imported on first use, or a RuntimeError saying how to get it."""
    global _cupy
    if _cupy is None:
        try:
            import cupy as cp
        except ImportError as e:
            raise RuntimeError("CUDA support needs CuPy: pip install 'kernelcore[cuda]' (cupy-cuda12x or cupy-cuda13x)") from e
        _cupy = cp
    return _cupy


def device_count() -> int:
    """Number of usable CUDA devices (0 without CuPy, driver or GPU)."""
    try:
        return int(cupy().cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def device_context(device):
    """``with device_context(dev):`` makes ``dev`` CuPy's current device."""
    return cupy().cuda.Device(device.ordinal)


def compute_capability(device) -> tuple:
    cc = device_context(device).compute_capability  # e.g. "80"
    return int(cc[:-1]), int(cc[-1])


def synchronize_devices(ordinals):
    cp = cupy()
    for o in ordinals:
        with cp.cuda.Device(o):
            cp.cuda.runtime.deviceSynchronize()


def _raw_shape(shape, np_dtype):
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind == "V":
        return tuple(shape) + (np_dtype.itemsize,), np.dtype(np.uint8)
    return tuple(shape), np_dtype


def _host_raw(host, np_dtype):
    """A host array as CuPy can hold it (struct elements as bytes)."""
    np_dtype = np.dtype(np_dtype)
    a = np.ascontiguousarray(host, dtype=np_dtype)
    if np_dtype.kind == "V":
        a = a.view(np.uint8).reshape(a.shape + (np_dtype.itemsize,))
    return a


def device_buffer(shape, np_dtype, device, host=None, zero=True):
    """A CuPy array of ``shape`` on ``device``, filled from ``host`` (numpy) or zeros."""
    cp = cupy()
    raw_shape, raw_dtype = _raw_shape(shape, np_dtype)
    with cp.cuda.Device(device.ordinal):
        if host is not None:
            return cp.asarray(_host_raw(host, np_dtype)).reshape(raw_shape)
        return cp.zeros(raw_shape, raw_dtype) if zero else cp.empty(raw_shape, raw_dtype)


def to_host(buf, np_dtype) -> np.ndarray:
    """Copy a device buffer to a numpy array with the element dtype ``np_dtype``."""
    h = buf.get()
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind == "V":
        h = np.ascontiguousarray(h).view(np_dtype).reshape(h.shape[:-1])
    return h


def assign(buf, key, value, np_dtype):
    """``buf[key] = value`` for a device buffer, with ``value`` from the host or a device."""
    cp = cupy()
    np_dtype = np.dtype(np_dtype)
    if not isinstance(value, cp.ndarray):
        value = np.asarray(value)
        if np_dtype.kind == "V":
            value = np.frombuffer(np.ascontiguousarray(value, dtype=np_dtype).tobytes(), np.uint8).reshape(
                value.shape + (np_dtype.itemsize,))
        with buf.device:
            value = cp.asarray(value)
    buf[key] = value


def copy_between(dest, src):
    """Copy the elements of kc array ``src`` into kc array ``dest`` (host<->device, device<->device)."""
    cp = cupy()
    from .. import types as T

    np_dtype = T.np_dtype_of(dest.dtype)[0]
    if dest.device.is_cpu:  # device -> host
        dest._buf[...] = to_host(src._buf, np_dtype)
        return
    with cp.cuda.Device(dest.device.ordinal):
        if src.device.is_cpu:  # host -> device
            value = cp.asarray(_host_raw(src._buf, T.np_dtype_of(src.dtype)[0]))
        elif src.device.ordinal != dest.device.ordinal:  # across GPUs: peer copy into this device
            with src._buf.device:
                packed = cp.ascontiguousarray(src._buf)
            value = _peer_copy(cp, packed, dest.device.ordinal)
        else:
            value = src._buf
        dest._buf[...] = value.view(dest._buf.dtype) if value.dtype != dest._buf.dtype else value


def _peer_copy(cp, value, ordinal):
    out = cp.empty(value.shape, value.dtype)
    cp.cuda.runtime.memcpyPeer(out.data.ptr, ordinal, value.data.ptr, value.device.id, value.nbytes)
    return out


def wrap_cuda_array_interface(obj):
    """A zero-copy CuPy view of any object exposing ``__cuda_array_interface__``."""
    return cupy().asarray(obj)


def stream_handle(stream, device) -> int:
    """Raw CUDA stream handle from None (current stream), an int, or any object with .ptr/.cuda_stream."""
    if stream is None:
        with device_context(device):
            return int(cupy().cuda.get_current_stream().ptr)
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise TypeError(f"cannot use {type(stream).__name__} as a CUDA stream (expected kc.Stream, cupy/torch stream or int handle)")


def new_stream(device):
    """A new CUDA stream on ``device`` that is *blocking*: ordered after the legacy default stream.

    kernelcore allocates, fills, assigns and copies device arrays with CuPy on its current
    stream, which is the legacy default stream unless the caller chose another; a blocking
    stream waits for work queued there before, so a kernel on a kc.Stream sees its inputs
    fully written.  (A ``non_blocking=True`` stream would race them.)
    """
    with device_context(device):
        return cupy().cuda.Stream(non_blocking=False)


def stream_device_ordinal(stream):
    """The device ordinal a stream object belongs to, or None when it cannot be told (raw handles)."""
    dev = getattr(stream, "device", None)
    ordinal = getattr(dev, "ordinal", None)  # kc.Stream
    if isinstance(ordinal, int):
        return ordinal
    for attr in ("device_id", "device_index"):  # cupy.cuda.Stream, torch.cuda.Stream
        o = getattr(stream, attr, None)
        if isinstance(o, int):
            return o if o >= 0 else None  # CuPy's null stream says -1: whichever device is current
    return None
