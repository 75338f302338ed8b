"""Every kernel the test session defined also compiles as CUDA with NVRTC, no GPU needed.

Marked ``run_last`` (tests/conftest.py moves it to the end of the session), so it sees the
kernels of every test module, the library modules they imported (geometry, sim, ...) and
kernels defined inside test functions.  Each module is generated as one CUDA translation
unit, as the CUDA backend would build it, and compiled all the way to a CUBIN for sm_80
(NVRTC runs ptxas too), so that a call to a device function that is declared but defined
nowhere fails here rather than when a driver loads the PTX.  A kernel that fails is
reported with the NVRTC error unless it is also invalid on the CPU (tests of compile
errors define such kernels); a module whose kernels all compile one by one but not
together is reported with the module's own error.

Without NVRTC these tests skip, unless ``KERNELCORE_REQUIRE_NVRTC=1`` (scripts/test.sh, CI)
makes that a failure: NVRTC comes with the ``[test]`` extra.
"""
import os
import sys
import types

import pytest

from kernelcore import nvrtc
from kernelcore.device import get_runtime
from kernelcore.errors import NativeBuildError

pytestmark = [pytest.mark.run_last]

ARCH = "sm_80"
# a checking compile: the full front end with minimal optimisation (about 3x faster; NVRTC >= 12.8)
FAST = ("-Ofc=max",) if nvrtc.is_available() and nvrtc.version() >= (12, 8) else ()


def _nvrtc_load_error():
    """None when NVRTC loads, else why it does not."""
    try:
        nvrtc.version()
    except Exception as e:  # noqa: BLE001 - any failure to load is reported as is
        return f"{type(e).__name__}: {e}"
    return None


def _check_nvrtc():
    """Skip without NVRTC, or fail when KERNELCORE_REQUIRE_NVRTC=1."""
    err = _nvrtc_load_error()
    if err is None:
        return
    msg = f"NVRTC (cuda-bindings + nvidia-cuda-nvrtc) cannot be loaded: {err}"
    if os.environ.get("KERNELCORE_REQUIRE_NVRTC") == "1":
        pytest.fail(msg + " (KERNELCORE_REQUIRE_NVRTC=1: the [test] extra installs it)", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(autouse=True)
def _needs_nvrtc():
    _check_nvrtc()


def _valid_kernels(module):
    out = []
    for k in list(module.kernels):
        try:
            k.ir()
        except Exception:
            continue  # a kernel that does not type-check (tests of frontend errors)
        out.append(k)
    return out


def _source(module, kernels):
    source = module.generate(kernels, "cuda")
    return "cuda_" + module._cache_key(source, "cuda", nvrtc.NVRTC_FLAGS), source


def _compile(key_source, name):
    """None, or the NativeBuildError of this translation unit (compiled to a CUBIN)."""
    try:
        nvrtc.cached_cubin(key_source[0], key_source[1], f"{name}.cu", ARCH, options=FAST)
    except NativeBuildError as e:
        return e
    return None


def _valid_on_cpu(module, kernel):
    if any(kernel in table for (target, _), table in module.loaded.items() if target == "cpu"):
        return True  # built (and probably run) earlier in this session
    try:
        module._build_cpu_chunk([kernel])
        return True
    except Exception:
        return False


def test_every_kernel_of_the_session_compiles_to_ptx():
    modules = [m for m in list(get_runtime().modules.values()) if _valid_kernels(m)]
    if not modules:
        pytest.skip("no kernels registered in this session: run this test together with the others")
    errors = [_compile(_source(m, _valid_kernels(m)), m.name) for m in modules]
    failures = _failures(modules, errors, _compile)
    assert not failures, "kernels that compile on the CPU but not with NVRTC:\n" + "\n".join(
        f"  {name}:\n    " + "\n    ".join(log) for name, log in failures)


def _failures(modules, errors, compile_one):
    """[(name, first log lines)] for the modules whose translation unit failed to compile."""
    failures = []
    for m, err in zip(modules, errors):
        if err is None:
            continue
        culprits = 0
        for k in _valid_kernels(m):  # find the culprits one by one
            e = compile_one(_source(m, [k]), m.name)
            if e is None:
                continue
            culprits += 1
            if _valid_on_cpu(m, k):
                failures.append((f"{m.name}.{k.key}", e.log.strip().splitlines()[:6]))
        if not culprits:  # only the whole module fails (e.g. two kernels' helpers clash)
            failures.append((f"{m.name} (whole module; each kernel compiles alone)", err.log.strip().splitlines()[:6]))
    return failures


def test_module_error_is_reported_when_every_kernel_compiles_alone(monkeypatch):
    """The combined translation unit fails although each kernel alone compiles: that is a failure too."""
    kernel = types.SimpleNamespace(key="k", ir=lambda: None)
    module = types.SimpleNamespace(name="two_kernels", kernels=[kernel, kernel])
    monkeypatch.setattr(sys.modules[__name__], "_source", lambda m, ks: (f"key{len(ks)}", "source"))
    whole = NativeBuildError(module.name, "two_kernels.cu(12): error: function \"helper\" has already been defined", "m.cu")
    alone = []
    failures = _failures([module], [whole], lambda key_source, name: alone.append(key_source))
    assert alone == [("key1", "source")] * 2  # each kernel was tried alone and compiled
    assert failures == [("two_kernels (whole module; each kernel compiles alone)",
                         ['two_kernels.cu(12): error: function "helper" has already been defined'])]
    assert _failures([module], [None], lambda key_source, name: None) == []


def test_cubin_catches_an_undefined_device_function():
    """PTX leaves an extern call for the driver to resolve; the CUBIN compile (ptxas) rejects it."""
    source = ('extern __device__ float kc_test_undefined(float);\n'
              'extern "C" __global__ void k(float* x) { x[0] = kc_test_undefined(x[0]); }\n')
    assert ".extern .func" in nvrtc.compile_ptx(source, "undefined.cu", "compute_80")  # PTX: accepted
    with pytest.raises(NativeBuildError, match="Unresolved extern function"):
        nvrtc.compile_cubin(source, "undefined.cu", ARCH)
    defined = source.replace("extern __device__ float kc_test_undefined(float);",
                             "__device__ float kc_test_undefined(float v) { return v + 1.0f; }")
    assert nvrtc.compile_cubin(defined, "defined.cu", ARCH)[:4] == b"\x7fELF"  # a CUBIN is an ELF image


def test_missing_nvrtc_fails_when_required(monkeypatch):
    def broken():
        raise RuntimeError("libnvrtc.so.13: cannot open shared object file")

    monkeypatch.setattr(nvrtc, "version", broken)
    monkeypatch.setenv("KERNELCORE_REQUIRE_NVRTC", "1")
    with pytest.raises(pytest.fail.Exception, match="libnvrtc.so.13.*KERNELCORE_REQUIRE_NVRTC=1"):
        _check_nvrtc()
    monkeypatch.delenv("KERNELCORE_REQUIRE_NVRTC")
    with pytest.raises(pytest.skip.Exception, match="cannot be loaded"):
        _check_nvrtc()
