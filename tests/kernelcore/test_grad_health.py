"""DiffTaichi's gradient_explosion problem through kc.checkpointed (closed form), per-step
gradient norms and clip_grad_norm."""
import math

import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def _advance(x: kc.array(dtype=float), v: kc.array(dtype=float), a: kc.array(dtype=float),
             damping: kc.array(dtype=float), dt: float, x_out: kc.array(dtype=float), v_out: kc.array(dtype=float)):
    # v' = damping v + a, x' = x + dt v' (DiffTaichi's gradient_explosion setup, one particle)
    vn = damping[0] * v[0] + a[0]
    v_out[0] = vn
    x_out[0] = x[0] + dt * vn


@kc.kernel
def _take_x(x: kc.array(dtype=float), loss: kc.array(dtype=float)):
    loss[0] = x[0]


def _dx_da(num_advances, alpha, dt):
    """d x_N / d a in closed form: dt * sum_{t=1}^{N} (1 - d^t) / (1 - d), d = exp(-dt alpha)."""
    if alpha == 0:
        return dt * num_advances * (num_advances + 1) / 2
    d = math.exp(-dt * alpha)
    t = np.arange(1, num_advances + 1, dtype=np.float64)
    return dt * float(np.sum((1 - d ** t) / (1 - d)))


def _problem(alpha, dt):
    a = kc.array(np.array([1.0], np.float32), dtype=float, requires_grad=True)
    damping = kc.array(np.array([math.exp(-dt * alpha)], np.float32), dtype=float, requires_grad=True)
    state = (kc.zeros(1, dtype=float, requires_grad=True), kc.zeros(1, dtype=float, requires_grad=True))

    def step(i, s, t):
        kc.launch(_advance, 1, inputs=[s[0], s[1], a, damping, dt], outputs=[t[0], t[1]])

    def loss_fn(s):
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        kc.launch(_take_x, 1, inputs=[s[0]], outputs=[loss])
        return loss

    return a, state, step, loss_fn


@pytest.mark.parametrize("alpha", [0.0, 3.0])
def test_gradient_explosion_closed_form(alpha):
    dt, n = 1e-3, 999  # DiffTaichi's num_steps = 1000 runs 999 advances
    a, state, step, loss_fn = _problem(alpha, dt)
    tape = kc.Tape()
    with tape:
        loss = loss_fn(kc.checkpointed(step, state, n))
    tape.backward(loss)
    np.testing.assert_allclose(a.grad.numpy()[0], _dx_da(n, alpha, dt), rtol=1e-5)
    assert _dx_da(99_999, 0.0, 1e-3) == pytest.approx(4_999_950.0)  # DiffTaichi's figure at num_steps = 1e5


def test_gradient_norms_per_step():
    dt, n = 1e-3, 40
    a, state, step, loss_fn = _problem(0.0, dt)
    norms = kc.autograd.gradient_norms(step, state, n, loss_fn, select=lambda s: [s[1]], segment=6)
    # dL/dv_t = dt (N - t) without damping
    np.testing.assert_allclose(norms, dt * (n - np.arange(n + 1)), rtol=1e-5, atol=1e-9)
    full = kc.autograd.gradient_norms(step, state, n, loss_fn)  # x and v: dL/dx_t = 1
    np.testing.assert_allclose(full, np.sqrt(1 + (dt * (n - np.arange(n + 1))) ** 2), rtol=1e-5)


def test_gradient_norms_plot(tmp_path, capsys):
    a, state, step, loss_fn = _problem(0.0, 1e-3)
    png = tmp_path / "norms.png"
    kc.autograd.gradient_norms(step, state, 10, loss_fn, plot=str(png))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in capsys.readouterr().out
        return
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_clip_grad_norm():
    x = kc.zeros(3, dtype=float, requires_grad=True)
    y = kc.zeros(1, dtype=kc.vec3, requires_grad=True)
    x.grad.assign(kc.array(np.array([3.0, 0.0, 0.0], np.float32), dtype=float))
    y.grad.assign(kc.array(np.array([[0.0, 4.0, 0.0]], np.float32), dtype=kc.vec3))
    assert kc.autograd.clip_grad_norm([x, y], 10.0) == pytest.approx(5.0)
    np.testing.assert_allclose(x.grad.numpy(), [3, 0, 0])  # under the bound: untouched
    assert kc.autograd.clip_grad_norm([x, y], 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose(x.grad.numpy(), [0.6, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), [[0, 0.8, 0]], rtol=1e-6)
    with pytest.raises(ValueError, match="max_norm"):
        kc.autograd.clip_grad_norm([x], 0.0)
    with pytest.raises(ValueError, match="requires_grad"):
        kc.autograd.clip_grad_norm([kc.zeros(2, dtype=float)], 1.0)
    x.grad.assign(kc.array(np.array([np.nan, 0, 0], np.float32), dtype=float))
    with pytest.raises(FloatingPointError, match="nan"):
        kc.autograd.clip_grad_norm([x], 1.0)
