"""The NVRTC check (kernelcore/cuda_check.py) with its fast options still fails what it exists to
catch, and a module checked again with another kernel set compiles only the new kernels.

* CUDA-only errors: a kernel whose CUDA translation unit does not compile (a name the CUDA
  prelude lacks) and one whose PTX does not assemble (an invalid inline PTX instruction, which
  NVRTC's front end passes through and only ptxas rejects) are both reported by
  ``check_modules``, named, with the compiler's message, although both build on the CPU.
* Marks: the two pytest-xdist workers often define different kernel sets of one module; the
  second unit must compile only the kernels no earlier unit passed, and a third, already
  covered, must compile nothing.

The kernels here live in modules of their own, removed from the runtime at the end of each test,
so the end-of-worker check (tests/conftest.py) never sees the broken ones.
"""
import os
import uuid

import pytest

import kernelcore as kc
from kernelcore import cache, cuda_check, nvrtc
from kernelcore.device import get_runtime


@pytest.fixture(autouse=True)
def _nvrtc_and_fresh_cache(tmp_path, monkeypatch):
    if not nvrtc.is_available():
        if os.environ.get("KERNELCORE_REQUIRE_NVRTC") == "1":
            pytest.fail("NVRTC cannot be loaded (KERNELCORE_REQUIRE_NVRTC=1)", pytrace=False)
        pytest.skip("NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(tmp_path))


@pytest.fixture
def module_name():
    """A fresh kernel-module name, dropped from the runtime after the test."""
    name = f"test_cuda_check_marks_{uuid.uuid4().hex[:8]}"
    yield name
    get_runtime().modules.pop(name, None)


# The CPU branch is what g++ builds; the CUDA branch holds the error.
MISSING_BUILTIN = """
#if defined(__CUDACC__)
return kc_builtin_missing_from_the_cuda_prelude(x);
#else
return x + 1.0;
#endif
"""
BAD_PTX = """
#if defined(__CUDACC__)
asm volatile("kc.not.an.instruction;");
#endif
return x + 1.0;
"""


def _kernel_calling(snippet, module_name):
    @kc.func_native(snippet)
    def plus_one(x: float) -> float:
        ...

    @kc.kernel(module=module_name)
    def uses_native(a: kc.array(dtype=float)):
        i = kc.tid()
        a[i] = plus_one(a[i])

    return uses_native


@pytest.mark.parametrize("snippet,message", [(MISSING_BUILTIN, "kc_builtin_missing_from_the_cuda_prelude"),
                                             (BAD_PTX, "ptxas application ptx input")], ids=["front_end", "ptxas"])
def test_a_cuda_only_error_fails_the_check(snippet, message, module_name):
    k = _kernel_calling(snippet, module_name)
    a = kc.array([1.0, 2.0], dtype=float)
    kc.launch(k, dim=2, inputs=[a])  # the CPU build compiles and runs
    assert a.numpy().tolist() == [2.0, 3.0]
    found = cuda_check.check_modules([k.module])
    assert [name for name, _ in found] == [f"{module_name}.uses_native"]
    assert message in "\n".join(found[0][1])


def test_bad_inline_ptx_passes_ptx_generation_and_fails_only_in_ptxas(module_name):
    """Why the check compiles to a CUBIN: PTX generation alone would let this kernel through."""
    k = _kernel_calling(BAD_PTX, module_name)
    key, text = cuda_check.source(k.module, [k])
    assert "kc.not.an.instruction" in nvrtc.compile_ptx(text, "bad_ptx.cu", "compute_80", options=cuda_check._fast_options())
    assert cuda_check.compile_unit((key, text), module_name) is not None


def _three_kernels(module_name):
    @kc.kernel(module=module_name)
    def k_add(a: kc.array(dtype=float)):
        i = kc.tid()
        a[i] = a[i] + 1.0

    @kc.kernel(module=module_name)
    def k_mul(a: kc.array(dtype=float)):
        i = kc.tid()
        a[i] = a[i] * 3.0

    @kc.kernel(module=module_name)
    def k_sin(a: kc.array(dtype=float)):
        i = kc.tid()
        a[i] = kc.sin(a[i])

    return k_add, k_mul, k_sin


def test_a_second_kernel_set_compiles_only_the_kernels_not_yet_passed(module_name, monkeypatch):
    k_add, k_mul, k_sin = _three_kernels(module_name)
    module = k_add.module
    compiled = []  # the kernels of each unit NVRTC compiled
    real = cuda_check.compile_unit

    def spy(key_source, name, arch=cuda_check.ARCH):
        # the module's lock is held while it compiles: the other worker defers the module
        assert cache.entry_busy(cuda_check.module_lock(module))
        compiled.append(sorted(k.key for k in (k_add, k_mul, k_sin) if k.cname in key_source[1]))
        return real(key_source, name, arch)

    monkeypatch.setattr(cuda_check, "compile_unit", spy)
    assert cuda_check.check_module(module, [k_add, k_mul]) is None  # worker 1: one unit, two kernels
    assert cuda_check.check_module(module, [k_add, k_sin]) is None  # worker 2: only k_sin is new
    assert cuda_check.check_module(module, [k_mul, k_sin]) is None  # covered: nothing to compile
    assert cuda_check.check_module(module, [k_add, k_mul]) is None  # the first unit's CUBIN
    assert compiled == [["k_add", "k_mul"], ["k_sin"]]
    assert not cache.entry_busy(cuda_check.module_lock(module))
    for k in (k_add, k_mul, k_sin):
        assert cache.lookup(cuda_check.kernel_mark(module, k), ".ok") is not None


def test_a_failed_unit_marks_nothing(module_name):
    k_add, _, _ = _three_kernels(module_name)
    bad = _kernel_calling(MISSING_BUILTIN, module_name)
    module = k_add.module
    assert cuda_check.check_module(module, [k_add, bad]) is not None
    assert cache.lookup(cuda_check.kernel_mark(module, k_add), ".ok") is None
    assert cuda_check.check_module(module, [k_add]) is None  # k_add alone compiles, and is marked now
    assert cache.lookup(cuda_check.kernel_mark(module, k_add), ".ok") is not None
    assert cuda_check.check_module(module, [k_add, bad]) is not None  # still fails: bad was never marked


def test_the_largest_unit_is_compiled_first_and_failures_keep_their_module(module_name, monkeypatch):
    """End of an xdist worker: the costliest (largest) units start first, so the two workers do not
    end one long compile apart; a failure is still named by its own module."""
    small = _kernel_calling(MISSING_BUILTIN, module_name)
    big_name = f"{module_name}_big"
    try:
        big = _three_kernels(big_name)[0].module
        sizes = {m.name: len(cuda_check.source(m, cuda_check.valid_kernels(m))[1]) for m in (small.module, big)}
        assert sizes[big_name] > sizes[module_name]
        order = []
        real = cuda_check.check_module

        def spy(module, kernels, arch=cuda_check.ARCH, whole=None):
            order.append(module.name)
            return real(module, kernels, arch, whole)

        monkeypatch.setattr(cuda_check, "check_module", spy)
        found = cuda_check.check_modules([small.module, big])
        assert order == [big_name, module_name]
        assert [name for name, _ in found] == [f"{module_name}.uses_native"]
    finally:
        get_runtime().modules.pop(big_name, None)
