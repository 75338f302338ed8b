"""@kc.kernel(fast_math=True): a kernel compiled with toolchain.FAST_MATH_FLAGS (NVRTC --use_fast_math).

Results stay within rounding of the IEEE build and of a float64 numpy reference, gradients
too; NaN/inf still propagate and isnan still works inside the kernel (no -ffinite-math-only);
the flags reach the compiler command and the cache key, and a fast-math kernel never shares a
translation unit (one set of flags) with an IEEE kernel of its module.
"""
import subprocess

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import nvrtc, toolchain


def _pair_sum(x: kc.array(dtype=float), h: float, out: kc.array(dtype=float)):
    """out[i] = sum_j (h^2 - r^2)^3 / (r + h) over all j: a pair loop with divisions and a long sum."""
    i = kc.tid()
    acc = float(0.0)
    for j in range(x.shape[0]):
        r = kc.abs(x[i] - x[j])
        q = h * h - r * r
        acc += q * q * q / (r + h)
    out[i] = acc


def _nan_check(x: kc.array(dtype=float), out: kc.array(dtype=float), flags: kc.array(dtype=int)):
    i = kc.tid()
    y = kc.sqrt(x[i]) / x[i]
    out[i] = y
    flags[i] = 0
    if kc.isnan(y):
        flags[i] = 1


pair_ieee = kc.kernel(_pair_sum, module="test_fast_math_shared")
pair_fast = kc.kernel(_pair_sum, fast_math=True, module="test_fast_math_shared")
nan_fast = kc.kernel(_nan_check, fast_math=True, enable_backward=False, module="test_fast_math_nan")


def _reference(x, h):
    r = np.abs(x[:, None].astype(np.float64) - x[None, :])
    q = h * h - r * r
    return (q ** 3 / (r + h)).sum(axis=1)


def _run(k, xs, h):
    x = kc.array(xs, dtype=float, requires_grad=True)
    out = kc.zeros(len(xs), dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(k, len(xs), inputs=[x, h], outputs=[out])
    tape.backward(grads={out: kc.array(np.ones(len(xs), np.float32))})
    return out.numpy().copy(), x.grad.numpy().copy()


def test_fast_math_matches_ieee_and_float64():
    xs = np.random.default_rng(0).uniform(0, 1, 300).astype(np.float32)
    h = 0.7
    v_ieee, g_ieee = _run(pair_ieee, xs, h)
    v_fast, g_fast = _run(pair_fast, xs, h)
    ref = _reference(xs, h)
    scale = np.abs(ref).max()
    assert np.abs(v_ieee - ref).max() < 1e-5 * scale
    assert np.abs(v_fast - ref).max() < 1e-5 * scale       # rounding, not a different number
    assert np.abs(g_fast - g_ieee).max() < 1e-4 * np.abs(g_ieee).max()
    # the two really are different builds (one chunk each, loaded from different libraries)
    mod = pair_ieee.module
    table = mod.loaded[("cpu", next(k for (t, k) in mod.loaded if t == "cpu"))]
    assert table[pair_ieee].chunk is not table[pair_fast].chunk
    assert table[pair_fast].chunk.key != table[pair_ieee].chunk.key


def test_nan_and_inf_still_propagate_and_isnan_works():
    x = kc.array(np.array([4.0, -1.0, 0.0, np.nan], np.float32))
    out = kc.zeros(4, dtype=float)
    flags = kc.zeros(4, dtype=int)
    kc.launch(nan_fast, 4, inputs=[x], outputs=[out, flags])
    o = out.numpy()
    assert o[0] == pytest.approx(0.5)
    assert np.isnan(o[1]) and np.isnan(o[2]) and np.isnan(o[3])   # sqrt(-1), 0/0, NaN in
    assert flags.numpy().tolist() == [0, 1, 1, 1]


def test_flags_reach_the_compiler_command(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCORE_CACHE_DIR", str(tmp_path))   # an empty cache: both really compile
    commands = []
    real_run = subprocess.run

    def spy(cmd, *a, **kw):
        commands.append(list(cmd))
        return real_run(cmd, *a, **kw)

    monkeypatch.setattr(toolchain.subprocess, "run", spy)

    def scale(x: kc.array(dtype=float), s: float):
        x[kc.tid()] = x[kc.tid()] / s

    ieee = kc.kernel(scale, enable_backward=False, module="test_fast_math_cmd_ieee")
    fast = kc.kernel(scale, enable_backward=False, fast_math=True, module="test_fast_math_cmd_fast")
    for k in (ieee, fast):
        x = kc.array(np.array([1.0, 2.0], np.float32))
        kc.launch(k, 2, inputs=[x, 4.0])
        assert np.allclose(x.numpy(), [0.25, 0.5])
    compiles = [c for c in commands if any(a.endswith(".cpp") for a in c)]
    assert len(compiles) == 2
    assert not any(f in compiles[0] for f in toolchain.FAST_MATH_FLAGS)
    assert all(f in compiles[1] for f in toolchain.FAST_MATH_FLAGS)
    # the fast flags come after the common ones, so -ffp-contract=fast overrides -ffp-contract=off
    assert compiles[1].index("-ffp-contract=fast") > compiles[1].index("-ffp-contract=off")
    assert "-ffinite-math-only" not in compiles[1] and "-ffast-math" not in compiles[1]


def test_bad_option_is_an_error():
    with pytest.raises(TypeError, match="fast_math must be True or False"):
        kc.kernel(_pair_sum, fast_math="yes", module="test_fast_math_bad")


@pytest.mark.skipif(not nvrtc.is_available(), reason="NVRTC (cuda-bindings) not installed")
def test_cuda_chunk_gets_use_fast_math(monkeypatch):
    from kernelcore import cuda_backend

    monkeypatch.setattr(cuda_backend.CudaChunk, "function", lambda self, device, symbol: 0)  # no GPU needed
    chunks = {}
    for k in (pair_ieee, pair_fast):
        lk = cuda_backend.build_cuda_chunk(k.module, [k], device=None)
        chunks[k] = lk[k].fwd.chunk
    assert chunks[pair_fast].options == tuple(nvrtc.FAST_MATH_FLAGS)
    assert chunks[pair_ieee].options == ()
    assert chunks[pair_fast].key != chunks[pair_ieee].key
    # NVRTC accepts the option: the division becomes an approximate one in the PTX
    ptx_fast = nvrtc.compile_ptx(pair_fast.cuda_source, options=nvrtc.FAST_MATH_FLAGS)
    ptx_ieee = nvrtc.compile_ptx(pair_ieee.cuda_source)
    assert "div.rn.f32" in ptx_ieee and "div.rn.f32" not in ptx_fast
