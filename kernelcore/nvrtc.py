"""NVRTC: CUDA C++ text -> PTX, with no GPU or driver needed.

Uses NVIDIA's ``cuda-bindings`` (``from cuda.bindings import nvrtc``) with the
``nvidia-cuda-nvrtc`` wheel.  PTX is cached in the kernel cache dir under a key made of
the source, the native headers, the architecture and the NVRTC version, like the CPU
cache (see module.Module._cache_key).
"""
from __future__ import annotations

import functools
import hashlib

from . import cache, config, toolchain
from .errors import NativeBuildError

#: options every kernelcore translation unit is compiled with
NVRTC_FLAGS = ["--std=c++17", "-w"]
#: added for @kc.kernel(fast_math=True) (approximate division, square root and transcendentals, FTZ)
FAST_MATH_FLAGS = ["--use_fast_math"]


def _bindings():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError("compiling CUDA needs NVRTC: pip install 'cuda-bindings>=12' nvidia-cuda-nvrtc "
                           "(the 'nvrtc' extra of kernelcore)") from e
    return nvrtc


def is_available() -> bool:
    """True when NVRTC can be loaded (no GPU needed)."""
    try:
        version()
        return True
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def version() -> tuple:
    nvrtc = _bindings()
    err, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, err, "nvrtcVersion")
    return (major, minor)


@functools.lru_cache(maxsize=None)
def supported_archs() -> tuple:
    """Compute capabilities NVRTC can target, e.g. (75, 80, 86, 89, 90, ...)."""
    nvrtc = _bindings()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    _check(nvrtc, err, "nvrtcGetSupportedArchs")
    return tuple(int(a) for a in archs)


def arch_for(capability: tuple) -> str:
    """Newest virtual architecture NVRTC supports that a device of ``capability`` (major, minor) runs."""
    cc = capability[0] * 10 + capability[1]
    usable = [a for a in supported_archs() if a <= cc]
    if not usable:
        raise RuntimeError(f"this NVRTC ({version()[0]}.{version()[1]}) cannot target compute capability "
                           f"{capability[0]}.{capability[1]}; oldest supported is {min(supported_archs())}")
    return f"compute_{max(usable)}"


def _check(nvrtc, err, what):
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise RuntimeError(f"NVRTC {what} failed: {msg.decode(errors='replace')}")


def normalize_arch(arch) -> str:
    """'compute_80', 'sm_80', 80 or (8, 0) -> 'compute_80' (PTX is always virtual-arch)."""
    if isinstance(arch, tuple):
        arch = arch[0] * 10 + arch[1]
    if isinstance(arch, int):
        return f"compute_{arch}"
    arch = str(arch)
    if arch.startswith("sm_"):
        return "compute_" + arch[3:]
    if not arch.startswith("compute_"):
        raise ValueError(f"unknown CUDA architecture {arch!r}: expected e.g. 'compute_80', 'sm_90' or 80")
    return arch


def normalize_sm_arch(arch) -> str:
    """'sm_80', 'compute_80', 80 or (8, 0) -> 'sm_80' (a real architecture: CUBIN)."""
    return "sm_" + normalize_arch(arch)[len("compute_"):]


def compile_ptx(source: str, name: str = "kernelcore.cu", arch="compute_80", include_dirs=(), options=(),
                source_path=None) -> str:
    """Compile one CUDA translation unit to PTX text.

    ``include_dirs`` are searched after kernelcore/native.  Raises NativeBuildError (with the
    NVRTC log in ``.log``) when the source does not compile; ``source_path`` is where the
    source was saved (it is saved to the cache dir when not given).
    """
    return _compile(source, name, normalize_arch(arch), include_dirs, options, source_path, cubin=False).decode()


def compile_cubin(source: str, name: str = "kernelcore.cu", arch="sm_80", include_dirs=(), options=(),
                  source_path=None) -> bytes:
    """Compile one CUDA translation unit to a CUBIN for a real architecture (no GPU needed).

    Unlike PTX, this runs the whole pipeline including ptxas, so a call to a ``__device__``
    function that is declared but defined nowhere fails here ("Unresolved extern function")
    instead of when a driver loads the module.  Errors as in :func:`compile_ptx`.
    """
    return _compile(source, name, normalize_sm_arch(arch), include_dirs, options, source_path, cubin=True)


def _compile(source, name, arch, include_dirs, options, source_path, cubin) -> bytes:
    nvrtc = _bindings()
    opts = [f"--gpu-architecture={arch}", *NVRTC_FLAGS, f"--include-path={toolchain.NATIVE_DIR}",
            *(f"--include-path={d}" for d in include_dirs), *options]
    if config.mode == "debug":
        opts.append("-lineinfo")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        raw = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(raw), raw)
        log = _log(nvrtc, prog)
        if config.verbose and log.strip():
            print(f"kernelcore: NVRTC log for {name}:\n{log}")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            if source_path is None:
                source_path = cache.write_source("cuda_failed_" + hashlib.sha256(source.encode()).hexdigest()[:16], source)
            raise NativeBuildError(name, log or f"NVRTC error {err}", source_path)
        if cubin:
            err, size = nvrtc.nvrtcGetCUBINSize(prog)
            _check(nvrtc, err, "nvrtcGetCUBINSize")
            buf = b" " * size
            (err,) = nvrtc.nvrtcGetCUBIN(prog, buf)
            _check(nvrtc, err, "nvrtcGetCUBIN")
            return buf
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, err, "nvrtcGetPTXSize")
        buf = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(nvrtc, err, "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0")


def _log(nvrtc, prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def entry_key(key, arch, options=()) -> str:
    """Kernel-cache entry name of an NVRTC output of ``key`` (the source) for ``arch`` (normalised)."""
    full_key = f"{key}_{arch}_nvrtc{version()[0]}{version()[1]}"
    if options:
        full_key += "_" + hashlib.sha256(" ".join(options).encode()).hexdigest()[:8]
    return full_key


def _cached(key, arch, options, ext, compile_fn, source):
    """Path of a cached NVRTC output (``<key>_<arch>_nvrtc<version>[_<options hash>]<ext>``),
    compiled with ``compile_fn(source_path)`` on a miss. ``key`` must already cover the source
    and headers."""
    full_key = entry_key(key, arch, options)
    path = cache.lookup(full_key, ext)
    if path is None:
        src_path = cache.write_source(full_key, source)

        def build(tmp):
            with open(tmp, "wb") as f:
                f.write(compile_fn(src_path))

        path = cache.store(full_key, ext, build)
    return path


def cached_ptx(key: str, source: str, name: str, arch="compute_80", include_dirs=(), options=()) -> str:
    """PTX of ``source`` from the kernel cache (``<key>.ptx``), compiling on a miss.

    ``key`` must already cover the source and headers; the architecture, the NVRTC version
    and any extra ``options`` are added here.
    """
    arch = normalize_arch(arch)
    path = _cached(key, arch, options, ".ptx", lambda src_path: compile_ptx(
        source, name, arch, include_dirs, options, source_path=src_path).encode(), source)
    with open(path) as f:
        return f.read()


def cached_cubin(key: str, source: str, name: str, arch="sm_80", include_dirs=(), options=()) -> bytes:
    """CUBIN of ``source`` from the kernel cache (``<key>.cubin``), compiling on a miss (see cached_ptx)."""
    arch = normalize_sm_arch(arch)
    path = _cached(key, arch, options, ".cubin", lambda src_path: compile_cubin(
        source, name, arch, include_dirs, options, source_path=src_path), source)
    with open(path, "rb") as f:
        return f.read()
