"""Pressure Poisson solve of the grid fluid: preconditioned conjugate gradients as kernels.

Preconditioner: one geometric multigrid V-cycle (sim/grid_fluid_mg.py, the default) or the
diagonal (Jacobi).

The matrix is never stored.  For fluid cells c, ``(A x)_c = sum over fluid neighbours n of
(x_c - x_n)``: the negative 5/7-point Laplacian times dx^2 with zero-flux (Neumann) conditions
at walls and solid cells.  A is symmetric positive semi-definite; on a closed domain its null
space is the constant field, so the solver removes the mean of the right-hand side and of the
solution over the fluid cells.  The map b -> x is therefore the pseudo-inverse restricted to
fluid cells, a symmetric linear operator: its adjoint is the same solve (used by the Tape).
(A domain cut by solids into several pieces has one constant per piece; the single mean is
then not enough and CG stops at max_iter with a warning.)

Vectors are float64 so that the residual can fall far below float32 round-off of the
velocities; scalars (r.z, p.Ap, r.r) are accumulated per row into float64 slots, one row of
``scalars`` per iteration, so that no kernel overwrites a value another still reads and the
host reads one number every ``check_every`` iterations (the only synchronisations).
The CG vectors are flat (cells in memory order); reductions run one thread per chunk of
CHUNK consecutive cells, each summing its chunk and adding once atomically: far fewer
atomics than one per cell, and contiguous memory access.  Neighbours come from a per-cell
bit mask built once per solid mask (which neighbours are fluid), so the matrix-vector
product needs no index arithmetic beyond the flat strides.
"""
from __future__ import annotations

import warnings

import numpy as np

import kernelcore as kc

F1 = kc.array(dtype=float)
D1 = kc.array(dtype=kc.float64)
I1 = kc.array(dtype=kc.int32)
D2 = kc.array(dtype=kc.float64, ndim=2)
I3 = kc.array(dtype=kc.int32, ndim=3)
F3 = kc.array(dtype=float, ndim=3)

RZ, PAP, RR, RZ_MG = 0, 1, 2, 3  # columns of the scalar slots (RZ_MG: r.z with the multigrid z)
CHUNK = 256            # cells per thread in the reductions: one atomic add per chunk
FLUID_BIT = 64         # bit 6 of a cell's flags: the cell is fluid; bits 0-5: its -x +x -y +y -z +z neighbour is


@kc.kernel
def cell_flags_kernel(solid: I3, flags: I3, inv_diag: kc.array(dtype=kc.float64, ndim=3)):
    """Neighbour bits and 1 / (number of fluid neighbours) of each fluid cell (0 for solid or isolated cells)."""
    i, j, k = kc.tid()
    f = 0
    n = 0
    if solid[i, j, k] == 0:
        f = FLUID_BIT
        if i > 0:
            if solid[i - 1, j, k] == 0:
                f = f + 1
                n = n + 1
        if i + 1 < solid.shape[0]:
            if solid[i + 1, j, k] == 0:
                f = f + 2
                n = n + 1
        if j > 0:
            if solid[i, j - 1, k] == 0:
                f = f + 4
                n = n + 1
        if j + 1 < solid.shape[1]:
            if solid[i, j + 1, k] == 0:
                f = f + 8
                n = n + 1
        if k > 0:
            if solid[i, j, k - 1] == 0:
                f = f + 16
                n = n + 1
        if k + 1 < solid.shape[2]:
            if solid[i, j, k + 1] == 0:
                f = f + 32
                n = n + 1
    flags[i, j, k] = f
    val = kc.float64(0.0)
    if n > 0:
        val = kc.float64(1.0) / kc.float64(n)
    inv_diag[i, j, k] = val


@kc.func
def neighbour_sum(x: D1, flags: int, c: int, sy: int, sx: int):
    """sum over fluid neighbours n of (x_c - x_n) for flat cell c; strides sy = nz, sx = ny nz."""
    xc = x[c]
    s = kc.float64(0.0)
    if (flags & 1) != 0:
        s += xc - x[c - sx]
    if (flags & 2) != 0:
        s += xc - x[c + sx]
    if (flags & 4) != 0:
        s += xc - x[c - sy]
    if (flags & 8) != 0:
        s += xc - x[c + sy]
    if (flags & 16) != 0:
        s += xc - x[c - 1]
    if (flags & 32) != 0:
        s += xc - x[c + 1]
    return s


@kc.kernel
def sum_chunks_kernel(b: F1, flags: I1, out: D1, slot: int):
    """out[slot] += sum of b over fluid cells."""
    t = kc.tid()
    n = b.shape[0]
    acc = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        if flags[c] != 0:
            acc += kc.float64(b[c])
    kc.atomic_add(out, slot, acc)


@kc.kernel
def cg_init_kernel(b: F1, flags: I1, inv_diag: D1, sums: D1, n_fluid: float,
                   x: D1, r: D1, z: D1, p: D1, scalars: D2):
    """x = 0, r = b - mean(b) on fluid cells, z = M^-1 r, p = z; slot 0 gets r.z and r.r."""
    t = kc.tid()
    n = b.shape[0]
    mean = sums[0] / kc.float64(n_fluid)
    rz = kc.float64(0.0)
    rr = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        ri = kc.float64(0.0)
        if flags[c] != 0:
            ri = kc.float64(b[c]) - mean
        zi = ri * inv_diag[c]
        x[c] = kc.float64(0.0)
        r[c] = ri
        z[c] = zi
        p[c] = zi
        rz += ri * zi
        rr += ri * ri
    kc.atomic_add(scalars, 0, RZ, rz)
    kc.atomic_add(scalars, 0, RR, rr)


@kc.kernel
def cg_init_warm_kernel(b: F1, x0: F1, flags: I1, inv_diag: D1, sums: D1, n_fluid: float, sy: int, sx: int,
                        x: D1, r: D1, z: D1, p: D1, scalars: D2):
    """As cg_init_kernel from the initial guess x (already holding x0): r = b - mean(b) - A x;
    sums[2] gets |b - mean(b)|^2 (the tolerance's reference)."""
    t = kc.tid()
    n = b.shape[0]
    mean = sums[0] / kc.float64(n_fluid)
    rz = kc.float64(0.0)
    rr = kc.float64(0.0)
    bb = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        f = flags[c]
        ri = kc.float64(0.0)
        if f != 0:
            bi = kc.float64(b[c]) - mean
            bb += bi * bi
            ri = bi - neighbour_sum(x, f, c, sy, sx)
        zi = ri * inv_diag[c]
        r[c] = ri
        z[c] = zi
        p[c] = zi
        rz += ri * zi
        rr += ri * ri
    kc.atomic_add(scalars, 0, RZ, rz)
    kc.atomic_add(scalars, 0, RR, rr)
    kc.atomic_add(sums, 2, bb)


@kc.kernel
def to_float64_kernel(a: F1, out: D1):
    c = kc.tid()
    out[c] = kc.float64(a[c])


@kc.kernel
def cg_direction_kernel(z: D1, it: int, rzcol: int, scalars: D2, p: D1):
    """beta = r.z(new) / r.z(old) (column rzcol); p = z + beta p."""
    c = kc.tid()
    old = scalars[it, rzcol]
    beta = kc.float64(0.0)
    if old > kc.float64(0.0):
        beta = scalars[it + 1, rzcol] / old
    p[c] = z[c] + beta * p[c]


# The iteration kernels: the scalar slots of one iteration come in as 1-D views
# of a row of ``scalars`` (4 entries), one row read and another only accumulated into, so a
# launch may run on every core with a private copy of the row per thread (kernelcore/
# accumulation.py) instead of one thread with atomics into a matrix it also reads.
@kc.kernel
def cg_apply_row_kernel(p: D1, flags: I1, sy: int, sx: int, use_extra: int, extra: D1, q: D1, row: D1):
    """q = A p, plus ``extra * p`` when use_extra (an added diagonal: the liquid's ghost-fluid
    terms, sim/grid_fluid_liquid.py); p.q is added into row[PAP]."""
    t = kc.tid()
    n = p.shape[0]
    pq = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        f = flags[c]
        val = kc.float64(0.0)
        if f != 0:
            val = neighbour_sum(p, f, c, sy, sx)
            if use_extra != 0:
                val = val + extra[c] * p[c]
            pq += p[c] * val
        q[c] = val
    kc.atomic_add(row, PAP, pq)


@kc.kernel
def cg_update_row_kernel(p: D1, q: D1, inv_diag: D1, old: D1, rzcol: int, x: D1, r: D1, z: D1, new: D1):
    """alpha = r.z / p.Ap (from row ``old``, r.z in column rzcol); x += alpha p; r -= alpha q;
    z = D^-1 r; r.z (Jacobi) and r.r are added into row ``new``."""
    t = kc.tid()
    n = p.shape[0]
    pap = old[PAP]
    alpha = kc.float64(0.0)
    if pap > kc.float64(0.0):
        alpha = old[rzcol] / pap
    rz = kc.float64(0.0)
    rr = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        x[c] = x[c] + alpha * p[c]
        ri = r[c] - alpha * q[c]
        zi = ri * inv_diag[c]
        r[c] = ri
        z[c] = zi
        rz += ri * zi
        rr += ri * ri
    kc.atomic_add(new, RZ, rz)
    kc.atomic_add(new, RR, rr)


@kc.kernel
def dot_row_kernel(a: D1, b: D1, col: int, row: D1):
    """row[col] += a . b"""
    t = kc.tid()
    n = a.shape[0]
    acc = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        acc += a[c] * b[c]
    kc.atomic_add(row, col, acc)


# each thread of these sums CHUNK cells (~1 us): worth both cores from a few chunks on
for _kernel in (cg_apply_row_kernel, cg_update_row_kernel, dot_row_kernel):
    _kernel.parallel_grain = 4


@kc.kernel
def copy64_flat_kernel(src: D1, dst: D1):
    c = kc.tid()
    dst[c] = src[c]


@kc.kernel
def sum_chunks64_kernel(x: D1, flags: I1, out: D1, slot: int):
    t = kc.tid()
    n = x.shape[0]
    acc = kc.float64(0.0)
    for c in range(t * CHUNK, kc.min(t * CHUNK + CHUNK, n)):
        if flags[c] != 0:
            acc += x[c]
    kc.atomic_add(out, slot, acc)


@kc.kernel
def cg_finish_kernel(x: D1, flags: I1, sums: D1, n_fluid: float, out: F1):
    """out = x - mean(x) on fluid cells (float32), 0 in solids."""
    c = kc.tid()
    val = kc.float64(0.0)
    if flags[c] != 0:
        val = x[c] - sums[1] / kc.float64(n_fluid)
    out[c] = float(val)


@kc.kernel
def add_kernel(a: F1, out: F1):
    c = kc.tid()
    out[c] = out[c] + a[c]


class PoissonCG:
    """Matrix-free preconditioned CG for ``A x = b`` on the fluid cells of a (nx, ny, nz) solid mask.

    ``preconditioner``: "multigrid" (a V-cycle, sim/grid_fluid_mg.py) or "jacobi" (the diagonal).

    Args:
        solid: int32 (nx, ny, nz) array, 1 = solid cell.
        tol: stop when ||r||_2 <= tol ||b - mean(b)||_2.
        max_iter: iteration cap (a warning when reached).
        check_every: iterations between host reads of the residual (default 2 with multigrid, 8 with Jacobi).

    Attributes after ``solve``: ``iterations``, ``residual`` (relative 2-norm).
    """

    def __init__(self, solid, tol=1e-7, max_iter=None, check_every=None, preconditioner="multigrid"):
        self.solid = solid
        self.device = solid.device
        self.shape = tuple(solid.shape)
        self.n = int(np.prod(self.shape))
        self.chunks = (self.n + CHUNK - 1) // CHUNK
        self.tol = float(tol)
        # Jacobi-PCG on a Poisson matrix needs O(cells per side) iterations
        self.max_iter = int(max_iter) if max_iter else 100 + 8 * max(self.shape)
        # multigrid converges in a handful of iterations: check often so as not to overshoot
        self.check_every = int(check_every) if check_every else (2 if preconditioner == "multigrid" else 8)
        dev = self.device
        self.flags = kc.zeros(self.shape, dtype=kc.int32, device=dev)
        self.inv_diag = kc.zeros(self.shape, dtype=kc.float64, device=dev)
        self.x, self.r, self.z, self.p, self.q = (kc.zeros(self.n, dtype=kc.float64, device=dev) for _ in range(5))
        self.sums = kc.zeros(3, dtype=kc.float64, device=dev)  # sum b, sum x, |b - mean|^2
        self.scalars = kc.zeros((self.max_iter + 2, 4), dtype=kc.float64, device=dev)
        self.preconditioner = preconditioner
        self.mg = None
        self.iterations = 0
        self.residual = 0.0
        self.update_mask()

    def update_mask(self):
        """Recompute neighbour flags, the preconditioner and the fluid-cell count after the solid mask changed."""
        kc.launch(cell_flags_kernel, dim=self.shape, inputs=[self.solid], outputs=[self.flags, self.inv_diag],
                  device=self.device, record_tape=False)
        self.n_fluid = int(np.count_nonzero(self.solid.numpy() == 0))
        if self.preconditioner == "multigrid":
            from .grid_fluid_mg import MultigridPreconditioner

            self.mg = MultigridPreconditioner(self.solid)

    def solve(self, b, out, guess=None):
        """Write the zero-mean solution of A x = b - mean(b) into ``out`` (float32, the grid's shape); not taped.

        ``guess``: an initial x (float32, the grid's shape), e.g. the previous step's; the
        answer does not depend on it beyond the tolerance, only the iteration count does.
        """
        dev = self.device
        if self.n_fluid == 0:
            out.zero_()
            return out
        b1, out1 = b.reshape((self.n,)), out.reshape((self.n,))
        flags, inv_diag = self.flags.reshape((self.n,)), self.inv_diag.reshape((self.n,))
        sy, sx = self.shape[2], self.shape[1] * self.shape[2]
        x, r, z, p, q, scalars = self.x, self.r, self.z, self.p, self.q, self.scalars

        def chunked(k, inputs):
            kc.launch(k, dim=self.chunks, inputs=inputs, device=dev, record_tape=False)

        self.sums.zero_()
        scalars.zero_()
        chunked(sum_chunks_kernel, [b1, flags, self.sums, 0])
        if guess is None:
            chunked(cg_init_kernel, [b1, flags, inv_diag, self.sums, float(self.n_fluid), x, r, z, p, scalars])
            rr0 = float(scalars.numpy()[0, RR])
        else:
            kc.launch(to_float64_kernel, dim=self.n, inputs=[guess.reshape((self.n,))], outputs=[x], device=dev,
                      record_tape=False)
            chunked(cg_init_warm_kernel, [b1, guess.reshape((self.n,)), flags, inv_diag, self.sums,
                                          float(self.n_fluid), sy, sx, x, r, z, p, scalars])
            rr0 = float(self.sums.numpy()[2])
            if rr0 == 0.0:
                x.zero_()  # b = const: the answer is 0 whatever the guess
            elif float(scalars.numpy()[0, RR]) <= self.tol * self.tol * rr0:
                rr0 = 0.0  # the guess already solves it: skip the iterations
        self.iterations, self.residual = pcg_iterations(
            self, flags, inv_diag, rr0, mg=self.mg,
            stop_note="SolverGridFluid: pressure CG", hint="a domain split by solids, or raise max_iter")
        chunked(sum_chunks64_kernel, [x, flags, self.sums, 1])
        kc.launch(cg_finish_kernel, dim=self.n, inputs=[x, flags, self.sums, float(self.n_fluid)], outputs=[out1],
                  device=dev, record_tape=False)
        return out


def pcg_iterations(cg, flags, inv_diag, rr0, extra=None, mg=None, stop_note="pressure CG", hint="raise max_iter"):
    """The preconditioned CG iterations from an initialised state; returns (iterations, relative residual).

    ``cg`` holds the float64 vectors ``x, r, z, p, q`` (r = b - A x, z = M^-1 r and p = z
    already set, r.z and r.r in ``scalars`` row 0), ``scalars``, ``n``, ``chunks``, ``shape``,
    ``device``, ``tol``, ``max_iter``, ``check_every``.  ``flags``, ``inv_diag``: flat (n,)
    neighbour bits and inverse diagonal; ``extra``: flat (n,) float64 diagonal added to A
    (None: the plain Laplacian); ``mg``: a multigrid preconditioner (None: Jacobi).  ``rr0``:
    the squared reference norm of the tolerance (0: nothing to do).  A warning (``stop_note``,
    ``hint``) when max_iter is reached.
    """
    dev = cg.device
    x, r, z, p, q, scalars = cg.x, cg.r, cg.z, cg.p, cg.q, cg.scalars
    sy, sx = cg.shape[2], cg.shape[1] * cg.shape[2]
    use_extra = 0 if extra is None else 1
    extra = inv_diag if extra is None else extra   # an array the kernel never reads when use_extra is 0

    def chunked(k, inputs):
        kc.launch(k, dim=cg.chunks, inputs=inputs, device=dev, record_tape=False)

    it = 0
    rel = 0.0
    rzcol = RZ if mg is None else RZ_MG
    if rr0 > 0.0:
        target = cg.tol * cg.tol * rr0
        rows = [scalars[0]]   # 1-D views of the scalar rows (see cg_apply_row_kernel)
        if mg is not None:  # z = V(r), p = z, r.z into the multigrid column
            mg.apply(r, z)
            kc.launch(copy64_flat_kernel, dim=cg.n, inputs=[z], outputs=[p], device=dev, record_tape=False)
            chunked(dot_row_kernel, [r, z, RZ_MG, rows[0]])
        while True:
            rows.append(scalars[it + 1])
            chunked(cg_apply_row_kernel, [p, flags, sy, sx, use_extra, extra, q, rows[it]])
            chunked(cg_update_row_kernel, [p, q, inv_diag, rows[it], rzcol, x, r, z, rows[it + 1]])
            it += 1
            # r.r is known once r is updated: test it before preconditioning the new residual, so the
            # last iteration does not pay for a V-cycle and a direction that nothing uses
            if it % cg.check_every == 0 or it == cg.max_iter:
                rr = float(scalars.numpy()[it, RR])
                rel = (rr / rr0) ** 0.5
                if rr <= target:
                    break
                if it == cg.max_iter:
                    warnings.warn(f"{stop_note} stopped at max_iter={cg.max_iter} with relative residual {rel:.3g} > "
                                  f"tol={cg.tol:g} ({hint})", RuntimeWarning, stacklevel=4)
                    break
            if mg is not None:
                mg.apply(r, z)
                chunked(dot_row_kernel, [r, z, RZ_MG, rows[it]])
            kc.launch(cg_direction_kernel, dim=cg.n, inputs=[z, it - 1, rzcol, scalars, p], device=dev,
                      record_tape=False)
    return it, rel


def taped_solve(cg, b, out, guess=None, prepare=None):
    """``out = cg.solve(b)`` recorded on the active tapes as one step whose adjoint is another solve.

    The solve operator S is symmetric (see the module docstring), so b.grad += S out.grad.
    ``prepare``: a callable run before the solve and again before the adjoint solve, when the
    operator is rebuilt per step (the liquid's cells, sim/grid_fluid_liquid.py).
    """
    if prepare is not None:
        prepare()
    cg.solve(b, out, guess)
    from kernelcore.device import get_runtime

    rt = get_runtime()
    if not rt.tape_stack or b.grad is None:
        return out

    def backward():
        if out.grad is None or b.grad is None:
            return
        adj = kc.zeros(out.shape, dtype=float, device=out.device)
        if prepare is not None:
            prepare()
        cg.solve(out.grad, adj)
        kc.launch(add_kernel, dim=cg.n, inputs=[adj.reshape((cg.n,))], outputs=[b.grad.reshape((cg.n,))],
                  device=adj.device, record_tape=False)
        out.grad.zero_()  # consumed, as by a store

    seen = set()
    for tape in reversed(rt.tape_stack):  # every enclosing tape records it, as launches are
        if id(tape) not in seen:
            seen.add(id(tape))
            tape.record_func(backward, [b, out])
    return out
