"""Check that kernels compile for CUDA with NVRTC, without a GPU.

``check_modules(modules)`` generates each kernel module as one CUDA translation unit, as the
CUDA backend would build it, and compiles it all the way to a CUBIN (NVRTC runs ptxas too, so
a device function that is declared but defined nowhere fails here rather than when a driver
loads the PTX).  It returns the failures: a kernel that fails is named with the first lines of
the NVRTC log, unless it is also invalid on the CPU (a kernel that does not type-check, as tests
of compile errors define); a module whose kernels compile one by one but not together is
reported with the module's own log.  Results are cached in the kernel cache, keyed by source,
and processes checking the same modules at once share the work (``cache.build_each_once``).

A passed unit also marks each of its kernels as passed (an empty ``.ok`` entry keyed by the
kernel's own translation unit).  The two pytest-xdist workers often define different kernel sets
of one module (specialisations made on demand: the whole-unit texts differ), so the second
worker compiles only the kernels no unit has passed yet, not the whole module again; the check
of a module holds a lock per module name so the second worker waits for the first one's marks.
Options: ``-Ofc=max`` (NVRTC >= 12.8) cuts the NVVM optimiser and makes ptxas do its minimal
work already; ``--ptxas-options=-O0`` on top of it, ``-Ofc=mid``, or dropping ptxas' expensive
optimisations changed nothing measurable (figures in docs/architecture.md, "NVRTC check").

The test suite runs it over every kernel a test session defined (tests/kernelcore/
test_cuda_ptx_all.py, and at the end of each pytest-xdist worker: tests/conftest.py).
"""
from __future__ import annotations

import hashlib

from . import cache, nvrtc
from .errors import NativeBuildError

__all__ = ["check_modules", "session_modules"]

ARCH = "sm_80"


def _fast_options():
    """A checking compile: the full front end with minimal optimisation (about 3x faster; NVRTC >= 12.8)."""
    return ("-Ofc=max",) if nvrtc.version() >= (12, 8) else ()


def valid_kernels(module) -> list:
    """The kernels of ``module`` that type-check (tests of frontend errors define others)."""
    out = []
    for k in list(module.kernels):
        try:
            k.ir()
        except Exception:  # noqa: BLE001 - any frontend error: not a kernel to check
            continue
        out.append(k)
    return out


def session_modules() -> list:
    """The kernel modules of this process that hold at least one valid kernel."""
    from .device import get_runtime

    return [m for m in list(get_runtime().modules.values()) if valid_kernels(m)]


def source(module, kernels):
    """(cache key, CUDA source) of ``kernels`` of ``module`` as one translation unit."""
    text = module.generate(kernels, "cuda")
    return "cuda_" + module._cache_key(text, "cuda", nvrtc.NVRTC_FLAGS), text


def cubin_entry(key_source, arch=ARCH) -> str:
    """Kernel-cache entry name of the CUBIN that ``compile_unit`` writes for this unit."""
    return nvrtc.entry_key(key_source[0], nvrtc.normalize_sm_arch(arch), _fast_options())


def compile_unit(key_source, name, arch=ARCH):
    """None, or the NativeBuildError of this translation unit (compiled to a CUBIN)."""
    try:
        nvrtc.cached_cubin(key_source[0], key_source[1], f"{name}.cu", arch, options=_fast_options())
    except NativeBuildError as e:
        return e
    return None


def _valid_on_cpu(module, kernel) -> bool:
    if any(kernel in table for (target, _), table in module.loaded.items() if target == "cpu"):
        return True  # built (and probably run) earlier in this process
    try:
        module._build_cpu_chunk([kernel])
        return True
    except Exception:  # noqa: BLE001 - invalid on the CPU too: not a CUDA problem
        return False


def failures(modules, errors, compile_one, source_of=None) -> list:
    """[(name, first log lines)] for the modules whose translation unit failed (``errors``, one per
    module); the culprits are found by compiling each kernel alone with ``compile_one``."""
    source_of = source_of or source
    out = []
    for m, err in zip(modules, errors):
        if err is None:
            continue
        culprits = 0
        for k in valid_kernels(m):
            e = compile_one(source_of(m, [k]), m.name)
            if e is None:
                continue
            culprits += 1
            if _valid_on_cpu(m, k):
                out.append((f"{m.name}.{k.key}", e.log.strip().splitlines()[:6]))
        if not culprits:  # only the whole module fails (e.g. two kernels' helpers clash)
            out.append((f"{m.name} (whole module; each kernel compiles alone)", err.log.strip().splitlines()[:6]))
    return out


def module_lock(module) -> str:
    """Kernel-cache lock held while one process checks ``module`` (by name: the workers' units differ)."""
    return "cudachk_" + hashlib.sha256(module.name.encode()).hexdigest()[:24]


def kernel_mark(module, kernel, arch=ARCH) -> str:
    """Kernel-cache entry (``.ok``, empty) saying ``kernel`` passed inside some unit of ``module``:
    keyed by the kernel's own translation unit (its functions, structs and headers)."""
    return cubin_entry(source(module, [kernel]), arch)


def _mark(entry):
    cache.store(entry, ".ok", lambda tmp: open(tmp, "wb").close())


def check_module(module, kernels, arch=ARCH, whole=None):
    """None, or the NativeBuildError of the unit compiled for ``kernels`` of ``module``: those no
    earlier unit passed (all of them on a cold cache); each kernel of a passed unit is marked.
    ``whole``: ``source(module, kernels)`` when the caller has it already."""
    with cache.entry_lock(module_lock(module)):
        whole = whole or source(module, kernels)
        if cache.lookup(cubin_entry(whole, arch), ".cubin") is not None:
            return None
        marks = [kernel_mark(module, k, arch) for k in kernels]
        todo = [(k, e) for k, e in zip(kernels, marks) if cache.lookup(e, ".ok") is None]
        if not todo:
            return None
        # only the new kernels, with the functions they call, as the CPU builds a later chunk of
        # specialisations: the marked ones passed in a unit that already tested them together
        unit = whole if len(todo) == len(kernels) else source(module, [k for k, _ in todo])
        err = compile_unit(unit, module.name, arch)
        if err is None:
            for _, e in todo:
                _mark(e)
        return err


def check_modules(modules=None, arch=ARCH) -> list:
    """[(kernel or module name, first NVRTC log lines)] of the ``modules`` (default: every module of
    this process) that compile on the CPU but not to a CUBIN for ``arch``; [] when all compile."""
    modules = session_modules() if modules is None else modules
    units = [(m, ks, source(m, ks)) for m, ks in ((m, valid_kernels(m)) for m in modules)]
    # A passed unit is a CUBIN in the kernel cache, keyed by its source, and a mark per kernel: a
    # warm cache compiles nothing. Modules another process checks right now (the other xdist
    # worker checks the same sim modules) are taken last, when their kernels are usually marked.
    # Largest units first: the costly ones (NVVM on long functions, tens of seconds) start while the
    # other worker still has work, so the two workers do not end one long compile apart.
    order = sorted(range(len(units)), key=lambda i: -len(units[i][2][1]))
    done = cache.build_each_once([units[i] for i in order], lambda u: module_lock(u[0]),
                                 lambda u: check_module(u[0], u[1], arch, whole=u[2]))
    errors = [None] * len(units)
    for i, err in zip(order, done):
        errors[i] = err
    return failures(modules, errors, lambda ks, name: compile_unit(ks, name, arch))


def format_failures(found) -> str:
    return "kernels that compile on the CPU but not with NVRTC:\n" + "\n".join(
        f"  {name}:\n    " + "\n    ".join(log) for name, log in found)
