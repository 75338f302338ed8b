"""cache.build_each_once: processes sharing work items build different entries at once.

The end-of-worker NVRTC check (tests/conftest.py) runs in both pytest-xdist workers over
mostly the same kernel modules. A child process holds the lock of entry ``unit_a`` (it is
"compiling" it) until the parent says go; the parent, asked for ``unit_a``, ``unit_b`` and
``unit_c``, must build b and c first, then find a built by the child instead of building it
again, and still return a result for every item.
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest

import kernelcore as kc
from kernelcore import cache, cuda_check, nvrtc

CHILD = textwrap.dedent("""
    import os, sys, time
    from kernelcore import cache

    d = sys.argv[1]

    def build(tmp):  # holds unit_a's lock until the parent releases it (5 s at most)
        open(os.path.join(d, "child_building"), "w").close()
        t = time.time()
        while not os.path.exists(os.path.join(d, "release")) and time.time() - t < 5.0:
            time.sleep(0.005)
        with open(tmp, "w") as f:
            f.write("child")

    cache.store("unit_a", ".bin", build)
""")


def _wait_for(path, seconds=60.0):
    t = time.time()
    while not os.path.exists(path):
        assert time.time() - t < seconds, f"{path} never appeared"
        time.sleep(0.005)


def test_an_entry_built_by_another_process_is_taken_last_and_loaded_not_rebuilt(tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(cache_dir))
    env = dict(os.environ, KERNELCORE_CACHE_DIR=str(cache_dir))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env)
    try:
        _wait_for(tmp_path / "child_building")
        assert cache.entry_busy("unit_a") and not cache.entry_busy("unit_b")
        order, built_here = [], []

        def build(key):
            order.append(key)
            if key == "unit_c":
                (tmp_path / "release").touch()

            def write(tmp):
                built_here.append(key)
                with open(tmp, "w") as f:
                    f.write("parent")

            with open(cache.store(key, ".bin", write)) as f:
                return f.read()

        results = cache.build_each_once(["unit_a", "unit_b", "unit_c"], lambda k: k, build)
    finally:
        assert child.wait(timeout=60) == 0
    assert order == ["unit_b", "unit_c", "unit_a"]
    assert built_here == ["unit_b", "unit_c"]
    assert results == ["child", "parent", "parent"]
    assert not cache.entry_busy("unit_a")


def test_without_other_processes_every_item_is_built_in_order(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(tmp_path))
    assert cache.build_each_once([3, 1, 2], lambda i: f"k{i}", lambda i: i * 10) == [30, 10, 20]


@kc.kernel
def _double(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = x[i] * 2.0


def test_the_nvrtc_check_probes_the_entry_its_compile_writes(tmp_path, monkeypatch):
    """check_module finds a passed unit by cuda_check.cubin_entry: that must be the entry the
    compile writes, or a warm cache would compile every module again."""
    if not nvrtc.is_available():
        if os.environ.get("KERNELCORE_REQUIRE_NVRTC") == "1":
            pytest.fail("NVRTC cannot be loaded (KERNELCORE_REQUIRE_NVRTC=1)", pytrace=False)
        pytest.skip("NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(tmp_path))
    module = _double.module
    unit = cuda_check.source(module, [_double])
    entry = cuda_check.cubin_entry(unit)
    assert cache.lookup(entry, ".cubin") is None
    assert cuda_check.compile_unit(unit, module.name) is None
    assert cache.lookup(entry, ".cubin") is not None
