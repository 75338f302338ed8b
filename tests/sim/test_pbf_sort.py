"""sim/pbf_sort.py: SolverPBF(lanes=True)'s cell sort and its neighbour search over contiguous
cell-row ranges.  The neighbour sets equal brute force (also for positions outside the grid,
clamped into its border cells); a step equals the unsorted lanes step up to the rounding of
sums taken in another order; the state keeps the user's particle order."""
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim
from sim import pbf_kernels as K
from sim import pbf_neighbors as PN
from sim import pbf_sort
from sim.pbf_lanes import LaneScratch

from test_pbf_lanes import run, spinning_block

H = 0.04
LOWER, UPPER = (0.0, 0.0, 0.0), (0.3, 0.2, 0.16)


def sorted_search(q, max_neighbors=96):
    """(lists in user indices, counts, overflow) of the sorted search over the points q (n, 3)."""
    n = len(q)

    class FakeModel:   # the per-particle arrays SortedParticles.sort gathers
        particle_mass = kc.ones(n, dtype=float)
        particle_inv_mass = kc.ones(n, dtype=float)
        particle_radius = kc.ones(n, dtype=float)

    p = kc.array(q, dtype=kc.vec3)
    srt = pbf_sort.SortedParticles(n, LOWER, UPPER, H, "cpu")
    scratch = LaneScratch(n, "cpu")
    srt.sort(FakeModel, p, p, kc.ones(n, dtype=float), scratch)
    nb = kc.zeros((n, PN.list_width(max_neighbors)), dtype=kc.int32)
    count = kc.zeros(n, dtype=kc.int32)
    overflow = kc.zeros(1, dtype=kc.int32)
    srt.find_neighbors(scratch, nb, count, overflow)
    order = srt.order.numpy()
    assert sorted(order) == list(range(n)), "order must be a permutation"
    np.testing.assert_array_equal(srt.p.numpy(), q[order])
    lists = [None] * n
    nb, count = nb.numpy(), count.numpy()
    for s in range(n):
        lists[order[s]] = order[nb[s, :count[s]]]
        assert np.all(np.diff(nb[s, :count[s]]) > 0), "a row lists ascending sorted indices"
    return lists, count[np.argsort(order)], int(overflow.numpy()[0])


def assert_brute_force(q, lists):
    r = K.NEIGHBOR_SKIN * H
    d2 = ((q[:, None, :].astype(np.float64) - q[None, :, :]) ** 2).sum(-1)
    for i in range(len(q)):
        got = set(lists[i].tolist())
        assert len(got) == len(lists[i]), f"particle {i} lists a neighbour twice"
        # pairs within float rounding of the radius may go either way; everything else must agree
        sure = set(np.nonzero(d2[i] < r * r * (1 - 1e-5))[0]) - {i}
        maybe = set(np.nonzero(d2[i] < r * r * (1 + 1e-5))[0]) - {i}
        assert sure <= got <= maybe, f"particle {i}: missing {sorted(sure - got)}, extra {sorted(got - maybe)}"


def test_sorted_lists_match_brute_force():
    rng = np.random.default_rng(7)
    q = rng.uniform(LOWER, UPPER, (900, 3)).astype(np.float32)
    q[:150] = (0.05 + rng.uniform(0.0, 0.12, (150, 3))).astype(np.float32)   # a denser clump
    lists, count, overflow = sorted_search(q)
    assert overflow == 0 and count.max() > 20
    assert_brute_force(q, lists)


def test_positions_outside_the_grid_are_still_found():
    """check_input=False lets particles leave the bounds: they are clamped into the border cells."""
    rng = np.random.default_rng(8)
    q = rng.uniform(LOWER, UPPER, (400, 3))
    q[:40] = np.array(LOWER) - rng.uniform(0.0, 0.05, (40, 3))          # beyond the lower corner
    q[120:200, 0] = UPPER[0] + rng.uniform(0.0, 0.05, 80)               # beyond the +x face
    q[200] = (np.nan, 0.1, 0.1)                                          # NaN must not index out of the grid
    q = q.astype(np.float32)
    lists, count, overflow = sorted_search(q)
    assert overflow == 0 and count[:40].min() > 5
    ok = np.arange(len(q)) != 200
    assert_brute_force(q[ok], [np.array([j - (j > 200) for j in lists[i]], int) for i in np.nonzero(ok)[0]])
    assert count[200] == 0


def test_overflow_is_reported():
    q = np.random.default_rng(9).uniform(0.1, 0.12, (60, 3)).astype(np.float32)
    _, count, overflow = sorted_search(q, max_neighbors=8)
    assert overflow == 59 and count.max() == 8


def test_sorted_steps_match_unsorted_lanes_steps():
    """Rounding only: each particle's pair sums run over the same neighbours in another order
    (float32, relative 1e-7 per sum); over 15 steps of a spinning block the positions [m] agree
    to 1e-5 of the block size and the velocities to 1e-3 of the spin speed (0.3 m/s)."""
    solver, q0, q1, v1 = run(True, cell_sort=True)
    assert solver._sorted is not None, "the cell sort must have run"
    _, _, q_ref, v_ref = run(True, cell_sort=False)
    assert np.abs(q_ref - q0).max() > 0.01, "the block must move"
    np.testing.assert_allclose(q1, q_ref, rtol=0, atol=1e-5 * 0.12)
    np.testing.assert_allclose(v1, v_ref, rtol=0, atol=1e-3 * 0.3)
    # one step: the closer agreement of a single projection
    _, _, q1, v1 = run(True, steps=1, cell_sort=True)
    _, _, q_ref, v_ref = run(True, steps=1, cell_sort=False)
    np.testing.assert_allclose(q1, q_ref, rtol=0, atol=1e-7)
    np.testing.assert_allclose(v1, v_ref, rtol=0, atol=1e-4)


def test_sorted_steps_with_static_and_body_shapes():
    """The per-particle arrays (mass, inverse mass, radius) follow the sort into the body coupling."""
    def shapes(b):
        b.add_shape_sphere(pos=(0.16, 0.03, 0.06), radius=0.03)
        body = b.add_body(kc.transform(kc.vec3(0.06, 0.16, 0.06), kc.quat(0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box(body=body, half_extents=(0.03, 0.02, 0.03), density=500.0)

    res = [run(True, steps=10, shapes=shapes, cell_sort=c) for c in (True, False)]
    assert res[0][0]._sorted is not None
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=0, atol=1e-5 * 0.12)
    np.testing.assert_allclose(res[0][3], res[1][3], rtol=0, atol=1e-3 * 0.3)


def test_a_sparse_domain_keeps_the_hash_grid(monkeypatch):
    monkeypatch.setattr(pbf_sort, "MIN_CELL_LIMIT", 10)
    monkeypatch.setattr(pbf_sort, "CELLS_PER_PARTICLE", 1)
    with pytest.warns(UserWarning, match=r"cell_sort=True.*cells .* are too many for 216 particles"):
        solver, _, q1, _ = run(True, steps=3, cell_sort=True)
    assert solver._sorted is None and solver._lane_scratch is not None
    _, _, q_ref, _ = run(True, steps=3, cell_sort=False)
    np.testing.assert_array_equal(q1, q_ref)


def test_cell_sort_without_lanes_is_reported_not_ignored():
    with pytest.warns(UserWarning, match=r"cell_sort=True\) has no effect without lanes=True"):
        spinning_block(3, 0.02, False, cell_sort=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the default (None) and an explicit False say nothing
        spinning_block(3, 0.02, False, cell_sort=None)
        spinning_block(3, 0.02, False, cell_sort=False)
    _, solver, _ = spinning_block(3, 0.02, True, cell_sort=None)
    assert solver.cell_sort   # on by default with lanes
