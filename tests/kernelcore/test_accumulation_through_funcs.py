"""Accumulation through user functions (accumulation.py): a scatter written as a kc.func is
classified as if written in the kernel (private copies when add-only), and a kc.func_grad that
only reads arrays (a gather of the grid's gradients) keeps the adjoint launch parallel.
Results are checked against numpy's np.add.at in float64 on 1 and 3 threads."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore import config
from kernelcore.accumulation import plan

N = 3 * config.parallel_grain  # big enough for a multi-threaded launch
M = 61                         # scatter targets (small next to N: private copies)


@pytest.fixture(params=["1", "3"])
def threads(request, monkeypatch):
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", request.param)
    return int(request.param)


@kc.func
def add_pair(out: kc.array(dtype=kc.vec2), count: kc.array(dtype=float), i: int, v: kc.vec2):
    out[i] += v
    out[(i + 1) % M] += v * 0.5
    count[i] += 1.0


@kc.func
def add_pair_nested(out: kc.array(dtype=kc.vec2), count: kc.array(dtype=float), i: int, v: kc.vec2):
    add_pair(out, count, i, v * 2.0)


@kc.kernel
def scatter_through_func(src: kc.array(dtype=kc.vec2), idx: kc.array(dtype=int), out: kc.array(dtype=kc.vec2),
                         count: kc.array(dtype=float)):
    i = kc.tid()
    add_pair_nested(out, count, idx[i], src[i])


@kc.func
def read_and_add(out: kc.array(dtype=kc.vec2), count: kc.array(dtype=float), i: int, v: kc.vec2):
    out[i] += v * count[i]
    count[i] += 1.0


@kc.kernel
def scatter_reading_func(src: kc.array(dtype=kc.vec2), idx: kc.array(dtype=int), out: kc.array(dtype=kc.vec2),
                         count: kc.array(dtype=float)):
    i = kc.tid()
    read_and_add(out, count, idx[i], src[i])


@kc.kernel
def scatter_and_read_in_kernel(src: kc.array(dtype=kc.vec2), idx: kc.array(dtype=int), out: kc.array(dtype=kc.vec2),
                               count: kc.array(dtype=float)):
    i = kc.tid()
    add_pair(out, count, idx[i], src[i] * count[0])


# a gather w(x) table[idx], with a hand-written adjoint that reads the table's gradient (passed
# as an array, as sim/mpm_scatter.py passes the grid's gradients)
@kc.func
def weighted_scatter(table: kc.array(dtype=float), table_grad: kc.array(dtype=float), i: int, x: float):
    table[i] += x * x


@kc.func_grad(weighted_scatter)
def adj_weighted_scatter(table: kc.array(dtype=float), table_grad: kc.array(dtype=float), i: int, x: float):
    kc.adjoint[x] += 2.0 * x * table_grad[i]


@kc.kernel
def square_scatter(x: kc.array(dtype=float), idx: kc.array(dtype=int), table: kc.array(dtype=float),
                   table_grad: kc.array(dtype=float)):
    i = kc.tid()
    weighted_scatter(table, table_grad, idx[i], x[i])


@kc.func
def scatter_x(table: kc.array(dtype=float), i: int, x: float):
    table[i] += x


@kc.func_grad(scatter_x)
def adj_scatter_x(table: kc.array(dtype=float), i: int, x: float):
    table[0] += 1.0   # a hand-written adjoint that writes: threads may meet there


@kc.kernel
def scatter_writing_grad(x: kc.array(dtype=float), idx: kc.array(dtype=int), table: kc.array(dtype=float)):
    i = kc.tid()
    scatter_x(table, idx[i], x[i])


def _kinds(kernel, adjoint):
    p = plan(kernel.ir(), adjoint)
    names = kernel.arg_names
    return {names[t.arg]: t.kind for t in p.targets}, p.shared


def test_plan_follows_functions():
    # add-only through two levels of functions: private copies
    assert _kinds(scatter_through_func, False) == ({"out": "private", "count": "private"}, False)
    # a function that reads what it adds into, or a kernel that reads what a function adds into: atomics
    assert _kinds(scatter_reading_func, False)[1] is True
    assert _kinds(scatter_and_read_in_kernel, False)[1] is True
    # a hand-written adjoint that only reads arrays: the adjoint launch stays parallel
    assert _kinds(square_scatter, False) == ({"table": "private"}, False)
    assert _kinds(square_scatter, True) == ({"x": "exclusive"}, False)
    # ... one that writes an array does not; nor does an automatic adjoint of a function reading arrays
    assert _kinds(scatter_writing_grad, True)[1] is True
    assert _kinds(scatter_through_func, True)[1] is True


def test_scatter_through_func_matches_numpy(threads):
    rng = np.random.default_rng(5)
    src = rng.standard_normal((N, 2)).astype(np.float32)
    idx = rng.integers(0, M, N).astype(np.int32)
    out0 = rng.standard_normal((M, 2)).astype(np.float32)
    out, count = kc.array(out0, dtype=kc.vec2), kc.zeros(M, dtype=float)
    for _ in range(2):   # the second launch reuses the per-thread copies: they must be zeroed again
        kc.launch(scatter_through_func, dim=N, inputs=[kc.array(src, dtype=kc.vec2), kc.array(idx, dtype=int)],
                  outputs=[out, count])
    ref = out0.astype(np.float64)
    v = 2.0 * src.astype(np.float64)
    for _ in range(2):
        np.add.at(ref, idx, v)
        np.add.at(ref, (idx + 1) % M, 0.5 * v)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(count.numpy(), 2.0 * np.bincount(idx, minlength=M))


def test_read_only_custom_adjoint_matches_numpy(threads):
    rng = np.random.default_rng(6)
    x_np = rng.standard_normal(N).astype(np.float32)
    idx_np = rng.integers(0, M, N).astype(np.int32)
    x = kc.array(x_np, dtype=float, requires_grad=True)
    table = kc.zeros(M, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(square_scatter, dim=N, inputs=[x, kc.array(idx_np, dtype=int)], outputs=[table, table.grad])
    ref = np.zeros(M)
    np.add.at(ref, idx_np, x_np.astype(np.float64) ** 2)
    np.testing.assert_allclose(table.numpy(), ref, rtol=1e-4)
    adj = rng.standard_normal(M).astype(np.float32)
    tape.backward(grads={table: adj})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x_np * adj[idx_np], rtol=1e-5, atol=1e-6)


@kc.func
def doubled(table_grad: kc.array(dtype=float), i: int, x: float):
    return x * 2.0


@kc.func_grad(doubled)
def adj_doubled(table_grad: kc.array(dtype=float), i: int, x: float, adj_ret: float):
    kc.adjoint[x] += 2.0 * adj_ret + 0.0 * table_grad[i]   # reads the array it is given


@kc.kernel
def gather_and_read_gradient(x: kc.array(dtype=float), idx: kc.array(dtype=int), table: kc.array(dtype=float),
                             table_grad: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = table[idx[i]] + doubled(table_grad, idx[i], x[i])


def test_gradient_read_by_a_custom_adjoint_keeps_atomics():
    from kernelcore.launch import _bounds, _thread_policy, pack_array

    rng = np.random.default_rng(7)
    x = kc.array(rng.standard_normal(N), dtype=float, requires_grad=True)
    idx = kc.array(rng.integers(0, M, N), dtype=int)
    table = kc.zeros(M, dtype=float, requires_grad=True)
    out = kc.zeros(N, dtype=float, requires_grad=True)

    def policy(table_grad):
        bounds, _ = _bounds(N, lambda: 3)
        values = [pack_array(a) for a in (x, idx, table, table_grad, out)]
        _thread_policy(bounds, gather_and_read_gradient.ir(), True, values)
        return bounds

    # the adjoint adds into table's gradient (private copies) while the hand-written adjoint reads table_grad
    assert _kinds(gather_and_read_gradient, True) == ({"x": "exclusive", "table": "private"}, False)
    assert policy(kc.zeros(M, dtype=float)).nthreads == 3     # another array: parallel
    assert policy(table.grad).nthreads == 1                   # table's own gradient: one thread, atomics
