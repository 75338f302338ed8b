"""PyTorch interop: the only file that imports torch (lazily).

``from_torch``/``to_torch`` share memory.  With ``requires_grad`` the gradient buffers are
shared too: a kc array made from a tensor accumulates its adjoints straight into
``tensor.grad`` (allocated if missing), and a tensor made from a kc array gets the
array's ``.grad`` as its ``.grad``, so torch optimisers step on gradients computed by
kernelcore and kernelcore sees the parameters torch updates in place.

Note: ``optimizer.zero_grad()`` sets ``.grad`` to None by default, which unlinks a shared
gradient; use ``kc.Tape.zero()`` or ``zero_grad(set_to_none=False)`` with shared grads.
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..device import get_device

_SIGNED_OF = {np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32, np.dtype(np.uint64): np.int64}
_UNSIGNED_AS_SIGNED = {T.uint16: T.int16, T.uint32: T.int32, T.uint64: T.int64}


def _torch():
    try:
        import torch
    except ImportError as e:
        raise RuntimeError("PyTorch interop needs torch: pip install 'kernelcore[torch]'") from e
    return torch


def _table(torch):
    pairs = [(torch.bool, T.bool_), (torch.int8, T.int8), (torch.int16, T.int16), (torch.int32, T.int32),
             (torch.int64, T.int64), (torch.uint8, T.uint8), (torch.float16, T.float16), (torch.float32, T.float32),
             (torch.float64, T.float64)]
    for name, t in (("uint16", T.uint16), ("uint32", T.uint32), ("uint64", T.uint64)):
        if hasattr(torch, name):  # torch >= 2.3 has (limited) unsigned types
            pairs.append((getattr(torch, name), t))
    return pairs


def dtype_from_torch(torch_dtype):
    """kernelcore scalar type of a torch dtype (TypeError for bfloat16, complex, ...)."""
    torch = _torch()
    for td, kt in _table(torch):
        if td == torch_dtype:
            return kt
    raise TypeError(f"torch dtype {torch_dtype} has no kernelcore equivalent")


def dtype_to_torch(dtype):
    """torch dtype of a kernelcore type's scalar components; uint16/32/64 map to the signed type of the same width."""
    torch = _torch()
    dtype = T.type_from_annotation(dtype)
    if T.is_struct(dtype):
        raise TypeError(f"struct type {T.type_repr(dtype)} has no torch dtype")
    scalar = _scalar_of(dtype)
    scalar = _UNSIGNED_AS_SIGNED.get(scalar, scalar)
    for td, kt in _table(torch):
        if kt is scalar:
            return td
    raise TypeError(f"kernelcore type {T.type_repr(dtype)} has no torch dtype")


def device_from_torch(torch_device):
    """kernelcore Device of a torch device ("cpu", "cuda", "cuda:1", torch.device)."""
    torch = _torch()
    d = torch.device(torch_device)
    if d.type == "cpu":
        return get_device("cpu")
    if d.type == "cuda":
        return get_device(f"cuda:{d.index if d.index is not None else torch.cuda.current_device()}")
    raise RuntimeError(f"torch device '{d}' has no kernelcore counterpart (kernelcore runs on 'cpu' and 'cuda:N')")


def device_to_torch(device=None) -> str:
    """torch device string of a kernelcore device ('cpu' or 'cuda:N')."""
    d = get_device(device)
    if d.is_cpu:
        return "cpu"
    if d.is_cuda:
        return f"cuda:{d.ordinal}"
    raise RuntimeError(f"device '{d}' has no torch counterpart")


def _wrap(t, dtype, device, owner):
    """kc array viewing the memory of tensor t (no grad)."""
    from .cuda_mem import wrap_cuda_array_interface
    from .external import wrap_buffer

    t = t.detach()
    if t.device.type == "cpu":
        buf = t.numpy()
    else:
        buf = wrap_cuda_array_interface(t)
    return wrap_buffer(buf, dtype, device, owner=owner, what="torch tensor")


def from_torch(t, dtype=None, requires_grad=None, grad=None):
    """A kc array sharing the memory of torch tensor ``t``.

    ``dtype`` may be a vector/matrix type whose components are the tensor's trailing
    dimensions (a (n, 2) float32 tensor as an n-array of vec2).  ``requires_grad``
    (default ``t.requires_grad``) makes the array's ``.grad`` share ``t.grad``, allocating
    ``t.grad`` as zeros if it is missing; ``grad`` (a tensor or kc array) sets it explicitly.
    """
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch needs a torch.Tensor, got {type(t).__name__}")
    device = device_from_torch(t.device)
    scalar = dtype_from_torch(t.dtype)
    if dtype is None:
        a = _wrap(t, None, device, owner=t)
    else:
        dtype = T.type_from_annotation(dtype)
        want = _scalar_of(dtype)
        if want is scalar:
            a = _wrap(t, dtype, device, owner=t)
        elif _UNSIGNED_AS_SIGNED.get(want) is scalar:
            a = _wrap_unsigned(t, dtype, device)
        else:
            raise TypeError(f"torch tensor of dtype {t.dtype} cannot be viewed as an array of {T.type_repr(dtype)}")
    rg = t.requires_grad if requires_grad is None else bool(requires_grad)
    if grad is not None:
        from ..array import array

        a.grad = grad if isinstance(grad, array) else _wrap(grad, a.dtype, device, owner=grad)
        a._requires_grad = True
    elif rg:
        if t.grad is None:
            t.grad = torch.zeros_like(t)
        a.grad = _wrap(t.grad, a.dtype, device, owner=t.grad)
        a._requires_grad = True
    return a


def _scalar_of(dtype):
    return dtype._dtype if T.is_composite(dtype) else dtype


def _wrap_unsigned(t, dtype, device):
    """uint16/32/64 arrays viewing a signed int tensor of the same width (torch's stand-in for them)."""
    from .external import wrap_buffer

    base = _wrap(t, None, device, owner=t)
    buf = base._buf.view(np.dtype(_scalar_of(dtype)._np))
    return wrap_buffer(buf, dtype, device, owner=t, what="torch tensor")


def to_torch(a, requires_grad=None):
    """A torch tensor sharing the memory of kc array ``a`` (vector components as trailing dims).

    ``requires_grad`` (default ``a.requires_grad``, float arrays only) gives the tensor
    ``a.grad`` as its ``.grad`` (allocated if ``a`` has none), shared, not copied.
    """
    torch = _torch()
    if T.is_struct(a.dtype):
        raise TypeError(f"arrays of struct {T.type_repr(a.dtype)} have no torch equivalent")
    buf = a._buf
    signed = _SIGNED_OF.get(np.dtype(buf.dtype))
    if signed is not None:
        buf = buf.view(signed)
    if a.device.is_cpu:
        t = torch.from_numpy(buf)
    else:
        t = torch.as_tensor(buf, device=device_to_torch(a.device))
    rg = a.requires_grad if requires_grad is None else bool(requires_grad)
    if rg:
        if not T.is_float(_scalar_of(a.dtype)):
            raise TypeError(f"only float arrays can require grad in torch, got {T.type_repr(a.dtype)}")
        if a.grad is None:
            a.requires_grad = True
        t.requires_grad_(True)
        t.grad = to_torch(a.grad, requires_grad=False)
    return t
