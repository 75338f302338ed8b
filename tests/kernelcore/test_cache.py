"""The kernel cache: keyed by content, safe under concurrent builds, self-healing."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import kernelcore as kc

SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import kernelcore as kc

    @kc.kernel
    def k(x: kc.array(dtype=float)):
        i = kc.tid()
        x[i] = float(i) * SCALE

    x = np.zeros(8, np.float32)
    kc.launch(k, dim=8, inputs=[x])
    print(int(x.sum()))
""")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(tmp_path, cache, scale=2.0, name="cachejob", write=True):
    path = tmp_path / f"{name}.py"
    if write:
        path.write_text(SCRIPT.replace("SCALE", repr(scale)))
    env = dict(os.environ, KERNELCORE_CACHE_DIR=str(cache), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _binaries(cache):
    return sorted(p for p in os.listdir(cache) if p.endswith(".so"))


def test_concurrent_processes_share_one_entry(tmp_path):
    cache = tmp_path / "cache"
    procs = [_run(tmp_path, cache, name="job", write=(i == 0)) for i in range(4)]
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert all(o[0].strip() == str(2 * sum(range(8))) for o in outs)
    assert len(_binaries(cache)) == 1
    assert not [p for p in os.listdir(cache) if p.startswith(".")], "temporary files left behind"


def test_corrupted_entry_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    p = _run(tmp_path, cache)
    p.communicate()
    (so,) = _binaries(cache)
    with open(cache / so, "r+b") as f:  # truncate the binary
        f.truncate(100)
    p = _run(tmp_path, cache)
    out, err = p.communicate()
    assert p.returncode == 0, err
    assert out.strip() == str(2 * sum(range(8)))
    assert os.path.getsize(cache / so) > 1000


def test_key_changes_with_source(tmp_path):
    cache = tmp_path / "cache"
    _run(tmp_path, cache, 2.0).communicate()
    _run(tmp_path, cache, 3.0).communicate()
    assert len(_binaries(cache)) == 2


def test_clear_kernel_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _run(tmp_path, cache).communicate()
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(cache))
    kc.clear_kernel_cache()
    assert _binaries(cache) == []


def test_generated_source_is_inspectable():
    from examples.integrate_particles import integrate

    src = integrate.source
    assert "k_integrate_" in src and "#line" in src and "integrate_particles.py" in src
    assert "_bwd_thread" in src  # adjoint emitted beside the forward
    x = np.zeros(1, np.float32)
    assert isinstance(src, str)


def test_clang_toolchain_when_installed(tmp_path):
    import shutil

    import pytest

    if shutil.which("clang++") is None:
        pytest.skip("clang++ is not installed (g++ is the default compiler)")
    cache = tmp_path / "cache"
    path = tmp_path / "clangjob.py"
    path.write_text(SCRIPT.replace("SCALE", "2.0"))
    env = dict(os.environ, KERNELCORE_CACHE_DIR=str(cache), KERNELCORE_CXX="clang++",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(2 * sum(range(8)))
