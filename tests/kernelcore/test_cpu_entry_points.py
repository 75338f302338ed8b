"""CPU entry points (emit_cpp.py) and the launch fast path (launch.py FastLaunch).

Straight-line kernels get a vectorised forward for contiguous, distinct arrays; every kernel
launched over several dimensions walks them as nested loops; launches after the first skip
the per-launch work that does not depend on the values. None of this may change a result:
each test compares entry points, thread counts or launch paths bit for bit, or against numpy.
"""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore import config
from kernelcore.emit_cpp import streamable


@kc.kernel(enable_backward=False)
def saxpy_k(x: kc.array(dtype=float), y: kc.array(dtype=float), a: float):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


@kc.kernel(enable_backward=False)
def integrate_k(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), g: kc.vec3, dt: float):
    i = kc.tid()
    vi = v[i] + g * dt
    v[i] = vi
    x[i] = x[i] + vi * dt


@kc.kernel(enable_backward=False)
def transcendental_k(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    s = kc.sin(x[i]) * kc.exp(-x[i]) + kc.sqrt(kc.abs(x[i])) / (1.0 + x[i] * x[i])
    xi = x[i]
    if xi <= 0.5:  # a short pure branch: if-converted, the kernel stays straight-line
        s = -s
    y[i] = s


@kc.kernel(enable_backward=False)
def stencil_k(u: kc.array(dtype=float, ndim=2), out: kc.array(dtype=float, ndim=2)):
    i, j = kc.tid()
    out[i + 1, j + 1] = 0.25 * (u[i + 1, j] + u[i + 1, j + 2] + u[i, j + 1] + u[i + 2, j + 1]) - u[i + 1, j + 1]


@kc.kernel(enable_backward=False)
def index2_k(out: kc.array(dtype=int, ndim=2), flat: kc.array(dtype=int, ndim=2)):
    i, j = kc.tid()
    out[i, j] = i * 1000 + j
    flat[i, j] = kc.tid()


@kc.kernel(enable_backward=False)
def index2_loop_k(out: kc.array(dtype=int, ndim=2), reps: int):
    i, j = kc.tid()
    s = int(0)
    for k in range(reps):  # a dynamic loop: not straight-line, the generic entry point runs
        s += k
    out[i, j] = i * 1000 + j + s - 1


@kc.kernel(enable_backward=False)
def index3_k(out: kc.array(dtype=int, ndim=3)):
    i, j, k = kc.tid()
    out[i, j, k] = i * 10000 + j * 100 + k


@kc.kernel(enable_backward=False)
def index4_k(out: kc.array(dtype=int, ndim=4)):
    i, j, k, l = kc.tid()
    out[i, j, k, l] = i * 1000000 + j * 10000 + k * 100 + l


@kc.kernel
def scatter2_k(total: kc.array(dtype=float), w: kc.array(dtype=float, ndim=2)):
    i, j = kc.tid()
    kc.atomic_add(total, (i + j) % 3, w[i, j])


@kc.kernel(enable_backward=False)
def shift_k(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] + 1.0


@kc.func
def lerp_f(a: float, b: float, t: float):
    return a + (b - a) * t


@kc.func
def power_f(a: float, n: int):
    r = float(1.0)
    for _ in range(n):
        r = r * a
    return r


@kc.kernel(enable_backward=False)
def lerp_k(x: kc.array(dtype=float), y: kc.array(dtype=float), t: float):
    i = kc.tid()
    y[i] = lerp_f(x[i], y[i], t)


@kc.kernel(enable_backward=False)
def power_k(x: kc.array(dtype=float), y: kc.array(dtype=float), n: int):
    i = kc.tid()
    y[i] = power_f(x[i], n)


@pytest.fixture
def threads(monkeypatch):
    """Set the thread count and make every launch above 16 threads parallel."""
    monkeypatch.setattr(config, "parallel_grain", 16)

    def use(n):
        monkeypatch.setenv("KERNELCORE_NUM_THREADS", str(n))

    return use


def strided(host):
    """A kc view of ``host`` (n, ...) with a stride twice the element size: the generic entry point."""
    big = np.zeros((2 * host.shape[0],) + host.shape[1:], host.dtype)
    big[::2] = host
    return kc.array(big)[::2]


def test_straight_line_kernels_are_streamable():
    assert streamable(saxpy_k.ir()) and streamable(integrate_k.ir()) and streamable(stencil_k.ir())
    assert streamable(transcendental_k.ir())
    assert not streamable(index2_loop_k.ir())  # a loop
    assert not streamable(scatter2_k.ir())  # an atomic
    assert streamable(lerp_k.ir())  # calls a straight-line function
    assert not streamable(power_k.ir())  # calls a function with a loop


def test_function_calls_identical_on_every_entry_point(threads):
    rng = np.random.default_rng(5)
    xh, yh = rng.standard_normal(203).astype(np.float32), rng.standard_normal(203).astype(np.float32)
    out = []
    for t in (1, 2):
        threads(t)
        for make in (kc.array, strided):
            x, y = make(xh), make(yh)
            kc.launch(lerp_k, dim=203, inputs=[x, y, 0.3])
            out.append(y.numpy())
    for o in out:
        np.testing.assert_array_equal(o, out[0])
    np.testing.assert_allclose(out[0], xh + (yh - xh) * np.float32(0.3), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 7, 33, 1001])
def test_saxpy_identical_on_every_entry_point_and_thread_count(threads, n):
    rng = np.random.default_rng(n)
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    expect = (np.float32(1.7) * xh + yh).astype(np.float32)
    results = []
    for t in (1, 2, 3):
        threads(t)
        x, y = kc.array(xh), kc.array(yh)
        kc.launch(saxpy_k, dim=n, inputs=[x, y, 1.7])
        results.append(y.numpy())
        xs, ys = strided(xh), strided(yh)
        kc.launch(saxpy_k, dim=n, inputs=[xs, ys, 1.7])
        results.append(ys.numpy())
    for r in results:
        np.testing.assert_array_equal(r, results[0])
    np.testing.assert_allclose(results[0], expect, rtol=1e-6, atol=1e-6)


def test_vec3_and_transcendental_identical_on_every_entry_point(threads):
    n = 517
    rng = np.random.default_rng(3)
    ph, vh = rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)
    g = kc.vec3(0.1, -9.8, 0.3)
    out = []
    for t in (1, 2):
        threads(t)
        for make in (kc.array, strided):
            p, v = make(ph), make(vh)
            if make is kc.array:
                p, v = kc.array(ph, dtype=kc.vec3), kc.array(vh, dtype=kc.vec3)
            else:
                p = kc.array(np.repeat(ph, 2, axis=0), dtype=kc.vec3)[::2]
                v = kc.array(np.repeat(vh, 2, axis=0), dtype=kc.vec3)[::2]
            kc.launch(integrate_k, dim=n, inputs=[p, v, g, 0.01])
            out.append((p.numpy(), v.numpy()))
    for p, v in out:
        np.testing.assert_array_equal(p, out[0][0])
        np.testing.assert_array_equal(v, out[0][1])
    v_expect = vh + np.float32(0.01) * np.array([0.1, -9.8, 0.3], np.float32)
    np.testing.assert_allclose(out[0][1], v_expect, rtol=1e-6)
    np.testing.assert_allclose(out[0][0], ph + v_expect * np.float32(0.01), rtol=1e-5, atol=1e-6)

    xh = rng.standard_normal(301).astype(np.float32)
    res = []
    for t in (1, 2):
        threads(t)
        for x in (kc.array(xh), strided(xh)):
            y = kc.zeros(301, dtype=float)
            kc.launch(transcendental_k, dim=301, inputs=[x, y])
            res.append(y.numpy())
    for r in res:
        np.testing.assert_array_equal(r, res[0])
    x64 = xh.astype(np.float64)
    s = np.sin(x64) * np.exp(-x64) + np.sqrt(np.abs(x64)) / (1 + x64 * x64)
    np.testing.assert_allclose(res[0], np.where(x64 > 0.5, s, -s), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(5, 7), (33, 18), (3, 129)])
def test_stencil_identical_on_every_entry_point(threads, shape):
    rng = np.random.default_rng(1)
    uh = rng.standard_normal(shape).astype(np.float32)
    expect = np.zeros_like(uh)
    expect[1:-1, 1:-1] = 0.25 * (uh[1:-1, :-2] + uh[1:-1, 2:] + uh[:-2, 1:-1] + uh[2:, 1:-1]) - uh[1:-1, 1:-1]
    out = []
    for t in (1, 2, 3):
        threads(t)
        u, o = kc.array(uh), kc.zeros(shape, dtype=float)
        kc.launch(stencil_k, dim=(shape[0] - 2, shape[1] - 2), inputs=[u, o])
        out.append(o.numpy())
        # a transposed copy read through a transposed view: not C order, the generic path
        ut = kc.array(np.ascontiguousarray(uh.T))
        u_view = kc.array(ut.numpy().T)
        o2 = kc.zeros(shape, dtype=float)
        kc.launch(stencil_k, dim=(shape[0] - 2, shape[1] - 2), inputs=[u_view, o2])
        out.append(o2.numpy())
    for o in out:
        np.testing.assert_array_equal(o, out[0])
    np.testing.assert_allclose(out[0], expect, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel", [index2_k, index2_loop_k])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (7, 13), (17, 1), (1, 19), (9, 31)])
def test_2d_tid_at_odd_sizes(threads, kernel, shape):
    ii, jj = np.indices(shape)
    for t in (1, 2, 3):
        threads(t)
        out, flat = kc.zeros(shape, dtype=int), kc.zeros(shape, dtype=int)
        kc.launch(kernel, dim=shape, inputs=[out, flat] if kernel is index2_k else [out, 2])
        np.testing.assert_array_equal(out.numpy(), ii * 1000 + jj)
        if kernel is index2_k:
            np.testing.assert_array_equal(flat.numpy(), np.arange(ii.size).reshape(shape))


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 5), (5, 1, 7), (3, 11, 2)])
def test_3d_tid_at_odd_sizes(threads, shape):
    ii, jj, kk = np.indices(shape)
    for t in (1, 2):
        threads(t)
        out = kc.zeros(shape, dtype=int)
        kc.launch(index3_k, dim=shape, inputs=[out])
        np.testing.assert_array_equal(out.numpy(), ii * 10000 + jj * 100 + kk)
        # a strided view: the generic entry point's nested loops
        big = kc.zeros((shape[0], shape[1], 2 * shape[2]), dtype=int)
        view = big[:, :, ::2]
        kc.launch(index3_k, dim=shape, inputs=[view])
        np.testing.assert_array_equal(view.numpy(), ii * 10000 + jj * 100 + kk)


def test_4d_tid(threads):
    shape = (2, 3, 5, 7)
    idx = np.indices(shape)
    threads(2)
    out = kc.zeros(shape, dtype=int)
    kc.launch(index4_k, dim=shape, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), idx[0] * 1000000 + idx[1] * 10000 + idx[2] * 100 + idx[3])


def test_2d_scatter_with_private_copies_and_its_adjoint(threads):
    """A 2-D launch that accumulates into a small target: private per-thread copies (static
    split walked row by row) on several threads, plain adds on one; the adjoint too."""
    shape = (37, 23)
    rng = np.random.default_rng(2)
    wh = rng.random(shape).astype(np.float32)
    ii, jj = np.indices(shape)
    expect = np.array([wh[(ii + jj) % 3 == c].astype(np.float64).sum() for c in range(3)])
    for t in (1, 2, 3):
        threads(t)
        total = kc.zeros(3, dtype=float, requires_grad=True)
        w = kc.array(wh, requires_grad=True)
        tape = kc.Tape()
        with tape:
            kc.launch(scatter2_k, dim=shape, inputs=[total, w])
        np.testing.assert_allclose(total.numpy(), expect, rtol=1e-5)
        tape.backward(grads={total: kc.array(np.array([1.0, 2.0, 3.0], np.float32))})
        np.testing.assert_array_equal(w.grad.numpy(), (1.0 + (ii + jj) % 3).astype(np.float32))


def test_aliasing_arrays_take_the_safe_path():
    """y overlaps x shifted by one element: the one-thread launch runs in order, so each thread
    reads what the previous one wrote (a cascade). A vectorised loop would read the old values
    first: the streaming entry point must not run for overlapping arrays."""
    n = 40  # below parallel_grain: one thread, in order
    buf = kc.array(np.zeros(n + 1, np.float32))
    kc.launch(shift_k, dim=n, inputs=[buf[:-1], buf[1:]])
    np.testing.assert_array_equal(buf.numpy(), np.arange(n + 1, dtype=np.float32))
    # out is in (the same array): elementwise, every path agrees
    x = kc.array(np.arange(9, dtype=np.float32))
    kc.launch(saxpy_k, dim=9, inputs=[x, x, 2.0])
    np.testing.assert_array_equal(x.numpy(), 3 * np.arange(9, dtype=np.float32))


def test_strided_views_read_the_right_elements():
    """The streaming entry point assumes unit strides: a view with stride 3 must not take it."""
    base = np.arange(30, dtype=np.float32)
    x = kc.array(base)[::3]
    y = kc.zeros(10, dtype=float)
    kc.launch(shift_k, dim=10, inputs=[x, y])
    np.testing.assert_array_equal(y.numpy(), base[::3] + 1)


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value)


def test_fast_launch_falls_back_with_unchanged_errors():
    """The errors of a launch after the first (the fast path) are those of a first launch."""

    def launches():
        x, y = kc.array(np.ones(4, np.float32)), kc.array(np.ones(4, np.float32))
        return [
            lambda: kc.launch(saxpy_k, dim=4, inputs=[x, kc.zeros(4, dtype=int), 1.0]),
            lambda: kc.launch(saxpy_k, dim=4, inputs=[x, y]),
            lambda: kc.launch(saxpy_k, dim=4, inputs=[x, kc.zeros((2, 2), dtype=float), 1.0]),
            lambda: kc.launch(saxpy_k, dim=4, inputs=[x, y, "a"]),
            lambda: kc.launch(saxpy_k, dim=-1, inputs=[x, y, 1.0]),
            lambda: kc.launch(index2_k, dim=5, inputs=[kc.zeros((5, 1), dtype=int), kc.zeros((5, 1), dtype=int)]),
            lambda: kc.launch(integrate_k, dim=4, inputs=[kc.zeros(4, dtype=kc.vec3), kc.zeros(4, dtype=kc.vec3),
                                                          (1.0, 2.0), 0.1]),
        ]

    kernels = (saxpy_k, index2_k, integrate_k)
    first = []
    for f in launches():
        for k in kernels:  # no fast path: the general path's errors
            k._fast_launch = None
        first.append(_error(f))
    x = kc.array(np.ones(4, np.float32))
    kc.launch(saxpy_k, dim=4, inputs=[x, x, 1.0])
    kc.launch(integrate_k, dim=4, inputs=[kc.zeros(4, dtype=kc.vec3), kc.zeros(4, dtype=kc.vec3), kc.vec3(), 0.1])
    assert saxpy_k._fast_launch is not None and integrate_k._fast_launch is not None
    again = [_error(f) for f in launches()]
    assert again == first


def test_fast_launch_results_and_tape():
    """Launches on the fast path compute what the general path does, and a tape opened after
    the kernel's first launch still records it (the fast path steps aside)."""
    x = kc.array(np.arange(8, dtype=np.float32), requires_grad=True)
    y = kc.array(np.ones(8, np.float32), requires_grad=True)
    kc.launch(saxpy_k, dim=8, inputs=[x, y, 2.0])  # builds the fast path
    kc.launch(saxpy_k, dim=8, inputs=[x, y, 2.0])
    np.testing.assert_array_equal(y.numpy(), 1 + 4 * np.arange(8, dtype=np.float32))
    kc.launch(saxpy_k, dim=3, inputs=[x, y, 0.5])  # another size, another scalar
    np.testing.assert_array_equal(y.numpy()[:3], 1 + 4.5 * np.arange(3, dtype=np.float32))

    @kc.kernel
    def square(a: kc.array(dtype=float), b: kc.array(dtype=float)):
        i = kc.tid()
        b[i] = a[i] * a[i]

    a = kc.array(np.arange(5, dtype=np.float32), requires_grad=True)
    b = kc.zeros(5, dtype=float, requires_grad=True)
    kc.launch(square, dim=5, inputs=[a, b])
    tape = kc.Tape()
    with tape:
        kc.launch(square, dim=5, inputs=[a, b])
    tape.backward(grads={b: kc.array(np.ones(5, np.float32))})
    np.testing.assert_array_equal(a.grad.numpy(), 2 * np.arange(5, dtype=np.float32))


@kc.struct
class Gains:
    scale: float
    offset: kc.vec3


@kc.kernel(enable_backward=False)
def mixed_args_k(out: kc.array(dtype=kc.vec3), g: Gains, flip: bool, k: kc.int64, h: kc.float64):
    i = kc.tid()
    s = g.scale * float(k) + float(h)
    if flip:
        s = -s
    out[i] = g.offset * s


def test_fast_launch_packs_every_value_afresh():
    """Struct, bool, int64 and float64 arguments (packed by pack_value on the fast path): each
    launch sees its own values, never the first launch's."""
    out = kc.zeros(3, dtype=kc.vec3)
    for scale, flip, k, h in [(1.0, False, 2, 0.5), (3.0, True, 5, 0.25), (0.5, False, -7, 1.0)]:
        g = Gains()
        g.scale = scale
        g.offset = kc.vec3(1.0, 2.0, 3.0)
        kc.launch(mixed_args_k, dim=3, inputs=[out, g, flip, k, h])
        s = (scale * k + h) * (-1 if flip else 1)
        np.testing.assert_allclose(out.numpy(), np.tile([s, 2 * s, 3 * s], (3, 1)), rtol=1e-6)
    assert mixed_args_k._fast_launch is not None


def test_fast_launch_taken_with_an_explicit_cpu_device(monkeypatch):
    """``device="cpu"`` or the CPU Device object (sim launchers pass ``device=model.device``) takes
    the fast path like ``device=None``; a wrong device still gets the general path's error."""
    from kernelcore.launch import FastLaunch

    calls = []
    run = FastLaunch.run

    def counting(self, dim, inputs, outputs):
        calls.append(dim)
        return run(self, dim, inputs, outputs)

    x = kc.array(np.arange(6, dtype=np.float32))
    y = kc.zeros(6, dtype=float)
    kc.launch(saxpy_k, dim=6, inputs=[x, y, 1.0])   # builds the fast path
    monkeypatch.setattr(FastLaunch, "run", counting)
    kc.launch(saxpy_k, dim=6, inputs=[x, y, 1.0], device="cpu")
    kc.launch(saxpy_k, dim=6, inputs=[x, y, 1.0], device=x.device)
    assert calls == [6, 6]
    np.testing.assert_array_equal(y.numpy(), 3 * np.arange(6, dtype=np.float32))
    with pytest.raises(Exception, match="cuda"):
        kc.launch(saxpy_k, dim=6, inputs=[x, y, 1.0], device="cuda")
