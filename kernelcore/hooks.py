"""Slots through which a lower layer calls a function of a higher one (kernelcore/layers.py).

The lower module calls ``hooks.<slot>(...)``; the higher module puts its function in the
slot (``hooks.fill``) when it is imported, so the import points one way only.  The slot is
the function itself once filled (no wrapper frame, so ``warnings`` stack levels still point
at the user's line).  Call slots as ``hooks.<slot>``, never ``from .hooks import <slot>``,
which would keep the empty one.  ``import kernelcore`` imports every module, hence fills
every slot; calling a slot that is still empty raises an error naming who fills it.
"""
from __future__ import annotations

_PROVIDERS: dict = {}   # slot name -> the module that fills it


def _slot(name: str, provider: str):
    _PROVIDERS[name] = provider

    def empty(*args, **kwargs):
        raise RuntimeError(f"kernelcore hook '{name}' is empty: {provider} fills it when imported "
                           "(`import kernelcore` does that)")

    empty.empty_hook = True
    return empty


def fill(name: str, fn):
    """Put ``fn`` in slot ``name`` (called by the providing module at its import)."""
    if name not in _PROVIDERS:
        raise KeyError(f"kernelcore has no hook slot '{name}' (slots: {', '.join(_PROVIDERS)})")
    globals()[name] = fn
    return fn


def empty_slots() -> list:
    """Names of the slots not filled yet."""
    return [n for n in _PROVIDERS if getattr(globals()[n], "empty_hook", False)]


# array.py (array layer) -> tape.py: a differentiable copy is recorded on the active Tape,
# and a Python-side write is checked against reads the Tape still needs
record_copy = _slot("record_copy", "kernelcore.tape")
check_write_after_read = _slot("check_write_after_read", "kernelcore.tape")
# array.py -> launch.py: a struct value is stored in an array as the bytes a launch passes
pack_struct = _slot("pack_struct", "kernelcore.launch")
# types.py (types layer) -> array.py: is this value a kernelcore array?
is_array = _slot("is_array", "kernelcore.array")
# types.py, builtins/registry.py -> host_call.py: a builtin called on host values (kc.length(v), a * b)
call_builtin = _slot("call_builtin", "kernelcore.host_call")
# module.py (build layer) -> cuda_backend.py (launch layer): build a module's kernels for CUDA
build_cuda_chunk = _slot("build_cuda_chunk", "kernelcore.cuda_backend")
