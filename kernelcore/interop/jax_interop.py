"""JAX interop through DLPack: the only file that imports jax (lazily).

JAX arrays are immutable; a kc array made from one shares its memory, so kernels must
only read it (write into kc arrays and convert those with ``to_jax``).
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..device import get_device
from .numpy_interop import dtype_from_numpy, dtype_to_numpy


def _jax():
    try:
        import jax
        import jax.numpy  # noqa: F401
    except ImportError as e:
        raise RuntimeError("JAX interop needs jax: pip install 'kernelcore[jax]'") from e
    return jax


def dtype_from_jax(jax_dtype):
    """kernelcore scalar type of a JAX dtype (jnp.float32 -> kc.float32)."""
    try:
        dt = np.dtype(jax_dtype)
    except TypeError:
        raise TypeError(f"JAX dtype {jax_dtype} has no kernelcore equivalent") from None
    return dtype_from_numpy(dt)


def dtype_to_jax(dtype):
    """JAX dtype of a kernelcore type's scalar components."""
    jnp = _jax().numpy
    return jnp.dtype(dtype_to_numpy(dtype))


def device_from_jax(jax_device):
    """kernelcore Device of a JAX device."""
    platform = jax_device.platform
    if platform == "cpu":
        return get_device("cpu")
    if platform in ("gpu", "cuda"):
        return get_device(f"cuda:{getattr(jax_device, 'local_hardware_id', jax_device.id)}")
    raise RuntimeError(f"JAX device {jax_device} (platform '{platform}') has no kernelcore counterpart")


def device_to_jax(device=None):
    """JAX device of a kernelcore device."""
    jax = _jax()
    d = get_device(device)
    if d.is_cpu:
        return jax.devices("cpu")[0]
    for jd in jax.devices("gpu"):
        if getattr(jd, "local_hardware_id", jd.id) == d.ordinal:
            return jd
    raise RuntimeError(f"JAX sees no GPU for kernelcore device '{d}'")


def from_jax(jax_array, dtype=None):
    """A kc array sharing the memory of a JAX array (zero-copy through DLPack)."""
    from .dlpack import from_dlpack

    return from_dlpack(jax_array, dtype)


def to_jax(a):
    """A JAX array sharing the memory of kc array ``a`` (through DLPack; JAX may copy to realign)."""
    jax = _jax()
    if T.is_struct(a.dtype):
        raise TypeError(f"arrays of struct {T.type_repr(a.dtype)} have no JAX equivalent")
    return jax.numpy.from_dlpack(a)
