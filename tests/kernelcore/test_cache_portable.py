"""Kernel-cache keys do not contain the checkout's directory (kernelcore/cache.py portable_source):
the same module in two directories is built once; a module that differs in one constant, or
defined in a file of another name, is not taken from the other's entry."""
import os
import subprocess
import sys
import textwrap

from kernelcore import cache

TINY = textwrap.dedent('''
    import numpy as np
    import kernelcore as kc


    @kc.kernel
    def scale(x: kc.array(dtype=float), y: kc.array(dtype=float)):
        i = kc.tid()
        y[i] = x[i] * SCALE


    def run():
        x = kc.array(np.arange(4, dtype=np.float32), dtype=float)
        y = kc.zeros(4, dtype=float)
        kc.launch(scale, dim=4, inputs=[x], outputs=[y])
        print(y.numpy().tolist())
''')


def _checkout(root, name, scale, module="tinykc"):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, f"{module}.py"), "w") as f:
        f.write(TINY.replace("SCALE", scale))
    return d


def _run(checkout, cache_dir, module="tinykc"):
    """Launch the checkout's kernel in a fresh process: (printed y, the cache's CPU binaries)."""
    env = dict(os.environ, KERNELCORE_CACHE_DIR=cache_dir, PYTHONPATH=os.pathsep.join([checkout] + sys.path))
    out = subprocess.run([sys.executable, "-c", f"import {module}; {module}.run()"], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip(), sorted(n for n in os.listdir(cache_dir) if n.startswith("cpu_") and n.endswith(".so"))


def test_two_checkouts_of_one_module_share_one_build_and_different_sources_do_not(tmp_path):
    cache_dir = str(tmp_path / "cache")
    a = _checkout(str(tmp_path), "clone_a", "2.0")
    b = _checkout(str(tmp_path), "clone_b", "2.0")
    c = _checkout(str(tmp_path), "clone_c", "3.0")
    y_a, built_a = _run(a, cache_dir)
    y_b, built_b = _run(b, cache_dir)
    assert y_a == y_b == "[0.0, 2.0, 4.0, 6.0]"
    assert len(built_a) == 1 and built_b == built_a   # clone_b found clone_a's build
    y_c, built_c = _run(c, cache_dir)
    assert y_c == "[0.0, 3.0, 6.0, 9.0]"   # not clone_a's binary
    assert len(built_c) == 2


def test_portable_source_leaves_out_only_the_directory():
    root = os.path.abspath(sys.path[0] or os.getcwd())
    here = os.path.join(root, "pkg", "mod.py")
    text = f'#line 3 "{here}"\nx = 1;\n#include "{os.path.join(root, "pkg", "h.h")}"\n#line 4 "/nowhere/on/path/mod.py"\n'
    out = cache.portable_source(text)
    assert root not in out
    assert f'#line 3 "<path>{os.sep}pkg{os.sep}mod.py"' in out and "x = 1;" in out
    assert f'#include "<path>{os.sep}pkg{os.sep}h.h"' in out
    assert '#line 4 "/nowhere/on/path/mod.py"' in out   # outside sys.path: kept whole
    # another file name, or another package, is another text
    assert cache.portable_source(text.replace("mod.py", "other.py", 1)) != out
    assert cache.portable_source(text.replace(os.path.join("pkg", "mod.py"), os.path.join("pkg2", "mod.py"))) != out
