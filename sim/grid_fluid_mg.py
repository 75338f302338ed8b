"""Geometric multigrid V-cycle used as the preconditioner of the grid fluid's pressure CG.

Levels halve the cell count per axis (an axis one cell thick stays so).  A coarse cell is
fluid when any of its children is; every level uses the same unit 5/7-point operator as
the fine one (sim/grid_fluid_cg.py), rediscretised on its own fluid flags.  Restriction sums
the children's residuals times ``4 / 2^d`` (the h^2 scaling of the operator), prolongation
copies a coarse correction to its children (piecewise constant).  Smoothing is damped
Jacobi, the same number of sweeps before and after the coarse correction, and the coarsest
level gets a fixed number of sweeps: the V-cycle is then a fixed symmetric linear map, as
CG needs of a preconditioner.  (Rediscretisation with piecewise-constant transfers
over-corrects relative to the Galerkin coarse operator by about 2; that is the usual cure
for the weak coarse correction of constant interpolation, and keeps the map positive.)

All vectors are float64.  The smoother's iterates are padded 3-D arrays and its sweeps
vectorised kernels (see masked_neighbour_sum); the coarsest level's sweeps run in one launch.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .grid_fluid_cg import I3, cell_flags_kernel, neighbour_sum

D1 = kc.array(dtype=kc.float64)
I1 = kc.array(dtype=kc.int32)
D3 = kc.array(dtype=kc.float64, ndim=3)


@kc.kernel
def coarsen_solid_kernel(fine: I3, coarse: I3):
    """A coarse cell is solid only when all its existing children are."""
    i, j, k = kc.tid()
    s = 1
    for a in range(2):
        for b in range(2):
            for c in range(2):
                fi = 2 * i + a
                fj = 2 * j + b
                fk = 2 * k + c
                if fi < fine.shape[0] and fj < fine.shape[1] and fk < fine.shape[2]:
                    if fine[fi, fj, fk] == 0:
                        s = 0
    coarse[i, j, k] = s


@kc.kernel
def jacobi_first_kernel(b: D1, flags: I1, inv_diag: D1, omega: kc.float64, x_out: D1):
    """One damped Jacobi sweep from x = 0: x = omega D^-1 b (0 where not fluid)."""
    c = kc.tid()
    val = kc.float64(0.0)
    if flags[c] != 0:
        val = omega * inv_diag[c] * b[c]
    x_out[c] = val


@kc.kernel
def jacobi_kernel(x: D1, b: D1, flags: I1, inv_diag: D1, sy: int, sx: int, omega: kc.float64, x_out: D1):
    """x_out = x + omega D^-1 (b - A x) on fluid cells."""
    c = kc.tid()
    f = flags[c]
    val = kc.float64(0.0)
    if f != 0:
        val = x[c] + omega * inv_diag[c] * (b[c] - neighbour_sum(x, f, c, sy, sx))
    x_out[c] = val


@kc.func
def jacobi_value(x: D1, b: D1, flags: I1, inv_diag: D1, c: int, sy: int, sx: int, omega: kc.float64):
    """jacobi_kernel's new value of cell c."""
    f = flags[c]
    val = kc.float64(0.0)
    if f != 0:
        val = x[c] + omega * inv_diag[c] * (b[c] - neighbour_sum(x, f, c, sy, sx))
    return val


@kc.kernel
def coarse_sweeps_kernel(b: D1, flags: I1, inv_diag: D1, sy: int, sx: int, omega: kc.float64, count: int,
                         out: D1, spare: D1):
    """``count`` >= 1 damped Jacobi sweeps from zero on a small level, all in one thread and one
    launch (the coarsest level has a few dozen cells: a launch per sweep costs more than the sweep).
    The same numbers as jacobi_first_kernel then jacobi_kernel ``count - 1`` times; result in ``out``."""
    n = b.shape[0]
    for c in range(n):
        val = kc.float64(0.0)
        if flags[c] != 0:
            val = omega * inv_diag[c] * b[c]
        out[c] = val
    for s in range((count - 1) // 2):
        for c in range(n):
            spare[c] = jacobi_value(out, b, flags, inv_diag, c, sy, sx, omega)
        for c in range(n):
            out[c] = jacobi_value(spare, b, flags, inv_diag, c, sy, sx, omega)
    if (count - 1) % 2 == 1:
        for c in range(n):
            spare[c] = jacobi_value(out, b, flags, inv_diag, c, sy, sx, omega)
        for c in range(n):
            out[c] = spare[c]


# Padded smoother kernels.  The iterates of a level live in (nx + 2, ny + 2, nz + 2) arrays with
# a ring of zeros around the cells (cell (i, j, k) at [i + 1, j + 1, k + 1]), so that every
# neighbour load is inside the array and its index is the thread index plus a constant: the
# neighbour sum is then straight-line code (each term times its flag bit as 0.0 or 1.0, not
# under a branch) over contiguous rows, which the CPU backend runs as one vectorised loop per
# row (simd=True).  The terms are added in neighbour_sum's order and a dropped term adds 0.0,
# so the values are jacobi_kernel's (and the unpadded residual's) bit for bit.
@kc.func
def masked_neighbour_sum(x: D3, f: int, i: int, j: int, k: int):
    """neighbour_sum for cell (i, j, k) of padded x, without branches."""
    xc = x[i + 1, j + 1, k + 1]
    return (kc.float64(f & 1) * (xc - x[i, j + 1, k + 1]) + kc.float64(f & 2) * 0.5 * (xc - x[i + 2, j + 1, k + 1])
            + kc.float64(f & 4) * 0.25 * (xc - x[i + 1, j, k + 1])
            + kc.float64(f & 8) * 0.125 * (xc - x[i + 1, j + 2, k + 1])
            + kc.float64(f & 16) * 0.0625 * (xc - x[i + 1, j + 1, k])
            + kc.float64(f & 32) * 0.03125 * (xc - x[i + 1, j + 1, k + 2]))


@kc.func
def jacobi_masked(x: D3, b: D3, flags: I3, inv_diag: D3, omega: kc.float64, i: int, j: int, k: int):
    """jacobi_kernel's new value of cell (i, j, k) from padded x (0 off the fluid)."""
    f = flags[i, j, k]
    fluid = kc.float64(f & 64) * 0.015625
    return fluid * (x[i + 1, j + 1, k + 1]
                    + omega * inv_diag[i, j, k] * (b[i, j, k] - masked_neighbour_sum(x, f, i, j, k)))


@kc.kernel(simd=True)
def jacobi_first_pad_kernel(b: D3, inv_diag: D3, omega: kc.float64, x_out: D3):
    """jacobi_first_kernel into padded x_out (inv_diag is 0 on cells that are not fluid)."""
    i, j, k = kc.tid()
    x_out[i + 1, j + 1, k + 1] = omega * inv_diag[i, j, k] * b[i, j, k]


@kc.kernel(simd=True)
def jacobi_pad_kernel(x: D3, b: D3, flags: I3, inv_diag: D3, omega: kc.float64, x_out: D3):
    """jacobi_kernel from padded x into padded x_out."""
    i, j, k = kc.tid()
    x_out[i + 1, j + 1, k + 1] = jacobi_masked(x, b, flags, inv_diag, omega, i, j, k)


@kc.kernel(simd=True)
def jacobi_pad_last_kernel(x: D3, b: D3, flags: I3, inv_diag: D3, omega: kc.float64, out: D3):
    """jacobi_kernel from padded x into a plain (nx, ny, nz) ``out``."""
    i, j, k = kc.tid()
    out[i, j, k] = jacobi_masked(x, b, flags, inv_diag, omega, i, j, k)


@kc.kernel(simd=True)
def residual_pad_kernel(x: D3, b: D3, flags: I3, r_out: D3):
    """r_out = b - A x on fluid cells (0 elsewhere), x padded."""
    i, j, k = kc.tid()
    f = flags[i, j, k]
    fluid = kc.float64(f & 64) * 0.015625
    r_out[i, j, k] = fluid * (b[i, j, k] - masked_neighbour_sum(x, f, i, j, k))


@kc.kernel
def prolong_add_pad_kernel(x_coarse: D3, flags: I3, x: D3):
    """x += x_coarse[parent] on the fluid cells of padded x (the coarse correction)."""
    i, j, k = kc.tid()
    if flags[i, j, k] != 0:
        x[i + 1, j + 1, k + 1] = x[i + 1, j + 1, k + 1] + x_coarse[i // 2, j // 2, k // 2]


@kc.kernel
def restrict_kernel(r: D1, fy: int, fz: int, fsy: int, fsx: int, fnx: int, scale: kc.float64, cny: int, cnz: int,
                    b_coarse: D1):
    """b_coarse = scale * sum over children of r (r: the fine residual, 0 off the fluid)."""
    ci, cj, ck = kc.tid()
    acc = kc.float64(0.0)
    for a in range(2):
        for bb in range(2):
            for cc in range(2):
                fi = 2 * ci + a
                fj = 2 * cj + bb
                fk = 2 * ck + cc
                if fi < fnx and fj < fy and fk < fz:
                    acc += r[fi * fsx + fj * fsy + fk]
    b_coarse[(ci * cny + cj) * cnz + ck] = scale * acc


class _Level:
    def __init__(self, solid, device):
        self.shape = tuple(solid.shape)
        self.n = int(np.prod(self.shape))
        self.solid = solid
        self.flags3 = kc.zeros(self.shape, dtype=kc.int32, device=device)
        self.inv3 = kc.zeros(self.shape, dtype=kc.float64, device=device)
        kc.launch(cell_flags_kernel, dim=self.shape, inputs=[solid], outputs=[self.flags3, self.inv3], device=device,
                  record_tape=False)
        self.flags = self.flags3.reshape((self.n,))
        self.inv = self.inv3.reshape((self.n,))
        self.x = kc.zeros(self.n, dtype=kc.float64, device=device)
        self.y = kc.zeros(self.n, dtype=kc.float64, device=device)
        self.b = kc.zeros(self.n, dtype=kc.float64, device=device)
        self.sy, self.sx = self.shape[2], self.shape[1] * self.shape[2]
        # padded iterates and the residual of the vectorised smoother (see masked_neighbour_sum)
        padded = tuple(m + 2 for m in self.shape)
        self.xa = kc.zeros(padded, dtype=kc.float64, device=device)
        self.xb = kc.zeros(padded, dtype=kc.float64, device=device)
        self.res = kc.zeros(self.n, dtype=kc.float64, device=device)
        self.x3, self.b3, self.res3 = (a.reshape(self.shape) for a in (self.x, self.b, self.res))


class MultigridPreconditioner:
    """z = V(r): one V-cycle for A z = r on the fluid cells of ``solid`` (int32 (nx, ny, nz), 1 = solid).

    Args:
        sweeps: damped-Jacobi sweeps before and after each coarse correction (default 2 in 2-D, 3 in 3-D).
        coarse_sweeps: sweeps on the coarsest level.
        omega: Jacobi damping (default 2d / (2d + 1): 4/5 in 2-D, 6/7 in 3-D).
    """

    def __init__(self, solid, sweeps=None, coarse_sweeps=16, omega=None, min_cells=4):
        self.device = solid.device
        self.dim = 3 if solid.shape[2] > 1 else 2
        if self.dim == 2 and solid.shape[0] > 1:
            # a 2-D grid (nx, ny, 1) runs as (1, nx, ny): the same cells in the same flat order (so r and
            # z are unchanged), but the smoother's rows are the grid's rows of ny cells, which the
            # vectorised kernels (simd=True) loop over, instead of rows one cell long
            solid = solid.reshape((1,) + tuple(solid.shape[:2]))
        # 2d / (2d + 1) damps the 5/7-point Laplacian's high frequencies best (6/7 in 3-D); with 3 sweeps
        # the 64^3 plume's PCG took 6 iterations instead of 12-14 at 2/3 and 2 sweeps, for less time
        omega = 2.0 * self.dim / (2.0 * self.dim + 1.0) if omega is None else omega
        # 2-D: 2 sweeps reach the same tolerance in as many PCG iterations as 3 (6 on the 128^2 plume and
        # on Warp's 256 x 128 scene), ~1.25x faster per step; 3-D needs the third (session 19, above)
        sweeps = (2 if self.dim == 2 else 3) if sweeps is None else sweeps
        self.sweeps, self.coarse_sweeps, self.omega = int(sweeps), int(coarse_sweeps), float(omega)
        if self.sweeps < 1 or self.coarse_sweeps < 1:
            raise ValueError(f"MultigridPreconditioner: sweeps and coarse_sweeps must be >= 1, got {sweeps!r}, "
                             f"{coarse_sweeps!r}")
        self.levels = [_Level(solid, self.device)]
        while True:
            s = self.levels[-1].shape
            if max(s) <= min_cells:
                break
            cs = tuple((n + 1) // 2 if n > 1 else 1 for n in s)
            coarse = kc.zeros(cs, dtype=kc.int32, device=self.device)
            kc.launch(coarsen_solid_kernel, dim=cs, inputs=[self.levels[-1].solid], outputs=[coarse],
                      device=self.device, record_tape=False)
            self.levels.append(_Level(coarse, self.device))
        self.scale = 4.0 / 2 ** self.dim

    def apply(self, r, z):
        """z = V(r) for flat float64 arrays of the finest level's size."""
        self._cycle(0, r, z)

    def _smooth(self, lv, b3, x, count, out3=None):
        """``count`` damped Jacobi sweeps on level lv from padded x (None: from zero), ping-ponging
        between the level's padded buffers; the last sweep writes the plain (nx, ny, nz) ``out3``
        when given.  Returns the array holding the result (``out3``, or a padded buffer)."""
        dev, w = self.device, kc.float64(self.omega)
        if x is None:
            kc.launch(jacobi_first_pad_kernel, dim=lv.shape, inputs=[b3, lv.inv3, w], outputs=[lv.xa], device=dev,
                      record_tape=False)
            x, count = lv.xa, count - 1
        for s in range(count):
            last = s == count - 1 and out3 is not None
            dst = out3 if last else (lv.xb if x is lv.xa else lv.xa)
            kc.launch(jacobi_pad_last_kernel if last else jacobi_pad_kernel, dim=lv.shape,
                      inputs=[x, b3, lv.flags3, lv.inv3, w], outputs=[dst], device=dev, record_tape=False)
            x = dst
        return x

    def _cycle(self, l, b, out):
        lv = self.levels[l]
        dev = self.device
        if l == len(self.levels) - 1:
            kc.launch(coarse_sweeps_kernel, dim=1, inputs=[b, lv.flags, lv.inv, lv.sy, lv.sx,
                                                           kc.float64(self.omega), self.coarse_sweeps],
                      outputs=[out, lv.y], device=dev, record_tape=False)
            return
        b3 = b.reshape(lv.shape)
        x = self._smooth(lv, b3, None, self.sweeps)
        nxt = self.levels[l + 1]
        nx, ny, nz = lv.shape
        _, cny, cnz = nxt.shape
        kc.launch(residual_pad_kernel, dim=lv.shape, inputs=[x, b3, lv.flags3], outputs=[lv.res3], device=dev,
                  record_tape=False)
        kc.launch(restrict_kernel, dim=nxt.shape, inputs=[lv.res, ny, nz, lv.sy, lv.sx, nx, kc.float64(self.scale),
                                                          cny, cnz], outputs=[nxt.b], device=dev, record_tape=False)
        self._cycle(l + 1, nxt.b, nxt.x)
        kc.launch(prolong_add_pad_kernel, dim=lv.shape, inputs=[nxt.x3, lv.flags3], outputs=[x], device=dev,
                  record_tape=False)
        self._smooth(lv, b3, x, self.sweeps, out.reshape(lv.shape))
