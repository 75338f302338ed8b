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
import types

import pytest

from kernelcore import cuda_check, nvrtc
from kernelcore.errors import NativeBuildError

pytestmark = [pytest.mark.run_last]

ARCH = cuda_check.ARCH


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


def test_every_kernel_of_the_session_compiles_to_ptx():
    """Under pytest-xdist a test sees only its own worker's kernels, and only those defined so far:
    there each worker runs this check over all of its kernels after its last test instead
    (tests/conftest.py), both workers at once, and the run fails naming what does not compile."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("under pytest-xdist: checked at the end of each worker (tests/conftest.py)")
    modules = cuda_check.session_modules()
    if not modules:
        pytest.skip("no kernels registered in this session: run this test together with the others")
    found = cuda_check.check_modules(modules)
    assert not found, cuda_check.format_failures(found)


def test_module_error_is_reported_when_every_kernel_compiles_alone():
    """The combined translation unit fails although each kernel alone compiles: that is a failure too."""
    kernel = types.SimpleNamespace(key="k", ir=lambda: None)
    module = types.SimpleNamespace(name="two_kernels", kernels=[kernel, kernel])
    fake_source = lambda m, ks: (f"key{len(ks)}", "source")  # noqa: E731
    whole = NativeBuildError(module.name, "two_kernels.cu(12): error: function \"helper\" has already been defined", "m.cu")
    alone = []
    failures = cuda_check.failures([module], [whole], lambda key_source, name: alone.append(key_source), fake_source)
    assert alone == [("key1", "source")] * 2  # each kernel was tried alone and compiled
    assert failures == [("two_kernels (whole module; each kernel compiles alone)",
                         ['two_kernels.cu(12): error: function "helper" has already been defined'])]
    assert cuda_check.failures([module], [None], lambda key_source, name: None, fake_source) == []


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
