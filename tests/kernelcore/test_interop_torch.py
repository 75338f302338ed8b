"""PyTorch interop on the CPU: zero-copy views both ways, shared gradients, tensors as launch inputs."""
import numpy as np
import pytest

import kernelcore as kc

torch = pytest.importorskip("torch")


@kc.kernel
def scale_add(x: kc.array(dtype=float), y: kc.array(dtype=float), a: float):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


@kc.kernel
def sq_norm(xs: kc.array(dtype=kc.vec2), out: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(out, 0, kc.dot(xs[i], xs[i]))


@kc.kernel
def cube(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * x[i] * x[i]


def test_dtype_and_device_helpers():
    assert kc.dtype_from_torch(torch.float32) is kc.float32
    assert kc.dtype_from_torch(torch.float16) is kc.float16
    assert kc.dtype_from_torch(torch.int64) is kc.int64
    assert kc.dtype_from_torch(torch.bool) is kc.bool
    assert kc.dtype_to_torch(kc.float64) == torch.float64
    assert kc.dtype_to_torch(kc.vec3) == torch.float32          # components of a vector
    assert kc.dtype_to_torch(kc.uint32) == torch.int32          # unsigned -> signed of the same width
    with pytest.raises(TypeError, match="bfloat16"):
        kc.dtype_from_torch(torch.bfloat16)
    assert kc.device_from_torch("cpu") == kc.get_device("cpu")
    assert kc.device_from_torch(torch.device("cpu")).is_cpu
    assert kc.device_to_torch("cpu") == "cpu"
    with pytest.raises(RuntimeError, match="meta"):
        kc.device_from_torch("meta")


def test_from_torch_shares_memory_both_ways():
    t = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    a = kc.from_torch(t, dtype=kc.vec2)
    assert a.shape == (3,) and a.dtype is kc.vec2 and a.device.is_cpu
    t[1, 0] = 100.0                            # torch write seen by kernelcore
    assert a.numpy()[1, 0] == 100.0
    b = kc.from_torch(torch.zeros(3, 2))
    assert b.shape == (3, 2) and b.dtype is kc.float32
    y = torch.ones(5)
    kc.launch(scale_add, dim=5, inputs=[kc.from_torch(torch.arange(5.0)), kc.from_torch(y), 3.0])
    assert torch.equal(y, 3.0 * torch.arange(5.0) + 1.0)  # kernel write seen by torch


def test_from_torch_bad_input():
    with pytest.raises(TypeError, match="cannot be viewed as an array of vec2"):
        kc.from_torch(torch.zeros(4, 2, dtype=torch.float64), dtype=kc.vec2)
    with pytest.raises(ValueError, match="trailing dimensions"):
        kc.from_torch(torch.zeros(4, 3), dtype=kc.vec2)
    with pytest.raises(ValueError, match="contiguous"):
        kc.from_torch(torch.zeros(2, 4).t(), dtype=kc.vec2)  # components 4 floats apart
    with pytest.raises(TypeError, match="torch.Tensor"):
        kc.from_torch(np.zeros(3))


def test_to_torch_shares_memory_and_maps_dtypes():
    a = kc.array(np.arange(4, dtype=np.float32))
    t = kc.to_torch(a)
    t[2] = -1.0
    assert a.numpy()[2] == -1.0
    v = kc.zeros(3, dtype=kc.vec3)
    tv = kc.to_torch(v)
    assert tuple(tv.shape) == (3, 3) and tv.dtype == torch.float32
    u = kc.array(np.array([1, 2, 3], dtype=np.uint32))
    assert kc.to_torch(u).dtype == torch.int32 and kc.to_torch(u).tolist() == [1, 2, 3]
    assert not t.requires_grad


def test_torch_tensors_passed_to_launch_directly():
    x = torch.arange(8, dtype=torch.float32)
    y = torch.ones(8, dtype=torch.float32, requires_grad=True)   # grad tracking does not matter here
    kc.launch(scale_add, dim=8, inputs=[x, y, 2.0])
    assert torch.equal(y.detach(), 2.0 * x + 1.0)
    strided = torch.zeros(16)[::2]                               # non-contiguous views work too
    kc.launch(scale_add, dim=8, inputs=[x, strided, 1.0])
    assert torch.equal(strided, x)
    with pytest.raises(TypeError, match="scale_add.*argument 'x'.*float64"):
        kc.launch(scale_add, dim=8, inputs=[x.double(), y, 2.0])


def test_gradients_flow_from_kernelcore_into_torch_grad():
    xs = torch.randn(16, 2, requires_grad=True)
    l = torch.zeros(1, requires_grad=True)
    kx, kl = kc.from_torch(xs, dtype=kc.vec2), kc.from_torch(l)
    assert kx.requires_grad and xs.grad is not None               # the shared grad buffer was allocated
    tape = kc.Tape()
    with tape:
        kc.launch(sq_norm, dim=16, inputs=[kx], outputs=[kl])
    tape.backward(loss=kl)
    assert torch.allclose(xs.grad, 2.0 * xs.detach())
    assert np.shares_memory(kx.grad.numpy(), xs.grad.numpy())
    tape.zero()
    assert float(xs.grad.abs().sum()) == 0.0


def test_gradients_flow_from_torch_into_kernelcore():
    x = kc.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    y = kc.zeros(3, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(cube, dim=3, inputs=[x], outputs=[y])
    ty = kc.to_torch(y)
    assert ty.requires_grad and np.shares_memory(ty.grad.numpy(), y.grad.numpy())
    ty.grad.copy_(torch.tensor([1.0, 10.0, 100.0]))                 # torch writes dL/dy ...
    tape.backward(grads={y: y.grad.numpy().copy()})
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.array([1.0, 4.0, 9.0]) * [1.0, 10.0, 100.0])
    tx = kc.to_torch(x)                                              # ... and reads dL/dx
    np.testing.assert_allclose(tx.grad.numpy(), x.grad.numpy())
    with pytest.raises(TypeError, match="float"):
        kc.to_torch(kc.zeros(2, dtype=int), requires_grad=True)


def test_from_torch_with_explicit_grad():
    t = torch.ones(4, requires_grad=True)
    g = torch.zeros(4)
    a = kc.from_torch(t, grad=g)
    assert np.shares_memory(a.grad.numpy(), g.numpy())
    a2 = kc.from_torch(t, requires_grad=False)
    assert a2.grad is None and not a2.requires_grad


def test_rosenbrock_autograd_function_gradient_and_convergence():
    from examples import torch_rosenbrock as ex

    rng = np.random.default_rng(3)
    xy = torch.tensor(rng.normal(size=(64, 2)), dtype=torch.float32, requires_grad=True)
    z = ex.Rosenbrock.apply(xy, 64)
    w = torch.tensor(rng.random(64), dtype=torch.float32)
    (z * w).sum().backward()
    xd = xy.detach().double().requires_grad_(True)
    ref = ((1.0 - xd[:, 0]) ** 2 + 100.0 * (xd[:, 1] - xd[:, 0] ** 2) ** 2)
    torch.testing.assert_close(z.double(), ref.detach(), rtol=1e-5, atol=1e-4)
    (ref * w.double()).sum().backward()
    torch.testing.assert_close(xy.grad.double(), xd.grad, rtol=1e-4, atol=1e-3)  # not doubled by torch's accumulation
    # Adam converges to the minimum at (1, 1) (64 points, 2000 steps: about 1.5 s)
    pts, history = ex.optimize(num_points=64, iters=2000)
    assert np.all(np.isfinite(pts))
    assert np.max(np.abs(pts.mean(axis=0) - 1.0)) < 0.1, pts.mean(axis=0)
    assert history[-1] < 0.05 < history[0]


def test_adam_points_examples_converge():
    from examples import torch_adam_points as ex

    results = ex.main(["--n", "64", "--iters", "120"])
    for name, h in results.items():
        assert h[-1] < 1e-3 * h[0], name
    # both ways start from comparable random points and end near the origin
    assert set(results) == {"from_torch", "to_torch"}
