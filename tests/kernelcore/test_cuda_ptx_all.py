"""Every kernel the test session defined also compiles as CUDA: NVRTC to PTX, no GPU needed.

Marked ``run_last`` (tests/conftest.py moves it to the end of the session), so it sees the
kernels of every test module, the library modules they imported (geometry, sim, ...) and
kernels defined inside test functions.  Each module is generated as one CUDA translation
unit, as the CUDA backend would build it.  A kernel that fails is reported with the NVRTC
error unless it is also invalid on the CPU (tests of compile errors define such kernels).
"""
import pytest

from kernelcore import nvrtc
from kernelcore.device import get_runtime
from kernelcore.errors import NativeBuildError

pytestmark = [pytest.mark.run_last,
              pytest.mark.skipif(not nvrtc.is_available(), reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")]

ARCH = "compute_80"
# a checking compile: the full front end with minimal optimisation (about 3x faster; NVRTC >= 12.8)
FAST = ("-Ofc=max",) if nvrtc.is_available() and nvrtc.version() >= (12, 8) else ()


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
    """None, or the NativeBuildError of this translation unit."""
    try:
        nvrtc.cached_ptx(key_source[0], key_source[1], f"{name}.cu", ARCH, options=FAST)
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
    failures = []
    for m, err in zip(modules, errors):
        if err is None:
            continue
        for k in _valid_kernels(m):  # find the culprits one by one
            e = _compile(_source(m, [k]), m.name)
            if e is not None and _valid_on_cpu(m, k):
                failures.append((f"{m.name}.{k.key}", e.log.strip().splitlines()[:6]))
    assert not failures, "kernels that compile on the CPU but not with NVRTC:\n" + "\n".join(
        f"  {name}:\n    " + "\n    ".join(log) for name, log in failures)
