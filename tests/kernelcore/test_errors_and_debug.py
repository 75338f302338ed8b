"""Errors name the user's code; debug mode turns out-of-bounds accesses into exceptions."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernelcore as kc


def _compile_error(tmp_path, body, name="bad"):
    """Write a kernel into a real file, import it and launch it; return the compile error."""
    src = tmp_path / f"{name}.py"
    src.write_text("import kernelcore as kc\n\n" + textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = __import__(name)
        with pytest.raises(kc.KernelCompileError) as info:
            kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=float)])
        return info.value, src
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


@pytest.mark.parametrize("body,line,message,source", [
    ("""
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         i = kc.tid()
         x[i] = x[i] + kc.vec3(1.0, 2.0, 3.0)
     """, 7, "no overload of 'add'", "x[i] = x[i] + kc.vec3"),
    ("""
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         i = kc.tid()
         x[i] = undefined_name * 2.0
     """, 7, "unknown name 'undefined_name'", "undefined_name * 2.0"),
    ("""
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         i = kc.tid()
         with open("f") as f:
             pass
     """, 7, "unsupported statement 'With'", "with open"),
    ("""
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         i = kc.tid()
         y = [1, 2, 3]
     """, 7, "unsupported expression 'List'", "y = [1, 2, 3]"),
    ("""
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         i = kc.tid()
         n = int(3)
         x[i] = n
     """, 8, "expected float32", "x[i] = n"),
    ("""
     import math
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         x[0] = math.floor(2.5)
     """, 7, "cannot call 'math.floor'", "math.floor"),
    ("""
     @kc.kernel
     def k(x: kc.array(dtype=float)):
         s = int(0)
         for i in range(len(x)):
             s = float(s)
     """, 7, "changes type inside the loop", "for i in range"),
])
def test_compile_errors_name_file_line_and_source(tmp_path, body, line, message, source):
    err, path = _compile_error(tmp_path, body)
    text = str(err)
    assert message in text
    assert f"{path}:{line}" in text
    assert source in text
    assert "'k'" in text


@kc.kernel
def oob(x: kc.array(dtype=float), idx: int):
    x[idx] = 1.0


@kc.kernel
def oob2(x: kc.array2d(dtype=float), i: int, j: int, out: kc.array(dtype=float)):
    out[0] = x[i, j]


def test_debug_mode_reports_out_of_bounds(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")
    x = kc.zeros(4, dtype=float)
    kc.launch(oob, dim=1, inputs=[x, 3])
    assert x.numpy()[3] == 1.0
    with pytest.raises(kc.KernelRuntimeError) as info:
        kc.launch(oob, dim=1, inputs=[x, 10])
    msg = str(info.value)
    assert "kernel 'oob'" in msg and "(10,)" in msg and "shape (4,)" in msg
    assert f"{__file__}:{oob.defn.firstline + 2}" in msg
    y = kc.zeros((2, 3), dtype=float)
    with pytest.raises(kc.KernelRuntimeError, match=r"index \(1, 3\) out of bounds for array of shape \(2, 3\)"):
        kc.launch(oob2, dim=1, inputs=[y, 1, 3, kc.zeros(1, dtype=float)])
    kc.launch(oob, dim=1, inputs=[x, 0])  # the error state was reset


def test_native_build_errors_show_our_message(tmp_path):
    @kc.func_native("this is not C++;")
    def broken(x: float) -> float:
        ...

    src = tmp_path / "nb.py"
    src.write_text(textwrap.dedent("""
        import kernelcore as kc
        def make(fn):
            @kc.kernel
            def k(x: kc.array(dtype=float)):
                x[0] = fn(1.0)
            return k
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import nb
        with pytest.raises(kc.NativeBuildError) as info:
            kc.launch(nb.make(broken), dim=1, inputs=[kc.zeros(1, dtype=float)])
    finally:
        sys.path.remove(str(tmp_path))
    assert "native build of module" in str(info.value) and "generated source" in str(info.value)


@kc.kernel
def heavy(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    s = float(0.0)
    for k in range(50):
        s = s + kc.sin(x[i] * float(k)) * 0.5
    out[i] = s


def _run_heavy(threads):
    env = dict(os.environ, KERNELCORE_NUM_THREADS=str(threads))
    code = ("import numpy as np, kernelcore as kc, sys; sys.path.insert(0, %r)\n"
            "from test_errors_and_debug import heavy\n"
            "x = np.linspace(0, 10, 100000).astype(np.float32); out = np.zeros_like(x)\n"
            "kc.launch(heavy, dim=len(x), inputs=[x, out]); sys.stdout.buffer.write(out.tobytes())") % os.path.dirname(__file__)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout


def test_results_identical_for_any_thread_count():
    assert _run_heavy(1) == _run_heavy(2) == _run_heavy(3)
