"""The CUDA runtime path.

Without a GPU: the errors a user meets (CUDA requested, unknown devices, arrays on the
wrong device), the struct byte layout of device buffers, and the whole launch path
(NVRTC -> PTX -> module load -> cuLaunchKernel) through a stand-in for CuPy whose
"driver" runs each launch with the CPU build of the same kernel on the exact parameter
bytes the CUDA kernel would receive.

With a GPU (``pytest.mark.cuda``, skipped otherwise): the same kernels on the device,
checked against the CPU.
"""
import ctypes
import os
import types

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import nvrtc
from kernelcore.device import Device, get_runtime
from kernelcore.interop import cuda_mem

HAS_CUDA = kc.is_cuda_available()
# scripts/test.sh sets this where nvidia-smi sees a GPU: the GPU tests must then run, not skip
REQUIRE_CUDA = os.environ.get("KERNELCORE_REQUIRE_CUDA") == "1"
needs_gpu = [pytest.mark.cuda, pytest.mark.skipif(not HAS_CUDA and not REQUIRE_CUDA,
                                                  reason="no CUDA GPU here (needs CuPy, a driver and a GPU)")]


@pytest.mark.skipif(not REQUIRE_CUDA, reason="KERNELCORE_REQUIRE_CUDA is not set")
def test_required_cuda_is_available():
    assert HAS_CUDA, "KERNELCORE_REQUIRE_CUDA=1 but kc.is_cuda_available() is False (is CuPy installed?)"


@kc.kernel
def saxpy(x: kc.array(dtype=float), y: kc.array(dtype=float), a: float):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), g: kc.vec3, dt: float):
    i = kc.tid()
    v[i] = v[i] + g * dt
    x[i] = x[i] + v[i] * dt


@kc.kernel
def sq_sum(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(out, 0, kc.sin(x[i]) * x[i])


@kc.kernel
def f64_math(x: kc.array(dtype=kc.float64), y: kc.array(dtype=kc.float64)):
    i = kc.tid()
    y[i] = kc.sin(x[i]) + kc.sqrt(x[i]) + kc.exp(-x[i]) + kc.pow(x[i], 1.5)


@kc.kernel
def grid2d(a: kc.array2d(dtype=float)):
    i, j = kc.tid()
    a[i, j] = float(i * 10 + j)


@kc.struct
class Particle:
    x: kc.vec3
    m: float


@kc.kernel
def move_particles(ps: kc.array(dtype=Particle), d: kc.vec3):
    i = kc.tid()
    p = ps[i]
    p.x = p.x + d * p.m
    ps[i] = p


# -- without a GPU ---------------------------------------------------------------------------------
@pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU error path")
def test_cuda_requested_without_gpu_is_a_clear_error():
    assert kc.is_cuda_available() is False and kc.get_cuda_device_count() == 0
    for make in (lambda: kc.get_device("cuda"), lambda: kc.zeros(4, device="cuda"),
                 lambda: kc.launch(saxpy, dim=4, inputs=[kc.zeros(4), kc.zeros(4), 1.0], device="cuda:0"),
                 lambda: kc.ScopedDevice("cuda"), lambda: kc.set_device("cuda"), lambda: kc.Stream()):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            make()
    assert kc.get_device() == "cpu" and kc.get_device("cpu") != "cuda"  # comparing names never raises
    kc.synchronize()  # nothing to wait for


def test_devices_that_do_not_exist():
    with pytest.raises((RuntimeError, ValueError), match="cuda:7"):
        kc.zeros(2, device="cuda:7")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        kc.zeros(2, device="tpu")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        kc.launch(saxpy, dim=2, inputs=[kc.zeros(2), kc.zeros(2), 1.0], device="tpu")
    with pytest.raises(ValueError, match="integer"):
        kc.get_device("cuda:x")


class _FakeCudaArray:
    """An object exposing device memory the way CuPy/Numba/torch do."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0xdead0000, False), "version": 3, "strides": None}


@pytest.mark.skipif(HAS_CUDA, reason="without a GPU a CUDA array cannot be wrapped at all")
def test_cuda_array_given_to_cpu_launch():
    with pytest.raises(ValueError, match=r"saxpy.*argument 'x'.*__cuda_array_interface__.*CUDA is not available"):
        kc.launch(saxpy, dim=4, inputs=[_FakeCudaArray(), kc.zeros(4), 1.0], device="cpu")


def test_cpu_arrays_given_to_cuda_launch():
    cuda0 = Device("cuda:0", 0)  # the check happens before anything touches a GPU
    for x in (kc.zeros(4), np.zeros(4, np.float32)):
        with pytest.raises(ValueError, match=r"saxpy.*argument 'x'.*on device 'cpu' but the launch runs on 'cuda:0'"):
            kc.launch(saxpy, dim=4, inputs=[x, kc.zeros(4), 1.0], device=cuda0)


def test_struct_elements_as_device_bytes():
    """CuPy has no structured dtypes: struct arrays live on the GPU as bytes and come back intact."""
    host = kc.zeros(3, dtype=Particle)
    host.fill_(Particle(x=kc.vec3(1.0, 2.0, 3.0), m=0.5))
    np_dt = kc.types.np_dtype_of(Particle)[0]
    raw = cuda_mem._host_raw(host.numpy(), np_dt)
    assert raw.dtype == np.uint8 and raw.shape == (3, np_dt.itemsize)
    assert cuda_mem._raw_shape((3,), np_dt) == ((3, np_dt.itemsize), np.dtype(np.uint8))
    back = cuda_mem.to_host(types.SimpleNamespace(get=lambda: raw.copy()), np_dt)
    assert back.dtype == np_dt and back.shape == (3,) and back.tobytes() == host.numpy().tobytes()


# -- the CUDA path through a stand-in CuPy -----------------------------------------------------------
class _DeviceMemory(np.ndarray):
    """Host memory posing as a CuPy array (.get() copies, .data.ptr, .device).

    Like CuPy, arithmetic that mixes it with host (numpy) arrays is a TypeError: device
    memory never meets host memory without an explicit copy."""

    def get(self):
        return np.array(self, copy=True)

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    @property
    def device(self):
        return _FakeDevice(0)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out", ())
        if any(isinstance(x, np.ndarray) and not isinstance(x, _DeviceMemory) for x in inputs + tuple(out)):
            raise TypeError(f"{ufunc.__name__}: cannot mix device (CuPy) and host (numpy) arrays")
        host = lambda x: x.view(np.ndarray) if isinstance(x, _DeviceMemory) else x  # noqa: E731
        if out:
            kwargs["out"] = tuple(host(o) for o in out)
        res = getattr(ufunc, method)(*(host(x) for x in inputs), **kwargs)
        if out:
            return out[0] if len(out) == 1 else out
        return res.view(_DeviceMemory) if isinstance(res, np.ndarray) else res


class _FakeDevice:
    """cupy.cuda.Device: a context manager making its ordinal the current device."""

    gpu = None  # the _FakeGPU in use, which tracks the current device

    def __init__(self, ordinal=None):
        cur = self.gpu.current_device if self.gpu else 0
        self.id, self.compute_capability = (cur if ordinal is None else ordinal), "80"

    def __enter__(self):
        if self.gpu:
            self._saved, self.gpu.current_device = self.gpu.current_device, self.id
        return self

    def __exit__(self, *exc):
        if self.gpu:
            self.gpu.current_device = self._saved
        return False


class _FakeGPU:
    """Enough of CuPy for kernelcore's CUDA path: memory is host memory, and each kernel
    launch runs the CPU build of the same kernel on the exact bytes cuLaunchKernel gets.
    ``device_count`` devices exist (1 unless a test sets more); streams remember how they
    were created."""

    Device = _FakeDevice

    def __init__(self):
        self.modules, self.launches, self.kernels, self.streams = {}, [], [], []
        self.device_count, self.current_device = 1, 0
        cuda = types.SimpleNamespace(
            runtime=types.SimpleNamespace(getDeviceCount=lambda: self.device_count, free=lambda p: None,
                                          deviceSynchronize=lambda: None, streamSynchronize=lambda s: None),
            driver=types.SimpleNamespace(moduleLoadData=self.load, moduleGetFunction=self.get_function,
                                         launchKernel=self.launch),
            Device=_FakeDevice, get_current_stream=lambda: types.SimpleNamespace(ptr=0, device_id=-1),
            Stream=self.stream)
        dev = lambda a: np.array(a).view(_DeviceMemory)  # noqa: E731
        self.cupy = types.SimpleNamespace(
            cuda=cuda, ndarray=_DeviceMemory, asarray=dev, ascontiguousarray=dev,
            zeros=lambda shape, dtype: dev(np.zeros(shape, dtype)), empty=lambda shape, dtype: dev(np.empty(shape, dtype)))

    def stream(self, null=False, non_blocking=False, ptds=False):
        """cupy.cuda.Stream(...): created on the current device, with distinct handles."""
        s = types.SimpleNamespace(ptr=0x5717 + len(self.streams), non_blocking=non_blocking, device_id=self.current_device,
                                  synchronize=lambda: None)
        self.streams.append(s)
        return s

    def load(self, image: bytes):
        assert image.startswith(b"//") and b".target sm_80" in image  # PTX from NVRTC
        self.modules[len(self.modules) + 1] = image.decode()
        return len(self.modules)

    def get_function(self, handle, symbol):
        assert f".entry {symbol}(" in self.modules[handle], symbol
        return (handle, symbol)

    def launch(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        from kernelcore.launch import launch_bounds_ctypes

        _, symbol = f
        ptrs = (ctypes.c_void_p * 2).from_address(params)
        bounds = launch_bounds_ctypes.from_address(ptrs[0])
        self.launches.append(dict(symbol=symbol, grid=(gx, gy, gz), block=(bx, by, bz), stream=stream, size=bounds.size))
        kernel = next(k for k in self.kernels if symbol.startswith(k.cname + "_cuda_"))
        lk = kernel.module.ensure_built(kernel, kc.get_device("cpu"))
        (lk.bwd if symbol.endswith("_bwd") else lk.fwd)(ptrs[0], ptrs[1])


@pytest.fixture
def fake_gpu(monkeypatch):
    if not nvrtc.is_available():
        pytest.skip("NVRTC not installed")
    gpu = _FakeGPU()
    gpu.kernels = [saxpy, integrate, sq_sum, move_particles]
    rt = get_runtime()
    monkeypatch.setattr(_FakeDevice, "gpu", gpu)
    monkeypatch.setattr(cuda_mem, "_cupy", gpu.cupy)
    monkeypatch.setattr(rt, "cuda_probe", None)
    monkeypatch.setattr(rt, "devices", dict(rt.devices))
    for k in gpu.kernels:  # fresh CUDA chunks for this stand-in device
        monkeypatch.setattr(k.module, "loaded", {key: v for key, v in k.module.loaded.items() if key[0] != "cuda"})
    yield gpu


def test_device_arrays_with_stand_in_cupy(fake_gpu):
    h = kc.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=kc.vec3)
    d = h.to("cuda")
    assert d.device == "cuda:0" and isinstance(d._buf, _DeviceMemory) and d.shape == (2,)
    assert not np.shares_memory(d.numpy(), d._buf)  # .numpy() of a device array is a copy
    np.testing.assert_array_equal(d.to("cpu").numpy(), h.numpy())
    d.fill_(kc.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(d.numpy(), [[1.0, 2.0, 3.0]] * 2)
    d[1] = [7.0, 8.0, 9.0]
    assert d.numpy()[1].tolist() == [7.0, 8.0, 9.0]
    g = kc.zeros(4, device="cuda", requires_grad=True)
    assert g.grad.device.is_cuda
    ps = kc.zeros(3, dtype=Particle, device="cuda")  # structs live on the device as bytes
    assert ps._buf.dtype == np.uint8 and ps._buf.shape == (3, kc.types.size_of(Particle))
    ps.fill_(Particle(x=kc.vec3(1.0, 0.0, 0.0), m=2.0))
    ref = kc.zeros(3, dtype=Particle)
    ref.fill_(Particle(x=kc.vec3(1.0, 0.0, 0.0), m=2.0))
    assert ps.numpy().dtype == ref.numpy().dtype and ps.numpy().tobytes() == ref.numpy().tobytes()
    back = kc.clone(ps, device="cpu")
    assert back.numpy().tobytes() == ref.numpy().tobytes()
    kc.copy(ps, back)


def test_launch_path_with_stand_in_driver(fake_gpu):
    dev = kc.get_device("cuda")
    assert dev == "cuda:0" and kc.is_cuda_available()
    n = 1000
    x = kc.array(np.arange(n, dtype=np.float32), device=dev)
    y = kc.ones(n, device=dev)
    kc.launch(saxpy, dim=n, inputs=[x, y, 2.0], block_dim=128, stream=77)
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(n) + 1.0)
    call = fake_gpu.launches[-1]
    assert call["symbol"].endswith("_cuda_fwd") and call["block"] == (128, 1, 1)
    assert call["grid"] == (8, 1, 1) and call["stream"] == 77 and call["size"] == n
    # vectors and a by-value vec3 argument: the packed struct matches the kernel's layout
    with kc.ScopedDevice("cuda:0"):
        xv = kc.zeros(5, dtype=kc.vec3)
        vv = kc.ones(5, dtype=kc.vec3)
    s = kc.Stream()
    kc.launch(integrate, dim=5, inputs=[xv, vv, kc.vec3(0.0, -10.0, 0.0), 0.5], stream=s)
    s.synchronize()
    assert fake_gpu.launches[-1]["stream"] == 0x5717 and fake_gpu.launches[-1]["grid"] == (1, 1, 1)
    np.testing.assert_allclose(vv.numpy(), [[1.0, -4.0, 1.0]] * 5)
    np.testing.assert_allclose(xv.numpy(), [[0.5, -2.0, 0.5]] * 5)
    ps = kc.zeros(4, dtype=Particle, device="cuda")
    ps.fill_(Particle(x=kc.vec3(1.0, 0.0, 0.0), m=2.0))
    kc.launch(move_particles, dim=4, inputs=[ps, kc.vec3(0.0, 1.0, 0.0)])
    moved = ps.numpy().view(np.float32).reshape(4, -1)
    np.testing.assert_allclose(moved[:, :4], [[1.0, 2.0, 0.0, 2.0]] * 4)
    kc.synchronize()


def test_tape_on_device_with_stand_in_driver(fake_gpu):
    dev = kc.get_device("cuda:0")
    xs = np.linspace(0.1, 2.0, 7).astype(np.float32)
    x = kc.array(xs, device=dev, requires_grad=True)
    out = kc.zeros(1, device=dev, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(sq_sum, dim=7, inputs=[x, out])
    tape.backward(loss=out)
    assert fake_gpu.launches[-1]["symbol"].endswith("_cuda_bwd")
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), [np.sum(np.sin(xs) * xs)], rtol=1e-5)
    tape.zero()
    assert not x.grad.numpy().any()


def test_user_streams_are_blocking_and_follow_the_current_device(fake_gpu):
    fake_gpu.device_count = 2
    s0 = kc.Stream()
    assert s0.device == "cuda:0"
    made = fake_gpu.streams[-1]
    # ordered after the legacy default stream, where arrays are allocated, filled and copied
    assert made.non_blocking is False and made.device_id == 0 and s0.cuda_stream == made.ptr
    with kc.ScopedDevice("cuda:1"):
        s1 = kc.Stream()  # the current device, not cuda:0
    assert s1.device == "cuda:1" and fake_gpu.streams[-1].device_id == 1 and fake_gpu.streams[-1].non_blocking is False
    kc.set_device("cuda:1")
    try:
        assert kc.Stream().device == "cuda:1"
    finally:
        kc.set_device("cpu")
    assert kc.Stream("cuda:0").device == "cuda:0"
    with pytest.raises(ValueError, match="streams exist on CUDA devices only"):
        kc.Stream("cpu")


def test_stream_on_another_device_is_rejected(fake_gpu):
    fake_gpu.device_count = 2
    with kc.ScopedDevice("cuda:1"):
        s1 = kc.Stream()
    x, y = kc.zeros(8, device="cuda:0"), kc.ones(8, device="cuda:0")
    n = len(fake_gpu.launches)
    with pytest.raises(ValueError, match=r"stream passed to kc.launch is on device 'cuda:1' but the launch runs on 'cuda:0'"):
        kc.launch(saxpy, dim=8, inputs=[x, y, 2.0], stream=s1)
    cupy_stream = types.SimpleNamespace(ptr=0x99, device_id=1)  # a CuPy stream of device 1
    with pytest.raises(ValueError, match="'cuda:1' but the launch runs on 'cuda:0'"):
        kc.launch(saxpy, dim=8, inputs=[x, y, 2.0], stream=cupy_stream)
    torch_stream = types.SimpleNamespace(cuda_stream=0x98, device_index=1)
    with pytest.raises(ValueError, match="'cuda:1' but the launch runs on 'cuda:0'"):
        kc.launch(saxpy, dim=8, inputs=[x, y, 2.0], stream=torch_stream)
    assert len(fake_gpu.launches) == n  # nothing was launched
    # streams of the launch device, CuPy's null stream (device -1: any) and raw handles are fine
    for ok in (kc.Stream("cuda:0"), types.SimpleNamespace(ptr=0, device_id=-1), 0x42):
        kc.launch(saxpy, dim=8, inputs=[x, y, 2.0], stream=ok)
    assert [c["stream"] for c in fake_gpu.launches[-3:]] == [fake_gpu.streams[-1].ptr, 0, 0x42]
    np.testing.assert_array_equal(y.numpy(), np.ones(8))


def test_tape_runs_each_adjoint_on_the_stream_of_its_forward(fake_gpu):
    xs = np.linspace(0.1, 2.0, 7).astype(np.float32)
    x = kc.array(xs, device="cuda:0", requires_grad=True)
    out = kc.zeros(1, device="cuda:0", requires_grad=True)
    out2 = kc.zeros(1, device="cuda:0", requires_grad=True)
    s = kc.Stream()
    tape = kc.Tape()
    with tape:
        kc.launch(sq_sum, dim=7, inputs=[x, out], stream=s)
        kc.launch(sq_sum, dim=7, inputs=[x, out2])  # on the current (CuPy) stream, handle 0
    assert fake_gpu.launches[-2]["stream"] == s.cuda_stream != 0
    tape.backward(grads={out: np.ones(1, np.float32), out2: np.ones(1, np.float32)})
    bwd = [c for c in fake_gpu.launches if c["symbol"].endswith("_cuda_bwd")]
    assert [c["stream"] for c in bwd] == [0, s.cuda_stream]  # reverse order, each on its forward's stream
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.cos(xs) * xs + np.sin(xs)), rtol=1e-5)


def test_backward_through_host_device_copies(fake_gpu):
    """The adjoint of a copy crosses devices the way the values did (the stand-in, like CuPy,
    refuses arithmetic that mixes host and device buffers)."""
    with pytest.raises(TypeError, match="cannot mix device"):
        np.zeros(3, np.float32).__iadd__(fake_gpu.cupy.zeros(3, np.float32))
    xs = np.linspace(0.1, 2.0, 7).astype(np.float32)
    want = np.cos(xs) * xs + np.sin(xs)
    # host -> device: kernel on the GPU, gradient lands in the host array
    xh = kc.array(xs, requires_grad=True)
    out = kc.zeros(1, device="cuda:0", requires_grad=True)
    tape = kc.Tape()
    with tape:
        xd = kc.clone(xh, device="cuda:0")
        kc.launch(sq_sum, dim=7, inputs=[xd, out])
    tape.backward(loss=out)
    assert xh.grad.device.is_cpu and xd.grad.device.is_cuda
    np.testing.assert_allclose(xh.grad.numpy(), want, rtol=1e-5)
    # device -> host via kc.copy: kernel on the CPU, gradient lands in the device array
    xd2 = kc.array(xs, device="cuda:0", requires_grad=True)
    xh2 = kc.zeros(7, requires_grad=True)
    out_h = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.copy(xh2, xd2)
        kc.launch(sq_sum, dim=7, inputs=[xh2, out_h])
    tape.backward(loss=out_h)
    assert xd2.grad.device.is_cuda
    np.testing.assert_allclose(xd2.grad.numpy(), want, rtol=1e-5)


def test_backward_through_a_host_copy():
    """The same code path without a GPU: the adjoint of kc.copy/kc.clone on the CPU."""
    xs = np.linspace(0.1, 2.0, 7).astype(np.float32)
    x = kc.array(xs, requires_grad=True)
    out = kc.zeros(1, requires_grad=True)
    tape = kc.Tape()
    with tape:
        y = kc.clone(x)
        z = kc.zeros(7, requires_grad=True)
        kc.copy(z, y)
        kc.launch(sq_sum, dim=7, inputs=[z, out])
    tape.backward(loss=out)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-5)


def test_cuda_device_index_beyond_the_device_count(fake_gpu):
    assert kc.get_cuda_device_count() == 1 and kc.get_device("cuda:0").is_cuda
    for make in (lambda: kc.get_device("cuda:1"), lambda: kc.zeros(2, device="cuda:1"),
                 lambda: kc.Stream("cuda:3"), lambda: kc.ScopedDevice("cuda:1"),
                 lambda: kc.launch(saxpy, dim=2, inputs=[kc.zeros(2), kc.zeros(2), 1.0], device="cuda:2")):
        with pytest.raises(ValueError, match=r"device 'cuda:\d' does not exist: 1 CUDA device\(s\) present"):
            make()
    fake_gpu.device_count = 2
    assert kc.get_device("cuda:1").ordinal == 1


def test_cuda_array_given_to_a_cpu_launch(fake_gpu):
    xd = kc.zeros(4, device="cuda:0")
    n = len(fake_gpu.launches)
    with pytest.raises(ValueError, match=r"saxpy.*argument 'x'.*on device 'cuda:0' but the launch runs on 'cpu'"):
        kc.launch(saxpy, dim=4, inputs=[xd, kc.zeros(4), 1.0], device="cpu")
    # without device=, the first array decides: a CPU launch that meets a CUDA array
    with pytest.raises(ValueError, match=r"saxpy.*argument 'y'.*on device 'cuda:0' but the launch runs on 'cpu'"):
        kc.launch(saxpy, dim=4, inputs=[kc.zeros(4), xd, 1.0])
    assert len(fake_gpu.launches) == n


# -- on a GPU --------------------------------------------------------------------------------------
def _gpu_test(f):
    for m in needs_gpu:
        f = m(f)
    return f


@_gpu_test
def test_gpu_saxpy_and_copies():
    n = 100_000
    x = kc.array(np.arange(n, dtype=np.float32), device="cuda")
    y = kc.ones(n, device="cuda")
    assert x.device == "cuda:0" and y.device.is_cuda
    kc.launch(saxpy, dim=n, inputs=[x, y, 0.5])
    np.testing.assert_allclose(y.numpy(), 0.5 * np.arange(n) + 1.0)
    h = y.to("cpu")
    assert h.device.is_cpu and np.array_equal(h.numpy(), y.numpy())
    z = kc.clone(h, device="cuda:0")
    kc.synchronize()
    np.testing.assert_array_equal(z.numpy(), h.numpy())
    with pytest.raises(ValueError, match="on device 'cuda:0' but the launch runs on 'cpu'"):
        kc.launch(saxpy, dim=n, inputs=[x, h, 1.0], device="cpu")


@_gpu_test
def test_gpu_matches_cpu_for_vectors_grids_and_float64():
    rng = np.random.default_rng(0)
    x0, v0 = rng.random((512, 3)).astype(np.float32), rng.random((512, 3)).astype(np.float32)
    res = {}
    for dev in ("cpu", "cuda"):
        x, v = kc.array(x0, dtype=kc.vec3, device=dev), kc.array(v0, dtype=kc.vec3, device=dev)
        kc.launch(integrate, dim=512, inputs=[x, v, kc.vec3(0.0, -9.8, 0.0), 0.01])
        d = kc.array(np.linspace(0.1, 3.0, 64), dtype=kc.float64, device=dev)
        e = kc.zeros(64, dtype=kc.float64, device=dev)
        kc.launch(f64_math, dim=64, inputs=[d, e])
        g = kc.zeros((5, 7), device=dev)
        kc.launch(grid2d, dim=(5, 7), inputs=[g])
        res[dev] = (x.numpy(), e.numpy(), g.numpy())
    for a, b in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@_gpu_test
def test_gpu_gradients_match_cpu():
    xs = np.linspace(0.1, 2.0, 300).astype(np.float32)
    grads = {}
    for dev in ("cpu", "cuda"):
        x = kc.array(xs, device=dev, requires_grad=True)
        out = kc.zeros(1, device=dev, requires_grad=True)
        tape = kc.Tape()
        with tape:
            kc.launch(sq_sum, dim=300, inputs=[x, out])
        tape.backward(loss=out)
        grads[dev] = x.grad.numpy()
    np.testing.assert_allclose(grads["cuda"], grads["cpu"], rtol=1e-5)


@_gpu_test
def test_gpu_structs_streams_and_scoped_device():
    with kc.ScopedDevice("cuda:0"):
        ps = kc.zeros(8, dtype=Particle)
        assert ps.device.is_cuda
    ps.fill_(Particle(x=kc.vec3(1.0, 0.0, 0.0), m=2.0))
    s = kc.Stream("cuda:0")
    kc.launch(move_particles, dim=8, inputs=[ps, kc.vec3(0.0, 1.0, 0.0)], stream=s)
    s.synchronize()
    host = ps.numpy()
    assert host.shape == (8,) and host.dtype.itemsize == kc.types.size_of(Particle)
    np.testing.assert_allclose(host.view(np.float32).reshape(8, -1)[:, :4], [[1.0, 2.0, 0.0, 2.0]] * 8)


@_gpu_test
def test_gpu_external_arrays_and_debug_bounds(monkeypatch):
    cp = pytest.importorskip("cupy")
    x = cp.arange(16, dtype=cp.float32)
    y = cp.ones(16, dtype=cp.float32)
    kc.launch(saxpy, dim=16, inputs=[x, y, 2.0], device="cuda:0")
    np.testing.assert_array_equal(cp.asnumpy(y), 2.0 * np.arange(16) + 1.0)
    a = kc.from_cupy(y)
    assert a.device == "cuda:0" and kc.to_cupy(a) is not None
    with pytest.raises(ValueError, match="on device 'cuda:0' but the launch runs on 'cpu'"):
        kc.launch(saxpy, dim=16, inputs=[x, kc.zeros(16), 1.0], device="cpu")
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        t = torch.zeros(16, device="cuda:0")
        kc.launch(saxpy, dim=16, inputs=[x, t, 1.0], device="cuda:0")
        assert t.cpu().tolist() == list(range(16))
        back = kc.to_torch(kc.from_torch(t))
        assert back.device.type == "cuda" and back.data_ptr() == t.data_ptr()
    monkeypatch.setattr(kc.config, "mode", "debug")
    with pytest.raises(kc.KernelRuntimeError, match="out of bounds"):
        kc.launch(saxpy, dim=17, inputs=[kc.zeros(16, device="cuda"), kc.zeros(16, device="cuda"), 1.0])


def test_max_blocks_caps_the_cuda_grid(fake_gpu):
    x = kc.array(np.arange(1000, dtype=np.float32), device="cuda:0")
    y = kc.zeros(1000, device="cuda:0")
    kc.launch(saxpy, dim=1000, inputs=[x, y, 2.0], block_dim=64)
    assert fake_gpu.launches[-1]["grid"] == (16, 1, 1) and fake_gpu.launches[-1]["block"] == (64, 1, 1)
    kc.launch(saxpy, dim=1000, inputs=[x, y, 2.0], block_dim=64, max_blocks=3)
    assert fake_gpu.launches[-1]["grid"] == (3, 1, 1)   # the grid-stride loop covers the rest
    np.testing.assert_allclose(y.numpy(), 4.0 * np.arange(1000))
