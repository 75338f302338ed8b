"""The launch fast path's memo of recent argument lists (launch.py FastLaunch._repeat) and the
per-kernel thread grain (launch.py parallel_grain).

A launch with the same argument objects as one of the last few reuses their packed values;
anything that may have changed since (a list element replaced, a vector or struct changed in
place, an array given a gradient) must still reach the kernel.  A kernel's ``parallel_grain``
moves the size from which a launch uses every core; the result may not depend on it.
"""
import importlib

import numpy as np
import pytest

import kernelcore as kc

launch_mod = importlib.import_module("kernelcore.launch")  # the module (kc.launch is the function)


@kc.kernel(enable_backward=False)
def shift_k(x: kc.array(dtype=kc.vec3), y: kc.array(dtype=kc.vec3), g: kc.vec3, s: float):
    i = kc.tid()
    y[i] = x[i] * s + g


def _vec3s(values):
    return kc.array(np.asarray(values, np.float32), dtype=kc.vec3)


def test_repeated_argument_lists_skip_packing(monkeypatch):
    """Two argument lists launched in turn (a solver's two states) are packed once each."""
    x0, x1 = _vec3s(np.ones((4, 3))), _vec3s(2 * np.ones((4, 3)))
    y0, y1 = kc.zeros(4, dtype=kc.vec3), kc.zeros(4, dtype=kc.vec3)
    g = kc.vec3(0.5, 0.0, 0.0)
    a, b = [x0, y0, g, 3.0], [x1, y1, g, 3.0]
    for args in (a, b, a, b):  # the first launch builds the fast path, the next two fill its memo
        kc.launch(shift_k, dim=4, inputs=args)
    packed = []
    real = launch_mod._packed_array
    monkeypatch.setattr(launch_mod, "_packed_array", lambda arr, serial: packed.append(arr) or real(arr, serial))
    for args in (a, b, a, b):
        kc.launch(shift_k, dim=4, inputs=args)
    assert packed == []
    np.testing.assert_array_equal(y0.numpy(), np.tile([3.5, 3.0, 3.0], (4, 1)))
    np.testing.assert_array_equal(y1.numpy(), np.tile([6.5, 6.0, 6.0], (4, 1)))
    assert len(shift_k._fast_launch.memo) <= launch_mod._MEMO_SIZE


def test_changed_arguments_reach_the_kernel():
    """A list element replaced, a vector changed in place, new array contents, a new scalar:
    each launch computes with what it is given, never a remembered value."""
    x = _vec3s(np.ones((3, 3)))
    y = kc.zeros(3, dtype=kc.vec3)
    g = kc.vec3(0.0, 0.0, 0.0)
    args = [x, y, g, 1.0]
    for _ in range(3):
        kc.launch(shift_k, dim=3, inputs=args)
    g[1] = 7.0  # the same vec3 object, changed
    kc.launch(shift_k, dim=3, inputs=args)
    np.testing.assert_array_equal(y.numpy(), np.tile([1.0, 8.0, 1.0], (3, 1)))
    x.numpy()[:] = 2.0  # the same array, new contents
    kc.launch(shift_k, dim=3, inputs=args)
    np.testing.assert_array_equal(y.numpy(), np.tile([2.0, 9.0, 2.0], (3, 1)))
    args[0] = _vec3s(np.full((3, 3), 4.0))  # the same list, another array
    kc.launch(shift_k, dim=3, inputs=args)
    np.testing.assert_array_equal(y.numpy(), np.tile([4.0, 11.0, 4.0], (3, 1)))
    args[3] = 0.5
    kc.launch(shift_k, dim=3, inputs=args)
    np.testing.assert_array_equal(y.numpy(), np.tile([2.0, 9.0, 2.0], (3, 1)))


def test_an_array_given_a_gradient_is_packed_again():
    x = _vec3s(np.ones((2, 3)))
    y = kc.zeros(2, dtype=kc.vec3)
    args = (x, y, kc.vec3(0.0, 0.0, 0.0), 1.0)
    for _ in range(2):
        kc.launch(shift_k, dim=2, inputs=list(args))
    fast = shift_k._fast_launch
    assert fast._repeat(args, True) is not None
    x.requires_grad = True
    assert fast._repeat(args, True) is None


@pytest.mark.parametrize("grain, dim, parallel", [(4, 8, True), (4, 3, False), (None, 8, False)])
def test_kernel_parallel_grain_decides_the_thread_count(monkeypatch, grain, dim, parallel):
    """``kernel.parallel_grain`` replaces config.parallel_grain for that kernel (on the fast path
    and the general path); the numbers are the same either way."""
    calls = []
    monkeypatch.setattr(launch_mod, "num_threads", lambda: calls.append(1) or 2)
    x = _vec3s(np.arange(3 * dim).reshape(dim, 3))
    y = kc.zeros(dim, dtype=kc.vec3)
    if grain is None:
        monkeypatch.delattr(shift_k, "parallel_grain", raising=False)
    else:
        monkeypatch.setattr(shift_k, "parallel_grain", grain, raising=False)
    shift_k._fast_launch = None
    kc.launch(shift_k, dim=dim, inputs=[x, y, kc.vec3(1.0, 2.0, 3.0), 2.0])  # general path
    kc.launch(shift_k, dim=dim, inputs=[x, y, kc.vec3(1.0, 2.0, 3.0), 2.0])  # fast path
    assert len(calls) == (2 if parallel else 0)
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(3 * dim).reshape(dim, 3) + [1.0, 2.0, 3.0])


def test_a_new_argument_list_packs_only_its_changed_slots(monkeypatch):
    """A rollout's launch with a new output array (a new state each step) repacks only that slot;
    the other slots keep the previous launch's packed values, except what may have changed since:
    an unchanged array given a gradient, a vector changed in place."""
    x = _vec3s(np.ones((4, 3)))
    g = kc.vec3(0.5, 0.0, 0.0)
    ys = [kc.zeros(4, dtype=kc.vec3) for _ in range(8)]
    kc.launch(shift_k, dim=4, inputs=[x, ys[0], g, 3.0])  # builds the fast path
    kc.launch(shift_k, dim=4, inputs=[x, ys[1], g, 3.0])
    packed = []
    real = launch_mod._packed_array
    monkeypatch.setattr(launch_mod, "_packed_array", lambda arr, serial: packed.append(arr) or real(arr, serial))
    for k in range(2, 5):
        kc.launch(shift_k, dim=4, inputs=[x, ys[k], g, 3.0])
    assert [id(a) for a in packed] == [id(ys[k]) for k in range(2, 5)]
    np.testing.assert_array_equal(ys[4].numpy(), np.tile([3.5, 3.0, 3.0], (4, 1)))
    g[1] = 2.0   # the same vector, changed in place
    x.numpy()[:] = 2.0
    kc.launch(shift_k, dim=4, inputs=[x, ys[5], g, 0.5])
    np.testing.assert_array_equal(ys[5].numpy(), np.tile([1.5, 3.0, 1.0], (4, 1)))
    packed.clear()
    x.requires_grad = True   # the same array with a gradient now: its descriptor is packed again
    kc.launch(shift_k, dim=4, inputs=[x, ys[6], g, 0.5])
    assert {id(a) for a in packed} == {id(x), id(ys[6])}
    np.testing.assert_array_equal(ys[6].numpy(), np.tile([1.5, 3.0, 1.0], (4, 1)))
