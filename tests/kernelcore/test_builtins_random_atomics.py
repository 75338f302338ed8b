"""Random numbers (statistics with fixed seeds, reproducible streams) and atomics.

Atomics run with enough threads that the CPU backend uses every core, and many threads
hit a few slots, so lost updates would show as wrong integer totals.
"""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc

N_THREADS = 1 << 14      # above config.parallel_grain: the launch is parallel
DRAWS = 16


# ---- random ---------------------------------------------------------------------------------
@kc.kernel(enable_backward=False)
def draw_uniform(seed: int, u: kc.array(dtype=float, ndim=2), r: kc.array(dtype=float, ndim=2),
                 d: kc.array(dtype=kc.float64, ndim=2), k: kc.array(dtype=int, ndim=2), n: kc.array(dtype=float, ndim=2),
                 raw: kc.array(dtype=int, ndim=2)):
    i = kc.tid()
    s = kc.rand_init(seed, i)
    for j in range(u.shape[1]):
        u[i, j] = kc.randf(s)
        r[i, j] = kc.randf(s, -2.0, 3.0)
        d[i, j] = kc.randf(s, kc.float64(10.0), kc.float64(11.0))
        k[i, j] = kc.randi(s, -3, 5)
        n[i, j] = kc.randn(s)
        raw[i, j] = kc.randi(s)


def _draw(seed, threads=N_THREADS):
    arrs = [kc.zeros((threads, DRAWS), dtype=t) for t in (float, float, kc.float64, int, float, int)]
    kc.launch(draw_uniform, dim=threads, inputs=[seed] + arrs)
    return [a.numpy().copy() for a in arrs]


@pytest.fixture(scope="module")
def draws():
    return _draw(42)


def test_randf_is_uniform_on_unit_interval(draws):
    u = draws[0].ravel()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 3e-3
    assert abs(u.var() - 1.0 / 12.0) < 2e-3
    hist, _ = np.histogram(u, bins=16, range=(0, 1))
    expected = len(u) / 16
    chi2 = np.sum((hist - expected) ** 2 / expected)
    assert chi2 < 45.0   # 15 degrees of freedom: p ~ 1e-4


def test_randf_range_and_float64(draws):
    r, d = draws[1].ravel(), draws[2].ravel()
    assert r.min() >= -2.0 and r.max() < 3.0 and abs(r.mean() - 0.5) < 0.02
    assert d.dtype == np.float64 and d.min() >= 10.0 and d.max() < 11.0 and abs(d.mean() - 10.5) < 3e-3


def test_randi_range_and_frequencies(draws):
    k = draws[3].ravel()
    values, counts = np.unique(k, return_counts=True)
    assert values.tolist() == list(range(-3, 5))
    expected = len(k) / 8
    assert np.sum((counts - expected) ** 2 / expected) < 30.0   # 7 dof
    raw = draws[5].ravel()
    assert raw.min() < -(1 << 30) and raw.max() > (1 << 30)    # uses the full int32 range


def test_randn_moments(draws):
    n = draws[4].ravel().astype(np.float64)
    assert abs(n.mean()) < 0.01
    assert abs(n.var() - 1.0) < 0.02
    assert abs(np.mean(n ** 4) - 3.0) < 0.1   # kurtosis of a normal
    assert abs(np.mean(np.abs(n) < 1.0) - 0.6827) < 0.01


def test_streams_are_reproducible_and_independent(draws):
    again = _draw(42)
    for a, b in zip(draws, again):
        np.testing.assert_array_equal(a, b)
    other = _draw(43)
    assert np.mean(other[0] == draws[0]) < 1e-3
    u = draws[0]
    # neighbouring threads and consecutive draws are uncorrelated
    assert abs(np.corrcoef(u[:-1, 0], u[1:, 0])[0, 1]) < 0.05
    assert abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.05
    assert len(np.unique(u[:, 0])) > 0.99 * len(u)


@kc.kernel(enable_backward=False)
def draw_samples(seed: int, sq: kc.array(dtype=kc.vec2), cube: kc.array(dtype=kc.vec3), disk: kc.array(dtype=kc.vec2),
                 ring: kc.array(dtype=kc.vec2), ball: kc.array(dtype=kc.vec3), sphere: kc.array(dtype=kc.vec3),
                 hball: kc.array(dtype=kc.vec3), hsphere: kc.array(dtype=kc.vec3), tri: kc.array(dtype=kc.vec2),
                 pois: kc.array(dtype=kc.uint32)):
    i = kc.tid()
    s = kc.rand_init(seed, i)
    sq[i] = kc.sample_unit_square(s)
    cube[i] = kc.sample_unit_cube(s)
    disk[i] = kc.sample_unit_disk(s)
    ring[i] = kc.sample_unit_ring(s)
    ball[i] = kc.sample_unit_sphere(s)
    sphere[i] = kc.sample_unit_sphere_surface(s)
    hball[i] = kc.sample_unit_hemisphere(s)
    hsphere[i] = kc.sample_unit_hemisphere_surface(s)
    tri[i] = kc.sample_triangle(s)
    pois[i] = kc.poisson(s, 3.5)


def test_sampling_helpers():
    n = N_THREADS
    types = [kc.vec2, kc.vec3, kc.vec2, kc.vec2, kc.vec3, kc.vec3, kc.vec3, kc.vec3, kc.vec2, kc.uint32]
    arrs = [kc.zeros(n, dtype=t) for t in types]
    kc.launch(draw_samples, dim=n, inputs=[7] + arrs)
    sq, cube, disk, ring, ball, sphere, hball, hsphere, tri, pois = [a.numpy().astype(np.float64) for a in arrs]
    for box in (sq, cube):
        assert box.min() >= -0.5 and box.max() < 0.5 and np.all(np.abs(box.mean(0)) < 0.01)
    r_disk = np.linalg.norm(disk, axis=1)
    assert r_disk.max() <= 1.0 + 1e-6 and abs(np.mean(r_disk ** 2) - 0.5) < 0.01   # uniform in area
    np.testing.assert_allclose(np.linalg.norm(ring, axis=1), 1.0, atol=1e-6)
    assert np.all(np.abs(ring.mean(0)) < 0.02)
    r_ball = np.linalg.norm(ball, axis=1)
    assert r_ball.max() <= 1.0 + 1e-6 and abs(np.mean(r_ball ** 3) - 0.5) < 0.01   # uniform in volume
    np.testing.assert_allclose(np.linalg.norm(sphere, axis=1), 1.0, atol=1e-5)
    assert np.all(np.abs(sphere.mean(0)) < 0.02)
    assert abs(np.mean(sphere[:, 2] ** 2) - 1.0 / 3.0) < 0.01                       # isotropic
    np.testing.assert_allclose(np.linalg.norm(hsphere, axis=1), 1.0, atol=1e-5)
    assert hsphere[:, 2].min() >= 0.0 and abs(hsphere[:, 2].mean() - 0.5) < 0.01
    assert hball[:, 2].min() >= 0.0 and np.linalg.norm(hball, axis=1).max() <= 1.0 + 1e-6
    assert tri.min() >= 0.0 and (tri.sum(1)).max() <= 1.0 + 1e-6
    np.testing.assert_allclose(tri.mean(0), [1.0 / 3.0, 1.0 / 3.0], atol=0.01)     # uniform barycentrics
    assert abs(pois.mean() - 3.5) < 0.05 and abs(pois.var() - 3.5) < 0.15


# ---- atomics --------------------------------------------------------------------------------
SLOTS = 7


@kc.kernel(enable_backward=False)
def count_int(counts: kc.array(dtype=int), old: kc.array(dtype=int), sub: kc.array(dtype=kc.int64),
              sub_old: kc.array(dtype=kc.int64), fsum: kc.array(dtype=float), dsum: kc.array(dtype=kc.float64),
              vsum: kc.array(dtype=kc.vec3), grid: kc.array(dtype=int, ndim=2)):
    i = kc.tid()
    slot = i % 7
    old[i] = kc.atomic_add(counts, slot, 1)
    sub_old[i] = kc.atomic_sub(sub, slot, kc.int64(2))
    fsum[slot] += 1.0
    kc.atomic_add(dsum, slot, kc.float64(0.5))
    vsum[slot] += kc.vec3(1.0, 2.0, -1.0)
    kc.atomic_add(grid, slot, i % 3, 1)


def test_atomic_add_sub_totals_and_old_values():
    n = N_THREADS
    counts, old = kc.zeros(SLOTS, dtype=int), kc.zeros(n, dtype=int)
    sub, sub_old = kc.zeros(SLOTS, dtype=kc.int64), kc.zeros(n, dtype=kc.int64)
    fsum, dsum, vsum = kc.zeros(SLOTS, dtype=float), kc.zeros(SLOTS, dtype=kc.float64), kc.zeros(SLOTS, dtype=kc.vec3)
    grid = kc.zeros((SLOTS, 3), dtype=int)
    kc.launch(count_int, dim=n, inputs=[counts, old, sub, sub_old, fsum, dsum, vsum, grid])
    slot = np.arange(n) % SLOTS
    per_slot = np.bincount(slot, minlength=SLOTS)
    np.testing.assert_array_equal(counts.numpy(), per_slot)
    np.testing.assert_array_equal(sub.numpy(), -2 * per_slot)
    np.testing.assert_array_equal(fsum.numpy(), per_slot.astype(np.float32))
    np.testing.assert_array_equal(dsum.numpy(), 0.5 * per_slot)
    np.testing.assert_array_equal(vsum.numpy(), np.outer(per_slot, [1.0, 2.0, -1.0]).astype(np.float32))
    want_grid = np.zeros((SLOTS, 3), np.int64)
    np.add.at(want_grid, (slot, np.arange(n) % 3), 1)
    np.testing.assert_array_equal(grid.numpy(), want_grid)
    # each thread saw a distinct old value: exactly 0, 1, ..., count-1 per slot
    o, so = old.numpy(), sub_old.numpy()
    for s in range(SLOTS):
        np.testing.assert_array_equal(np.sort(o[slot == s]), np.arange(per_slot[s]))
        np.testing.assert_array_equal(np.sort(so[slot == s]), -2 * np.arange(per_slot[s])[::-1])


@kc.kernel(enable_backward=False)
def minmax(values: kc.array(dtype=float), ivalues: kc.array(dtype=int), dvalues: kc.array(dtype=kc.float64),
           vvalues: kc.array(dtype=kc.vec2), lo: kc.array(dtype=float), hi: kc.array(dtype=float),
           ilo: kc.array(dtype=int), ihi: kc.array(dtype=int), dlo: kc.array(dtype=kc.float64),
           vhi: kc.array(dtype=kc.vec2), old_hi: kc.array(dtype=float)):
    i = kc.tid()
    slot = i % 7
    kc.atomic_min(lo, slot, values[i])
    old_hi[i] = kc.atomic_max(hi, slot, values[i])
    kc.atomic_min(ilo, slot, ivalues[i])
    kc.atomic_max(ihi, slot, ivalues[i])
    kc.atomic_min(dlo, slot, dvalues[i])
    kc.atomic_max(vhi, slot, vvalues[i])


def test_atomic_min_max():
    n = N_THREADS
    rng = np.random.default_rng(3)
    v = rng.normal(size=n).astype(np.float32)
    iv = rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32)
    dv = rng.normal(size=n)
    vv = rng.normal(size=(n, 2)).astype(np.float32)
    lo, hi = kc.full(SLOTS, 1e30, dtype=float), kc.full(SLOTS, -1e30, dtype=float)
    ilo, ihi = kc.full(SLOTS, 2 ** 31 - 1, dtype=int), kc.full(SLOTS, -2 ** 31, dtype=int)
    dlo = kc.full(SLOTS, 1e300, dtype=kc.float64)
    vhi = kc.array(np.full((SLOTS, 2), -1e30, np.float32), dtype=kc.vec2)
    old_hi = kc.zeros(n, dtype=float)
    kc.launch(minmax, dim=n, inputs=[kc.array(v), kc.array(iv), kc.array(dv, dtype=kc.float64),
                                     kc.array(vv, dtype=kc.vec2), lo, hi, ilo, ihi, dlo, vhi, old_hi])
    slot = np.arange(n) % SLOTS
    for s in range(SLOTS):
        m = slot == s
        assert lo.numpy()[s] == v[m].min() and hi.numpy()[s] == v[m].max()
        assert ilo.numpy()[s] == iv[m].min() and ihi.numpy()[s] == iv[m].max()
        assert dlo.numpy()[s] == dv[m].min()
        np.testing.assert_array_equal(vhi.numpy()[s], vv[m].max(0))
        # the old value returned is one the slot held: the start value or a value written before
        olds = old_hi.numpy()[m]
        assert np.all(olds <= v[m].max()) and np.all(np.isin(olds[olds > -1e30], v[m]))
        assert np.sum(olds == -1e30) == 1   # exactly one thread saw the initial value


@kc.kernel(enable_backward=False)
def cas_exch(owner: kc.array(dtype=int), cas_old: kc.array(dtype=int), chain: kc.array(dtype=int),
             exch_old: kc.array(dtype=int), fl: kc.array(dtype=float), fl_old: kc.array(dtype=float)):
    i = kc.tid()
    slot = i % 7
    cas_old[i] = kc.atomic_cas(owner, slot, 0, i + 1)
    exch_old[i] = kc.atomic_exch(chain, slot, i + 1)
    fl_old[i] = kc.atomic_exch(fl, slot, float(i))


def test_atomic_cas_and_exch_return_old_values():
    n = N_THREADS
    owner, cas_old = kc.zeros(SLOTS, dtype=int), kc.zeros(n, dtype=int)
    chain, exch_old = kc.zeros(SLOTS, dtype=int), kc.zeros(n, dtype=int)
    fl, fl_old = kc.full(SLOTS, -1.0, dtype=float), kc.zeros(n, dtype=float)
    kc.launch(cas_exch, dim=n, inputs=[owner, cas_old, chain, exch_old, fl, fl_old])
    slot = np.arange(n) % SLOTS
    co, eo, fo = cas_old.numpy(), exch_old.numpy(), fl_old.numpy()
    for s in range(SLOTS):
        m = slot == s
        ids = np.arange(n)[m] + 1
        # compare-and-swap: exactly one winner saw 0; everyone else saw the winner's value
        winners = ids[co[m] == 0]
        assert len(winners) == 1 and owner.numpy()[s] == winners[0]
        assert np.all(co[m][co[m] != 0] == winners[0])
        # exchange: the old values plus the final value are the initial value plus every id, once each
        seen = np.sort(np.concatenate([eo[m], [chain.numpy()[s]]]))
        np.testing.assert_array_equal(seen, np.sort(np.concatenate([[0], ids])))
        seen_f = np.sort(np.concatenate([fo[m], [fl.numpy()[s]]]))
        np.testing.assert_array_equal(seen_f, np.sort(np.concatenate([[-1.0], ids - 1.0])).astype(np.float32))


@kc.kernel
def scatter(x: kc.array(dtype=kc.float64), out: kc.array(dtype=kc.float64), outv: kc.array(dtype=kc.vec3d)):
    i = kc.tid()
    kc.atomic_add(out, i % 3, x[i] * 2.0)
    kc.atomic_sub(out, (i + 1) % 3, x[i])
    outv[i % 2] += kc.vec3d(x[i], x[i] * x[i], 1.0)


def test_atomic_add_sub_adjoints():
    n = 10
    rng = np.random.default_rng(4)
    x = kc.array(rng.normal(size=n), dtype=kc.float64, requires_grad=True)
    out = kc.zeros(3, dtype=kc.float64, requires_grad=True)
    outv = kc.zeros(2, dtype=kc.vec3d, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(scatter, dim=n, inputs=[x, out, outv])
    g, gv = rng.normal(size=3), rng.normal(size=(2, 3))
    tape.backward(grads={out: g, outv: gv})
    i = np.arange(n)
    xv = x.numpy()
    want = 2 * g[i % 3] - g[(i + 1) % 3] + gv[i % 2, 0] + 2 * xv * gv[i % 2, 1]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
