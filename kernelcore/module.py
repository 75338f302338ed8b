"""Modules: the kernels of one Python module, generated, compiled and loaded together.

Kernels are compiled in chunks: the first launch builds every kernel of the module
registered so far in one translation unit; kernels defined later (e.g. inside
functions) go into the next chunk, so nothing already built is recompiled.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import threading

from . import cache, config, hooks, toolchain
from . import types as T
from .array import ArrayType
from .builtins.registry import registry
from .device import get_runtime
from .emit_cpp import Emitter, emit_struct, tuple_struct_name
from .ir import defined_vars
from .errors import NativeBuildError
from .threads import prefer_passive_waiting

HEADERS = ["kc_base.h", "kc_scalar.h", "kc_vec.h", "kc_quat.h", "kc_linalg.h", "kc_array.h", "kc_random.h", "kc_noise.h",
           "kc_loop.h"]
_build_lock = threading.RLock()


def options_key():
    return (config.mode, config.loop_checkpoints, config.max_unroll)


def get_module(name: str) -> "Module":
    rt = get_runtime()
    with rt.lock:
        m = rt.modules.get(name)
        if m is None:
            m = Module(name)
            rt.modules[name] = m
        return m


class error_state_ctypes(ctypes.Structure):
    """Mirror of kc::error_state_t."""
    _fields_ = [("flag", ctypes.c_int32), ("line", ctypes.c_int32), ("ndim", ctypes.c_int32), ("nidx", ctypes.c_int32),
                ("index", ctypes.c_int32 * 4), ("shape", ctypes.c_int32 * 4), ("kind", ctypes.c_int32),
                ("_pad", ctypes.c_int32), ("thread", ctypes.c_int64)]


class LoadedKernel:
    """Entry points of one kernel in a loaded chunk."""

    def __init__(self, kernel, chunk, fwd, bwd):
        self.kernel, self.chunk, self.fwd, self.bwd = kernel, chunk, fwd, bwd


class Chunk:
    def __init__(self, key, source, lib, source_path):
        self.key, self.source, self.lib, self.source_path = key, source, lib, source_path
        self.error_state = None


class Module:
    def __init__(self, name):
        self.name = name
        self.kernels = []
        self.loaded: dict = {}   # (target, options) -> {kernel: LoadedKernel}
        self.failed: dict = {}   # (target, options) -> {kernel: NativeBuildError of its own build}
        self.cnames = set()

    def register(self, kernel):
        base = kernel.cname
        n = 1
        while kernel.cname in self.cnames:
            n += 1
            kernel.cname = f"{base}_{n}"
        self.cnames.add(kernel.cname)
        self.kernels.append(kernel)

    def ensure_built(self, kernel, device):
        target = "cuda" if device.is_cuda else "cpu"
        table = self.loaded.setdefault((target, options_key()), {})
        lk = table.get(kernel)
        if lk is not None:
            return lk
        with _build_lock:
            lk = table.get(kernel)
            if lk is not None:
                return lk
            # A kernel that failed to build keeps failing with its own error and never joins
            # another kernel's chunk: one broken kernel must not poison its module.
            failed = self.failed.setdefault((target, options_key()), {})
            if kernel in failed:
                raise failed[kernel]
            # a chunk is compiled with one set of flags: only kernels of the requested one's fast_math
            fast = _fast_math_option(kernel)
            pending = [k for k in self.kernels if k not in table and k not in failed and _fast_math_option(k) == fast]
            if kernel not in pending:
                pending.append(kernel)
            kernel.ir()   # the requested kernel's own frontend error goes to the caller
            good = []
            for k in pending:
                try:
                    k.ir()
                    good.append(k)
                except Exception:
                    pass   # reported when that kernel itself is launched
            try:
                table.update(self._build_chunk(good, target, device))
            except NativeBuildError:
                if len(good) == 1:
                    failed[kernel] = sys.exc_info()[1]
                    raise
                # which kernel broke the chunk is unknown: build the requested one alone;
                # the others are retried (alone, if need be) when they are launched
                try:
                    table.update(self._build_chunk([kernel], target, device))
                except NativeBuildError as e:
                    failed[kernel] = e
                    raise
            return table[kernel]

    def _build_chunk(self, kernels, target, device):
        if target == "cuda":
            return hooks.build_cuda_chunk(self, kernels, device)
        return self._build_cpu_chunk(kernels)

    # -- source generation -----------------------------------------------------------------
    def generate(self, kernels, target="cpu"):
        """C++ (or CUDA) text of one translation unit holding these kernels."""
        debug = config.mode == "debug"
        if target == "cuda":
            from .emit_cuda import CudaEmitter

            em = CudaEmitter(debug)
        else:
            em = Emitter(debug)
        irs = [(k, k.ir()) for k in kernels]
        funcs = _ordered_functions([ir for _, ir in irs])
        structs = _ordered_structs([ir for _, ir in irs] + [f.ir for f in funcs if f.ir is not None]
                                   + [f.grad_ir for f in funcs if f.grad_ir is not None]
                                   + [f.replay_ir for f in funcs if f.replay_ir is not None], funcs)
        em.w(f"// kernelcore module '{self.name}' ({target}), generated code")
        em.w('#include "kc_random.h"')
        em.w('#include "kc_loop.h"')
        for h in registry.headers:
            em.w(f'#include "{h}"')
        for s in structs:
            em.lines.append(emit_struct(s))
        for f in funcs:
            em.emit_function(f)
        for k, ir in irs:
            em.emit_args_struct(k.cname, ir)
            em.emit_kernel_threads(k.cname, ir, with_adjoint=k.enable_backward)
            simd = {"simd": _simd_option(k)} if target == "cpu" else {}  # (the CUDA emitter has no such entry point)
            em.emit_entry_points(k.cname, ir, with_adjoint=k.enable_backward, **simd)
        if target == "cpu":
            em.w('extern "C" KC_EXPORT kc::error_state_t* kc_error_state() { return &kc::g_error; }')
        return em.text()

    def _cache_key(self, source, target, flags):
        h = hashlib.sha256()
        h.update(cache.portable_source(source).encode())   # (not the checkout's directory: clones share entries)
        for name in HEADERS:
            with open(os.path.join(toolchain.NATIVE_DIR, name), "rb") as f:
                h.update(f.read())
        for path in registry.headers:
            with open(path, "rb") as f:
                h.update(f.read())
        h.update(target.encode())
        h.update(" ".join(flags).encode())
        return h.hexdigest()[:24]

    def _build_cpu_chunk(self, kernels):
        source = self.generate(kernels, "cpu")
        extra = list(toolchain.FAST_MATH_FLAGS) if _fast_math_option(kernels[0]) else []
        if any(_simd_option(k) for k in kernels):  # (see toolchain.py)
            extra += [f for f in toolchain.SIMD_FLAGS if f not in extra]
        extra += [f for f in toolchain.MODULE_FLAGS.get(self.name, ()) if f not in extra]
        flags = toolchain.cpu_flags(config.cxx) + extra + [toolchain.compiler_identity(config.cxx)]
        key = "cpu_" + self._cache_key(source, "cpu", flags)
        src_path = cache.write_source(key, source)
        binary = cache.lookup(key, ".so")
        if binary is None:
            binary = cache.store(key, ".so", lambda tmp: toolchain.compile_cpu(src_path, tmp, self.name, extra_flags=extra))
        prefer_passive_waiting()  # before libgomp loads with the first kernel library (threads.py)
        try:
            lib = ctypes.CDLL(binary, mode=ctypes.RTLD_LOCAL)
        except OSError:
            # corrupted between the check and the load: rebuild once
            os.remove(binary)
            binary = cache.store(key, ".so", lambda tmp: toolchain.compile_cpu(src_path, tmp, self.name, extra_flags=extra))
            lib = ctypes.CDLL(binary, mode=ctypes.RTLD_LOCAL)
        chunk = Chunk(key, source, lib, src_path)
        fn = lib.kc_error_state
        fn.restype = ctypes.POINTER(error_state_ctypes)
        chunk.error_state = fn().contents
        out = {}
        for k in kernels:
            fwd = getattr(lib, f"{k.cname}_fwd")
            bwd = getattr(lib, f"{k.cname}_bwd") if k.enable_backward else None
            for f in (fwd, bwd):
                if f is not None:
                    f.restype = None
                    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            out[k] = LoadedKernel(k, chunk, fwd, bwd)
        return out


def _ordered_functions(irs):
    order, seen = [], set()

    def visit(inst):
        # by C++ name: a redefinition with the same source and captured values (a factory called
        # twice with one value) is a second instance of the same code, emitted once
        if inst.cname in seen:
            return
        seen.add(inst.cname)
        for d in inst.dependencies():
            visit(d)
        order.append(inst)

    for ir in irs:
        for f in ir.funcs:
            visit(f)
    return order


def _ordered_structs(irs, funcs):
    order, seen = [], set()

    def visit(t):
        if isinstance(t, ArrayType):
            return visit(t.dtype)
        if isinstance(t, T.Tuple):
            for x in t.types:
                visit(x)
            key = tuple_struct_name(t)
        elif T.is_struct(t):
            for x in t._fields.values():
                visit(x)
            key = t._ctype
        else:
            return
        if key not in seen:
            seen.add(key)
            order.append(t)

    for ir in irs:
        for v in ir.args:
            visit(v.type)
        for v in defined_vars(ir.block):
            visit(v.type)
    for f in funcs:
        if f.result_type is not None:
            visit(f.result_type)
        for t in f.arg_types:
            visit(t)
    return order


def _simd_option(kernel):
    """A kernel's ``simd`` option; specialisations and lowered forms take their base kernel's."""
    while not hasattr(kernel, "simd") and hasattr(kernel, "base"):
        kernel = kernel.base
    return getattr(kernel, "simd", None)


def _fast_math_option(kernel) -> bool:
    """A kernel's ``fast_math`` option; specialisations and lowered forms take their base kernel's."""
    while not hasattr(kernel, "fast_math") and hasattr(kernel, "base"):
        kernel = kernel.base
    return bool(getattr(kernel, "fast_math", False))
