"""HashGrid against brute force: every neighbour within the radius exactly once, no other."""
import numpy as np
import pytest

import kernelcore as kc
from geometry import HashGrid

MAX_NB = 96


@kc.kernel
def gather_neighbours(grid: kc.uint64, points: kc.array(dtype=kc.vec3), queries: kc.array(dtype=kc.vec3), radius: float,
                      counts: kc.array(dtype=kc.int32), found: kc.array2d(dtype=kc.int32), candidates: kc.array(dtype=kc.int32)):
    i = kc.tid()
    p = queries[i]
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    c = int(0)
    n = int(0)
    while kc.hash_grid_query_next(query, index):
        n += 1
        if kc.length(p - points[index]) <= radius:
            if c < 96:
                found[i, c] = index
            c += 1
    counts[i] = c
    candidates[i] = n


# The seeds' hash grid example with kc in place of wp.
@kc.kernel
def sum(grid : kc.uint64,
        points: kc.array(dtype=kc.vec3),
        output: kc.array(dtype=kc.vec3),
        radius: float):

    tid = kc.tid()

    # query point
    p = points[tid]

    # create grid query around point
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)

    sum = kc.vec3()

    while(kc.hash_grid_query_next(query, index)):

        neighbor = points[index]

        # compute distance to neighbor point
        dist = kc.length(p-neighbor)
        if (dist <= radius):
            sum += neighbor

    output[tid] = sum


@kc.kernel
def sorted_order(grid: kc.uint64, out: kc.array(dtype=kc.int32)):
    i = kc.tid()
    out[i] = kc.hash_grid_point_id(grid, i)


def _brute(points, queries, r):
    d = np.linalg.norm(queries[:, None, :].astype(np.float64) - points[None, :, :], axis=2)
    return d, d <= r


def _gather(grid, points, queries, r):
    n = len(queries)
    counts, cand = kc.zeros(n, dtype=kc.int32), kc.zeros(n, dtype=kc.int32)
    found = kc.full((n, MAX_NB), -1, dtype=kc.int32)
    kc.launch(gather_neighbours, dim=n, inputs=[grid.id, kc.array(points, dtype=kc.vec3), kc.array(queries, dtype=kc.vec3),
                                                r, counts, found, cand])
    return counts.numpy(), found.numpy(), cand.numpy()


def _check_exact(counts, found, d, r, tol):
    """Every point within r reported once, no other (ignoring points within rounding of r)."""
    for i in range(len(counts)):
        ids = found[i, :counts[i]]
        assert len(np.unique(ids)) == len(ids), "a neighbour was reported twice"
        ref = np.nonzero(d[i] <= r)[0]
        near_edge = np.abs(d[i] - r) < tol   # float32 in the kernel, float64 here
        assert set(ids[~near_edge[ids]]) == set(ref[~near_edge[ref]])


@pytest.mark.parametrize("dims,scale", [((16, 16, 16), 1.0), ((5, 7, 3), 1.0), ((32, 32, 32), 20.0), ((1, 1, 1), 1.0)])
def test_neighbours_found_exactly_once(dims, scale):
    rng = np.random.default_rng(int(np.prod(dims)) % 1000)
    points = ((rng.random((3000, 3)) - 0.3) * scale).astype(np.float32)
    queries = np.concatenate([points[:300], ((rng.random((200, 3)) - 0.3) * scale).astype(np.float32)])
    r = 0.08 * scale
    grid = HashGrid(*dims)
    grid.build(points, r)
    counts, found, cand = _gather(grid, points, queries, r)
    d, _ = _brute(points, queries, r)
    assert counts.max() <= MAX_NB
    _check_exact(counts, found, d, r, 1e-5 * scale)
    # candidates cover the cells overlapping the query box: never fewer than the true neighbours
    assert (cand >= counts).all()


def test_rebuild_and_radius_larger_than_cell():
    rng = np.random.default_rng(3)
    grid = HashGrid(8, 8, 8)
    for frame in range(3):
        points = rng.random((1000, 3)).astype(np.float32)
        grid.build(points, 0.05)            # cell width 0.05, queried with a larger radius
        counts, found, _ = _gather(grid, points, points[:100], 0.17)
        d, _ = _brute(points, points[:100], 0.17)
        _check_exact(counts, found, d, 0.17, 1e-5)


def test_seed_sum_kernel():
    rng = np.random.default_rng(0)
    points = rng.random((2000, 3)).astype(np.float32)
    r = 0.1
    grid = HashGrid(dim_x=128, dim_y=128, dim_z=128)
    grid.build(points=kc.array(points, dtype=kc.vec3), radius=r)
    out = kc.zeros(len(points), dtype=kc.vec3)
    kc.launch(sum, dim=len(points), inputs=[grid.id, kc.array(points, dtype=kc.vec3), out, r])
    d, within = _brute(points, points, r)
    ref = within.astype(np.float64) @ points.astype(np.float64)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-3)


def test_point_id_is_a_permutation_in_cell_order():
    rng = np.random.default_rng(1)
    points = rng.random((500, 3)).astype(np.float32)
    grid = HashGrid(4, 4, 4)
    grid.build(points, 0.25)
    out = kc.zeros(500, dtype=kc.int32)
    kc.launch(sorted_order, dim=500, inputs=[grid.id, out])
    order = out.numpy()
    assert sorted(order.tolist()) == list(range(500))
    cells = np.floor(points[order] / 0.25).astype(int) % 4
    key = (cells[:, 2] * 4 + cells[:, 1]) * 4 + cells[:, 0]
    assert (np.diff(key) >= 0).all()


def test_empty_point_set_gives_no_neighbours():
    grid = HashGrid(4, 4, 4)
    grid.build(np.zeros((0, 3), np.float32), 0.1)
    counts, _, cand = _gather(grid, np.zeros((1, 3), np.float32), np.zeros((3, 3), np.float32), 0.1)
    assert counts.sum() == 0 and cand.sum() == 0


@pytest.mark.parametrize("radius", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_radius_is_a_value_error(radius):
    grid = HashGrid(4, 4, 4)
    with pytest.raises(ValueError, match="radius"):
        grid.build(np.zeros((3, 3), np.float32), radius)


def test_bad_dims_and_points():
    with pytest.raises(ValueError, match="dim_y"):
        HashGrid(4, 0, 4)
    grid = HashGrid(4, 4, 4)
    with pytest.raises(ValueError, match="points"):
        grid.build(np.zeros((3, 2), np.float32), 0.1)
    with pytest.raises(ValueError, match="points"):
        grid.build(np.array([[0, 0, np.nan]], np.float32), 0.1)


@kc.kernel
def neighbour_count_and_id_sum(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
                               counts: kc.array(dtype=kc.int32), id_sums: kc.array(dtype=kc.int64)):
    i = kc.tid()
    p = points[i]
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    c = int(0)
    s = kc.int64(0)
    while kc.hash_grid_query_next(query, index):
        if kc.length(p - points[index]) <= radius:
            c += 1
            s += kc.int64(index)
    counts[i] = c
    id_sums[i] = s


def _count_and_id_sum(grid, points, r):
    n = len(points)
    counts, sums = kc.zeros(n, dtype=kc.int32), kc.zeros(n, dtype=kc.int64)
    kc.launch(neighbour_count_and_id_sum, dim=n, inputs=[grid.id, kc.array(points, dtype=kc.vec3), r, counts, sums])
    return counts.numpy(), sums.numpy()


def test_more_candidates_than_one_query_buffer():
    # 1500 points in one cell: every query walks them all, across several refills of the
    # query's candidate buffer
    rng = np.random.default_rng(5)
    points = (rng.random((1500, 3)) * 0.01).astype(np.float32)
    grid = HashGrid(16, 16, 16)
    grid.build(points, 0.5)
    counts, sums = _count_and_id_sum(grid, points, 0.5)
    assert (counts == 1500).all()
    assert (sums == 1500 * 1499 // 2).all()


@pytest.mark.parametrize("dims,extent,split", [((128, 128, 128), 1.0, (8, 1, 1)), ((30, 30, 30), 1.0, (3, 1, 1)),
                                               ((12, 12, 12), 1.0, (1, 1, 1)), ((35, 13, 9), 1.0, (3, 1, 1))])
def test_cells_are_sliced_only_as_far_as_the_table_allows(dims, extent, split):
    # cells are the radius cut into slices along x (and y) while the points still fit the table
    # unwrapped; results are exact whatever the slicing
    rng = np.random.default_rng(11)
    points = (rng.random((4000, 3)) * extent).astype(np.float32)
    r = 0.1
    grid = HashGrid(*dims)
    grid.build(points, r)
    assert tuple(grid._desc.split) == split
    counts, sums = _count_and_id_sum(grid, points, r)
    d, within = _brute(points, points, r)
    near_edge = np.abs(d - r) < 1e-5
    assert np.all(np.abs(counts - within.sum(1)) <= near_edge.sum(1))
    ok = near_edge.sum(1) == 0
    np.testing.assert_array_equal(sums[ok], (within * np.arange(len(points))).sum(1)[ok])


@kc.kernel
def copy_mid_query(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
                   firsts: kc.array(dtype=kc.int64), rest_a: kc.array(dtype=kc.int64), rest_b: kc.array(dtype=kc.int64)):
    i = kc.tid()
    p = points[i]
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    n = int(0)
    s0 = kc.int64(0)
    while kc.hash_grid_query_next(query, index):
        s0 += kc.int64(index)
        n += 1
        if n == 3:
            break
    copy = query
    sa = kc.int64(0)
    while kc.hash_grid_query_next(query, index):
        sa += kc.int64(index)
    sb = kc.int64(0)
    while kc.hash_grid_query_next(copy, index):
        sb += kc.int64(index)
    firsts[i] = s0
    rest_a[i] = sa
    rest_b[i] = sb


@kc.kernel
def candidate_id_sum(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float, out: kc.array(dtype=kc.int64)):
    i = kc.tid()
    query = kc.hash_grid_query(grid, points[i], radius)
    index = int(0)
    s = kc.int64(0)
    while kc.hash_grid_query_next(query, index):
        s += kc.int64(index)
    out[i] = s


def test_a_query_copied_mid_iteration_continues_where_it_was():
    rng = np.random.default_rng(2)
    points = rng.random((3000, 3)).astype(np.float32)
    grid = HashGrid(32, 32, 32)
    grid.build(points, 0.3)    # ~300 candidates a query: the copy happens inside the first buffer
    n = len(points)
    kp = kc.array(points, dtype=kc.vec3)
    firsts, rest_a, rest_b, total = (kc.zeros(n, dtype=kc.int64) for _ in range(4))
    kc.launch(copy_mid_query, dim=n, inputs=[grid.id, kp, 0.3, firsts, rest_a, rest_b])
    kc.launch(candidate_id_sum, dim=n, inputs=[grid.id, kp, 0.3, total])
    np.testing.assert_array_equal(rest_a.numpy(), rest_b.numpy())
    np.testing.assert_array_equal(firsts.numpy() + rest_a.numpy(), total.numpy())
    assert (rest_a.numpy() > 0).all()
