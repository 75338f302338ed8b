"""numpy, DLPack and JAX interop on the CPU: zero-copy exchange, dtype helpers, bad input."""
import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def double_it(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = 2.0 * x[i]


@kc.kernel
def shift(v: kc.array(dtype=kc.vec3), d: kc.vec3):
    i = kc.tid()
    v[i] = v[i] + d


@kc.kernel
def scaled(x: kc.array(dtype=float), y: kc.array(dtype=float), a: float):
    i = kc.tid()
    y[i] = a * x[i]


@kc.struct
class Body:
    m: float
    p: kc.vec3


# -- numpy ------------------------------------------------------------------------------------------
def test_numpy_dtype_helpers():
    assert kc.dtype_to_numpy(kc.float16) == np.float16
    assert kc.dtype_to_numpy(kc.mat33d) == np.float64
    assert kc.dtype_from_numpy(np.int64) is kc.int64
    assert kc.dtype_from_numpy(np.dtype("<u4")) is kc.uint32
    with pytest.raises(TypeError, match="complex"):
        kc.dtype_from_numpy(np.complex64)
    with pytest.raises(TypeError, match="no numpy"):
        kc.dtype_to_numpy(Body)


def test_numpy_array_interface_round_trip():
    a = kc.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=kc.vec3)
    n = np.asarray(a)
    assert n.shape == (2, 3) and np.shares_memory(n, a.numpy())
    assert np.array(kc.array([1.0, 2.0, 3.0], dtype=float)).tolist() == [1.0, 2.0, 3.0]
    x = np.arange(5, dtype=np.float32)
    kc.launch(double_it, dim=5, inputs=[x])  # numpy array straight into a launch, written in place
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


# -- DLPack export ---------------------------------------------------------------------------------
def test_kc_array_exports_dlpack_to_numpy():
    a = kc.array(np.arange(4, dtype=np.float32))
    assert a.__dlpack_device__() == (1, 0)
    n = np.from_dlpack(a)
    n[1] = 42.0
    assert a.numpy()[1] == 42.0
    v = kc.zeros(3, dtype=kc.vec3)
    assert np.from_dlpack(v).shape == (3, 3)  # element components are trailing dims
    cap = kc.to_dlpack(a)
    assert type(cap).__name__ == "PyCapsule"
    with pytest.raises(BufferError, match="struct"):
        kc.zeros(2, dtype=Body).__dlpack__()


def test_kc_array_exports_dlpack_to_torch():
    torch = pytest.importorskip("torch")
    a = kc.array(np.arange(6, dtype=np.float64).reshape(2, 3), dtype=kc.vec3d)
    t = torch.from_dlpack(a)
    assert t.dtype == torch.float64 and tuple(t.shape) == (2, 3)
    t[1, 2] = -5.0
    assert a.numpy()[1, 2] == -5.0


# -- DLPack import ---------------------------------------------------------------------------------
def test_from_dlpack_numpy_and_kc():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = kc.from_dlpack(x, dtype=kc.vec3)
    assert a.shape == (4,) and a.dtype is kc.vec3 and np.shares_memory(a.numpy(), x)
    kc.launch(shift, dim=4, inputs=[a, kc.vec3(1.0, 1.0, 1.0)])
    assert x[0].tolist() == [1.0, 2.0, 3.0]
    b = kc.from_dlpack(x)
    assert b.shape == (4, 3) and b.dtype is kc.float32
    assert kc.from_dlpack(a) is a
    with pytest.raises(TypeError, match="__dlpack__"):
        kc.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="cannot be viewed as vec3"):
        kc.from_dlpack(np.zeros((4, 3), np.float64), dtype=kc.vec3)
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        kc.from_dlpack(np.zeros((1, 1, 1, 1, 2), np.float32))


def test_from_dlpack_torch_tensor_and_capsule():
    torch = pytest.importorskip("torch")
    t = torch.arange(5, dtype=torch.float32, requires_grad=True)  # exported detached
    a = kc.from_dlpack(t)
    assert a.shape == (5,) and a.numpy()[4] == 4.0
    u = torch.arange(3, dtype=torch.float32)
    c = kc.from_dlpack(torch.utils.dlpack.to_dlpack(u))  # a bare legacy capsule
    kc.launch(double_it, dim=3, inputs=[c])               # kernels write through it
    assert u.tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="already consumed"):
        cap = torch.utils.dlpack.to_dlpack(u)
        np.from_dlpack(kc.interop.dlpack._Capsule(cap))
        kc.from_dlpack(cap)


def test_dlpack_producers_go_straight_into_launch():
    class Producer:  # any object with __dlpack__/__dlpack_device__ (here backed by numpy)
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kw):
            return self.arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    x = np.ones(4, np.float32)
    kc.launch(double_it, dim=4, inputs=[Producer(x)])
    assert x.tolist() == [2.0] * 4


# -- JAX -------------------------------------------------------------------------------------------
def test_jax_round_trip():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    j = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    a = kc.from_jax(j, dtype=kc.vec3)
    assert a.shape == (2,) and a.dtype is kc.vec3 and a.device.is_cpu
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    b = kc.array(np.arange(4, dtype=np.float32))
    kc.launch(double_it, dim=4, inputs=[b])
    jb = kc.to_jax(b)
    assert isinstance(jb, jax.Array)
    np.testing.assert_array_equal(np.asarray(jb), [0.0, 2.0, 4.0, 6.0])
    assert kc.dtype_from_jax(jnp.float16) is kc.float16
    assert kc.dtype_to_jax(kc.vec3) == jnp.float32
    assert kc.device_from_jax(jax.devices("cpu")[0]).is_cpu
    assert kc.device_to_jax("cpu").platform == "cpu"


def test_from_jax_is_zero_copy_and_feeds_a_launch():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    j = (jnp.arange(8, dtype=jnp.float32) + 1.0).block_until_ready()
    a = kc.from_jax(j)
    assert a.shape == (8,) and a.dtype is kc.float32 and a.device.is_cpu
    # the same buffer, not a copy: the DLPack data pointer is JAX's own buffer
    assert a.ptr == j.unsafe_buffer_pointer()
    assert np.shares_memory(a.numpy(), np.asarray(j))
    y = kc.zeros(8)
    kc.launch(scaled, dim=8, inputs=[a, y, 3.0])  # kernels read JAX memory in place (JAX arrays are immutable)
    np.testing.assert_array_equal(y.numpy(), 3.0 * np.arange(1, 9))
    y2 = kc.zeros(8)
    kc.launch(scaled, dim=8, inputs=[j, y2, -1.0])  # a JAX array straight into a launch
    np.testing.assert_array_equal(y2.numpy(), -np.arange(1, 9))
    np.testing.assert_array_equal(np.asarray(j), np.arange(1, 9))  # untouched
