"""Adversarial checks of session 15: input that used to crash the process or pass silently."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import KernelRuntimeError


def _line_of(text):
    src = open(__file__).read().splitlines()
    return 1 + next(k for k, s in enumerate(src) if s.strip() == text)


# ----------------------------------------------------------------- run-time component indices
@kc.kernel
def read_component(idx: kc.array(dtype=int), y: kc.array(dtype=float)):
    t = kc.tid()
    v = kc.vec3(1.0, 2.0, 3.0)
    y[t] = v[idx[t]]


@kc.kernel
def write_component(idx: kc.array(dtype=int), y: kc.array(dtype=float)):
    t = kc.tid()
    v = kc.vec3(1.0, 2.0, 3.0)
    v[idx[t]] = 7.0
    y[t] = v[0] + v[1] + v[2]


@kc.kernel
def read_matrix_entry(i: kc.array(dtype=int), j: kc.array(dtype=int), y: kc.array(dtype=float)):
    t = kc.tid()
    m = kc.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    y[t] = m[i[t], j[t]]


def _ints(*v):
    return kc.array(np.array(v, dtype=np.int32), dtype=int)


def test_run_time_component_indices_in_range_count_from_the_end_as_in_python():
    y = kc.zeros(6, dtype=float)
    kc.launch(read_component, dim=6, inputs=[_ints(0, 1, 2, -1, -2, -3)], outputs=[y])
    np.testing.assert_array_equal(y.numpy(), np.array([1.0, 2.0, 3.0])[[0, 1, 2, -1, -2, -3]])
    kc.launch(read_matrix_entry, dim=3, inputs=[_ints(0, 2, -1), _ints(1, -3, 2)], outputs=[y[:3]])
    m = np.arange(1.0, 10.0).reshape(3, 3)
    np.testing.assert_array_equal(y.numpy()[:3], [m[0, 1], m[2, -3], m[-1, 2]])


@pytest.mark.parametrize("bad", [3, 4, -4, 1 << 30])
def test_a_run_time_component_read_out_of_range_is_an_error_at_its_line(bad):
    y = kc.zeros(2, dtype=float)
    line = _line_of("y[t] = v[idx[t]]")
    with pytest.raises(KernelRuntimeError, match=rf"kernel 'read_component': component index {bad} out of range for "
                                                 rf"a value of 3 components at .*test_adversarial_15.py:{line}"):
        kc.launch(read_component, dim=2, inputs=[_ints(1, bad)], outputs=[y])
    assert y.numpy()[0] == 2.0  # the thread in range ran as usual
    # the error is reported once: the next launch with good indices runs clean
    kc.launch(read_component, dim=2, inputs=[_ints(2, 0)], outputs=[y])
    np.testing.assert_array_equal(y.numpy(), [3.0, 1.0])


def test_a_run_time_component_write_out_of_range_is_an_error_not_a_stack_write():
    y = kc.zeros(2, dtype=float)
    line = _line_of("v[idx[t]] = 7.0")
    with pytest.raises(KernelRuntimeError, match=rf"component index 5 out of range .*:{line}"):
        kc.launch(write_component, dim=2, inputs=[_ints(1, 5)], outputs=[y])
    assert y.numpy()[0] == 1.0 + 7.0 + 3.0


def test_a_run_time_matrix_column_out_of_range_is_an_error():
    y = kc.zeros(1, dtype=float)
    with pytest.raises(KernelRuntimeError, match=r"component index 3 out of range for a value of 3 components"):
        kc.launch(read_matrix_entry, dim=1, inputs=[_ints(1), _ints(3)], outputs=[y])


def test_a_run_time_component_index_out_of_range_in_debug_mode_names_the_thread(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")
    y = kc.zeros(3, dtype=float)
    with pytest.raises(KernelRuntimeError, match=r"component index -7 out of range .* \(thread 2\)"):
        kc.launch(read_component, dim=3, inputs=[_ints(0, 1, -7)], outputs=[y])


# ----------------------------------------------------------------- None for an array field of a struct
@kc.struct
class Inner15:
    a: kc.array(dtype=float)
    b: kc.array(dtype=float)


@kc.struct
class Outer15:
    inner: Inner15
    w: kc.array(dtype=float)
    scale: float


@kc.func
def read_b(s: Inner15, t: int):
    return s.b[t]


@kc.func
def write_one(a: kc.array(dtype=float), t: int):
    a[t] = 1.0


@kc.kernel
def struct_fields(o: Outer15, y: kc.array(dtype=float)):
    t = kc.tid()
    y[t] = read_b(o.inner, t) * o.scale + float(o.inner.a.shape[0])  # a: only its shape (a null array's is 0)
    write_one(o.w, t)


@kc.kernel
def struct_direct(s: Inner15, y: kc.array(dtype=float)):
    t = kc.tid()
    y[t] = s.a[t]
    s.b[t] = 2.0


def _outer(a=None, b=True, w=True):
    i = Inner15()
    i.a = a
    i.b = kc.full(3, 4.0, dtype=float) if b else None
    o = Outer15()
    o.inner, o.w, o.scale = i, kc.zeros(3, dtype=float) if w else None, 0.5
    return o


def test_an_array_field_left_none_but_unused_is_a_null_array():
    y = kc.zeros(3, dtype=float)
    o = _outer()
    kc.launch(struct_fields, dim=3, inputs=[o], outputs=[y])
    np.testing.assert_array_equal(y.numpy(), [2.0] * 3)
    np.testing.assert_array_equal(o.w.numpy(), [1.0] * 3)


@pytest.mark.parametrize("kw,field,what", [(dict(b=False), "inner.b", "reads"), (dict(w=False), "w", "writes")])
def test_none_for_an_array_field_read_or_written_through_a_function_names_struct_field_and_kernel(kw, field, what):
    y = kc.zeros(3, dtype=float)
    kc.launch(struct_fields, dim=3, inputs=[_outer()], outputs=[y])  # the fast path is cached now
    with pytest.raises(ValueError, match=rf"kernel 'struct_fields' argument 'o': field '{field}' of struct Outer15 is "
                                         rf"None \(a null array\), but the kernel {what} it \(.*test_adversarial_15.py"):
        kc.launch(struct_fields, dim=3, inputs=[_outer(**kw)], outputs=[y])


@pytest.mark.parametrize("field,what", [("a", "reads"), ("b", "writes")])
def test_none_for_an_array_field_read_or_written_directly_is_an_error(field, what):
    s = Inner15()
    s.a, s.b = kc.zeros(2, dtype=float), kc.zeros(2, dtype=float)
    setattr(s, field, None)
    with pytest.raises(ValueError, match=rf"argument 's': field '{field}' of struct Inner15 is None .* the kernel {what} it"):
        kc.launch(struct_direct, dim=2, inputs=[s], outputs=[kc.zeros(2, dtype=float)])

