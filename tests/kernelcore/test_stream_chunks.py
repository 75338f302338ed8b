"""The vectorised (streaming) CPU forward hands its items out in chunks on demand on several
threads (emit_cpp.emit_streaming_entry): every item exactly once, for any size, 1-D and by rows."""
import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def affine_1d(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    t = kc.tid()
    y[t] = x[t] * 2.0 + 1.0


@kc.kernel
def affine_2d(x: kc.array(dtype=float, ndim=2), y: kc.array(dtype=float, ndim=2)):
    i, j = kc.tid()
    y[i, j] = x[i, j] * 2.0 + float(i)


@pytest.mark.parametrize("threads", ["1", "2", "3"])
@pytest.mark.parametrize("n", [4096, 4097, 5001, 70001])
def test_streaming_entry_writes_every_item_once(monkeypatch, threads, n):
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", threads)
    x = np.arange(n, dtype=np.float32)
    y = kc.full(n, -7.0, dtype=float)
    kc.launch(affine_1d, dim=n, inputs=[kc.array(x, dtype=float), y])
    assert np.array_equal(y.numpy(), x * 2.0 + 1.0)


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("shape", [(4099, 3), (97, 131), (600, 17)])
def test_streaming_entry_by_rows_writes_every_item_once(monkeypatch, threads, shape):
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", threads)
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    y = kc.full(shape, -7.0, dtype=float)
    kc.launch(affine_2d, dim=shape, inputs=[kc.array(x, dtype=float), y])
    assert np.array_equal(y.numpy(), x * 2.0 + np.arange(shape[0], dtype=np.float32)[:, None])
