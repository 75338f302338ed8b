"""SolverPBF's lanes steps over particles sorted by cell (``SolverPBF(..., lanes=True, cell_sort=True)``).

Why: the hash-grid search (sim/pbf_neighbors.py) tests about 90 scattered candidates per
particle, each through the query iterator; it was the largest single kernel of a lanes step
(71 of 264 CPU ms at 64K particles, one thread).  Here each step

1. counts the predicted positions into PBF's own dense grid of cells ``NEIGHBOR_SKIN * h /
   CELLS_PER_RADIUS`` wide over ``bounds`` (x fastest), scans the counts into ``cell_start`` (int
   (cells + 1,)) and scatters the particle indices into ``order`` (int (N,), cell order; stable,
   one thread, so the order does not depend on the thread count);
2. gathers positions, previous positions, rest volumes, masses, inverse masses and radii into
   that order (``SortedParticles``);
3. finds the neighbours of sorted particle s by walking, for each (y, z) row of cells the ball
   of the search radius meets, the one contiguous range of sorted particles in the cells the
   ball's x-extent in that row covers (no hash, no iterator, unit-stride loads; the same
   branch-free append as pbf_neighbors);
4. runs the lanes' pair kernels (sim/pbf_lanes.py) on the sorted arrays: the neighbour lists are
   ascending sorted indices, so a particle's neighbours lie in a few short runs of memory;
5. scatters the final positions and velocities back to the user's particle order.

The neighbour sets are those of the hash grid (every pair closer than ``NEIGHBOR_SKIN * h``;
tests/sim/test_pbf_sort.py checks them against brute force); only the order of each
particle's sum changes, so a step differs from the unsorted lanes step by float rounding.
A step's buffers (``state.pbf_buffers``: positions, multipliers, neighbour lists) are in the
sorted order of that step; ``state.particle_q`` / ``particle_qd`` are in the user's order.
Positions outside the grid (``check_input=False``) are clamped into its border cells; the search
takes its cell ranges through the same clamp (monotone, so no pair is missed) and lets the border
cells reach to infinity when it trims a row (``slab_gap``).
"""
from __future__ import annotations

import math

import kernelcore as kc

from .pbf_kernels import NEIGHBOR_SKIN

#: the dense grid is used while it has at most this many cells per particle (plus a floor);
#: a larger, sparsely filled domain keeps the hash grid (its serial scan would cost more than the walk saves)
CELLS_PER_PARTICLE = 8
MIN_CELL_LIMIT = 1 << 16
#: cells per search radius: finer cells follow the ball more closely (fewer candidates, 2: about half
#: those of 1-radius cells) at the price of more rows and a larger grid to scan
CELLS_PER_RADIUS = 2
#: the cell ranges are taken this much wider than the search radius, so that rounding in the row
#: arithmetic never drops a pair (the exact test is the distance one)
RANGE_MARGIN = 1.0001


@kc.func
def cell_coord(x: float, lower: float, inv_cell: float, n: int) -> int:
    """Cell index along one axis, clamped to [0, n - 1] (first as a float: NaN and huge values
    must not reach the integer conversion)."""
    f = kc.min(kc.max((x - lower) * inv_cell, 0.0), float(n - 1))
    return kc.min(kc.max(int(f), 0), n - 1)


@kc.kernel(enable_backward=False)
def counting_sort_kernel(p: kc.array(dtype=kc.vec3), n: int, lower: kc.vec3, inv_cell: float, nx: int, ny: int,
                         nz: int, cell: kc.array(dtype=int), cell_start: kc.array(dtype=int),
                         cursor: kc.array(dtype=int), order: kc.array(dtype=int)):
    """One thread (dim=1): a stable counting sort of the N points ``p`` by cell (see the module docstring)."""
    cells = nx * ny * nz
    for c in range(cells + 1):
        cell_start[c] = 0
    for i in range(n):
        x = p[i]
        c = (cell_coord(x[2], lower[2], inv_cell, nz) * ny + cell_coord(x[1], lower[1], inv_cell, ny)) * nx \
            + cell_coord(x[0], lower[0], inv_cell, nx)
        cell[i] = c
        cell_start[c + 1] = cell_start[c + 1] + 1
    for c in range(cells):
        cell_start[c + 1] = cell_start[c + 1] + cell_start[c]
        cursor[c] = cell_start[c]
    for i in range(n):
        c = cell[i]
        k = cursor[c]
        order[k] = i
        cursor[c] = k + 1


@kc.kernel(enable_backward=False)
def gather_kernel(order: kc.array(dtype=int), p: kc.array(dtype=kc.vec3),
                  x_prev: kc.array(dtype=kc.vec3), volume: kc.array(dtype=float), mass: kc.array(dtype=float),
                  inv_mass: kc.array(dtype=float), radius: kc.array(dtype=float),
                  p_s: kc.array(dtype=kc.vec3), px: kc.array(dtype=float), py: kc.array(dtype=float),
                  pz: kc.array(dtype=float), x_prev_s: kc.array(dtype=kc.vec3), volume_s: kc.array(dtype=float),
                  mass_s: kc.array(dtype=float), inv_mass_s: kc.array(dtype=float), radius_s: kc.array(dtype=float)):
    s = kc.tid()
    i = order[s]
    x = p[i]
    p_s[s] = x
    px[s] = x[0]
    py[s] = x[1]
    pz[s] = x[2]
    x_prev_s[s] = x_prev[i]
    volume_s[s] = volume[i]
    mass_s[s] = mass[i]
    inv_mass_s[s] = inv_mass[i]
    radius_s[s] = radius[i]


@kc.func
def slab_gap(x: float, c: int, n: int, lower: float, width: float) -> float:
    """Distance [m] from coordinate x to cell c's slab [lower + c w, lower + (c + 1) w] along one axis;
    the border cells reach to infinity (they hold the clamped positions outside the grid)."""
    lo = lower + float(c) * width
    hi = lo + width
    below = kc.where(c > 0, lo - x, 0.0)
    above = kc.where(c < n - 1, x - hi, 0.0)
    return kc.max(kc.max(below, above), 0.0)


@kc.kernel(enable_backward=False)
def range_neighbors_kernel(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                           cell_start: kc.array(dtype=int), lower: kc.vec3, inv_cell: float, nx: int, ny: int,
                           nz: int, search: float, max_neighbors: int, nb: kc.array(dtype=int, ndim=2),
                           nb_count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    s = kc.tid()
    x = kc.vec3(px[s], py[s], pz[s])
    s2 = search * search
    reach = search * RANGE_MARGIN   # the cell ranges err outwards; the distance test below is the exact one
    r2 = reach * reach
    width = 1.0 / inv_cell
    cnt = int(0)
    for z in range(cell_coord(x[2] - reach, lower[2], inv_cell, nz), cell_coord(x[2] + reach, lower[2], inv_cell, nz) + 1):
        gz = slab_gap(x[2], z, nz, lower[2], width)
        for y in range(cell_coord(x[1] - reach, lower[1], inv_cell, ny),
                       cell_coord(x[1] + reach, lower[1], inv_cell, ny) + 1):
            gy = slab_gap(x[1], y, ny, lower[1], width)
            rest = r2 - gz * gz - gy * gy   # what the ball leaves of this row along x
            rx = kc.sqrt(kc.max(rest, 0.0))
            x0 = cell_coord(x[0] - rx, lower[0], inv_cell, nx)
            x1 = kc.where(rest >= 0.0, cell_coord(x[0] + rx, lower[0], inv_cell, nx), x0 - 1)
            row = (z * ny + y) * nx
            for t in range(cell_start[row + x0], cell_start[row + x1 + 1]):   # one contiguous run of particles
                d = x - kc.vec3(px[t], py[t], pz[t])
                nb[s, kc.min(cnt, max_neighbors)] = t   # kept only if cnt advances (as pbf_neighbors)
                cnt += int(kc.dot(d, d) < s2) * int(t != s)
    nb_count[s] = kc.min(cnt, max_neighbors)
    if cnt > max_neighbors:
        kc.atomic_max(overflow, 0, cnt)


@kc.kernel(enable_backward=False)
def scatter_kernel(order: kc.array(dtype=int), p_s: kc.array(dtype=kc.vec3), v_s: kc.array(dtype=kc.vec3),
                   p: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3)):
    s = kc.tid()
    i = order[s]
    p[i] = p_s[s]
    v[i] = v_s[s]


def cell_width(h):
    """Width [m] of the dense grid's cells: the search radius NEIGHBOR_SKIN * h over CELLS_PER_RADIUS."""
    return NEIGHBOR_SKIN * h / CELLS_PER_RADIUS


def grid_dims(lower, upper, h):
    """(nx, ny, nz) of the dense cell grid over the box [lower, upper] [m]."""
    cell = cell_width(h)
    return tuple(max(1, int(math.ceil((float(u) - float(lo)) / cell))) for lo, u in zip(lower, upper))


def fits(dims, n):
    """Whether the dense grid of ``dims`` cells is small enough for ``n`` particles (see CELLS_PER_PARTICLE)."""
    return dims[0] * dims[1] * dims[2] <= max(CELLS_PER_PARTICLE * n, MIN_CELL_LIMIT)


class SortedParticles:
    """Solver-owned arrays of the cell sort (reused by every step; forward only).

    cell, order: int (N,) (cell of each particle; sorted slot -> particle); cell_start int (cells + 1,),
    cursor int (cells,); in sorted order: p vec3 (N,) predicted positions [m],
    x_prev vec3 (N,) positions at the step's start [m], volume float (N,) [m^3], mass [kg],
    inv_mass [1/kg], radius [m] float (N,), v vec3 (N,) [m/s].
    """

    def __init__(self, n, lower, upper, h, device):
        self.n = n
        self.dims = grid_dims(lower, upper, h)
        self.lower = kc.vec3(*[float(a) for a in lower])
        self.inv_cell = 1.0 / cell_width(h)
        self.search = NEIGHBOR_SKIN * h
        cells = self.dims[0] * self.dims[1] * self.dims[2]
        self.device = device

        def ints(m):
            return kc.zeros(m, dtype=kc.int32, device=device)

        def floats():
            return kc.zeros(n, dtype=float, device=device)

        self.cell, self.order = ints(n), ints(n)
        self.cell_start, self.cursor = ints(cells + 1), ints(cells)
        self.p, self.x_prev, self.v = (kc.zeros(n, dtype=kc.vec3, device=device) for _ in range(3))
        self.volume, self.mass, self.inv_mass, self.radius = (floats() for _ in range(4))

    def sort(self, model, p, x_prev, volume, scratch):
        """Sort the particles by the cell of ``p`` (vec3 (N,) [m], user order) and gather ``p``,
        ``x_prev``, ``volume`` and the model's per-particle arrays into sorted order (``self.p``, and
        ``scratch.px/py/pz``: the lanes' split positions)."""
        nx, ny, nz = self.dims
        kc.launch(counting_sort_kernel, dim=1, inputs=[p, self.n, self.lower, self.inv_cell, nx, ny, nz],
                  outputs=[self.cell, self.cell_start, self.cursor, self.order], device=self.device,
                  record_tape=False)
        kc.launch(gather_kernel, dim=self.n,
                  inputs=[self.order, p, x_prev, volume, model.particle_mass, model.particle_inv_mass,
                          model.particle_radius],
                  outputs=[self.p, scratch.px, scratch.py, scratch.pz, self.x_prev, self.volume, self.mass,
                           self.inv_mass, self.radius], device=self.device, record_tape=False)

    def find_neighbors(self, scratch, nb, nb_count, overflow):
        """Neighbour lists in sorted indices (rows of pbf_neighbors.list_width(max_neighbors)) from
        the sorted positions in ``scratch.px/py/pz``; ``overflow[0]`` gets the largest count beyond
        max_neighbors."""
        nx, ny, nz = self.dims
        kc.launch(range_neighbors_kernel, dim=self.n,
                  inputs=[scratch.px, scratch.py, scratch.pz, self.cell_start, self.lower, self.inv_cell, nx, ny, nz,
                          self.search, nb.shape[1] - 1],
                  outputs=[nb, nb_count, overflow], device=self.device, record_tape=False)

    def scatter(self, p_sorted, v_sorted, p_out, v_out):
        """p_out[order[s]] = p_sorted[s], v_out[order[s]] = v_sorted[s] (back to the user's order)."""
        kc.launch(scatter_kernel, dim=self.n, inputs=[self.order, p_sorted, v_sorted], outputs=[p_out, v_out],
                  device=self.device, record_tape=False)
