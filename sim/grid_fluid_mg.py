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

All vectors are float64 and flat (memory order), one launch per sweep per level.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .grid_fluid_cg import I3, cell_flags_kernel, neighbour_sum

D1 = kc.array(dtype=kc.float64)
I1 = kc.array(dtype=kc.int32)


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


@kc.kernel
def restrict_residual_kernel(x: D1, b: D1, flags: I1, fy: int, fz: int, fsy: int, fsx: int, fnx: int,
                             scale: kc.float64, cny: int, cnz: int, b_coarse: D1):
    """b_coarse = scale * sum over children of (b - A x) (fine residual)."""
    ci, cj, ck = kc.tid()
    acc = kc.float64(0.0)
    for a in range(2):
        for bb in range(2):
            for cc in range(2):
                fi = 2 * ci + a
                fj = 2 * cj + bb
                fk = 2 * ck + cc
                if fi < fnx and fj < fy and fk < fz:
                    c = fi * fsx + fj * fsy + fk
                    f = flags[c]
                    if f != 0:
                        acc += b[c] - neighbour_sum(x, f, c, fsy, fsx)
    b_coarse[(ci * cny + cj) * cnz + ck] = scale * acc


@kc.kernel
def prolong_add_kernel(x_coarse: D1, flags: I1, ny: int, nz: int, cny: int, cnz: int, x: D1):
    """x += x_coarse[parent] on fluid cells."""
    i, j, k = kc.tid()
    c = (i * ny + j) * nz + k
    if flags[c] != 0:
        x[c] = x[c] + x_coarse[((i // 2) * cny + j // 2) * cnz + k // 2]


@kc.kernel
def copy64_kernel(src: D1, dst: D1):
    c = kc.tid()
    dst[c] = src[c]


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


class MultigridPreconditioner:
    """z = V(r): one V-cycle for A z = r on the fluid cells of ``solid`` (int32 (nx, ny, nz), 1 = solid).

    Args:
        sweeps: damped-Jacobi sweeps before and after each coarse correction.
        coarse_sweeps: sweeps on the coarsest level.
        omega: Jacobi damping (2/3 smooths the 5/7-point Laplacian best).
    """

    def __init__(self, solid, sweeps=2, coarse_sweeps=16, omega=2.0 / 3.0, min_cells=4):
        self.device = solid.device
        self.sweeps, self.coarse_sweeps, self.omega = int(sweeps), int(coarse_sweeps), float(omega)
        self.dim = 3 if solid.shape[2] > 1 else 2
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

    def _sweeps(self, lv, b, x, out, count, from_zero):
        """``count`` damped Jacobi sweeps on level lv from x (or from zero), ping-ponging between
        ``out`` and the level's scratch so that the last sweep writes ``out`` when the parity allows;
        returns the array holding the result."""
        dev, w = self.device, kc.float64(self.omega)
        spare = lv.y
        # the sweep that writes last writes into out: count writes, alternating
        cur = None if from_zero else x
        nxt = out if count % 2 == 1 else spare
        if from_zero:
            kc.launch(jacobi_first_kernel, dim=lv.n, inputs=[b, lv.flags, lv.inv, w], outputs=[nxt], device=dev,
                      record_tape=False)
            cur, nxt = nxt, (spare if nxt is out else out)
            count -= 1
        elif cur is out and count % 2 == 1:
            nxt = spare
        for _ in range(count):
            kc.launch(jacobi_kernel, dim=lv.n, inputs=[cur, b, lv.flags, lv.inv, lv.sy, lv.sx, w], outputs=[nxt],
                      device=dev, record_tape=False)
            cur, nxt = nxt, cur
        return cur

    def _cycle(self, l, b, out):
        lv = self.levels[l]
        dev = self.device
        if l == len(self.levels) - 1:
            x = self._sweeps(lv, b, None, out, self.coarse_sweeps, True)
        else:
            x = self._sweeps(lv, b, None, out, self.sweeps, True)
            nxt = self.levels[l + 1]
            nx, ny, nz = lv.shape
            _, cny, cnz = nxt.shape
            kc.launch(restrict_residual_kernel, dim=nxt.shape,
                      inputs=[x, b, lv.flags, ny, nz, lv.sy, lv.sx, nx, kc.float64(self.scale), cny, cnz],
                      outputs=[nxt.b], device=dev, record_tape=False)
            self._cycle(l + 1, nxt.b, nxt.x)
            kc.launch(prolong_add_kernel, dim=lv.shape, inputs=[nxt.x, lv.flags, ny, nz, cny, cnz], outputs=[x],
                      device=dev, record_tape=False)
            x = self._sweeps(lv, b, x, out, self.sweeps, False)
        if x is not out:
            kc.launch(copy64_kernel, dim=lv.n, inputs=[x], outputs=[out], device=dev, record_tape=False)
