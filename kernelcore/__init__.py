"""kernelcore: a differentiable kernel compiler for Python (CPU via C++/OpenMP, CUDA via NVRTC)."""
from .version import __version__  # noqa: F401

from . import config  # noqa: F401
from .types import (  # noqa: F401
    bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64,
    vector, matrix, quaternion, transformation, struct,
    vec2, vec3, vec4, vec2d, vec3d, vec4d, vec2h, vec3h, vec4h, vec2i, vec3i, vec4i,
    mat22, mat33, mat44, mat22d, mat33d, mat44d, quat, quatd, quath, transform, transformd,
    spatial_vector, spatial_vectord, spatial_matrix, spatial_matrixd,
)
from .types import float16 as half  # noqa: F401
from .array import (  # noqa: F401
    array, array1d, array2d, array3d, array4d, zeros, ones, full, empty, zeros_like, ones_like, full_like,
    empty_like, from_numpy, copy, clone,
)
from .indexedarray import indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d  # noqa: F401
from .device import (  # noqa: F401
    Device, init, get_device, set_device, ScopedDevice, synchronize, is_cuda_available, get_cuda_device_count,
)
from .kernel import kernel, Kernel  # noqa: F401
from .kernel_generic import overload  # noqa: F401
from .function import func, func_grad, func_replay, func_native  # noqa: F401
from .kernel_api import tid, printf, identity, constant, static  # noqa: F401
from .autodiff_api import adjoint  # noqa: F401
from .launch import launch  # noqa: F401
from .tape import Tape  # noqa: F401
from .checkpoint import checkpointed  # noqa: F401
from .cache import clear_kernel_cache  # noqa: F401
from . import autograd  # noqa: F401
from .errors import KernelCompileError, NativeBuildError, KernelRuntimeError  # noqa: F401
from . import builtins as _builtins  # noqa: F401  (fills the builtin table)
from .builtins.registry import export_all_stubs as _export_all_stubs

_export_all_stubs()
from .interop import (  # noqa: F401,E402  (interop with other frameworks; each imported lazily)
    dtype_from_numpy, dtype_to_numpy, from_dlpack, to_dlpack, from_cupy, to_cupy,
    from_torch, to_torch, device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch,
    from_jax, to_jax, device_from_jax, device_to_jax, dtype_from_jax, dtype_to_jax,
)
from .cuda_backend import Stream  # noqa: F401,E402
from . import host_call as _host_call  # noqa: F401,E402  (fills hooks.call_builtin: kc.<builtin> on host values)
