"""``assert`` in kernels and @kc.func (Warp semantics, docs/warp_compat.md): checked in debug mode,
where a failure raises KernelRuntimeError naming the kernel, the user's file:line, the thread
and the message; compiled out in release mode; ignored by the adjoint."""
import inspect

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import nvrtc

F64 = kc.array(dtype=kc.float64)


@pytest.fixture
def debug_mode(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")


@kc.func
def checked_sqrt(v: kc.float64):
    assert v >= 0.0, "checked_sqrt needs v >= 0"
    return kc.sqrt(v)


@kc.kernel
def asserting(x: F64, n: int, out: F64):
    i = kc.tid()
    assert i < x.shape[0] and x[i] > -10.0
    s = kc.float64(0.0)
    for k in range(n):
        assert k < n, "loop counter in range"
        s = s + checked_sqrt(x[i] * x[i] + kc.float64(k))
    assert x[i] != 3.0, "no threes"
    out[i] = s * x[i]


def _line(fn, text):
    pyfunc = fn.func if hasattr(fn, "func") else fn.overloads[0].pyfunc   # a kernel or a @kc.func
    src, first = inspect.getsourcelines(pyfunc)
    return first + next(k for k, line in enumerate(src) if text in line)


def _run(x, n=3):
    out = kc.zeros(len(x), dtype=kc.float64)
    kc.launch(asserting, len(x), inputs=[kc.array(x, dtype=kc.float64), n], outputs=[out])
    return out.numpy()


def _ref(x, n=3):
    return np.array([sum(np.sqrt(v * v + k) for k in range(n)) * v for v in x])


def test_passing_asserts_change_nothing(debug_mode):
    x = np.array([0.5, -1.5, 2.0, 0.25])
    np.testing.assert_allclose(_run(x), _ref(x), rtol=1e-14)


def test_failed_assert_names_kernel_line_thread_and_message(debug_mode):
    x = np.array([0.5, -1.5, 3.0, 0.25])
    with pytest.raises(kc.KernelRuntimeError) as e:
        _run(x)
    msg = str(e.value)
    assert "kernel 'asserting'" in msg and "assert x[i] != 3.0 failed: no threes" in msg
    assert f"{__file__}:{_line(asserting, 'no threes')}" in msg and "(thread 2)" in msg
    # the error state is reset: the next launch runs
    np.testing.assert_allclose(_run(np.ones(4)), _ref(np.ones(4)), rtol=1e-14)


def test_failed_assert_without_message(debug_mode):
    x = np.array([0.5, -11.0, 2.0, 0.25])
    with pytest.raises(kc.KernelRuntimeError, match=r"assert i < x.shape\[0\] and x\[i\] > -10.0 failed at .*test_assert.py:\d+ "
                                                     r"\(thread 1\)$"):
        _run(x)


def test_failed_assert_in_a_func_names_the_func_line(debug_mode):
    @kc.kernel
    def calls_checked_sqrt(x: F64, out: F64):
        i = kc.tid()
        out[i] = checked_sqrt(x[i])

    x = kc.array([4.0, 1.0, -1.0], dtype=kc.float64)
    with pytest.raises(kc.KernelRuntimeError) as e:
        kc.launch(calls_checked_sqrt, 3, inputs=[x], outputs=[kc.zeros(3, dtype=kc.float64)])
    msg = str(e.value)
    assert "kernel 'calls_checked_sqrt'" in msg and "checked_sqrt needs v >= 0" in msg and "(thread 2)" in msg
    assert f"{__file__}:{_line(checked_sqrt, 'checked_sqrt needs')}" in msg


def test_release_mode_compiles_asserts_out(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "release")
    x = np.array([0.5, -11.0, 3.0, 0.25])
    np.testing.assert_allclose(_run(x), _ref(x), rtol=1e-14)      # no error, same numbers
    assert "assert_check" not in asserting.source
    monkeypatch.setattr(kc.config, "mode", "debug")
    assert "kc::assert_check" in asserting.source


def test_adjoint_ignores_asserts(debug_mode):
    x0 = np.array([0.5, -1.5, 2.0, 0.25])
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(4, dtype=kc.float64, requires_grad=True)
    r = kc.autograd.gradcheck(asserting, dim=4, inputs=[x, 3], outputs=[out], eps=1e-6, atol=1e-7, rtol=1e-6,
                              raise_exception=False, show_summary=False)
    assert r, r.summary()
    tape = kc.Tape()
    with tape:
        kc.launch(asserting, 4, inputs=[x, 3], outputs=[out])
    tape.backward(grads={out: kc.array(np.ones(4), dtype=kc.float64)})
    g = [sum(np.sqrt(v * v + k) + v * v / np.sqrt(v * v + k) for k in range(3)) for v in x0]
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-12)


def test_assert_message_must_be_a_string_literal(tmp_path):
    path = tmp_path / "bad_assert.py"
    path.write_text("import kernelcore as kc\n\n@kc.kernel\ndef bad(x: kc.array(dtype=float)):\n"
                    "    i = kc.tid()\n    assert x[i] > 0.0, i\n")
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    with pytest.raises(kc.KernelCompileError, match="must be a string literal") as e:
        kc.launch(ns["bad"], 1, inputs=[kc.zeros(1)])
    assert f"{path}:6" in str(e.value)


def test_asserts_compile_as_cuda_in_debug_mode(debug_mode):
    if not nvrtc.is_available():
        pytest.skip("NVRTC is not available")
    src = asserting.module.generate([asserting], "cuda")
    assert "kc::assert_check" in src
    nvrtc.compile_ptx(src, "asserts_debug.cu")
