"""A store's adjoint consumes the gradient of the element it overwrote (issue #23, item 4).

What is left in ``a.grad[i]`` when the reverse pass reaches ``a[i] = v`` belongs to the
value that store wrote; the value it overwrote has no other influence on the result. So the
adjoint moves it into ``v`` and zeroes it. Overwriting patterns whose adjoints need no
overwritten values (ping-pong state buffers under a linear update, in-place linear updates,
repeated stores) are then exact, ``backward()`` is repeatable (a second call adds the same
gradient again, as in Warp 1.19), and ``verify_autograd_array_access`` warns only about the
overwrites whose adjoints do read the overwritten values.
"""
import warnings

import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def lin_step(a: kc.array(dtype=kc.float64), b: kc.array(dtype=kc.float64), f: kc.array(dtype=kc.float64),
             c: kc.float64):
    """b = c a + 0.25 (a[i-1] + a[i+1]) + f (periodic): a linear update whose adjoint needs no value of a."""
    i = kc.tid()
    n = a.shape[0]
    b[i] = c * a[i] + 0.25 * (a[(i + n - 1) % n] + a[(i + 1) % n]) + f[i]


@kc.kernel
def square_step(a: kc.array(dtype=kc.float64), b: kc.array(dtype=kc.float64), c: kc.float64):
    i = kc.tid()
    b[i] = c * a[i] * a[i]


@kc.kernel
def weighted_sum(a: kc.array(dtype=kc.float64), w: kc.array(dtype=kc.float64), loss: kc.array(dtype=kc.float64)):
    i = kc.tid()
    kc.atomic_add(loss, 0, a[i] * w[i])


def _ping_pong(x0, f, w, steps, c, step_kernel=lin_step, tape=None):
    """Rollout through two state buffers reused every step; returns the loss array."""
    n = x0.shape[0]
    bufs = [kc.zeros(n, dtype=kc.float64, requires_grad=True) for _ in range(2)]
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    extra = [f] if step_kernel is lin_step else []
    with (tape if tape is not None else _null()):
        kc.launch(step_kernel, n, inputs=[x0, bufs[0]] + extra + [c])
        for k in range(steps - 1):
            kc.launch(step_kernel, n, inputs=[bufs[k % 2], bufs[(k + 1) % 2]] + extra + [c])
        kc.launch(weighted_sum, n, inputs=[bufs[(steps - 1) % 2], w, loss])
    return loss


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _rollout_matrix(n, c, steps):
    m = np.eye(n) * c
    for i in range(n):
        m[i, (i - 1) % n] += 0.25
        m[i, (i + 1) % n] += 0.25
    return np.linalg.matrix_power(m, steps)


@pytest.mark.parametrize("n", [6, 5000])  # 5000: the adjoint runs on several threads
def test_ping_pong_linear_rollout_is_exact(n):
    steps, c = 51, 0.49
    rng = np.random.default_rng(3)
    x0 = kc.array(rng.standard_normal(n), dtype=kc.float64, requires_grad=True)
    f = kc.array(rng.standard_normal(n), dtype=kc.float64, requires_grad=True)
    w = kc.array(rng.standard_normal(n), dtype=kc.float64)
    tape = kc.Tape()
    _ping_pong(x0, f, w, steps, c, tape=tape)
    tape.backward(_last_loss(tape))
    # analytic: loss = w . (M^steps x0 + sum_k M^k f)
    mt = _rollout_matrix(n, c, steps).T if n <= 64 else None
    if mt is not None:
        np.testing.assert_allclose(x0.grad.numpy(), mt @ w.numpy(), rtol=1e-10, atol=1e-14)
    # float64 central differences of the whole rollout, a few components
    x = x0.numpy()
    for j in (0, n // 2, n - 1):
        h = 1e-4
        vals = []
        for s in (h, -h):
            x[j] += s
            vals.append(_ping_pong(x0, f, w, steps, c).numpy()[0])
            x[j] -= s
        fd = (vals[0] - vals[1]) / (2 * h)
        assert x0.grad.numpy()[j] == pytest.approx(fd, rel=1e-7, abs=1e-8)
        vals = []
        for s in (h, -h):
            f.numpy()[j] += s
            vals.append(_ping_pong(x0, f, w, steps, c).numpy()[0])
            f.numpy()[j] -= s
        assert f.grad.numpy()[j] == pytest.approx((vals[0] - vals[1]) / (2 * h), rel=1e-7, abs=1e-8)


def _last_loss(tape):
    return tape.launches[-1].params[-1]


def test_issue_ping_pong_value():
    """The issue's script: 51 steps of b = 0.99 a + 0.1 through two buffers; d loss / d x0 = 0.99^51."""
    @kc.kernel
    def step(a: kc.array(dtype=float), b: kc.array(dtype=float), c: float):
        i = kc.tid()
        b[i] = a[i] * c + 0.1

    @kc.kernel
    def total(a: kc.array(dtype=float), loss: kc.array(dtype=float)):
        i = kc.tid()
        kc.atomic_add(loss, 0, a[i])

    x0 = kc.array(np.ones(4, np.float32), requires_grad=True)
    bufs = [kc.zeros(4, dtype=float, requires_grad=True) for _ in range(2)]
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(step, 4, inputs=[x0, bufs[0], 0.99])
        for k in range(50):
            kc.launch(step, 4, inputs=[bufs[k % 2], bufs[(k + 1) % 2], 0.99])
        kc.launch(total, 4, inputs=[bufs[0], loss])
    tape.backward(loss)
    np.testing.assert_allclose(x0.grad.numpy(), 0.99 ** 51, rtol=1e-5)   # was 1.6e10


@kc.kernel
def double(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = 2.0 * x[i]


@kc.kernel
def sum_into(y: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, y[i])


def test_backward_twice_accumulates_twice():
    x = kc.array(np.arange(3, dtype=np.float32), requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    z = kc.zeros(3, dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(double, 3, inputs=[x, y])
        kc.copy(z, y)                       # a copy overwrites z: its backward consumes z.grad too
        kc.launch(sum_into, 3, inputs=[z, loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])
    # intermediate gradients were consumed by the stores that wrote y and z
    np.testing.assert_allclose(y.grad.numpy(), 0.0)
    np.testing.assert_allclose(z.grad.numpy(), 0.0)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])   # 2x, was 3x
    tape.zero()
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


@kc.kernel
def in_place_linear(a: kc.array(dtype=float), x: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = 3.0 * a[i] + x[i]


@kc.kernel
def in_place_square(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = a[i] * a[i]


def test_in_place_linear_update_is_exact_and_not_flagged(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_autograd_array_access", True)
    a0 = np.array([1.0, -2.0, 0.5], np.float32)
    a = kc.array(a0, requires_grad=True)
    x = kc.array(np.ones(3, np.float32), requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # no verifier warning: the adjoint needs no value of a
        with tape:
            kc.launch(in_place_linear, 3, inputs=[a, x])
            kc.launch(in_place_linear, 3, inputs=[a, x])
            kc.launch(sum_into, 3, inputs=[a, loss])
    tape.backward(loss)
    # a2 = 9 a0 + 3 x + x
    np.testing.assert_allclose(a.grad.numpy(), 9.0)
    np.testing.assert_allclose(x.grad.numpy(), 4.0)


def test_in_place_square_is_flagged(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_autograd_array_access", True)
    a = kc.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="read and written within one kernel"):
        with kc.Tape():
            kc.launch(in_place_square, 2, inputs=[a])


def test_ping_pong_verifier_tells_linear_from_nonlinear(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_autograd_array_access", True)
    n, steps = 4, 3
    x0 = kc.array(np.full(n, 0.5), dtype=kc.float64, requires_grad=True)
    f = kc.zeros(n, dtype=kc.float64)
    w = kc.array(np.ones(n), dtype=kc.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _ping_pong(x0, f, w, steps, 0.9, tape=kc.Tape())
    tape = kc.Tape()
    with pytest.warns(UserWarning, match="after being read"):
        _ping_pong(x0, f, w, steps, 0.9, step_kernel=square_step, tape=tape)
    # and the warning is deserved: the gradient through the nonlinear ping-pong is wrong
    tape.backward(_last_loss(tape))
    # x_k = c^(2^k - 1) x0^(2^k): d/dx0 of sum over n of x_steps
    truth = 0.9 ** (2 ** steps - 1) * 2 ** steps * 0.5 ** (2 ** steps - 1)
    assert abs(x0.grad.numpy()[0] - truth) > 1e-3 * abs(truth)


@kc.kernel
def store_then_accumulate(x: kc.array(dtype=float), z: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = 2.0 * x[i]
    y[i] += 3.0 * z[i]       # an atomic add: the stored value still counts, its gradient is not consumed


@kc.kernel
def store_twice(x: kc.array(dtype=float), z: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = 2.0 * x[i]
    y[i] = 3.0 * z[i]        # overwrites: x has no influence on y


@kc.kernel
def accumulate_only(z: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(y, i, 5.0 * z[i])


@pytest.mark.parametrize("kernel, gx, gz", [(store_then_accumulate, 2.0, 3.0), (store_twice, 0.0, 3.0)])
def test_store_and_accumulate_in_one_kernel(kernel, gx, gz):
    x = kc.array(np.ones(3, np.float32), requires_grad=True)
    z = kc.array(np.ones(3, np.float32), requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, 3, inputs=[x, z, y])
        kc.launch(sum_into, 3, inputs=[y, loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), gx)
    np.testing.assert_allclose(z.grad.numpy(), gz)


def test_atomic_add_across_launches_keeps_the_gradient():
    """y = 2 x (store), then y += 5 z in another launch: both contributions survive."""
    x = kc.array(np.ones(3, np.float32), requires_grad=True)
    z = kc.array(np.ones(3, np.float32), requires_grad=True)
    y = kc.zeros(3, dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(double, 3, inputs=[x, y])
        kc.launch(accumulate_only, 3, inputs=[z, y])
        kc.launch(sum_into, 3, inputs=[y, loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0)
    np.testing.assert_allclose(z.grad.numpy(), 5.0)


@kc.kernel
def set_component(v: kc.array(dtype=kc.vec3), s: kc.array(dtype=float)):
    i = kc.tid()
    p = v[i]
    p[1] = s[i] * 4.0
    v[i] = p


def test_component_overwrite():
    """v[i].y = 4 s: the gradient of the old y is consumed, x and z pass through."""
    v = kc.array(np.ones((2, 3), np.float32), dtype=kc.vec3, requires_grad=True)
    s = kc.array(np.ones(2, np.float32), requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(set_component, 2, inputs=[v, s])
    tape.backward(grads={v: np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)})
    np.testing.assert_allclose(v.grad.numpy(), [[1.0, 0.0, 3.0], [4.0, 0.0, 6.0]])
    np.testing.assert_allclose(s.grad.numpy(), [8.0, 20.0])


def test_caller_owned_adjoint_buffers_are_not_consumed():
    """kc.launch(adjoint=True, adj_outputs=[g]): g belongs to the caller and keeps its values (as in Warp)."""
    x = kc.array(np.ones(3, np.float32))
    y = kc.zeros(3, dtype=float)
    gx = kc.zeros(3, dtype=float)
    gy = kc.array(np.array([1.0, 2.0, 3.0], np.float32))
    kc.launch(double, 3, inputs=[x], outputs=[y], adjoint=True, adj_inputs=[gx], adj_outputs=[gy])
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(gy.numpy(), [1.0, 2.0, 3.0])


def test_matches_warp_on_ping_pong_and_backward_twice():
    wp = pytest.importorskip("warp", reason="warp-lang is the oracle for the semantics of backward twice")
    wp.config.quiet = True

    @wp.kernel
    def wstep(a: wp.array(dtype=float), b: wp.array(dtype=float), c: float):
        i = wp.tid()
        b[i] = a[i] * c + 0.1

    @wp.kernel
    def wtotal(a: wp.array(dtype=float), loss: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(loss, 0, a[i])

    @kc.kernel
    def kstep(a: kc.array(dtype=float), b: kc.array(dtype=float), c: float):
        i = kc.tid()
        b[i] = a[i] * c + 0.1

    def run(lib, step, total, **dev):
        x0 = lib.array(np.ones(3, np.float32), requires_grad=True, **dev)
        bufs = [lib.zeros(3, dtype=float, requires_grad=True, **dev) for _ in range(2)]
        loss = lib.zeros(1, dtype=float, requires_grad=True, **dev)
        tape = lib.Tape()
        with tape:
            lib.launch(step, 3, inputs=[x0, bufs[0], 0.97], **dev)
            for k in range(20):
                lib.launch(step, 3, inputs=[bufs[k % 2], bufs[(k + 1) % 2], 0.97], **dev)
            lib.launch(total, 3, inputs=[bufs[20 % 2], loss], **dev)
        tape.backward(loss)
        first = x0.grad.numpy().copy()
        tape.backward(loss)
        return first, x0.grad.numpy().copy(), bufs[0].grad.numpy().copy()

    ours = run(kc, kstep, sum_into)
    theirs = run(wp, wstep, wtotal, device="cpu")
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(ours[0], 0.97 ** 21, rtol=1e-5)


@kc.func
def read_first(a: kc.array(dtype=float)):
    return a[0]


@kc.kernel
def uses_func(a: kc.array(dtype=float), b: kc.array(dtype=float)):
    i = kc.tid()
    b[i] = read_first(a)


@kc.kernel
def max_into(a: kc.array(dtype=float), b: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_max(b, 0, a[i])


@kc.kernel
def product(a: kc.array(dtype=float), w: kc.array(dtype=float), b: kc.array(dtype=float), s: float):
    i = kc.tid()
    b[i] = a[i] * w[i] + s * a[i]


@kc.kernel
def index_by(idx: kc.array(dtype=int), a: kc.array(dtype=float), b: kc.array(dtype=float)):
    i = kc.tid()
    b[i] = 2.0 * a[idx[i]]


def test_adjoint_value_reads_analysis():
    """Which arrays' values each adjoint needs (IR only, no compiler)."""
    from kernelcore.adjoint_reads import adjoint_value_reads

    assert adjoint_value_reads(lin_step.ir()) == set()
    assert adjoint_value_reads(in_place_linear.ir()) == set()
    assert adjoint_value_reads(square_step.ir()) == {"a"}
    assert adjoint_value_reads(in_place_square.ir()) == {"a"}
    assert adjoint_value_reads(uses_func.ir()) == {"a"}          # functions: conservative
    assert adjoint_value_reads(max_into.ir()) == {"a", "b"}      # compares a[i] with the current element
    assert adjoint_value_reads(product.ir()) == {"a", "w"}       # w's gradient needs a, a's needs w
    assert adjoint_value_reads(index_by.ir()) == {"idx"}         # the index decides where the gradient goes
