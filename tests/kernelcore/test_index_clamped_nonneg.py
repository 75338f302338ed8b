"""An integer index clamped with kc.max(j, 0) is known to be >= 0: it indexes the array as it is,
without the negative-index wrap (whose select keeps GCC from vectorising gathers, sim/pbf_lanes.py);
an index that may be negative still counts from the end."""
import numpy as np

import kernelcore as kc


@kc.kernel(enable_backward=False)
def gather_clamped(src: kc.array(dtype=float), idx: kc.array(dtype=int), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = src[kc.max(idx[i], 0)]


@kc.kernel(enable_backward=False)
def gather_wrapped(src: kc.array(dtype=float), idx: kc.array(dtype=int), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = src[idx[i]]


@kc.kernel(enable_backward=False)
def gather_max_of_two_unknown(src: kc.array(dtype=float), idx: kc.array(dtype=int), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = src[kc.max(idx[i], idx[i] - 2)]   # may still be negative: wrapped


def _thread_source(kernel):
    src = kernel.module.generate([kernel], "cpu")
    start = src.index(f"{kernel.cname}_fwd_thread(")
    return src[start:src.index("\n}\n", start)]


def test_clamped_index_is_not_wrapped():
    assert "wrap_array_index" not in _thread_source(gather_clamped)
    assert "wrap_array_index" in _thread_source(gather_wrapped)
    assert "wrap_array_index" in _thread_source(gather_max_of_two_unknown)


def test_values():
    src = kc.array(np.arange(5, dtype=np.float32) * 10.0, dtype=float)
    idx = kc.array(np.array([-1, 0, 3, -4], dtype=np.int32), dtype=int)
    out = kc.zeros(4, dtype=float)
    kc.launch(gather_clamped, dim=4, inputs=[src, idx], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 30.0, 0.0])
    kc.launch(gather_wrapped, dim=4, inputs=[src, idx], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [40.0, 0.0, 30.0, 10.0])
    kc.launch(gather_max_of_two_unknown, dim=4, inputs=[src, idx], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [40.0, 0.0, 30.0, 10.0])
