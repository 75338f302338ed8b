"""CUDA emitter: the C++ emitter with CUDA entry points.

Everything a thread computes (functions, per-thread forward/adjoint bodies, structs) is
the same text as on the CPU: the native headers switch on ``__CUDACC__`` so ``KC_FUNC``
means ``__device__`` there.  Only the entry points differ: instead of an OpenMP loop,
each kernel is an ``extern "C" __global__`` function taking the launch bounds and the
argument struct by value, and walking the flat thread index with a grid-stride loop
(so any grid size covers any launch).
"""
from __future__ import annotations

from .emit_cpp import Emitter

#: name of the entry point that copies (and clears) the debug-mode error state
ERROR_STATE_KERNEL = "kc_error_state_fetch"


def entry_name(kernel_name: str, kind: str) -> str:
    """Symbol of a kernel's CUDA entry point (kind: "fwd" or "bwd")."""
    return f"{kernel_name}_cuda_{kind}"


class CudaEmitter(Emitter):
    target = "cuda"

    def emit_entry_points(self, kernel_name, ir, with_adjoint=True):
        call_args = "".join(f", a.{v.cname}" for v in ir.args)
        for kind in (("fwd", "bwd") if with_adjoint else ("fwd",)):
            self.w(f'extern "C" __global__ void {entry_name(kernel_name, kind)}(kc::launch_bounds_t b, {kernel_name}_args a) {{')
            self.w("    const kc::int64 stride = (kc::int64)blockDim.x * gridDim.x;")
            self.w("    for (kc::int64 t = (kc::int64)blockIdx.x * blockDim.x + threadIdx.x; t < b.size; t += stride)")
            self.w(f"        {kernel_name}_{kind}_thread(b, t{call_args});")
            self.w("}")

    def text(self):
        # One accessor per translation unit for the debug-mode bounds-check record: the
        # CPU TU exports kc_error_state(); a __device__ global is read through a kernel.
        return super().text() + (f'extern "C" __global__ void {ERROR_STATE_KERNEL}(kc::error_state_t* out) {{\n'
                                 "    *out = kc::g_error;\n"
                                 "    kc::g_error.flag = 0;\n"
                                 "}\n")
