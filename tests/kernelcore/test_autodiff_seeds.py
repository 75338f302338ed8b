"""Every autodiff example of the seeds, with kc in place of wp, printing the right values.

Where the seeds show Warp printing a wrong value because of its dynamic-loop limitation,
kernelcore gives the right one.
"""
import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def double(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    tid = kc.tid()
    y[tid] = x[tid] * 2.0


def test_copy_is_differentiable():
    x = kc.array(np.arange(3), dtype=float, requires_grad=True)
    y = kc.zeros_like(x)
    z = kc.zeros_like(x)
    tape = kc.Tape()
    with tape:
        kc.launch(double, dim=3, inputs=[x, y])
        kc.copy(z, y)
    tape.backward(grads={z: kc.ones_like(x)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_clone_is_differentiable():
    x = kc.array(np.arange(3), dtype=float, requires_grad=True)
    y = kc.zeros_like(x)
    tape = kc.Tape()
    with tape:
        kc.launch(double, dim=3, inputs=[x, y])
        z = kc.clone(y, requires_grad=True)
    tape.backward(grads={z: kc.ones_like(x)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_assign_is_differentiable():
    x = kc.array(np.arange(3), dtype=float, requires_grad=True)
    y = kc.zeros_like(x)
    z = kc.zeros_like(y)
    tape = kc.Tape()
    with tape:
        kc.launch(double, dim=3, inputs=[x], outputs=[y])
        z.assign(y)
    tape.backward(grads={z: kc.ones_like(x)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


@kc.kernel
def square_pair(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * x[i] + 3.0 * x[(i + 1) % 3]


def test_jacobian_rows_via_tape():
    x = kc.array(np.array([1.0, 2.0, 3.0]), dtype=float, requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(square_pair, dim=3, inputs=[x], outputs=[y])
    jac = np.empty((3, 3))
    for k in range(3):
        e = np.zeros(3, np.float32)
        e[k] = 1.0
        tape.backward(grads={y: kc.array(e, dtype=kc.float32)})
        jac[k] = tape.gradients[x].numpy()
        tape.zero()
    expected = np.array([[2, 3, 0], [0, 4, 3], [3, 0, 6]], dtype=np.float64)
    np.testing.assert_allclose(jac, expected)


@kc.func
def safe_sqrt(x: float):
    return kc.sqrt(x)


@kc.kernel
def run_safe_sqrt(xs: kc.array(dtype=float), output: kc.array(dtype=float)):
    i = kc.tid()
    output[i] = safe_sqrt(xs[i])


def test_custom_grad_function():
    xs = kc.array([1.0, 2.0, 0.0], dtype=kc.float32, requires_grad=True)
    ys = kc.zeros_like(xs)
    tape = kc.Tape()
    with tape:
        kc.launch(run_safe_sqrt, dim=len(xs), inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: kc.array(np.ones(len(xs)), dtype=kc.float32)})
    np.testing.assert_allclose(ys.numpy(), [1.0, np.sqrt(2.0), 0.0], rtol=1e-6)
    g = xs.grad.numpy()
    np.testing.assert_allclose(g[:2], [0.5, 0.5 / np.sqrt(2.0)], rtol=1e-6)
    assert np.isinf(g[2])


# the same function with a custom gradient that catches the non-finite case
@kc.func
def safe_sqrt2(x: float):
    return kc.sqrt(x)


@kc.func_grad(safe_sqrt2)
def adj_safe_sqrt2(x: float, adj_ret: float):
    if x > 0.0:
        kc.adjoint[x] += 1.0 / (2.0 * kc.sqrt(x)) * adj_ret


@kc.kernel
def run_safe_sqrt2(xs: kc.array(dtype=float), output: kc.array(dtype=float)):
    i = kc.tid()
    output[i] = safe_sqrt2(xs[i])


def test_custom_grad_replaces_adjoint():
    xs = kc.array([1.0, 2.0, 0.0], dtype=kc.float32, requires_grad=True)
    ys = kc.zeros_like(xs)
    tape = kc.Tape()
    with tape:
        kc.launch(run_safe_sqrt2, dim=len(xs), inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: kc.array(np.ones(len(xs)), dtype=kc.float32)})
    np.testing.assert_allclose(xs.grad.numpy(), [0.5, 0.35355338, 0.0], rtol=1e-6)


@kc.kernel
def increment_kernel(counter: kc.array(dtype=int), input: kc.array(dtype=float), output: kc.array(dtype=float)):
    idx = kc.atomic_add(counter, 0, 1)
    output[idx] = kc.sqrt(input[idx])


@kc.func
def reversible_increment(buf: kc.array(dtype=int), buf_index: int, value: int, thread_values: kc.array(dtype=int), tid: int):
    next_index = kc.atomic_add(buf, buf_index, value)
    thread_values[tid] = next_index
    return next_index


@kc.func_replay(reversible_increment)
def replay_reversible_increment(buf: kc.array(dtype=int), buf_index: int, value: int, thread_values: kc.array(dtype=int), tid: int):
    return thread_values[tid]


@kc.kernel
def increment_diff_kernel(counter: kc.array(dtype=int), thread_ids: kc.array(dtype=int), input: kc.array(dtype=float), output: kc.array(dtype=float)):
    tid = kc.tid()
    idx = reversible_increment(counter, 0, 1, thread_ids, tid)
    output[idx] = kc.sqrt(input[idx])


@pytest.mark.parametrize("reversible", [False, True])
def test_custom_replay(reversible):
    dim = 8
    input = kc.array(np.arange(1, dim + 1), dtype=kc.float32, requires_grad=True)
    counter = kc.zeros(1, dtype=kc.int32)
    thread_ids = kc.zeros(dim, dtype=kc.int32)
    output = kc.zeros(dim, dtype=kc.float32, requires_grad=True)
    tape = kc.Tape()
    with tape:
        if reversible:
            kc.launch(increment_diff_kernel, dim, inputs=[counter, thread_ids, input], outputs=[output])
        else:
            kc.launch(increment_kernel, dim, inputs=[counter, input], outputs=[output])
    assert counter.numpy()[0] == 8
    np.testing.assert_allclose(output.numpy(), np.sqrt(np.arange(1, dim + 1)), rtol=1e-6)
    tape.backward(grads={output: kc.array(np.ones(dim), dtype=kc.float32)})
    if reversible:
        assert sorted(thread_ids.numpy().tolist()) == list(range(dim))
        np.testing.assert_allclose(input.grad.numpy(), 0.5 / np.sqrt(np.arange(1, dim + 1)), rtol=1e-6)
    else:
        # the atomic's replay returns 0, so every thread's adjoint reads output.grad[0] and adds into
        # input.grad[0] (the seeds' point: wrong). The first store adjoint consumes output.grad[0],
        # so the wrong answer is 0.5 once (as in Warp 1.19), not 0.5 per thread (the seeds' older 4.0)
        np.testing.assert_allclose(input.grad.numpy(), [0.5] + [0.0] * (dim - 1))


saxpy_snippet = """
    out[tid] = a * x[tid] + y[tid];
"""
saxpy_adj_snippet = """
    adj_a += x[tid] * adj_out[tid];
    adj_x[tid] += a * adj_out[tid];
    adj_y[tid] += adj_out[tid];
"""


@kc.func_native(saxpy_snippet, saxpy_adj_snippet)
def native_saxpy(a: kc.float32, x: kc.array(dtype=kc.float32), y: kc.array(dtype=kc.float32), out: kc.array(dtype=kc.float32), tid: int):
    ...


@kc.kernel
def saxpy_kernel(a: kc.float32, x: kc.array(dtype=kc.float32), y: kc.array(dtype=kc.float32), out: kc.array(dtype=kc.float32)):
    tid = kc.tid()
    native_saxpy(a, x, y, out, tid)


def test_func_native_with_adjoint():
    n = 128
    x = kc.array(np.arange(n, dtype=np.float32), dtype=kc.float32, requires_grad=True)
    y = kc.zeros_like(x)
    out = kc.array(np.arange(n, dtype=np.float32), dtype=kc.float32, requires_grad=True)
    adj_out = kc.array(np.ones(n, dtype=np.float32), dtype=kc.float32)
    tape = kc.Tape()
    with tape:
        kc.launch(saxpy_kernel, dim=n, inputs=[2.0, x, y], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 2.0 * np.arange(n))
    tape.backward(grads={out: adj_out})
    np.testing.assert_allclose(x.grad.numpy(), np.full(n, 2.0))
    np.testing.assert_allclose(y.grad.numpy(), np.full(n, 1.0))


square_snippet = """
    float sq = x * x;
    return sq;
"""
square_adj = """
    adj_x += 2.0f * x * adj_ret;
"""


@kc.func_native(square_snippet, square_adj)
def native_square(x: float) -> float:
    ...


@kc.kernel
def square_kernel(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = native_square(x[i])


def test_func_native_returning_value():
    x = kc.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    y = kc.zeros_like(x)
    tape = kc.Tape()
    with tape:
        kc.launch(square_kernel, dim=3, inputs=[x, y])
    tape.backward(grads={y: kc.ones_like(x)})
    np.testing.assert_allclose(y.numpy(), [1, 4, 9])
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])


@kc.kernel
def dynamic_loop_sum(x: kc.array(dtype=float), loss: kc.array(dtype=float), iters: int):
    sum = float(0.0)
    for i in range(iters):
        sum += x[i]
    kc.atomic_add(loss, 0, sum)


@kc.kernel
def dynamic_loop_mult(x: kc.array(dtype=float), loss: kc.array(dtype=float), iters: int):
    prod = float(1.0)
    for i in range(iters):
        prod *= x[i]
    kc.atomic_add(loss, 0, prod)


@kc.kernel
def dynamic_loop_mult_arrays(x: kc.array(dtype=float), prods: kc.array(dtype=float), loss: kc.array(dtype=float), iters: int):
    for i in range(iters):
        prods[i + 1] = x[i] * prods[i]
    kc.atomic_add(loss, 0, prods[iters])


@kc.kernel
def dynamic_loop_weighted(x: kc.array(dtype=float), weights: kc.array(dtype=float), loss: kc.array(dtype=float), iters: int):
    sum = float(0.0)
    norm = float(0.0)
    for i in range(iters):
        w = weights[i]
        norm += w
        sum += x[i] * w
    l = sum / norm
    kc.atomic_add(loss, 0, l)


@kc.func
def loop(x: kc.array(dtype=float), weights: kc.array(dtype=float), iters: int):
    sum = float(0.0)
    norm = float(0.0)
    for i in range(iters):
        w = weights[i]
        norm += w
        sum += x[i] * w
    return sum, norm


@kc.kernel
def dynamic_loop_in_func(x: kc.array(dtype=float), weights: kc.array(dtype=float), loss: kc.array(dtype=float), iters: int):
    sum, norm = loop(x, weights, iters)
    l = sum / norm
    kc.atomic_add(loss, 0, l)


def _run_loss(kernel, *arrays_and_iters):
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    args = list(arrays_and_iters)
    args.insert(len(args) - 1, loss)
    with kc.Tape() as tape:
        kc.launch(kernel, dim=1, inputs=args)
    tape.backward(loss)
    return loss


def test_dynamic_loop_sum():
    x = kc.full(shape=3, value=1.0, dtype=float, requires_grad=True)
    _run_loss(dynamic_loop_sum, x, 3)
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_dynamic_loop_running_product_is_correct():
    x = kc.full(shape=3, value=2.0, dtype=float, requires_grad=True)
    loss = _run_loss(dynamic_loop_mult, x, 3)
    assert loss.numpy()[0] == 8.0
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])  # Warp prints [32. 8. 2.]


def test_dynamic_loop_with_intermediate_array():
    x = kc.full(shape=3, value=2.0, dtype=float, requires_grad=True)
    prods = kc.full(shape=4, value=1.0, dtype=float, requires_grad=True)
    _run_loss(dynamic_loop_mult_arrays, x, prods, 3)
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_dynamic_loop_weighted_mean_is_correct():
    x = kc.full(shape=3, value=1.0, dtype=float, requires_grad=True)
    w = kc.full(shape=3, value=1.0, dtype=float, requires_grad=True)
    _run_loss(dynamic_loop_weighted, x, w, 3)
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3] * 3, rtol=1e-6)  # Warp prints [inf inf inf]
    np.testing.assert_allclose(w.grad.numpy(), [0.0] * 3, atol=1e-7)


def test_dynamic_loop_in_func():
    x = kc.full(shape=3, value=1.0, dtype=float, requires_grad=True)
    w = kc.full(shape=3, value=0.5, dtype=float, requires_grad=True)
    _run_loss(dynamic_loop_in_func, x, w, 3)
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3] * 3, rtol=1e-6)


@kc.kernel
def my_kernel(a: kc.array(dtype=float), b: kc.array(dtype=kc.vec3), out1: kc.array(dtype=kc.vec2), out2: kc.array(dtype=kc.vec4)):
    tid = kc.tid()
    ai, bi = a[tid], b[tid]
    out1[tid] = kc.vec2(ai * kc.length(bi), -ai * kc.dot(bi, kc.vec3(0.1, 1.0, -0.1)))
    out2[tid] = kc.normalize(kc.vec4(ai, bi[0], bi[1], bi[2]))


def test_jacobian_and_gradcheck():
    a = kc.array([2.0, -1.0], dtype=kc.float32, requires_grad=True)
    b = kc.array([kc.vec3(3.0, 1.0, 2.0), kc.vec3(-4.0, -1.0, 0.0)], dtype=kc.vec3, requires_grad=True)
    out1 = kc.zeros(2, dtype=kc.vec2, requires_grad=True)
    out2 = kc.zeros(2, dtype=kc.vec4, requires_grad=True)
    jacs = kc.autograd.jacobian(my_kernel, dim=2, inputs=[a, b], outputs=[out1, out2])
    assert set(jacs) == {("a", "out1"), ("a", "out2"), ("b", "out1"), ("b", "out2")}
    assert jacs[("a", "out1")].shape == (4, 2) and jacs[("b", "out2")].shape == (8, 6)
    # d out1[0].x / d a[0] = |b0|
    assert jacs[("a", "out1")][0, 0] == pytest.approx(np.sqrt(14.0), rel=1e-6)
    fd = kc.autograd.jacobian_fd(my_kernel, dim=2, inputs=[a, b], outputs=[out1, out2], eps=1e-3)
    np.testing.assert_allclose(jacs[("b", "out1")], fd[("b", "out1")], atol=2e-2)
    result = kc.autograd.gradcheck(my_kernel, dim=2, inputs=[a, b], outputs=[out1, out2], eps=1e-3,
                                   raise_exception=False, show_summary=False)
    assert result, result.summary()
    assert len(result.rows) == 4
    subset = kc.autograd.jacobian(my_kernel, dim=2, inputs=[a, b], outputs=[out1, out2],
                                  input_output_mask=[("a", "out1")], max_outputs_per_var=1)
    assert set(subset) == {("a", "out1")} and np.isnan(subset[("a", "out1")][1:]).all()


@kc.kernel
def wrong_adjoint_kernel(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = kc.floor(x[i] * 10.0)  # piecewise constant: AD says 0, FD across a jump does not


def test_gradcheck_detects_mismatch():
    x = kc.array(np.array([0.1], np.float32), requires_grad=True)
    y = kc.zeros(1, dtype=float, requires_grad=True)
    r = kc.autograd.gradcheck(wrong_adjoint_kernel, dim=1, inputs=[x], outputs=[y], eps=1e-2,
                              raise_exception=False, show_summary=False)
    assert not r
    with pytest.raises(AssertionError):
        kc.autograd.gradcheck(wrong_adjoint_kernel, dim=1, inputs=[x], outputs=[y], eps=1e-2, show_summary=False)


@kc.kernel
def square_kernel2(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    tid = kc.tid()
    y[tid] = x[tid] * x[tid]


@kc.kernel
def overwrite_kernel(z: kc.array(dtype=float), x: kc.array(dtype=float)):
    tid = kc.tid()
    x[tid] = z[tid]


@kc.kernel
def loss_kernel(x: kc.array(dtype=float), loss: kc.array(dtype=float)):
    tid = kc.tid()
    kc.atomic_add(loss, 0, x[tid])


@kc.kernel
def readwrite_kernel(a: kc.array(dtype=float), b: kc.array(dtype=float)):
    tid = kc.tid()
    b[tid] = a[tid] * a[tid]
    a[tid] = 1.0


def test_verify_autograd_array_access_warns_on_overwrite(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_autograd_array_access", True)
    a = kc.array(np.array([1.0, 2.0, 3.0]), dtype=float, requires_grad=True)
    b = kc.zeros_like(a)
    c = kc.array(np.array([-1.0, -2.0, -3.0]), dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with pytest.warns(UserWarning, match="after being read"):
        with tape:
            kc.launch(square_kernel2, a.shape, inputs=[a], outputs=[b])
            kc.launch(overwrite_kernel, c.shape, inputs=[c], outputs=[a])
            kc.launch(loss_kernel, a.shape, inputs=[a, loss])
    # intra-kernel: a is read and written in one kernel
    a2 = kc.array(np.array([1.0, 2.0, 3.0]), dtype=float, requires_grad=True)
    b2 = kc.zeros_like(a2)
    with pytest.warns(UserWarning, match="read and written"):
        with kc.Tape():
            kc.launch(readwrite_kernel, dim=3, inputs=[a2, b2])


def test_tape_bad_input():
    tape = kc.Tape()
    with pytest.raises(RuntimeError, match="empty"):
        tape.backward(loss=kc.zeros(1, requires_grad=True))
    x = kc.array(np.ones(3, np.float32), requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    with tape:
        kc.launch(double, dim=3, inputs=[x, y])
    with pytest.raises(ValueError, match="1-element float array"):
        tape.backward(loss=y)
    with pytest.raises(ValueError, match="never took part"):
        tape.backward(grads={kc.zeros(3, requires_grad=True): np.ones(3, np.float32)})
    with pytest.raises(ValueError, match="never took part"):
        tape.backward(loss=kc.zeros(1, requires_grad=True))


@kc.kernel
def add(a: kc.array(dtype=float), b: kc.array(dtype=float), c: kc.array(dtype=float)):
    tid = kc.tid()
    c[tid] = a[tid] + b[tid]


def test_tape_visualize(tmp_path):
    a = kc.array([2.0], dtype=kc.float32)
    b = kc.array([3.0], dtype=kc.float32, requires_grad=True)
    c = kc.array([4.0], dtype=kc.float32)
    e = kc.array([5.0], dtype=kc.float32, requires_grad=True)
    result = kc.zeros(1, dtype=kc.float32, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(add, dim=1, inputs=[b, e], outputs=[a])
        tape.record_scope_begin("Custom Scope")
        kc.launch(add, dim=1, inputs=[a, b], outputs=[c])
        tape.record_scope_end()
        kc.launch(add, dim=1, inputs=[c, a], outputs=[result])
    path = tmp_path / "tape.dot"
    text = tape.visualize(filename=str(path), array_labels={a: "a", b: "b", c: "c", e: "e", result: "result"})
    assert path.read_text() == text
    assert text.count("shape=box") == 3 and "Custom Scope" in text and "palegreen" in text
    assert 'label="result' in text


def test_record_func_and_gradcheck_tape():
    x = kc.array(np.array([0.5, 1.5], np.float32), requires_grad=True)
    y = kc.zeros(2, dtype=float, requires_grad=True)
    z = kc.zeros(2, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(square_kernel2, dim=2, inputs=[x], outputs=[y])
        z.numpy()[:] = 3.0 * y.numpy()  # a Python-side step with its own adjoint

        def backward():
            y.grad.numpy()[:] += 3.0 * z.grad.numpy()

        tape.record_func(backward, [y, z])
    tape.backward(grads={z: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 6.0 * x.numpy())
    assert kc.autograd.gradcheck_tape(tape, eps=1e-3, show_summary=False)


def test_tape_zero_and_reset():
    x = kc.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(square_kernel2, dim=3, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(3, np.float32)})
    tape.backward(grads={y: np.ones(3, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * x.numpy())  # gradients accumulate
    assert tape.gradients[x] is x.grad and tape.gradients[y] is y.grad
    assert len(tape.gradients) == 2
    tape.zero()
    assert not x.grad.numpy().any() and not y.grad.numpy().any()
    tape.reset()
    assert tape.gradients == {}
    with pytest.raises(RuntimeError, match="empty"):
        tape.backward(grads={y: np.ones(3, np.float32)})


def test_tape_zero_clears_arrays_shared_by_launches_and_funcs():
    """A rollout passes each array to several launches and record_funcs (Tape.zero clears each
    gradient once): every one is cleared, and a second backward gives the first one's gradient."""
    xs = [kc.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)]
    xs += [kc.zeros(3, dtype=float, requires_grad=True) for _ in range(3)]
    tape = kc.Tape()
    with tape:
        tape.record_func(lambda: None, xs[::-1])   # the input's gradient is met last
        for k in range(3):
            kc.launch(square_kernel2, dim=3, inputs=[xs[k]], outputs=[xs[k + 1]])
            tape.record_func(lambda: None, [xs[0], xs[k], xs[k + 1]])
    seed = {xs[-1]: np.ones(3, np.float32)}
    tape.backward(grads=seed)
    x0 = xs[0].numpy().astype(np.float64)
    expect = 8.0 * x0 ** 7   # d(x^8)/dx
    np.testing.assert_allclose(xs[0].grad.numpy(), expect, rtol=1e-5)
    tape.zero()
    for k, a in enumerate(xs):
        assert not a.grad.numpy().any(), k
    tape.backward(grads=seed)
    np.testing.assert_allclose(xs[0].grad.numpy(), expect, rtol=1e-5)
