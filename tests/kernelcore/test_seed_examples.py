"""The seeds' kernel examples that need no autodiff, geometry or GPU, with kc in place of wp."""
import numpy as np

import kernelcore as kc


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), gravity: kc.vec3, dt: float):
    i = kc.tid()
    v[i] = v[i] + gravity * dt
    x[i] = x[i] + v[i] * dt


@kc.kernel
def saxpy(x: kc.array(dtype=float), y: kc.array(dtype=float), a: float):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


def test_integrate_matches_numpy():
    n = 1024
    rng = np.random.default_rng(1)
    x0 = rng.random((n, 3)).astype(np.float32)
    v0 = rng.random((n, 3)).astype(np.float32)
    x = kc.array(x0, dtype=kc.vec3)
    v = kc.array(v0, dtype=kc.vec3)
    g = np.array([0.0, -9.8, 0.0], np.float32)
    dt = np.float32(1.0 / 60.0)
    xr, vr = x0.copy(), v0.copy()
    for _ in range(10):
        kc.launch(integrate, dim=n, inputs=[x, v, kc.vec3(0.0, -9.8, 0.0), 1.0 / 60.0])
        vr = vr + g * dt
        xr = xr + vr * dt
    assert x.numpy().shape == (n, 3)
    np.testing.assert_allclose(v.numpy(), vr, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.numpy(), xr, rtol=1e-6, atol=1e-6)


def test_saxpy_on_numpy_arrays():
    # external arrays implementing __array_interface__ are passed straight to launch (zero-copy)
    n = 5000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    kc.launch(saxpy, dim=n, inputs=[x, y, 2.0], device="cpu")
    np.testing.assert_array_equal(y, 2.0 * np.arange(n, dtype=np.float32) + 1.0)


def test_array_construction_and_conversion():
    a = kc.zeros(10, dtype=kc.vec3)
    assert a.shape == (10,) and a.numpy().shape == (10, 3) and a.dtype is kc.vec3
    b = kc.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=kc.vec3)
    assert b.shape == (4,)
    assert b.list()[1] == kc.vec3(3.0, 4.0, 5.0)
    c = kc.from_numpy(np.ones((2, 3), np.float64))
    assert c.dtype is kc.float64 and c.shape == (2, 3)
    d = kc.full(5, 7, dtype=kc.int32)
    assert d.numpy().tolist() == [7] * 5
    e = kc.clone(b)
    e.numpy()[0] = 100
    assert b.numpy()[0, 0] == 0.0  # clone is a deep copy
    f = kc.zeros_like(b)
    kc.copy(f, b)
    np.testing.assert_array_equal(f.numpy(), b.numpy())
    view = b[1:3]
    assert view.shape == (2,) and view.numpy()[0, 0] == 3.0
    arr = np.asarray(b)  # __array_interface__
    assert arr.shape == (4, 3) and np.shares_memory(arr, b.numpy())
