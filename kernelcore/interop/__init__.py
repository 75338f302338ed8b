"""Interoperability with numpy, DLPack, PyTorch, JAX and CuPy.

Every framework is imported lazily, in exactly one file: torch in ``torch_interop.py``,
jax in ``jax_interop.py``, cupy in ``cuda_mem.py``.  Importing this package imports none
of them.  Conversions share memory (zero-copy) wherever the frameworks allow it.
"""
from .numpy_interop import dtype_from_numpy, dtype_to_numpy  # noqa: F401
from .dlpack import from_dlpack, to_dlpack  # noqa: F401
from .external import from_cuda_array_interface, from_cupy, to_cupy  # noqa: F401
from .torch_interop import (  # noqa: F401
    from_torch, to_torch, device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch,
)
from .jax_interop import from_jax, to_jax, device_from_jax, device_to_jax, dtype_from_jax, dtype_to_jax  # noqa: F401
