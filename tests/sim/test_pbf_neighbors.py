"""sim/pbf_neighbors.py: SolverPBF's branch-free neighbour search gives the lists of
pbf_kernels.neighbors_kernel (same indices, same order) and every pair within the search radius
(brute force), and reports overflow as before."""
import numpy as np
import pytest

import geometry
import kernelcore as kc
from sim import pbf_kernels as K
from sim import pbf_neighbors as PN
from sim.collide_particles import _build_off_tape

H = 0.04


def jittered_block(n=7, s=0.02, seed=3):
    rng = np.random.default_rng(seed)
    g = (np.arange(n) + 0.5) * s
    q = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    q = q + rng.uniform(-0.3 * s, 0.3 * s, q.shape)
    return q[rng.permutation(len(q))].astype(np.float32)   # memory order unrelated to space


def search(q, max_neighbors, branchless, fast_math=False):
    p = kc.array(q, dtype=kc.vec3)
    grid = geometry.HashGrid(8, 8, 8)
    _build_off_tape(grid, p, K.NEIGHBOR_SKIN * H)
    width = PN.list_width(max_neighbors) if branchless else max_neighbors
    nb = kc.zeros((len(q), width), dtype=kc.int32)
    count = kc.zeros(len(q), dtype=kc.int32)
    overflow = kc.zeros(1, dtype=kc.int32)
    find = PN.find_neighbors if branchless else K.find_neighbors
    find(grid, p, H, nb, count, overflow, "cpu", fast_math=fast_math)
    return nb.numpy()[:, :max_neighbors], count.numpy(), int(overflow.numpy()[0])


def test_lists_match_the_reference_kernel_and_brute_force():
    q = jittered_block()
    nb, count, overflow = search(q, 96, branchless=True)
    ref_nb, ref_count, ref_overflow = search(q, 96, branchless=False)
    assert overflow == ref_overflow == 0
    np.testing.assert_array_equal(count, ref_count)
    r = K.NEIGHBOR_SKIN * H
    d2 = ((q[:, None, :].astype(np.float64) - q[None, :, :]) ** 2).sum(-1)
    for i in range(len(q)):
        np.testing.assert_array_equal(nb[i, :count[i]], ref_nb[i, :ref_count[i]])
        want = set(np.nonzero(d2[i] < r * r)[0]) - {i}
        got = nb[i, :count[i]]
        assert len(set(got)) == len(got), f"particle {i} lists a neighbour twice"
        # pairs within float rounding of the radius may go either way; everything else must agree
        sure = {j for j in want if d2[i, j] < (r * r) * (1 - 1e-5)}
        assert sure <= set(got) <= want | {j for j in range(len(q)) if d2[i, j] < (r * r) * (1 + 1e-5)} - {i}
    assert count.mean() > 20, "the block must be dense enough to test anything"


def test_fast_math_twin_gives_the_same_lists():
    q = jittered_block(6)
    a = search(q, 96, branchless=True, fast_math=True)
    b = search(q, 96, branchless=True)
    np.testing.assert_array_equal(a[1], b[1])
    for i in range(len(q)):
        np.testing.assert_array_equal(a[0][i, :a[1][i]], b[0][i, :b[1][i]])


def test_full_rows_clamp_the_count_and_report_the_overflow():
    q = jittered_block(6)
    nb, count, overflow = search(q, 8, branchless=True)
    ref_nb, ref_count, ref_overflow = search(q, 8, branchless=False)
    assert ref_overflow > 8 and overflow == ref_overflow
    np.testing.assert_array_equal(count, ref_count)
    assert count.max() == 8
    # the first 8 neighbours are kept; the rejected candidates went to the scratch slot, not over them
    np.testing.assert_array_equal(nb, np.where(np.arange(8) < count[:, None], ref_nb, nb))
    np.testing.assert_array_equal(nb[count == 8], ref_nb[count == 8])


def test_solver_reports_too_many_neighbours():
    import sim

    b = sim.ModelBuilder()
    b.add_particle_grid((0.01,) * 3, (0.0, 0.0, 0.0), 5, 5, 5, 0.02, density=1000.0, radius=0.01)
    model = b.finalize()
    solver = sim.SolverPBF(model, smoothing_length=0.04, bounds=((0, 0, 0), (1, 1, 1)), max_neighbors=8)
    with pytest.raises(ValueError, match="more than max_neighbors=8"):
        solver.step(model, model.state(), model.state(), None, 1e-3)
