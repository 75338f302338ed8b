"""Tapes never drop work silently (issue #23, item 5).

Launches under a nested tape are recorded on every enclosing tape too; a kernel built with
``enable_backward=False`` that a tape records touching arrays that require grad warns once,
naming the kernel (its gradient is cut).
"""
import warnings

import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def scale(x: kc.array(dtype=float), y: kc.array(dtype=float), s: float):
    i = kc.tid()
    y[i] = s * x[i]


@kc.kernel
def total(y: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, y[i])


def _arrays(n=3):
    x = kc.array(np.arange(1, n + 1, dtype=np.float32), requires_grad=True)
    ys = [kc.zeros(n, dtype=float, requires_grad=True) for _ in range(3)]
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    return x, ys, loss


def test_nested_tape_records_into_the_outer_tape():
    x, (y1, y2, y3), loss = _arrays()
    outer, inner = kc.Tape(), kc.Tape()
    with outer:
        kc.launch(scale, 3, inputs=[x, y1, 2.0])
        with inner:
            kc.launch(scale, 3, inputs=[y1, y2, 3.0])
            kc.copy(y3, y2)
        kc.launch(total, 3, inputs=[y3, loss])
    assert len(inner.launches) == 2 and len(outer.launches) == 4
    outer.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 6.0)   # was 0: the inner launches were missing
    outer.zero()
    # the inner tape alone differentiates its own part
    inner.backward(grads={y3: np.ones(3, np.float32)})
    np.testing.assert_allclose(y1.grad.numpy(), 3.0)
    np.testing.assert_allclose(x.grad.numpy(), 0.0)


def test_tape_entered_twice_records_once():
    x, (y1, _, _), loss = _arrays()
    tape = kc.Tape()
    with tape:
        with tape:
            kc.launch(scale, 3, inputs=[x, y1, 2.0])
        kc.launch(total, 3, inputs=[y1, loss])
    assert len(tape.launches) == 2
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


@kc.kernel(enable_backward=False)
def scale_no_adjoint(x: kc.array(dtype=float), y: kc.array(dtype=float), s: float):
    i = kc.tid()
    y[i] = s * x[i]


@kc.kernel(enable_backward=False)
def fill_no_adjoint(y: kc.array(dtype=float), unused: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = 1.0


def test_non_differentiable_kernel_on_tape_warns_once():
    x, (y1, y2, _), loss = _arrays()
    tape = kc.Tape()
    with pytest.warns(UserWarning, match=r"kernel 'scale_no_adjoint' .*enable_backward=False.*argument 'x'") as rec:
        with tape:
            kc.launch(scale_no_adjoint, 3, inputs=[x, y1, 2.0])
            kc.launch(scale_no_adjoint, 3, inputs=[x, y1, 2.0])
            kc.launch(total, 3, inputs=[y1, loss])
    assert sum("scale_no_adjoint" in str(w.message) for w in rec) == 1
    assert rec[0].filename == __file__      # points at the launch in the user's code


def test_non_differentiable_kernel_without_grad_arrays_is_quiet():
    plain = kc.zeros(3, dtype=float)
    grad_unused = kc.zeros(3, dtype=float, requires_grad=True)   # passed, but the kernel never touches it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with kc.Tape():
            kc.launch(fill_no_adjoint, 3, inputs=[plain, grad_unused])
        kc.launch(scale_no_adjoint, 3, inputs=[kc.zeros(3, dtype=float, requires_grad=True), plain, 1.0])  # no tape
