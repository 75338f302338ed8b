"""Multi-threaded accumulation on the CPU: the analysis (accumulation.py) and the launches it
drives (per-thread private copies, plain adds on a thread's own element, atomics otherwise).
Every result is checked against numpy's unbuffered np.add.at in float64."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore import config
from kernelcore.accumulation import plan
from kernelcore.launch import _bounds, _thread_policy, pack_array

N = 3 * config.parallel_grain  # big enough for a multi-threaded launch


@pytest.fixture
def threads(monkeypatch):
    """Three threads whatever the machine has (each launch reads the variable)."""
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "3")
    return 3


@kc.kernel
def scatter_sum(src: kc.array(dtype=float), idx: kc.array(dtype=int), out: kc.array(dtype=float)):
    i = kc.tid()
    out[idx[i]] += src[i] * 2.0


@kc.kernel
def scatter_count(idx: kc.array(dtype=int), counts: kc.array(dtype=int)):
    i = kc.tid()
    kc.atomic_add(counts, idx[i], 1)


@kc.kernel
def gather_square(table: kc.array(dtype=kc.vec2), idx: kc.array(dtype=int), out: kc.array(dtype=kc.vec2)):
    i = kc.tid()
    t = table[idx[i]]
    out[i] = kc.cw_mul(t, t) + table[i % 7]


@kc.kernel
def own_element(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] += kc.sin(x[i])


@kc.kernel
def own_element_2d(x: kc.array(dtype=float, ndim=2), y: kc.array(dtype=float, ndim=2)):
    i, j = kc.tid()
    y[j, i] = x[j, i] * x[j, i]


@kc.kernel
def uses_old_value(counter: kc.array(dtype=int), slots: kc.array(dtype=int)):
    i = kc.tid()
    k = kc.atomic_add(counter, 0, 1)
    slots[k] = i


@kc.kernel
def read_and_add(a: kc.array(dtype=float), idx: kc.array(dtype=int)):
    i = kc.tid()
    a[idx[i]] += a[i] * 0.5


@kc.func
def add_into(a: kc.array(dtype=float), i: int, v: float):
    a[i] += v


@kc.kernel
def through_func(a: kc.array(dtype=float), idx: kc.array(dtype=int)):
    i = kc.tid()
    add_into(a, idx[i], 1.0)


@kc.func
def read_pair(a: kc.array(dtype=float), i: int) -> float:
    return a[i] + a[(i + 1) % a.shape[0]]


@kc.func
def read_pair_twice(a: kc.array(dtype=float), i: int) -> float:
    return read_pair(a, i) * 2.0


@kc.kernel
def through_reading_func(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = read_pair_twice(a, i)


@kc.func
def store_pair(out: kc.array(dtype=float), i: int, v: float):
    out[i] = v


@kc.kernel
def through_storing_func(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    store_pair(out, i, read_pair(a, i))


@kc.kernel
def reads_what_it_accumulates(a: kc.array(dtype=float), idx: kc.array(dtype=int), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = read_pair(a, i)
    a[idx[i]] += 1.0


def _kinds(kernel, adjoint):
    p = plan(kernel.ir(), adjoint)
    names = kernel.arg_names
    return {names[t.arg]: t.kind for t in p.targets}, p.shared


def test_plan_classifies_targets():
    assert _kinds(scatter_sum, False) == ({"out": "private"}, False)
    # adjoint: out is stored through atomics (its gradient is read), src is read at the own index
    assert _kinds(scatter_sum, True) == ({"src": "exclusive"}, False)
    assert _kinds(scatter_count, False) == ({"counts": "private"}, False)
    assert _kinds(gather_square, True) == ({"table": "private"}, False)
    assert _kinds(own_element, False) == ({"y": "exclusive"}, False)
    assert _kinds(own_element, True) == ({"x": "exclusive"}, False)
    assert _kinds(own_element_2d, True) == ({"x": "exclusive"}, False)
    # the old value is used: a real atomic is needed
    assert _kinds(uses_old_value, False)[1] is True
    # read and accumulated in one launch, or passed to a function: atomics
    assert _kinds(read_and_add, False)[1] is True
    # (a function that only adds into an array is followed: test_accumulation_through_funcs.py)
    assert _kinds(through_func, False) == ({"a": "private"}, False)
    # a function (and the functions it calls) that only reads its arrays keeps the launch parallel
    assert _kinds(through_reading_func, False) == ({}, False)
    assert _kinds(through_reading_func, True)[1] is True   # its adjoint accumulates into a's gradient
    # plain stores in a function do not make the launch shared (nor do the kernel's own stores)
    assert _kinds(through_storing_func, False) == ({}, False)
    # ... but reading an array the kernel accumulates into does
    assert _kinds(reads_what_it_accumulates, False)[1] is True


def test_reading_function_runs_on_threads_with_the_serial_result(threads, monkeypatch):
    rng = np.random.default_rng(3)
    a = kc.array(rng.random(N), dtype=float)
    out = kc.zeros(N, dtype=float)
    kc.launch(through_reading_func, N, inputs=[a], outputs=[out])
    an = a.numpy().astype(np.float64)
    np.testing.assert_allclose(out.numpy(), 2.0 * (an + np.roll(an, -1)), rtol=1e-6)
    out2 = kc.zeros(N, dtype=float)
    kc.launch(through_storing_func, N, inputs=[a], outputs=[out2])
    np.testing.assert_allclose(out2.numpy(), an + np.roll(an, -1), rtol=1e-6)


def _policy(kernel, args, adjoint, dim=N):
    bounds, _ = _bounds(dim, lambda: 3)
    values = [pack_array(a) if isinstance(a, kc.array) else a for a in args]
    _thread_policy(bounds, kernel.ir(), adjoint, values)
    return bounds, values


def test_policy_uses_private_copies_for_small_targets():
    rng = np.random.default_rng(0)
    src = kc.array(rng.random(N), dtype=float)
    idx = kc.array(rng.integers(0, 64, N), dtype=int)
    out = kc.zeros(64, dtype=float)
    b, values = _policy(scatter_sum, [src, idx, out], False)
    assert b.nthreads == 3 and b.private_mask == 1
    # a target much larger than the launch is not copied per thread: one thread, atomics off
    big = kc.zeros(N * config.private_copy_ratio + 1, dtype=float)
    b, values = _policy(scatter_sum, [src, idx, big], False)
    assert b.nthreads == 1 and b.private_mask == 0 and values[2].serial == 1
    # the same array passed for two arguments: updated two ways at once, so no sharing
    b, _ = _policy(scatter_sum, [out, idx, out], False, dim=N)
    assert b.private_mask == 0


def test_policy_non_contiguous_target_falls_back():
    rng = np.random.default_rng(1)
    src = kc.array(rng.random(N), dtype=float)
    idx = kc.array(rng.integers(0, 32, N), dtype=int)
    strided = kc.zeros(64, dtype=float)[::2]
    b, _ = _policy(scatter_sum, [src, idx, strided], False)
    assert b.nthreads == 1 and b.private_mask == 0


def test_private_scatter_matches_numpy(threads):
    rng = np.random.default_rng(2)
    src = rng.random(N).astype(np.float32)
    idx = rng.integers(0, 97, N).astype(np.int32)
    out0 = rng.random(97).astype(np.float32)
    out = kc.array(out0, dtype=float)
    for _ in range(2):  # the second launch reuses the per-thread buffers: they must be zeroed again
        kc.launch(scatter_sum, dim=N, inputs=[kc.array(src, dtype=float), kc.array(idx, dtype=int), out])
    ref = out0.astype(np.float64)
    np.add.at(ref, idx, 2 * 2.0 * src.astype(np.float64))
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5)

    counts = kc.zeros(97, dtype=int)
    kc.launch(scatter_count, dim=N, inputs=[kc.array(idx, dtype=int), counts])
    np.testing.assert_array_equal(counts.numpy(), np.bincount(idx, minlength=97))


def test_private_gradient_scatter_matches_numpy(threads):
    rng = np.random.default_rng(3)
    table_np = rng.standard_normal((50, 2)).astype(np.float32)
    idx_np = rng.integers(0, 50, N).astype(np.int32)
    table = kc.array(table_np, dtype=kc.vec2, requires_grad=True)
    out = kc.zeros(N, dtype=kc.vec2, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(gather_square, dim=N, inputs=[table, kc.array(idx_np, dtype=int), out])
    adj = rng.standard_normal((N, 2)).astype(np.float32)
    tape.backward(grads={out: adj})
    ref = np.zeros((50, 2))
    np.add.at(ref, idx_np, 2.0 * table_np[idx_np].astype(np.float64) * adj)
    np.add.at(ref, np.arange(N) % 7, adj.astype(np.float64))
    np.testing.assert_allclose(table.grad.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_results_agree_across_thread_counts(monkeypatch):
    """1, 2 and 3 threads: private copies change only the order of the float additions."""
    rng = np.random.default_rng(4)
    src = kc.array(rng.random(N), dtype=float)
    idx = kc.array(rng.integers(0, 13, N), dtype=int)
    results = []
    for t in (1, 2, 3):
        monkeypatch.setenv("KERNELCORE_NUM_THREADS", str(t))
        out = kc.zeros(13, dtype=float)
        kc.launch(scatter_sum, dim=N, inputs=[src, idx, out])
        results.append(out.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
    np.testing.assert_allclose(results[2], results[0], rtol=1e-5)


def test_own_element_accumulation(threads):
    rng = np.random.default_rng(5)
    x_np = rng.random(N).astype(np.float32)
    x = kc.array(x_np, dtype=float, requires_grad=True)
    y = kc.array(np.ones(N, np.float32), dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(own_element, dim=N, inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), 1.0 + np.sin(x_np), rtol=1e-6)
    tape.backward(grads={y: np.full(N, 3.0, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.cos(x_np), rtol=1e-5)


def test_atomics_with_used_results_stay_correct(threads):
    counter = kc.zeros(1, dtype=int)
    slots = kc.full(N, -1, dtype=int)
    kc.launch(uses_old_value, dim=N, inputs=[counter, slots])
    assert counter.numpy()[0] == N
    np.testing.assert_array_equal(np.sort(slots.numpy()), np.arange(N))
