"""CUDA runtime path: NVRTC -> PTX -> a module in each device's context, launches, streams.

Needs a GPU and CuPy (the ``cuda`` extra); CuPy is reached only through
``interop.cuda_mem``.  A chunk's CUDA translation unit is compiled to PTX once (cached on
disk like the CPU ``.so``) for the newest architecture the device runs; each device loads
the PTX into its own context on first use.  If the driver is older than the NVRTC that
wrote the PTX (or cuda-bindings is missing), the source is compiled again with CuPy's own
NVRTC, which matches the CUDA runtime CuPy was built for.

Launches pass the launch bounds and the packed argument struct by value, exactly the
bytes the CPU entry points receive by pointer (see launch.py and emit_cuda.py).
"""
from __future__ import annotations

import ctypes

from . import config, hooks, nvrtc, toolchain
from .builtins.registry import registry
from .device import get_device
from .emit_cuda import ERROR_STATE_KERNEL, entry_name
from .errors import NativeBuildError
from .interop import cuda_mem


class CudaChunk:
    """One compiled CUDA translation unit, loaded lazily into each device that uses it."""

    def __init__(self, module_name, key, source, options=()):
        self.module_name, self.key, self.source = module_name, key, source
        self.options = tuple(options)  # extra NVRTC options (fast math)
        self._modules = {}     # device ordinal -> function lookup (keeps the loaded module alive)
        self._functions = {}   # (ordinal, symbol) -> CUfunction handle
        self.error_state = None

    def function(self, device, symbol: str) -> int:
        k = (device.ordinal, symbol)
        f = self._functions.get(k)
        if f is None:
            lookup = self._modules.get(device.ordinal)
            if lookup is None:
                lookup = self._modules[device.ordinal] = self._load(device)
            f = self._functions[k] = lookup(symbol)
        return f

    def _load(self, device):
        cp = cuda_mem.cupy()
        include_dirs = sorted({_dirname(h) for h in registry.headers})
        with cuda_mem.device_context(device):
            cp.cuda.runtime.free(0)  # creates the device's primary context if nothing else has yet
            try:
                arch = nvrtc.arch_for(cuda_mem.compute_capability(device))
                ptx = nvrtc.cached_ptx(self.key, self.source, f"{self.module_name}.cu", arch, include_dirs,
                                        options=self.options)
                handle = cp.cuda.driver.moduleLoadData(ptx.encode())
                return lambda symbol: cp.cuda.driver.moduleGetFunction(handle, symbol)
            except NativeBuildError:
                raise
            except Exception as e:  # old driver for this PTX, or no cuda-bindings: let CuPy compile
                if config.verbose:
                    print(f"kernelcore: loading PTX of '{self.module_name}' failed ({e}); compiling with CuPy's NVRTC")
                opts = (f"-I{toolchain.NATIVE_DIR}", *(f"-I{d}" for d in include_dirs),  # NVRTC defaults to C++17
                        *self.options)
                raw = cp.RawModule(code=self.source, options=opts)
                return lambda symbol: raw.get_function(symbol).ptr

    def read_error_state(self, device, stream: int):
        """Copy (and clear) the debug-mode bounds-check record of this module on ``device``."""
        from .launch import error_state_ctypes

        cp = cuda_mem.cupy()
        out = cp.zeros(ctypes.sizeof(error_state_ctypes), cp.uint8)
        ptr = ctypes.c_void_p(out.data.ptr)
        params = (ctypes.c_void_p * 1)(ctypes.addressof(ptr))
        cp.cuda.driver.launchKernel(self.function(device, ERROR_STATE_KERNEL), 1, 1, 1, 1, 1, 1, 0, stream,
                                    ctypes.addressof(params), 0)
        cp.cuda.runtime.streamSynchronize(stream)
        return error_state_ctypes.from_buffer_copy(out.get().tobytes())


class CudaEntry:
    """A kernel entry point (forward or adjoint) of a chunk; resolved per device."""

    def __init__(self, chunk: CudaChunk, symbol: str):
        self.chunk, self.symbol = chunk, symbol

    def handle(self, device) -> int:
        return self.chunk.function(device, self.symbol)


def _dirname(path):
    import os

    return os.path.dirname(os.path.abspath(path))


def build_cuda_chunk(module, kernels, device):
    """Compile ``kernels`` of ``module`` for CUDA and load them on ``device``: {kernel: LoadedKernel}."""
    from .module import LoadedKernel, _fast_math_option

    source = module.generate(kernels, "cuda")
    options = nvrtc.FAST_MATH_FLAGS if _fast_math_option(kernels[0]) else []  # (one setting per chunk)
    key = "cuda_" + module._cache_key(source, "cuda", nvrtc.NVRTC_FLAGS + options)
    chunk = CudaChunk(module.name, key, source, options)
    out = {}
    for k in kernels:
        fwd = CudaEntry(chunk, entry_name(k.cname, "fwd"))
        bwd = CudaEntry(chunk, entry_name(k.cname, "bwd")) if k.enable_backward else None
        out[k] = LoadedKernel(k, chunk, fwd, bwd)
    for k in kernels:  # load now, so that build errors surface here and not at a later launch
        out[k].fwd.handle(device)
    return out


hooks.fill("build_cuda_chunk", build_cuda_chunk)  # module.py (a lower layer) builds CUDA chunks through it


def launch_cuda(kernel, device, bounds, packed_values, adjoint, stream=None, block_dim=256, max_blocks=0):
    """Run a kernel (or its adjoint) on a CUDA device: a 1-d grid with a grid-stride loop.

    ``max_blocks`` > 0 caps the grid (the grid-stride loop covers the rest). Returns the stream
    the launch ran on, so that a Tape can run the adjoint there too.
    """
    from .launch import _args_struct, _check_error_state

    lk = kernel.module.ensure_built(kernel, device)
    entry = lk.bwd if adjoint else lk.fwd
    if entry is None:
        raise RuntimeError(f"kernel '{kernel.key}' was built with enable_backward=False")
    args = _args_struct(kernel, lk)(*packed_values)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(bounds), ctypes.addressof(args))
    block = max(1, min(int(block_dim), 1024))
    grid = max(1, min((int(bounds.size) + block - 1) // block, 2**31 - 1))
    if max_blocks and int(max_blocks) > 0:
        grid = min(grid, int(max_blocks))
    check_stream_device(stream, device)
    cp = cuda_mem.cupy()
    with cuda_mem.device_context(device):
        if stream is None:  # the current CuPy stream, as an object the tape can replay the adjoint on
            stream = cp.cuda.get_current_stream()
        h = cuda_mem.stream_handle(stream, device)
        # cuLaunchKernel copies the parameter bytes before returning, so the ctypes
        # objects may go out of scope afterwards.
        cp.cuda.driver.launchKernel(entry.handle(device), grid, 1, 1, block, 1, 1, 0, h, ctypes.addressof(params), 0)
        if config.mode == "debug":
            _check_error_state(kernel, lk.chunk.read_error_state(device, h))
    return stream


def check_stream_device(stream, device):
    """ValueError when ``stream`` is known to belong to a device other than the launch device."""
    if stream is None:
        return
    ordinal = cuda_mem.stream_device_ordinal(stream)
    if ordinal is not None and ordinal != device.ordinal:
        raise ValueError(f"the stream passed to kc.launch is on device 'cuda:{ordinal}' but the launch runs on "
                         f"'{device}': create the stream on the launch device (kc.Stream('{device}'))")


class Stream:
    """A CUDA stream on a device; pass it to ``kc.launch(..., stream=s)``.

    ``device`` defaults to the current device (``kc.set_device`` / ``kc.ScopedDevice``) when
    that is a CUDA device, else ``cuda:0``.  The stream is blocking: work on it starts after
    what was queued before on the legacy default stream, where kernelcore allocates, fills
    and copies arrays (see interop.cuda_mem.new_stream).
    """

    def __init__(self, device=None):
        if device is None:
            current = get_device(None)
            device = current if current.is_cuda else "cuda"
        self.device = get_device(device)
        if not self.device.is_cuda:
            raise ValueError(f"streams exist on CUDA devices only, got '{self.device}'")
        self._stream = cuda_mem.new_stream(self.device)

    @property
    def cuda_stream(self) -> int:
        """The raw cudaStream_t handle (as torch.cuda.Stream names it)."""
        return int(self._stream.ptr)

    ptr = cuda_stream

    def synchronize(self):
        """Wait until everything queued on this stream has run."""
        self._stream.synchronize()

    def __repr__(self):
        return f"Stream(device={self.device}, handle={self.cuda_stream:#x})"
