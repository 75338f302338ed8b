"""kc.indexedarray (Warp 1.19's indexedarray, docs/warp_compat.md): a view of an array through
per-dimension int32 index arrays. Loads, stores and atomics inside kernels against numpy and
against warp-lang running the same program; gradients (they land in the data array's .grad)
against float64 central finite differences; host .shape/.numpy(); launch-time type errors;
debug-mode index checks; CUDA code (NVRTC)."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore import nvrtc

I32 = kc.int32


def _idx(values):
    return kc.array(np.array(values, dtype=np.int32), dtype=I32)


# ---- host API ----------------------------------------------------------------------------------

def test_annotation_forms():
    assert kc.indexedarray(dtype=float) == kc.indexedarray(dtype=kc.float32, ndim=1)
    assert kc.indexedarray2d(dtype=kc.vec3) == kc.indexedarray(dtype=kc.vec3, ndim=2)
    assert kc.indexedarray4d(dtype=kc.float64).ndim == 4
    assert repr(kc.indexedarray3d(dtype=int)) == "indexedarray(dtype=int32, ndim=3)"


def test_shape_and_numpy():
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = kc.array(data, dtype=float)
    rows, cols = [3, 0, 3], [5, 1]
    both = kc.indexedarray(a, [_idx(rows), _idx(cols)])
    assert both.shape == (3, 2) and both.ndim == 2 and both.size == 6 and len(both) == 3 and both.dtype is kc.float32
    np.testing.assert_array_equal(both.numpy(), data[np.ix_(rows, cols)])
    only_cols = kc.indexedarray2d(a, [None, _idx(cols)])
    assert only_cols.shape == (4, 2)
    np.testing.assert_array_equal(only_cols.numpy(), data[:, cols])
    single = kc.indexedarray(kc.array(np.arange(5.0), dtype=kc.float64), _idx([4, 4, 0]))   # one array, not a list
    np.testing.assert_array_equal(single.numpy(), [4.0, 4.0, 0.0])
    np.testing.assert_array_equal(kc.indexedarray(a).numpy(), data)                          # nothing indexed


def test_constructor_errors():
    a = kc.zeros((3, 2), dtype=float)
    with pytest.raises(TypeError, match=r"indices\[0\] must be a 1-d array of int32, got a 1-d array of float32"):
        kc.indexedarray(a, [kc.zeros(2, dtype=float)])
    with pytest.raises(ValueError, match="3 index arrays for 2-d data"):
        kc.indexedarray(a, [None, None, _idx([0])])
    with pytest.raises(ValueError, match="dtype float64 does not match the data's dtype float32"):
        kc.indexedarray(a, dtype=kc.float64)
    with pytest.raises(ValueError, match="ndim=1 does not match the data's 2 dimensions"):
        kc.indexedarray1d(a)
    with pytest.raises(TypeError, match="data must be a kc.array, got ndarray"):
        kc.indexedarray(np.zeros(3), [_idx([0])])
    with pytest.raises(TypeError, match=r"indices\[1\] must be a kc.array of int32 \(or None\), got list"):
        kc.indexedarray(a, [None, [0, 1]])


# ---- loads, stores, atomics ---------------------------------------------------------------------

@kc.kernel
def gather_scatter_2d(src: kc.indexedarray2d(dtype=float), dst: kc.indexedarray2d(dtype=float),
                      acc: kc.indexedarray(dtype=float), sizes: kc.array(dtype=int)):
    i, j = kc.tid()
    v = src[i, j]
    dst[i, j] = v * 2.0 + 1.0                 # store through the view
    dst[i, j] += 0.5                          # read-modify-write (atomic add) through the view
    kc.atomic_add(acc, i, v)                  # scatter with repeated indices
    acc[-1] -= 0.25                           # negative index: the view's last element
    if i == 0 and j == 0:
        sizes[0] = src.shape[0]
        sizes[1] = src.shape[1]
        sizes[2] = len(acc)


def _gather_scatter_reference(src, rows, cols, dst_shape, drows, dst_cols, acc_n, acc_idx):
    v = src[np.ix_(rows, cols)]
    dst = np.zeros(dst_shape, np.float32)
    dst[np.ix_(drows, dst_cols)] = v * 2.0 + 1.0 + 0.5
    acc = np.zeros(acc_n, np.float32)
    np.add.at(acc, np.array(acc_idx)[np.arange(len(rows))].repeat(len(cols)), v.ravel())
    acc[acc_idx[-1]] -= 0.25 * v.size
    return dst, acc


def _gather_scatter_case():
    rng = np.random.default_rng(3)
    src = rng.standard_normal((5, 4)).astype(np.float32)
    rows, cols = [4, 0, 2], [3, 1]
    drows, dcols = [1, 5, 3], [0, 2]
    acc_idx = [2, 0, 2]
    dst_shape, acc_n = (6, 3), 4
    return src, rows, cols, drows, dcols, acc_idx, dst_shape, acc_n


def test_loads_stores_atomics_match_numpy():
    src, rows, cols, drows, dcols, acc_idx, dst_shape, acc_n = _gather_scatter_case()
    dst, acc, sizes = kc.zeros(dst_shape, dtype=float), kc.zeros(acc_n, dtype=float), kc.zeros(3, dtype=int)
    kc.launch(gather_scatter_2d, (3, 2), inputs=[
        kc.indexedarray(kc.array(src, dtype=float), [_idx(rows), _idx(cols)]),
        kc.indexedarray(dst, [_idx(drows), _idx(dcols)]),
        kc.indexedarray(acc, [_idx(acc_idx)]), sizes])
    want_dst, want_acc = _gather_scatter_reference(src, rows, cols, dst_shape, drows, dcols, acc_n, acc_idx)
    np.testing.assert_allclose(dst.numpy(), want_dst, rtol=1e-6)
    np.testing.assert_allclose(acc.numpy(), want_acc, rtol=1e-6, atol=1e-6)
    assert sizes.numpy().tolist() == [3, 2, 3]


def test_same_as_warp():
    wp = pytest.importorskip("warp", reason="warp-lang is the oracle")
    from _warp_lang14 import warp_gather_scatter_2d

    src, rows, cols, drows, dcols, acc_idx, dst_shape, acc_n = _gather_scatter_case()
    dst, acc, sizes = kc.zeros(dst_shape, dtype=float), kc.zeros(acc_n, dtype=float), kc.zeros(3, dtype=int)
    kc.launch(gather_scatter_2d, (3, 2), inputs=[
        kc.indexedarray(kc.array(src, dtype=float), [_idx(rows), _idx(cols)]),
        kc.indexedarray(dst, [_idx(drows), _idx(dcols)]),
        kc.indexedarray(acc, [_idx(acc_idx)]), sizes])
    w_dst, w_acc, w_sizes = warp_gather_scatter_2d(wp, src, rows, cols, drows, dcols, acc_idx, dst_shape, acc_n)
    np.testing.assert_allclose(dst.numpy(), w_dst, rtol=1e-6)
    np.testing.assert_allclose(acc.numpy(), w_acc, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(sizes.numpy(), w_sizes)


@kc.kernel
def partial_indexing(m: kc.indexedarray2d(dtype=kc.vec3), out: kc.array2d(dtype=kc.vec3)):
    i, j = kc.tid()
    out[i, j] = m[i, j]
    m[i, j].y = 7.0                            # a component of an element, through the view


def test_unindexed_dimension_and_element_parts():
    data = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    a = kc.array(data, dtype=kc.vec3)
    out = kc.zeros((2, 2), dtype=kc.vec3)
    kc.launch(partial_indexing, (2, 2), inputs=[kc.indexedarray(a, [None, _idx([3, 1])]), out])
    np.testing.assert_array_equal(out.numpy(), data[:, [3, 1]])
    want = data.copy()
    want[:, [3, 1], 1] = 7.0
    np.testing.assert_array_equal(a.numpy(), want)


# ---- gradients ---------------------------------------------------------------------------------

@kc.kernel
def smooth_through_views(x: kc.indexedarray(dtype=kc.float64), w: kc.indexedarray2d(dtype=kc.float64),
                         y: kc.indexedarray(dtype=kc.float64), loss: kc.array(dtype=kc.float64)):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(w.shape[1]):
        s = s + w[i, k] * kc.sin(x[(i + k) % x.shape[0]])
    y[i] = s * s                               # a store through a view (its adjoint reads y's grad)
    kc.atomic_add(loss, 0, y[i] * x[i])


def _smooth_loss(xd, wd, xi, wr, wc, yi, ny):
    x = kc.array(xd, dtype=kc.float64, requires_grad=True)
    w = kc.array(wd, dtype=kc.float64, requires_grad=True)
    y = kc.zeros(ny, dtype=kc.float64, requires_grad=True)
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(smooth_through_views, len(yi), inputs=[kc.indexedarray(x, [_idx(xi)]),
                                                         kc.indexedarray(w, [_idx(wr), _idx(wc)]),
                                                         kc.indexedarray(y, [_idx(yi)]), loss])
    return tape, loss, x, w, y


def test_gradients_land_in_the_data_arrays():
    rng = np.random.default_rng(5)
    xd, wd = rng.standard_normal(6), rng.standard_normal((4, 5))
    xi, wr, wc, yi = [5, 2, 2, 0], [3, 1, 0], [4, 0, 2], [1, 3, 0]
    tape, loss, x, w, y = _smooth_loss(xd, wd, xi, wr, wc, yi, 4)
    tape.backward(loss)

    def f(xv, wv):
        return _smooth_loss(xv, wv, xi, wr, wc, yi, 4)[1].numpy()[0]

    eps = 1e-6
    gx = [(f(xd + e, wd) - f(xd - e, wd)) / (2 * eps) for e in np.eye(6) * eps]
    gw = [(f(xd, wd + e.reshape(4, 5)) - f(xd, wd - e.reshape(4, 5))) / (2 * eps) for e in np.eye(20) * eps]
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy().ravel(), gw, rtol=1e-6, atol=1e-8)
    assert x.grad.numpy()[[1, 3, 4]].tolist() == [0.0, 0.0, 0.0]   # elements no view reaches


# ---- launch-time checks -----------------------------------------------------------------------

def test_launch_type_errors_name_the_argument():
    y, loss = kc.zeros(3, dtype=kc.float64), kc.zeros(1, dtype=kc.float64)
    x = kc.indexedarray(kc.zeros(4, dtype=kc.float64), [_idx([0, 1])])
    w = kc.indexedarray(kc.zeros((3, 3), dtype=kc.float64))
    with pytest.raises(TypeError, match=r"argument 'x': expected indexedarray\(dtype=float64, ndim=1\), got a "
                                        r"kc.array; wrap an array as kc.indexedarray"):
        kc.launch(smooth_through_views, 2, inputs=[kc.zeros(4, dtype=kc.float64), w, kc.indexedarray(y), loss])
    with pytest.raises(TypeError, match=r"argument 'w': expected indexedarray\(dtype=float64, ndim=2\), got an "
                                        r"indexedarray of float32 with 2 dimension\(s\)"):
        kc.launch(smooth_through_views, 2, inputs=[x, kc.indexedarray(kc.zeros((3, 3), dtype=float)),
                                                   kc.indexedarray(y), loss])
    with pytest.raises(TypeError, match=r"argument 'y': expected indexedarray\(dtype=float64, ndim=1\), got an "
                                        r"indexedarray of float64 with 2 dimension\(s\)"):
        kc.launch(smooth_through_views, 2, inputs=[x, w, w, loss])


def test_indexedarray_in_a_func_is_a_compile_error():
    @kc.func
    def first(a: kc.array(dtype=float)):
        return a[0]

    @kc.kernel
    def passes_view(a: kc.indexedarray(dtype=float), out: kc.array(dtype=float)):
        out[0] = first(a)

    with pytest.raises(kc.KernelCompileError, match="an indexedarray cannot be passed to @kc.func 'first'"):
        kc.launch(passes_view, 1, inputs=[kc.indexedarray(kc.zeros(2, dtype=float)), kc.zeros(1, dtype=float)])


# ---- debug mode --------------------------------------------------------------------------------

@kc.kernel
def read_view(a: kc.indexedarray(dtype=float), k: int, out: kc.array(dtype=float)):
    out[0] = a[k]


def test_debug_mode_checks_view_and_data_indices(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")
    out = kc.zeros(1, dtype=float)
    data = kc.array(np.arange(4.0, dtype=np.float32), dtype=float)
    good = kc.indexedarray(data, [_idx([3, 1])])
    kc.launch(read_view, 1, inputs=[good, -1, out])
    assert out.numpy()[0] == 1.0
    with pytest.raises(kc.KernelRuntimeError, match=r"kernel 'read_view': index 2 out of range for dimension 0 of an "
                                                    r"indexedarray of 2 elements along it at .*test_indexedarray.py:\d+ "
                                                    r"\(thread 0\)"):
        kc.launch(read_view, 1, inputs=[good, 2, out])
    bad = kc.indexedarray(data, [_idx([3, 9])])          # an index array holding an index outside the data
    with pytest.raises(kc.KernelRuntimeError, match=r"index \(9,\) out of bounds for array of shape \(4,\)"):
        kc.launch(read_view, 1, inputs=[bad, 1, out])


def test_cuda_code_compiles_in_release_and_debug(monkeypatch):
    if not nvrtc.is_available():
        pytest.skip("NVRTC is not available")
    from kernelcore.indexed_launch import lowered

    kernels = [lowered(k) for k in (gather_scatter_2d, smooth_through_views, read_view, partial_indexing)]
    for mode in ("release", "debug"):
        monkeypatch.setattr(kc.config, "mode", mode)
        src = kernels[0].module.generate(kernels, "cuda")
        assert "kc::indexed_index" in src and (mode == "release") == ("kc::indexed_check" not in src)
        nvrtc.compile_ptx(src, f"indexedarray_{mode}.cu")


@kc.kernel
def scaled_view(x: kc.indexedarray(dtype=kc.float64), k: kc.float64, out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    out[i] = k * x[i] * x[i]


def test_value_argument_gradient_beside_an_indexedarray():
    """A value argument given as a one-element array (its gradient wanted) next to an indexedarray."""
    xd = np.array([0.5, -1.5, 2.0])
    x = kc.array(xd, dtype=kc.float64, requires_grad=True)
    k = kc.array([3.0], dtype=kc.float64, requires_grad=True)
    out = kc.zeros(2, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(scaled_view, 2, inputs=[kc.indexedarray(x, [_idx([2, 0])]), k], outputs=[out])
    tape.backward(grads={out: kc.array(np.ones(2), dtype=kc.float64)})
    np.testing.assert_allclose(out.numpy(), 3.0 * xd[[2, 0]] ** 2)
    np.testing.assert_allclose(k.grad.numpy(), [xd[2] ** 2 + xd[0] ** 2])
    np.testing.assert_allclose(x.grad.numpy(), [6.0 * xd[0], 0.0, 6.0 * xd[2]])


def test_indexing_an_array_with_an_index_array_gives_a_view():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = kc.array(data, dtype=float)
    rows, cols = _idx([2, 0]), _idx([3, 3, 1])
    v = a[rows]
    assert isinstance(v, kc.indexedarray) and v.shape == (2, 4) and v.data is a
    np.testing.assert_array_equal(a[:, cols].numpy(), data[:, [3, 3, 1]])
    np.testing.assert_array_equal(a[rows, cols].numpy(), data[np.ix_([2, 0], [3, 3, 1])])
    with pytest.raises(IndexError, match="can be combined only with ':'"):
        a[rows, 1]
    # host writes through the view change the data (Warp's fill_/zero_/assign)
    a[rows, cols].fill_(-1.0)
    want = data.copy()
    want[np.ix_([2, 0], [3, 1])] = -1.0
    np.testing.assert_array_equal(a.numpy(), want)
    a[rows].zero_()
    want[[2, 0]] = 0.0
    np.testing.assert_array_equal(a.numpy(), want)
    a[:, _idx([0, 2])].assign(np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    want[:, [0, 2]] = [[1, 2], [3, 4], [5, 6]]
    np.testing.assert_array_equal(a.numpy(), want)
    # in a kernel: the same view as kc.indexedarray(a, [rows])
    out = kc.zeros(2, dtype=float)
    kc.launch(read_view, 1, inputs=[kc.array(np.arange(5.0, dtype=np.float32))[_idx([4])], 0, out])
    assert out.numpy()[0] == 4.0
