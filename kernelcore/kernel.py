"""@kc.kernel: a Python function compiled to a native kernel launched over a grid."""
from __future__ import annotations

import hashlib
import sys
from typing import Any

from . import config
from .array import ArrayType
from .types import IndexedArrayType
from .frontend import FuncDef, build_ir
from .ir import format_block
from .adjoint import format_reverse, reverse_block


class Kernel:
    generic = False  # typing.Any arguments: specialised per launch (kernel_generic.py)
    indexed = False  # kc.indexedarray arguments: launched as a lowered form (indexed_launch.py)

    def __init__(self, pyfunc, module=None, enable_backward=True, simd=None, fast_math=False):
        from .module import get_module

        self.func = pyfunc
        self.key = pyfunc.__name__
        self.defn = FuncDef(pyfunc, "kernel")
        self.enable_backward = enable_backward
        if simd not in (None, True, False):
            raise TypeError(f"kernel '{pyfunc.__name__}': simd must be None (automatic), True or False, got {simd!r}")
        # CPU forward vectorised across threads (emit_cpp.emit_streaming_entry): None where the
        # kernel qualifies, False never, True required (a build error names why it cannot)
        self.simd = simd
        if fast_math not in (True, False):
            raise TypeError(f"kernel '{pyfunc.__name__}': fast_math must be True or False, got {fast_math!r}")
        # compiled with toolchain.FAST_MATH_FLAGS (NVRTC: --use_fast_math), in chunks of its own
        self.fast_math = fast_math
        self.arg_names = list(self.defn.arg_names)
        self.arg_types = [self.defn.arg_types[n] for n in self.arg_names]
        digest = hashlib.sha256(f"{self.defn.module}.{pyfunc.__qualname__}\n{self.defn.source}".encode()).hexdigest()[:10]
        self.cname = f"k_{self.key}_{digest}"
        self.module = get_module(module or pyfunc.__module__)
        self._irs = {}
        self.generic = any(t is Any or (isinstance(t, ArrayType) and t.dtype is Any) for t in self.arg_types)
        self.indexed = any(isinstance(t, IndexedArrayType) for t in self.arg_types)
        if self.indexed and any(isinstance(t, IndexedArrayType) and t.dtype is Any for t in self.arg_types):
            raise TypeError(f"kernel '{self.key}': a generic (typing.Any) indexedarray argument is not supported; "
                            "declare its dtype")
        if self.generic:
            # never compiled itself: each launch runs a specialisation (kernel_generic.py)
            self.specializations = {}
            self.explicit_overloads = []
        if not (self.generic or self.indexed):   # (an indexed kernel's lowered form registers itself)
            self.module.register(self)

    def ir(self):
        from .module import options_key

        if self.generic:
            raise TypeError(f"kernel '{self.key}' is generic (typing.Any arguments): it has no code of its own; "
                            "launch it, or take a specialisation from kc.overload(...)")
        key = options_key()
        ir = self._irs.get(key)
        if ir is None:
            ir = build_ir(self.defn, self.arg_types, "kernel")
            self._irs[key] = ir
            if config.dump_ir:
                print(f"== IR of kernel {self.key} after frontend ==\n{format_block(ir.block)}", file=sys.stderr)
                if "adjoint" in config.dump_ir:
                    print(f"== reverse of {self.key} ==\n{format_reverse(reverse_block(ir.block))}", file=sys.stderr)
        return ir

    @property
    def source(self) -> str:
        """Generated C++ of the translation unit that holds this kernel (CPU)."""
        return self.module.generate([self], "cpu")

    @property
    def cuda_source(self) -> str:
        return self.module.generate([self], "cuda")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"kernel '{self.key}' must be started with kc.launch(...)")

    def __repr__(self):
        return f"<kernelcore kernel {self.key}>"


def kernel(f=None, *, enable_backward=True, module=None, simd=None, fast_math=False):
    """Decorator: compile a typed Python function as a kernel.

    ``simd``: the CPU forward's vectorised entry point (several threads' work per SIMD lane, see
    docs/cpu_codegen.md): None uses it for every kernel that qualifies, False never (the generic
    entry point only), True requires it (building a kernel that does not qualify is an error).

    ``fast_math``: compile the kernel (and the kc.func it calls) with reassociation, reciprocals
    and FMA contraction allowed (toolchain.FAST_MATH_FLAGS; NVRTC's --use_fast_math on CUDA):
    results differ from the IEEE build by rounding; NaN and inf still propagate (see
    docs/cpu_codegen.md, "Fast math").
    """
    def wrap(fn):
        return Kernel(fn, module=module, enable_backward=enable_backward, simd=simd, fast_math=fast_math)

    return wrap(f) if f is not None else wrap
