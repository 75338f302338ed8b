"""Bvh overlap and ray queries against brute force."""
import numpy as np
import pytest

import kernelcore as kc
from geometry import Bvh


@kc.kernel
def overlap_query(bvh: kc.uint64, qlo: kc.array(dtype=kc.vec3), qhi: kc.array(dtype=kc.vec3), hits: kc.array2d(dtype=kc.int32)):
    i = kc.tid()
    query = kc.bvh_query_aabb(bvh, qlo[i], qhi[i])
    item = int(0)
    while kc.bvh_query_next(query, item):
        hits[i, item] = hits[i, item] + 1


@kc.kernel
def ray_query(bvh: kc.uint64, starts: kc.array(dtype=kc.vec3), dirs: kc.array(dtype=kc.vec3), max_dist: float,
              hits: kc.array2d(dtype=kc.int32)):
    i = kc.tid()
    query = kc.bvh_query_ray(bvh, starts[i], dirs[i])
    item = int(0)
    while kc.bvh_query_next(query, item, max_dist):
        hits[i, item] = hits[i, item] + 1


def _boxes(n, seed):
    rng = np.random.default_rng(seed)
    c = rng.random((n, 3)).astype(np.float32)
    h = (rng.random((n, 3)) * 0.05).astype(np.float32)
    return c - h, c + h


def _slab(lo, hi, o, d, tmax):
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        a, b = (lo - o) * inv, (hi - o) * inv
    near = np.nanmax(np.concatenate([np.minimum(a, b), np.zeros((len(lo), 1))], axis=1), axis=1)
    far = np.nanmin(np.concatenate([np.maximum(a, b), np.full((len(lo), 1), tmax)], axis=1), axis=1)
    return near <= far


@pytest.mark.parametrize("leaf_size", [1, 4])
def test_overlap_and_ray_queries_match_brute_force(leaf_size):
    lo, hi = _boxes(2000, 1)
    bvh = Bvh(kc.array(lo, dtype=kc.vec3), kc.array(hi, dtype=kc.vec3), leaf_size=leaf_size)
    assert bvh.num_nodes == 2 * bvh.num_items - 1 or leaf_size > 1
    rng = np.random.default_rng(2)
    m = 64
    qc = rng.random((m, 3)).astype(np.float32)
    qh = (rng.random((m, 3)) * 0.15).astype(np.float32)
    hits = kc.zeros((m, 2000), dtype=kc.int32)
    kc.launch(overlap_query, dim=m, inputs=[bvh.id, kc.array(qc - qh, dtype=kc.vec3), kc.array(qc + qh, dtype=kc.vec3), hits])
    ref = np.all(lo[None] <= (qc + qh)[:, None], axis=2) & np.all(hi[None] >= (qc - qh)[:, None], axis=2)
    np.testing.assert_array_equal(hits.numpy(), ref.astype(np.int32))

    starts = (rng.random((m, 3)) * 1.4 - 0.2).astype(np.float32)
    dirs = rng.normal(size=(m, 3)).astype(np.float32)
    dirs[:8, 1:] = 0.0                      # axis-aligned rays (zero direction components)
    for tmax in (1e6, 0.3):
        hits = kc.zeros((m, 2000), dtype=kc.int32)
        kc.launch(ray_query, dim=m, inputs=[bvh.id, kc.array(starts, dtype=kc.vec3), kc.array(dirs, dtype=kc.vec3), tmax, hits])
        ref = np.stack([_slab(lo.astype(np.float64), hi.astype(np.float64), starts[i].astype(np.float64),
                              dirs[i].astype(np.float64), tmax) for i in range(m)])
        got = hits.numpy()
        assert got.max() <= 1
        # boxes grazed within float rounding may go either way
        assert np.sum(got != ref) <= 2, np.argwhere(got != ref)


def test_refit_after_moving_boxes():
    lo, hi = _boxes(500, 3)
    lo_a, hi_a = kc.array(lo, dtype=kc.vec3), kc.array(hi, dtype=kc.vec3)
    bvh = Bvh(lo_a, hi_a)
    shift = np.float32(0.5)
    lo_a.numpy()[:] += shift
    hi_a.numpy()[:] += shift
    bvh.refit()
    q = np.array([[0.9, 0.9, 0.9]], np.float32)
    hits = kc.zeros((1, 500), dtype=kc.int32)
    kc.launch(overlap_query, dim=1, inputs=[bvh.id, kc.array(q - 0.2, dtype=kc.vec3), kc.array(q + 0.2, dtype=kc.vec3), hits])
    ref = np.all(lo + shift <= q + 0.2, axis=1) & np.all(hi + shift >= q - 0.2, axis=1)
    np.testing.assert_array_equal(hits.numpy()[0], ref.astype(np.int32))


def test_degenerate_inputs():
    # all boxes at one point: the median fallback still builds a shallow tree
    lo = np.zeros((1000, 3), np.float32)
    bvh = Bvh(lo, lo)
    assert bvh.depth <= 63
    hits = kc.zeros((1, 1000), dtype=kc.int32)
    kc.launch(overlap_query, dim=1, inputs=[bvh.id, kc.array(lo[:1] - 1, dtype=kc.vec3), kc.array(lo[:1] + 1, dtype=kc.vec3), hits])
    assert hits.numpy().sum() == 1000
    one = Bvh(np.zeros((1, 3)), np.ones((1, 3)))
    assert one.num_nodes == 1


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="uppers"):
        Bvh(np.ones((3, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="different lengths"):
        Bvh(np.zeros((3, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="lowers"):
        Bvh(np.zeros((0, 3)), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="leaf_size"):
        Bvh(np.zeros((2, 3)), np.ones((2, 3)), leaf_size=0)
