"""Gradients with respect to value arguments of a launch (issue #23, item 7).

A value argument (``k: kc.float64``) given a one-element array gets its gradient in that
array's ``.grad``, summed over every launch it was passed to (kernelcore/scalar_grads.py).
"""
import numpy as np
import pytest

import kernelcore as kc

F64 = kc.array(dtype=kc.float64)


@kc.kernel
def spring_chain_step(x: F64, v: F64, x_out: F64, v_out: F64, k: kc.float64, dt: kc.float64, rest: kc.float64):
    """One semi-implicit Euler step of a chain of unit masses joined by springs (stiffness k, N/m)."""
    i = kc.tid()
    n = x.shape[0]
    f = kc.float64(0.0)
    if i > 0:
        f = f - k * (x[i] - x[i - 1] - rest)
    if i < n - 1:
        f = f + k * (x[i + 1] - x[i] - rest)
    vn = v[i] + dt * f
    v_out[i] = vn
    x_out[i] = x[i] + dt * vn


@kc.kernel
def weighted_square_sum(x: F64, w: F64, loss: F64):
    i = kc.tid()
    kc.atomic_add(loss, 0, w[i] * x[i] * x[i])


N, STEPS = 6, 20


def _rollout(k, dt, x0, v0, w, tape=None):
    """20 steps, fresh state arrays per step (the adjoint of k * (x - ...) needs x); returns the loss array."""
    xs = [x0] + [kc.zeros(N, dtype=kc.float64, requires_grad=True) for _ in range(STEPS)]
    vs = [v0] + [kc.zeros(N, dtype=kc.float64, requires_grad=True) for _ in range(STEPS)]
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    if tape is not None:
        tape.__enter__()
    try:
        for s in range(STEPS):
            kc.launch(spring_chain_step, N, inputs=[xs[s], vs[s], xs[s + 1], vs[s + 1], k, dt, 0.5])
        kc.launch(weighted_square_sum, N, inputs=[xs[-1], w, loss])
    finally:
        if tape is not None:
            tape.__exit__(None, None, None)
    return loss


def _initial():
    rng = np.random.default_rng(7)
    x0 = kc.array(np.arange(N) * 0.5 + 0.1 * rng.standard_normal(N), dtype=kc.float64, requires_grad=True)
    v0 = kc.array(0.1 * rng.standard_normal(N), dtype=kc.float64, requires_grad=True)
    w = kc.array(1.0 + rng.random(N), dtype=kc.float64)
    return x0, v0, w


def test_stiffness_and_time_step_gradients_match_finite_differences():
    x0, v0, w = _initial()
    k = kc.array([40.0], dtype=kc.float64, requires_grad=True)
    dt = kc.array([0.01], dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    loss = _rollout(k, dt, x0, v0, w, tape)
    # a number and a one-element array give the same forward
    assert _rollout(40.0, 0.01, x0, v0, w).numpy()[0] == loss.numpy()[0]
    tape.backward(loss)
    assert tape.gradients[k] is k.grad

    def fd(value, h):
        return (_rollout(value + h, 0.01, x0, v0, w).numpy()[0] - _rollout(value - h, 0.01, x0, v0, w).numpy()[0]) / (2 * h)

    def fd_dt(value, h):
        return (_rollout(40.0, value + h, x0, v0, w).numpy()[0] - _rollout(40.0, value - h, x0, v0, w).numpy()[0]) / (2 * h)

    dk, ddt = fd(40.0, 1e-4), fd_dt(0.01, 1e-7)
    assert abs(dk) > 1e-3 and abs(ddt) > 1e-2          # both matter in this rollout
    assert k.grad.numpy()[0] == pytest.approx(dk, rel=1e-6)
    assert dt.grad.numpy()[0] == pytest.approx(ddt, rel=1e-6)
    # array arguments' gradients are unchanged by the variant
    h = 1e-6
    x0.numpy()[2] += h
    up = _rollout(40.0, 0.01, x0, v0, w).numpy()[0]
    x0.numpy()[2] -= 2 * h
    down = _rollout(40.0, 0.01, x0, v0, w).numpy()[0]
    x0.numpy()[2] += h
    assert x0.grad.numpy()[2] == pytest.approx((up - down) / (2 * h), rel=1e-6)


@kc.kernel
def project(x: kc.array(dtype=kc.vec3), g: kc.vec3, s: float, out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = s * kc.dot(g, x[i])


def test_vector_argument_gradient_and_mixed_arguments():
    xs = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)
    x = kc.array(xs, dtype=kc.vec3, requires_grad=True)
    g = kc.array([[0.0, -9.8, 1.0]], dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(2, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(project, 2, inputs=[x, g, 2.0], outputs=[out])   # s stays a plain number
    tape.backward(grads={out: np.array([1.0, 3.0], np.float32)})
    np.testing.assert_allclose(g.grad.numpy()[0], 2.0 * (xs[0] + 3.0 * xs[1]), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.array([[0.0, -9.8, 1.0]] * 2) * [[1.0], [3.0]], rtol=1e-6)


def test_plain_numbers_keep_the_base_kernel():
    x = kc.array(np.ones((1, 3), np.float32), dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(project, 1, inputs=[x, kc.vec3(1.0, 2.0, 3.0), 1.0], outputs=[out])
    assert tape.launches[0].kernel is project


def test_wrong_arrays_for_value_arguments_are_rejected():
    x = kc.array(np.ones((2, 3), np.float32), dtype=kc.vec3)
    out = kc.zeros(2, dtype=float)
    with pytest.raises(TypeError, match=r"argument 'g': declared vec3.*shape \(2,\)"):
        kc.launch(project, 2, inputs=[x, kc.zeros(2, dtype=kc.vec3), 1.0], outputs=[out])
    with pytest.raises(TypeError, match=r"argument 's': declared float32.*dtype float64"):
        kc.launch(project, 2, inputs=[x, kc.vec3(), kc.zeros(1, dtype=kc.float64)], outputs=[out])
