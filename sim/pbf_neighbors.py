"""SolverPBF's neighbour search with a branch-free append (the lists of pbf_kernels.neighbors_kernel).

Why: a hash-grid query returns about 2.4 candidates per neighbour (the cells the ball meets),
and whether a candidate is within the search radius is close to a coin toss, so the ``if`` of
pbf_kernels.neighbors_kernel mispredicts about every other candidate.  Here every candidate is
written to the list's next free slot and the count only advances on a hit (``kc.where``), so
the candidate loop has no data-dependent branch (the hit is ``int(r2 < s2) * int(j != i)``:
written with ``kc.where`` GCC turned the selects back into a branch).  64K particles, CPU ms per
search (the benchmark block, interleaved, medians of 7x5 launches, load ~5 on 2 cores): 71.2
with neighbors_kernel, 60.8 here (1.17x).  The rows are therefore one slot wider than
``max_neighbors``: slot ``max_neighbors`` takes the rejected candidates once a row is full
(nothing reads it: counts are clamped to ``max_neighbors`` and an overflow is reported as in
neighbors_kernel).  The lists hold the same indices in the same order as neighbors_kernel's,
so every step is bit-identical (tests/sim/test_pbf_neighbors.py).  Slots past a particle's
count hold candidates from the same query (valid point indices), which the lanes' padding reads
with weight 0 (sim/pbf_lanes.py).
"""
from __future__ import annotations

import kernelcore as kc
import geometry  # noqa: F401  (adds the hash_grid_* builtins)

from .pbf_kernels import NEIGHBOR_SKIN


@kc.kernel(enable_backward=False)
def neighbors_branchless_kernel(grid: kc.uint64, p: kc.array(dtype=kc.vec3), search: float, max_neighbors: int,
                                nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int),
                                overflow: kc.array(dtype=int)):
    t = kc.tid()
    i = kc.hash_grid_point_id(grid, t)
    if i >= 0:
        x = p[i]
        s2 = search * search
        query = kc.hash_grid_query(grid, x, search)
        j = int(0)
        c = int(0)
        while kc.hash_grid_query_next(query, j):
            d = x - p[j]
            nb[i, kc.min(c, max_neighbors)] = j   # kept only if c advances
            c += int(kc.dot(d, d) < s2) * int(j != i)   # integer arithmetic: GCC made the selects a branch
        nb_count[i] = kc.min(c, max_neighbors)
        if c > max_neighbors:
            kc.atomic_max(overflow, 0, c)


# fast-math twin for SolverPBF(fast_math=True) (as pbf_kernels.pick)
_FAST = kc.kernel(neighbors_branchless_kernel.func, fast_math=True, enable_backward=False, module=__name__)


def list_width(max_neighbors: int) -> int:
    """Row length of the neighbour lists for ``max_neighbors`` (one scratch slot, see above)."""
    return max_neighbors + 1


def find_neighbors(grid, p, h, nb, nb_count, overflow, device, fast_math=False):
    """pbf_kernels.find_neighbors for rows of list_width(max_neighbors) ints: fills ``nb`` (N,
    max_neighbors + 1) and ``nb_count`` (N,) of the points ``p`` (vec3 (N,) [m]) from ``grid`` (built
    over ``p``); ``overflow[0]`` gets the largest count beyond max_neighbors.  Not taped."""
    kernel = _FAST if fast_math else neighbors_branchless_kernel
    kc.launch(kernel, dim=p.shape[0], inputs=[grid.id, p, NEIGHBOR_SKIN * h, nb.shape[1] - 1],
              outputs=[nb, nb_count, overflow], device=device, record_tape=False)
