"""Gradients with respect to a kernel's value arguments (a stiffness, a time step, gravity).

A kernel argument declared as a value (``k: float``, ``g: kc.vec3``) may be given a
one-element array of that type instead of a number::

    k = kc.array([1000.0], dtype=float, requires_grad=True)
    with tape:
        kc.launch(spring_forces, n, inputs=[x, f, k, dt])   # k: float in the kernel
    tape.backward(loss)
    k.grad.numpy()[0]                                        # d loss / d k, summed over launches

The launch then runs a variant of the kernel in which that argument is read from the array
(``k = k_array[0]`` before the body) and whose adjoint scatters ``adj k`` into its gradient,
like any array read. Passing the same array to many launches sums their contributions.

Why a variant, not always: the adjoint of a value argument is otherwise discarded, which
lets the emitter skip the values that only fed it (e.g. ``a * k`` needs no ``a`` in the
adjoint); compiling that in unconditionally would slow every adjoint. The variant is built
on first use (one more compile of that kernel) and cached per set of such arguments.
"""
from __future__ import annotations

from . import types as T
from .array import ArrayType, array


def scalar_array_args(kernel, params) -> list:
    """Names of value arguments given a kc array (checked: one element of the declared type)."""
    names = []
    for name, t, v in zip(kernel.arg_names, kernel.arg_types, params):
        if isinstance(t, ArrayType) or not isinstance(v, array):
            continue
        if not (T.is_float(t) or (T.is_composite(t) and T.is_float(t._dtype))):
            raise TypeError(f"kernel '{kernel.key}' argument '{name}': declared {T.type_repr(t)}, got an array; only float "
                            "values (scalars, vectors, matrices, quaternions, transforms) may be given as one-element "
                            "arrays for their gradient")
        if v.shape != (1,) or v.dtype is not t:
            raise TypeError(f"kernel '{kernel.key}' argument '{name}': declared {T.type_repr(t)}; pass a number, or a "
                            f"one-element array of {T.type_repr(t)} for its gradient (got an array of shape {v.shape} "
                            f"and dtype {T.type_repr(v.dtype)})")
        names.append(name)
    return names


def variant(kernel, names):
    """The kernel with the value arguments ``names`` read from one-element arrays (cached)."""
    cache = kernel.__dict__.setdefault("_scalar_grad_variants", {})
    key = frozenset(names)
    v = cache.get(key)
    if v is None:
        v = cache[key] = ScalarGradKernel(kernel, key)
    return v


def _kernel_class():
    from .kernel import Kernel

    return Kernel


class ScalarGradKernel(_kernel_class()):
    """A kernel whose listed value arguments arrive as one-element arrays (see the module doc)."""

    def __init__(self, base, names):
        self.base = base
        self.func, self.key, self.defn = base.func, base.key, base.defn
        self.enable_backward = base.enable_backward
        self.scalar_args = names
        self.arg_names = list(base.arg_names)
        self.arg_types = [ArrayType(t, 1) if n in names else t for n, t in zip(base.arg_names, base.arg_types)]
        mask = sum(1 << k for k, n in enumerate(base.arg_names) if n in names)
        self.cname = f"{base.cname}_sg{mask:x}"
        self.module = base.module
        self._irs = {}
        self.module.register(self)

    def ir(self):
        from .frontend import _renumber, build_ir
        from .module import options_key

        key = options_key()
        ir = self._irs.get(key)
        if ir is None:
            ir = build_ir(self.defn, getattr(self.base, "frontend_arg_types", self.base.arg_types), "kernel")
            read_from_arrays(ir, self.scalar_args)
            _renumber(ir)  # stable value numbers: the generated code keys the kernel cache
            self._irs[key] = ir
        return ir

    def __repr__(self):
        return f"<kernelcore kernel {self.key} (gradients for {', '.join(sorted(self.scalar_args))})>"


def read_from_arrays(ir, names):
    """Rewrite ``ir`` in place: each value argument in ``names`` becomes an array argument and
    its value is loaded from element 0 at the start of the kernel (same Var, so the body is unchanged)."""
    from .builtins.registry import registry
    from .ir import Call, Const, Var

    head = []
    for k, v in enumerate(ir.args):
        if v.label not in names:
            continue
        arr = Var(ArrayType(v.type, 1), label=v.label)
        zero = Var(T.int32, const=0)
        row, _, _ = registry.resolve("load", [arr.type, T.int32])
        head += [Const(zero, 0), Call(v, row, [arr, zero])]
        ir.args[k] = arr
        ir.array_reads.add(v.label)
    ir.block.stmts[:0] = head
