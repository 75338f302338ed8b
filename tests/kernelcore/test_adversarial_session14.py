"""Adversarial checks of session 14: input that used to crash the process or pass silently."""
import importlib.util
import textwrap
import warnings

import numpy as np
import pytest

import kernelcore as kc


# ----------------------------------------------------------------- None for an array argument
@kc.kernel
def double_into(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * 2.0


@kc.kernel
def fill_or_copy(x: kc.array(dtype=float), n: int, y: kc.array(dtype=float)):
    # reads x only when n > 0: None for x is fine with n = 0 (Warp's null array)
    i = kc.tid()
    v = 1.5
    if n > 0:
        v = float(x.shape[0])
    y[i] = v


def test_none_for_a_read_array_is_an_error_not_a_segfault():
    out = kc.zeros(4, dtype=float)
    kc.launch(double_into, dim=4, inputs=[kc.full(4, 3.0, dtype=float), out])  # the fast path is cached now
    with pytest.raises(ValueError, match=r"kernel 'double_into' argument 'x': got None \(a null array\), but the "
                                         r"kernel reads it \(.*test_adversarial_session14.py:\d+\)"):
        kc.launch(double_into, dim=4, inputs=[None, out])
    np.testing.assert_array_equal(out.numpy(), [6.0] * 4)


def test_none_for_a_written_array_is_an_error():
    with pytest.raises(ValueError, match="argument 'y': got None .* the kernel writes it"):
        kc.launch(double_into, dim=4, inputs=[kc.zeros(4, dtype=float)], outputs=[None])


def test_none_for_an_array_used_only_for_its_shape_is_a_null_array():
    out = kc.zeros(3, dtype=float)
    kc.launch(fill_or_copy, dim=3, inputs=[None, 1], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [0.0] * 3)  # a null array's shape is all zeros
    kc.launch(fill_or_copy, dim=3, inputs=[kc.zeros(5, dtype=float), 1], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [5.0] * 3)


# ----------------------------------------------------------------- integer division by a literal 0
def _kernel_from_source(tmp_path, name, body):
    src = tmp_path / f"{name}.py"
    src.write_text("import kernelcore as kc\n\n@kc.kernel\ndef k(y: kc.array(dtype=float)):\n"
                   + textwrap.indent(textwrap.dedent(body), "    "))
    spec = importlib.util.spec_from_file_location(name, src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k, src


@pytest.mark.parametrize("body,line", [
    ("y[0] = float(1 / 0)\n", 5),
    ("y[0] = float(7 % 0)\n", 5),
    ("i = kc.tid()\ny[0] = float(i / 0)\n", 6),
    ("i = kc.tid()\ny[0] = float(i % 0)\n", 6),
    ("i = kc.tid()\ni //= 0\ny[0] = float(i)\n", 6),
])
def test_integer_division_by_a_literal_zero_is_a_compile_error(tmp_path, body, line):
    k, src = _kernel_from_source(tmp_path, f"divzero_{abs(hash(body))}", body)
    with pytest.raises(kc.KernelCompileError) as info:
        kc.launch(k, dim=1, outputs=[kc.zeros(1, dtype=float)])
    assert "integer division or modulo by zero" in str(info.value) and f"{src}:{line}" in str(info.value)


def test_float_division_by_zero_is_ieee_and_a_guarded_zero_divisor_compiles(tmp_path):
    k, _ = _kernel_from_source(tmp_path, "divzero_ieee", """
        i = kc.tid()
        d = 0
        y[0] = 1.0 / 0.0 + float(i) / 0
        if d != 0:
            y[0] = float(i // d)
    """)
    y = kc.zeros(1, dtype=float)
    kc.launch(k, dim=1, outputs=[y])
    assert np.isnan(y.numpy()[0])  # inf + 0/0


# ----------------------------------------------------------------- a taped intermediate without requires_grad
@kc.kernel
def scale_by(x: kc.array(dtype=float), s: float, y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * s


@kc.kernel
def sum_into(y: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, y[i])


def _rollout(y_requires_grad):
    x = kc.full(4, 1.0, dtype=float, requires_grad=True)
    y = kc.zeros(4, dtype=float, requires_grad=y_requires_grad)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            kc.launch(scale_by, 4, inputs=[x, 3.0], outputs=[y])
            kc.launch(sum_into, 4, inputs=[y], outputs=[loss])
    tape.backward(loss)
    return x.grad.numpy(), [str(w.message) for w in caught], caught


def test_intermediate_without_requires_grad_is_warned_about():
    from kernelcore import tape as tape_mod

    tape_mod._warned_gradless.clear()
    grad, messages, caught = _rollout(False)
    np.testing.assert_array_equal(grad, [0.0] * 4)  # d loss / d x = 3 is lost: what the warning is about
    hits = [m for m in messages if "without requires_grad" in m]
    assert len(hits) == 1, messages
    assert "kernel 'sum_into'" in hits[0] and "argument 'y'" in hits[0] and "kernel 'scale_by'" in hits[0]
    assert caught[messages.index(hits[0])].filename == __file__  # points at the user's launch
    _, messages, _ = _rollout(False)
    assert not [m for m in messages if "without requires_grad" in m]  # once per kernel and argument


def test_intermediate_with_requires_grad_and_untaped_launches_are_not_warned_about():
    from kernelcore import tape as tape_mod

    tape_mod._warned_gradless.clear()
    grad, messages, _ = _rollout(True)
    np.testing.assert_allclose(grad, [3.0] * 4)  # analytic: loss = sum(3 x)
    assert not [m for m in messages if "without requires_grad" in m]
    # an input that needs no gradient gives an intermediate that needs none either
    x, y = kc.full(4, 1.0, dtype=float), kc.zeros(4, dtype=float)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with kc.Tape():
            kc.launch(scale_by, 4, inputs=[x, 3.0], outputs=[y])
            kc.launch(sum_into, 4, inputs=[y], outputs=[loss])


# ----------------------------------------------------------------- arrays: dtypes numpy has and we do not; huge sizes
@pytest.mark.parametrize("data,kind", [(np.array([1, "a"], dtype=object), "object"),
                                       (np.array([1 + 2j]), "complex128"), (np.array(["ab"]), "'U' kind")])
def test_from_numpy_of_an_unsupported_dtype_names_it(data, kind):
    with pytest.raises(TypeError, match=f"numpy dtype .*{kind}.* has no kernelcore element type; supported: .*float32"):
        kc.from_numpy(data)


@pytest.mark.parametrize("make", [lambda: kc.zeros(10**13), lambda: kc.empty((10**10, 10**10), dtype=kc.vec3),
                                  lambda: kc.full(10**13, 1.0)])
def test_a_huge_array_is_a_one_line_memory_error(make):
    with pytest.raises(MemoryError, match=r"cannot allocate a kernelcore array of shape \(\d+,( \d+)?\) and dtype "
                                          r"(float32|vec3): \d+ bytes \(.* GiB\)$"):
        make()


# ----------------------------------------------------------------- launch dims and argument annotations
@kc.kernel
def mark(y: kc.array(dtype=int)):
    y[kc.tid()] = 1


@pytest.mark.parametrize("dim", [2.0, "2", (2.0,), True, None])
def test_a_launch_dim_that_is_not_ints_is_an_error(dim):
    y = kc.zeros(2, dtype=int)
    with pytest.raises(TypeError, match=r"launch dim must be an int or a tuple of 1 to 4 ints, got "):
        kc.launch(mark, dim, outputs=[y])
    np.testing.assert_array_equal(y.numpy(), [0, 0])   # "2" launched two threads before
    kc.launch(mark, np.array([2]), outputs=[y])
    np.testing.assert_array_equal(y.numpy(), [1, 1])


def test_a_python_type_that_is_no_kernel_type_is_a_compile_error_at_its_line(tmp_path):
    src = tmp_path / "str_annotation.py"
    src.write_text("import kernelcore as kc\n\n@kc.kernel\ndef k(s: str, y: kc.array(dtype=int)):\n    y[0] = 1\n")
    spec = importlib.util.spec_from_file_location("str_annotation", src)
    mod = importlib.util.module_from_spec(spec)
    with pytest.raises(kc.KernelCompileError) as info:
        spec.loader.exec_module(mod)
        kc.launch(mod.k, 1, inputs=["a"], outputs=[kc.zeros(1, dtype=int)])
    assert "annotation <class 'str'> is not a kernel type" in str(info.value) and f"{src}:4" in str(info.value)


@pytest.mark.parametrize("data,shown", [([2**40], "1099511627776"), (np.array([1.0, np.nan]), "nan"),
                                        (np.array([-2**40, 3]), "-1099511627776")])
def test_integer_data_out_of_range_is_an_error_not_a_wrap(data, shown):
    # before: 2**40 became 0 and NaN became -2**31, silently
    with pytest.raises(ValueError, match=rf"data with values in \[.*{shown}.*\] cannot be stored as int32 \(32-bit"):
        kc.array(data, dtype=int)
    # bit patterns of the same width are kept, as C casts do
    assert kc.array([-1], dtype=kc.uint32).numpy()[0] == 2**32 - 1
    assert kc.array([2**32 - 1], dtype=int).numpy()[0] == -1


def test_filling_an_integer_array_with_nan_is_an_error():
    with pytest.raises(ValueError, match=r"data with values in \[nan, nan\] cannot be stored as int32"):
        kc.full(3, float("nan"), dtype=int)
    a = kc.full(3, 7, dtype=int)
    with pytest.raises(ValueError, match="cannot be stored as int32"):
        a.fill_(2**40)
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7])


def test_data_with_more_than_four_dimensions_is_an_error():
    with pytest.raises(ValueError, match=r"arrays have 1 to 4 dimensions, got data of shape \(1, 1, 1, 1, 2\)"):
        kc.from_numpy(np.zeros((1, 1, 1, 1, 2)))
    with pytest.raises(ValueError, match=r"got data of shape \(1, 1, 1, 1, 1, 3\) for vec3"):
        kc.array(np.zeros((1, 1, 1, 1, 1, 3)), dtype=kc.vec3)
    assert kc.array(np.zeros((1, 1, 1, 2, 3)), dtype=kc.vec3).shape == (1, 1, 1, 2)
