"""Generic kernels (typing.Any arguments) and kc.overload: values vs numpy, gradients vs
float64 central finite differences, errors."""
from typing import Any

import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def scale_sq(x: kc.array(dtype=Any), s: Any, y: kc.array(dtype=Any)):
    i = kc.tid()
    y[i] = s * x[i] * x[i]


@kc.kernel
def add_vec(a: kc.array(dtype=Any), b: Any):
    i = kc.tid()
    a[i] = a[i] + b


@kc.kernel
def plain(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = 1.0


def test_specialised_per_dtype_values():
    xs = np.array([0.5, -1.25, 2.0], dtype=np.float64)
    for dtype, tol in ((np.float32, 1e-6), (np.float64, 1e-15)):
        x = kc.array(xs.astype(dtype))
        y = kc.zeros(3, dtype=x.dtype)
        s = 3.0 if dtype == np.float32 else kc.float64(3.0)
        kc.launch(scale_sq, 3, inputs=[x, s], outputs=[y])
        assert y.numpy().dtype == dtype
        np.testing.assert_allclose(y.numpy(), 3.0 * xs * xs, rtol=tol)
    # int32 arrays with a Python int
    xi = kc.array(np.array([1, -2, 3], dtype=np.int32))
    yi = kc.zeros(3, dtype=kc.int32)
    kc.launch(scale_sq, 3, inputs=[xi, 2], outputs=[yi])
    np.testing.assert_array_equal(yi.numpy(), [2, 8, 18])
    # a numpy array specialises by its dtype too
    y64 = kc.zeros(3, dtype=kc.float64)
    kc.launch(scale_sq, 3, inputs=[xs, kc.float64(2.0)], outputs=[y64])
    np.testing.assert_allclose(y64.numpy(), 2.0 * xs * xs, rtol=1e-15)
    # one specialisation per signature, built once
    keys = set(scale_sq.specializations)
    kc.launch(scale_sq, 3, inputs=[xi, 5], outputs=[yi])
    assert set(scale_sq.specializations) == keys and len(keys) == 3


def test_vector_specialisation():
    a = kc.array(np.ones((4, 3), dtype=np.float32), dtype=kc.vec3)
    kc.launch(add_vec, 4, inputs=[a, kc.vec3(1.0, 2.0, 3.0)])
    np.testing.assert_allclose(a.numpy(), np.ones((4, 3)) + [1.0, 2.0, 3.0])
    h = kc.array(np.zeros(2, dtype=np.float64))
    kc.launch(add_vec, 2, inputs=[h, kc.float64(0.25)])
    np.testing.assert_allclose(h.numpy(), [0.25, 0.25])


@pytest.mark.parametrize("np_dtype, kc_dtype, rtol", [(np.float32, kc.float32, 2e-3), (np.float64, kc.float64, 1e-7)])
def test_gradient_vs_finite_differences(np_dtype, kc_dtype, rtol):
    xs = np.array([0.3, -0.7, 1.1, 2.0])
    s = kc_dtype(1.5)

    def loss_np(v):
        return float(np.sum(1.5 * v * v))

    x = kc.array(xs.astype(np_dtype), requires_grad=True)
    y = kc.zeros(4, dtype=kc_dtype, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(scale_sq, 4, inputs=[x, s], outputs=[y])
    tape.backward(grads={y: kc.array(np.ones(4, dtype=np_dtype))})
    h = 1e-6
    fd = np.array([(loss_np(xs + h * e) - loss_np(xs - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=rtol)


def test_adjoint_launch_of_generic_kernel():
    xs = np.array([1.0, 2.0])
    x = kc.array(xs)
    y = kc.zeros(2, dtype=kc.float64)
    adj_x = kc.zeros(2, dtype=kc.float64)
    adj_y = kc.array(np.ones(2))
    kc.launch(scale_sq, 2, inputs=[x, kc.float64(2.0)], outputs=[y],
              adj_inputs=[adj_x, kc.float64(0.0)], adj_outputs=[adj_y], adjoint=True)
    np.testing.assert_allclose(adj_x.numpy(), 4.0 * xs)


def test_explicit_overload_is_used():
    @kc.kernel
    def axpy(a: Any, x: kc.array(dtype=Any), y: kc.array(dtype=Any)):
        i = kc.tid()
        y[i] = a * x[i] + y[i]

    spec = kc.overload(axpy, [kc.float64, kc.array(dtype=kc.float64), kc.array(dtype=kc.float64)])
    assert list(axpy.specializations.values()) == [spec]
    x = kc.array(np.array([1.0, 2.0]))
    y = kc.array(np.array([0.5, 0.5]))
    # a Python float fits the declared float64 overload (inference alone would say float32)
    a = 1.0 + 2.0 ** -40   # representable in float64 only
    kc.launch(axpy, 2, inputs=[a, x], outputs=[y])
    assert list(axpy.specializations.values()) == [spec]
    np.testing.assert_array_equal(y.numpy(), a * np.array([1.0, 2.0]) + 0.5)
    # dict form, and a second declaration of the same types gives the same instance
    assert kc.overload(axpy, {"a": kc.float64, "x": kc.array(dtype=kc.float64), "y": kc.array(dtype=kc.float64)}) is spec


def test_overload_errors():
    with pytest.raises(TypeError, match="not generic"):
        kc.overload(plain, [kc.array(dtype=float)])
    with pytest.raises(TypeError, match="takes 3 arguments"):
        kc.overload(scale_sq, [kc.array(dtype=float)])
    with pytest.raises(TypeError, match="argument 'x' is declared .* does not fit"):
        kc.overload(scale_sq, [kc.array(dtype=float, ndim=2), kc.float32, kc.array(dtype=float)])
    with pytest.raises(TypeError, match="argument 's': 3.0 is not a kernel type"):
        kc.overload(scale_sq, [kc.array(dtype=float), 3.0, kc.array(dtype=float)])
    with pytest.raises(TypeError, match="argument 'a' is declared .* does not fit"):
        kc.overload(add_vec, [kc.float32, kc.float32])
    with pytest.raises(TypeError, match="not a concrete type"):
        kc.overload(scale_sq, [kc.array(dtype=Any), kc.float32, kc.array(dtype=float)])
    with pytest.raises(TypeError, match="no argument named 'z'"):
        kc.overload(scale_sq, {"z": kc.float32})


def test_launch_errors():
    x = kc.zeros(2, dtype=float)
    with pytest.raises(TypeError, match="argument 'x' is generic .* None"):
        kc.launch(scale_sq, 2, inputs=[None, 1.0], outputs=[x])
    with pytest.raises(TypeError, match="argument 'x' is declared .* got"):
        kc.launch(scale_sq, 2, inputs=[kc.zeros((2, 2), dtype=float), 1.0], outputs=[x])
    with pytest.raises(TypeError, match="is generic"):
        scale_sq.source


def test_specialisation_compiles_as_cuda():
    from kernelcore import nvrtc

    if not nvrtc.is_available():
        pytest.skip("NVRTC not available")
    spec = kc.overload(scale_sq, [kc.array(dtype=kc.float64), kc.float64, kc.array(dtype=kc.float64)])
    source = spec.cuda_source
    assert f"{spec.cname}_cuda_fwd" in source and "array_t<kc::float64>" in source
    nvrtc.cached_cubin("cuda_test_generics_" + spec.cname, source, "generics.cu", "sm_80")


def test_specialisation_that_does_not_type_check_names_the_line():
    with pytest.raises(kc.KernelCompileError, match=r"test_generics\.py:\d+"):
        kc.launch(add_vec, 1, inputs=[kc.zeros(1, dtype=kc.vec3), kc.mat22(1.0, 0.0, 0.0, 1.0)])
    # the kernel's other specialisations are unaffected
    a = kc.zeros(2, dtype=kc.float32)
    kc.launch(add_vec, 2, inputs=[a, 0.5])
    np.testing.assert_allclose(a.numpy(), [0.5, 0.5])
