"""One broken kernel does not poison its module; programs the frontend accepts compile;
errors name the user's file:line and say what to do; default and keyword arguments."""
import importlib
import sys
import textwrap
import uuid

import numpy as np
import pytest

import kernelcore as kc


def _module(tmp_path, body):
    """Import ``import kernelcore as kc`` + body from a real file (kernels need their source)."""
    name = "fe_" + uuid.uuid4().hex[:10]
    path = tmp_path / f"{name}.py"
    path.write_text("import kernelcore as kc\n" + textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name), str(path)
    finally:
        sys.path.remove(str(tmp_path))


def _line(path, text):
    """1-based line number of the first line of ``path`` containing ``text``."""
    with open(path) as f:
        return next(k for k, line in enumerate(f, 1) if text in line)


# ---------------------------------------------------------------------------- isolation
ISOLATION = """
@kc.func_native("this is not C++;")
def broken_native(x: float) -> float:
    ...

@kc.kernel
def good_a(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = 1.0

@kc.kernel
def bad_native(a: kc.array(dtype=float)):
    a[0] = broken_native(1.0)

@kc.kernel
def bad_frontend(a: kc.array(dtype=float)):
    a[0] = no_such_name

@kc.kernel
def good_b(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = 2.0
"""


def test_a_kernel_that_fails_to_build_leaves_the_others_runnable(tmp_path):
    mod, path = _module(tmp_path, ISOLATION)
    a = kc.zeros(3, dtype=float)
    with pytest.raises(kc.NativeBuildError):
        kc.launch(mod.bad_native, dim=1, inputs=[a])
    with pytest.raises(kc.KernelCompileError) as info:
        kc.launch(mod.bad_frontend, dim=1, inputs=[a])
    assert f"{path}:{_line(path, 'a[0] = no_such_name')}" in str(info.value)
    kc.launch(mod.good_a, dim=3, inputs=[a])
    assert a.numpy().tolist() == [1.0, 1.0, 1.0]
    kc.launch(mod.good_b, dim=3, inputs=[a])
    assert a.numpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(kc.NativeBuildError):   # still its own error, every time
        kc.launch(mod.bad_native, dim=1, inputs=[a])


def test_a_good_kernel_launched_first_is_not_blocked_by_a_broken_one(tmp_path):
    mod, _ = _module(tmp_path, ISOLATION)
    a = kc.zeros(2, dtype=float)
    kc.launch(mod.good_b, dim=2, inputs=[a])   # the chunk would hold all four kernels
    assert a.numpy().tolist() == [2.0, 2.0]
    kc.launch(mod.good_a, dim=2, inputs=[a])
    assert a.numpy().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------- generated C++
def test_tid_inside_a_func_is_a_frontend_error(tmp_path):
    mod, path = _module(tmp_path, """
        @kc.func
        def f(x: float) -> float:
            return x + float(kc.tid())

        @kc.func
        def g(x: float) -> float:
            i, j = kc.tid()
            return x

        @kc.kernel
        def k(a: kc.array(dtype=float)):
            a[0] = f(1.0)

        @kc.kernel
        def k2(a: kc.array(dtype=float)):
            a[0] = g(1.0)
    """)
    for kernel, text in ((mod.k, "return x + float(kc.tid())"), (mod.k2, "i, j = kc.tid()")):
        with pytest.raises(kc.KernelCompileError) as info:
            kc.launch(kernel, dim=1, inputs=[kc.zeros(1, dtype=float)])
        msg = str(info.value)
        assert "kc.tid() is only available in a @kc.kernel" in msg and f"{path}:{_line(path, text)}" in msg


def test_print_of_quaternions_and_transforms_compiles(tmp_path, capfd):
    mod, _ = _module(tmp_path, """
        @kc.kernel
        def k(a: kc.array(dtype=float)):
            q = kc.quat(0.0, 0.0, 0.5, 1.0)
            print(q)
            print(kc.transform(kc.vec3(1.0, 2.0, 3.0), q))
    """)
    kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=float)])
    out = capfd.readouterr().out
    assert "[0 0 0.5 1]" in out and "([1 2 3], [0 0 0.5 1])" in out


def test_print_of_a_struct_is_a_frontend_error(tmp_path):
    mod, path = _module(tmp_path, """
        @kc.struct
        class S:
            x: float

        @kc.kernel
        def k(a: kc.array(dtype=float)):
            s = S()
            print(s)
    """)
    with pytest.raises(kc.KernelCompileError, match="print.. cannot show a S value") as info:
        kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=float)])
    assert f"{path}:{_line(path, 'print(s)')}" in str(info.value)


# ---------------------------------------------------------------------------- error messages
def test_local_func_may_call_one_defined_after_it(tmp_path):
    mod, _ = _module(tmp_path, """
        def make():
            @kc.func
            def first(x: float) -> float:
                return second(x) + 1.0

            @kc.func
            def second(x: float) -> float:
                return x * 2.0

            @kc.kernel
            def k(a: kc.array(dtype=float)):
                a[0] = first(a[0])
            return k
    """)
    a = kc.array(np.array([3.0], np.float32))
    kc.launch(mod.make(), dim=1, inputs=[a])
    assert a.numpy()[0] == 7.0


def test_local_name_never_assigned_is_named(tmp_path):
    mod, path = _module(tmp_path, """
        def make():
            @kc.kernel
            def k(a: kc.array(dtype=float)):
                a[0] = later
            kc.launch(k, dim=1, inputs=[kc.zeros(1, dtype=float)])
            later = 1.0
    """)
    with pytest.raises(kc.KernelCompileError, match="'later' is not assigned yet") as info:
        mod.make()
    assert f"{path}:{_line(path, 'a[0] = later')}" in str(info.value)


def test_recursion_is_a_frontend_error(tmp_path):
    mod, path = _module(tmp_path, """
        @kc.func
        def down(x: float) -> float:
            if x > 1.0:
                return up(x - 1.0)
            return x

        @kc.func
        def up(x: float) -> float:
            return down(x)

        @kc.kernel
        def k(a: kc.array(dtype=float)):
            a[0] = down(a[0])
    """)
    with pytest.raises(kc.KernelCompileError, match="cannot recurse; rewrite the recursion as a loop") as info:
        kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=float)])
    assert f"{path}:{_line(path, 'return up(x - 1.0)')}" in str(info.value) or \
        f"{path}:{_line(path, 'return down(x)')}" in str(info.value)


def test_array_method_inside_a_kernel_says_what_to_do(tmp_path):
    mod, path = _module(tmp_path, """
        def run():
            o = kc.zeros(3, dtype=float)

            @kc.kernel
            def k(a: kc.array(dtype=float)):
                o.fill_(1.0)
            kc.launch(k, dim=1, inputs=[o])

        @kc.kernel
        def k2(a: kc.array(dtype=float)):
            a.zero_()
    """)
    with pytest.raises(kc.KernelCompileError, match=r"o.fill_\(\): arrays have no methods inside kernels") as info:
        mod.run()
    assert f"{path}:{_line(path, 'o.fill_(1.0)')}" in str(info.value)
    with pytest.raises(kc.KernelCompileError, match=r"a.zero_\(\): arrays have no methods"):
        kc.launch(mod.k2, dim=1, inputs=[kc.zeros(1, dtype=float)])


def test_unknown_name_says_where_kernels_look(tmp_path):
    mod, path = _module(tmp_path, """
        @kc.kernel
        def k(a: kc.array(dtype=float)):
            a[0] = missing * 2.0
    """)
    with pytest.raises(kc.KernelCompileError, match="unknown name 'missing': a kernel sees its arguments"):
        kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=float)])


# ---------------------------------------------------------------------------- default / keyword args
DEFAULTS = """
SCALE = kc.constant(10.0)

@kc.func
def scaled(x: float, s: float = 2.0, offset: kc.vec3 = kc.vec3(1.0, 2.0, 3.0), k: int = 1) -> float:
    return x * s + offset[k]

@kc.func
def scaled_int(x: int, s: int = 3) -> int:
    return x * s

@kc.kernel
def k(a: kc.array(dtype=float), out: kc.array(dtype=float), outi: kc.array(dtype=int)):
    x = a[0]
    out[0] = scaled(x)                                  # 3 * 2 + 2
    out[1] = scaled(x, 4.0)                             # 3 * 4 + 2
    out[2] = scaled(x, s=SCALE)                         # 3 * 10 + 2
    out[3] = scaled(offset=kc.vec3(0.0, 0.0, 5.0), x=x, k=2)   # 3 * 2 + 5
    out[4] = scaled(x, 1.0, kc.vec3(7.0), 0)            # all positional
    outi[0] = scaled_int(4)
    outi[1] = scaled_int(s=-1, x=4)
"""


def test_func_default_and_keyword_arguments(tmp_path):
    mod, _ = _module(tmp_path, DEFAULTS)
    out, outi = np.zeros(5, np.float32), np.zeros(2, np.int32)
    kc.launch(mod.k, dim=1, inputs=[np.array([3.0], np.float32), out, outi])
    assert out.tolist() == [8.0, 14.0, 32.0, 11.0, 10.0]
    assert outi.tolist() == [12, -4]


def test_func_default_arguments_are_differentiable(tmp_path):
    mod, _ = _module(tmp_path, """
        @kc.func
        def f(x: float, p: float = 3.0) -> float:
            return x * x * p

        @kc.kernel
        def k(a: kc.array(dtype=float), out: kc.array(dtype=float)):
            i = kc.tid()
            out[i] = f(a[i]) + f(p=0.5, x=a[i])
    """)
    a = kc.array(np.array([0.5, -2.0], np.float32), requires_grad=True)
    out = kc.zeros(2, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(mod.k, dim=2, inputs=[a, out])
    tape.backward(grads={out: kc.array(np.ones(2, np.float32))})
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.numpy() * 3.5, rtol=1e-6)   # d/dx 3.5 x^2


@pytest.mark.parametrize("call,message", [
    ("scaled()", "scaled() is missing argument 'x'"),
    ("scaled(1.0, nope=2.0)", "scaled() got an unexpected keyword argument 'nope'"),
    ("scaled(1.0, x=2.0)", "scaled() got argument 'x' twice"),
    ("scaled(1.0, 2.0, kc.vec3(), 1, 5)", "scaled() takes 4 arguments, got 5 positional"),
    ("scaled(kc.vec3())", "no overload of function 'scaled' accepts (vec3)"),
])
def test_bad_calls_name_the_problem(tmp_path, call, message):
    mod, path = _module(tmp_path, DEFAULTS.split("@kc.kernel")[0] + f"""
@kc.kernel
def bad(out: kc.array(dtype=float)):
    out[0] = {call}
""")
    with pytest.raises(kc.KernelCompileError) as info:
        kc.launch(mod.bad, dim=1, inputs=[kc.zeros(1, dtype=float)])
    assert message in str(info.value) and f"{path}:{_line(path, 'out[0] = ' + call)}" in str(info.value)


def test_default_that_is_not_a_kernel_value_is_named(tmp_path):
    mod, _ = _module(tmp_path, """
        @kc.func
        def f(x: float, s: float = "two") -> float:
            return x * s

        @kc.kernel
        def k(out: kc.array(dtype=float)):
            out[0] = f(1.0)
    """)
    with pytest.raises(kc.KernelCompileError, match="default value 'two' of argument 's' of 'f' is not a kernel value"):
        kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=float)])


# ---------------------------------------------------------------------------- kc.static
def test_static_expressions_are_evaluated_when_the_kernel_is_built(tmp_path):
    mod, path = _module(tmp_path, """
        import math
        N = 3
        WEIGHTS = [0.5, 2.0, 10.0]

        @kc.func
        def double(x: float) -> float:
            return x * 2.0

        @kc.func
        def square(x: float) -> float:
            return x * x

        OPS = [double, square]

        @kc.kernel
        def k(a: kc.array(dtype=float), out: kc.array(dtype=float)):
            i = kc.tid()
            s = float(0.0)
            for j in range(kc.static(N)):
                s = s + a[i] * kc.static(WEIGHTS[j])
            out[i] = s + kc.static(math.sqrt(16.0)) + kc.static(OPS[1])(a[i]) + kc.static(OPS[0])(1.0)

        @kc.kernel
        def bad(a: kc.array(dtype=float), out: kc.array(dtype=float)):
            out[0] = kc.static(WEIGHTS[7])
    """)
    a = np.array([1.0, -2.0], np.float32)
    out = np.zeros(2, np.float32)
    kc.launch(mod.k, dim=2, inputs=[a, out])
    np.testing.assert_allclose(out, a * 12.5 + 4.0 + a * a + 2.0)
    with pytest.raises(kc.KernelCompileError, match=r"kc.static\(WEIGHTS\[7\]\) could not be evaluated.*IndexError") as info:
        kc.launch(mod.bad, dim=1, inputs=[a, out])
    assert f"{path}:{_line(path, 'kc.static(WEIGHTS[7])')}" in str(info.value)
