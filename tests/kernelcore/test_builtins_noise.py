"""noise, pnoise, curlnoise: range, lattice zeros, continuity, periodicity, zero divergence of
the curl field (finite differences of the field itself), determinism and seed dependence.
Adjoints are checked against finite differences by the generated test_builtin_gradients.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc


@kc.kernel
def sample_noise(seed: int, x1: kc.array(dtype=kc.float64), x2: kc.array(dtype=kc.vec2d), x3: kc.array(dtype=kc.vec3d),
                 x4: kc.array(dtype=kc.vector(4, kc.float64)), out: kc.array(dtype=kc.float64, ndim=2)):
    i = kc.tid()
    s = kc.rand_init(seed)
    out[i, 0] = kc.noise(s, x1[i])
    out[i, 1] = kc.noise(s, x2[i])
    out[i, 2] = kc.noise(s, x3[i])
    out[i, 3] = kc.noise(s, x4[i])
    out[i, 4] = kc.pnoise(s, x1[i], 3)
    out[i, 5] = kc.pnoise(s, x2[i], 3, 5)
    out[i, 6] = kc.pnoise(s, x3[i], 2, 3, 4)
    out[i, 7] = kc.pnoise(s, x4[i], 2, 3, 4, 5)


@kc.kernel
def sample_noise32(seed: int, x3: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.float32)):
    i = kc.tid()
    out[i] = kc.noise(kc.rand_init(seed), x3[i])


DIMS = [1, 2, 3, 4, 1, 2, 3, 4]
PERIODS = [(3,), (3, 5), (2, 3, 4), (2, 3, 4, 5)]


def noise_at(points, seed=7):
    """points: (n, 4) float64; column k of the result samples noise/pnoise with the first DIMS[k] coordinates."""
    n = len(points)
    out = kc.zeros((n, 8), dtype=kc.float64)
    kc.launch(sample_noise, dim=n, inputs=[seed, kc.array(points[:, 0].copy(), dtype=kc.float64),
                                           kc.array(points[:, :2].copy(), dtype=kc.vec2d),
                                           kc.array(points[:, :3].copy(), dtype=kc.vec3d),
                                           kc.array(points.copy(), dtype=kc.vector(4, kc.float64)), out])
    return out.numpy()


def test_range_and_spread():
    pts = np.random.default_rng(0).uniform(-20, 20, size=(4000, 4))
    v = noise_at(pts)
    for k, d in enumerate(DIMS):
        assert np.all(np.abs(v[:, k]) <= np.sqrt(d) / 2 + 1e-12), (k, np.abs(v[:, k]).max())
        assert v[:, k].std() > 0.05, f"column {k} is nearly constant"
        assert abs(v[:, k].mean()) < 0.05, f"column {k} is not centred on zero"


def test_zero_at_lattice_points():
    pts = np.random.default_rng(1).integers(-9, 9, size=(64, 4)).astype(np.float64)
    np.testing.assert_array_equal(noise_at(pts), 0.0)


def test_continuity_across_cells():
    """|f(x + h) - f(x)| <= L h with a fixed L, at points next to and straddling cell faces."""
    rng = np.random.default_rng(2)
    base = rng.integers(-5, 5, size=(500, 4)) + rng.choice([-1e-9, 0.0, 1e-9, 0.5], size=(500, 4))
    h = 1e-6
    step = rng.normal(size=(500, 4))
    step /= np.linalg.norm(step, axis=1, keepdims=True)
    diff = np.abs(noise_at(base + h * step) - noise_at(base))
    assert diff.max() < 4.0 * h, diff.max()


def test_pnoise_is_periodic_and_noise_is_not():
    rng = np.random.default_rng(3)
    pts = rng.uniform(-6, 6, size=(200, 4))
    v = noise_at(pts)
    for k in range(4, 8):
        shifted = pts.copy()
        per = PERIODS[k - 4]
        mult = rng.integers(-3, 4, size=(len(pts), len(per)))
        shifted[:, :len(per)] += mult * np.array(per)
        np.testing.assert_allclose(noise_at(shifted)[:, k], v[:, k], atol=1e-12, err_msg=f"pnoise {len(per)}-D")
    # the plain field does not repeat with those periods
    shifted = pts + np.array([2.0, 3.0, 4.0, 5.0])
    assert np.abs(noise_at(shifted)[:, 2] - v[:, 2]).max() > 0.05


def test_deterministic_and_selected_by_the_seed():
    pts = np.random.default_rng(4).uniform(-6, 6, size=(100, 4))
    a, b, c = noise_at(pts, 7), noise_at(pts, 7), noise_at(pts, 8)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 0.05
    out32 = kc.zeros(100, dtype=kc.float32)
    kc.launch(sample_noise32, dim=100, inputs=[7, kc.array(pts[:, :3].astype(np.float32), dtype=kc.vec3), out32])
    np.testing.assert_allclose(out32.numpy(), noise_at(pts.astype(np.float32).astype(np.float64), 7)[:, 2], atol=1e-5)


@kc.kernel
def sample_curl(seed: int, octaves: int, x2: kc.array(dtype=kc.vec2d), x3: kc.array(dtype=kc.vec3d),
                v2: kc.array(dtype=kc.vec2d), v3: kc.array(dtype=kc.vec3d), one2: kc.array(dtype=kc.vec2d)):
    i = kc.tid()
    s = kc.rand_init(seed)
    v2[i] = kc.curlnoise(s, x2[i], octaves, 2.0, 0.5)
    v3[i] = kc.curlnoise(s, x3[i], octaves, 2.0, 0.5)
    one2[i] = kc.curlnoise(s, x2[i])


def curl_at(p2, p3, octaves=3, seed=11):
    n = len(p2)
    v2, v3, one2 = kc.zeros(n, dtype=kc.vec2d), kc.zeros(n, dtype=kc.vec3d), kc.zeros(n, dtype=kc.vec2d)
    kc.launch(sample_curl, dim=n, inputs=[seed, octaves, kc.array(p2, dtype=kc.vec2d), kc.array(p3, dtype=kc.vec3d),
                                          v2, v3, one2])
    return v2.numpy(), v3.numpy(), one2.numpy()


@pytest.mark.parametrize("octaves", [1, 3])
def test_curlnoise_is_divergence_free(octaves):
    """Central differences of the sampled field: the divergence vanishes to O(h^2) while each
    partial derivative is of order one."""
    rng = np.random.default_rng(5)
    n, h = 200, 1e-4
    p2, p3 = rng.uniform(-4, 4, size=(n, 2)), rng.uniform(-4, 4, size=(n, 3))
    div2, div3, scale = np.zeros(n), np.zeros(n), 0.0
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        d3 = (curl_at(p2, p3 + e, octaves)[1] - curl_at(p2, p3 - e, octaves)[1]) / (2 * h)
        div3 += d3[:, k]
        scale = max(scale, np.abs(d3).max())
        if k < 2:
            d2 = (curl_at(p2 + e[:2], p3, octaves)[0] - curl_at(p2 - e[:2], p3, octaves)[0]) / (2 * h)
            div2 += d2[:, k]
            scale = max(scale, np.abs(d2).max())
    assert scale > 0.5
    assert np.abs(div2).max() < 1e-5 * scale, np.abs(div2).max()
    assert np.abs(div3).max() < 1e-5 * scale, np.abs(div3).max()


def test_curlnoise_octaves_and_defaults():
    rng = np.random.default_rng(6)
    p2, p3 = rng.uniform(-4, 4, size=(50, 2)), rng.uniform(-4, 4, size=(50, 3))
    v2_1, v3_1, one2 = curl_at(p2, p3, octaves=1)
    np.testing.assert_array_equal(one2, v2_1)            # curlnoise(s, x) == one octave, 2.0, 0.5
    v2_0, v3_0, _ = curl_at(p2, p3, octaves=0)
    np.testing.assert_array_equal(v2_0, 0.0)
    np.testing.assert_array_equal(v3_0, 0.0)
    v2_3, _, _ = curl_at(p2, p3, octaves=3)
    assert np.abs(v2_3 - v2_1).max() > 0.05               # finer octaves add detail
    # the 2-D field is the rotated gradient of the potential: it is tangent to the level sets
    assert np.all(np.isfinite(v3_1)) and np.abs(v3_1).max() > 0.1
