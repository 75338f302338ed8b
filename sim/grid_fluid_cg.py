"""Pressure Poisson solve of the grid fluid: Jacobi-preconditioned conjugate gradients as kernels.

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
Reductions run one thread per row of cells (dimensions ny x nz), each summing its row and
adding once atomically: far fewer atomics than one per cell.
"""
from __future__ import annotations

import warnings

import numpy as np

import kernelcore as kc

F3 = kc.array(dtype=float, ndim=3)
D3 = kc.array(dtype=kc.float64, ndim=3)
I3 = kc.array(dtype=kc.int32, ndim=3)
D2 = kc.array(dtype=kc.float64, ndim=2)
D1 = kc.array(dtype=kc.float64)

RZ, PAP, RR = 0, 1, 2  # columns of the scalar slots


@kc.func
def fluid_at(solid: I3, i: int, j: int, k: int):
    r = 0
    if i >= 0 and j >= 0 and k >= 0 and i < solid.shape[0] and j < solid.shape[1] and k < solid.shape[2]:
        if solid[i, j, k] == 0:
            r = 1
    return r


@kc.func
def neighbour_term(x: D3, solid: I3, xc: kc.float64, i: int, j: int, k: int):
    r = kc.float64(0.0)
    if fluid_at(solid, i, j, k) != 0:
        r = xc - x[i, j, k]
    return r


@kc.kernel
def inverse_diagonal_kernel(solid: I3, inv_diag: D3):
    """1 / (number of fluid neighbours) of each fluid cell; 0 for solid or isolated cells."""
    i, j, k = kc.tid()
    n = 0
    if solid[i, j, k] == 0:
        n = (fluid_at(solid, i - 1, j, k) + fluid_at(solid, i + 1, j, k) + fluid_at(solid, i, j - 1, k)
             + fluid_at(solid, i, j + 1, k) + fluid_at(solid, i, j, k - 1) + fluid_at(solid, i, j, k + 1))
    val = kc.float64(0.0)
    if n > 0:
        val = kc.float64(1.0) / kc.float64(n)
    inv_diag[i, j, k] = val


@kc.kernel
def sum_rows_kernel(b: F3, solid: I3, out: D1, slot: int):
    """out[slot] += sum of b over fluid cells (one thread per row)."""
    j, k = kc.tid()
    acc = kc.float64(0.0)
    for i in range(b.shape[0]):
        if solid[i, j, k] == 0:
            acc += kc.float64(b[i, j, k])
    kc.atomic_add(out, slot, acc)


@kc.kernel
def cg_init_kernel(b: F3, solid: I3, inv_diag: D3, sums: D1, n_fluid: float,
                   x: D3, r: D3, z: D3, p: D3, scalars: D2):
    """x = 0, r = b - mean(b) on fluid cells, z = M^-1 r, p = z; slot 0 gets r.z and r.r."""
    j, k = kc.tid()
    mean = sums[0] / kc.float64(n_fluid)
    rz = kc.float64(0.0)
    rr = kc.float64(0.0)
    for i in range(b.shape[0]):
        ri = kc.float64(0.0)
        if solid[i, j, k] == 0:
            ri = kc.float64(b[i, j, k]) - mean
        zi = ri * inv_diag[i, j, k]
        x[i, j, k] = kc.float64(0.0)
        r[i, j, k] = ri
        z[i, j, k] = zi
        p[i, j, k] = zi
        rz += ri * zi
        rr += ri * ri
    kc.atomic_add(scalars, 0, RZ, rz)
    kc.atomic_add(scalars, 0, RR, rr)


@kc.kernel
def cg_apply_kernel(p: D3, solid: I3, it: int, q: D3, scalars: D2):
    """q = A p; slot it gets p.q."""
    j, k = kc.tid()
    pq = kc.float64(0.0)
    for i in range(p.shape[0]):
        val = kc.float64(0.0)
        if solid[i, j, k] == 0:
            pc = p[i, j, k]
            val = (neighbour_term(p, solid, pc, i - 1, j, k) + neighbour_term(p, solid, pc, i + 1, j, k)
                   + neighbour_term(p, solid, pc, i, j - 1, k) + neighbour_term(p, solid, pc, i, j + 1, k)
                   + neighbour_term(p, solid, pc, i, j, k - 1) + neighbour_term(p, solid, pc, i, j, k + 1))
            pq += pc * val
        q[i, j, k] = val
    kc.atomic_add(scalars, it, PAP, pq)


@kc.kernel
def cg_update_kernel(p: D3, q: D3, inv_diag: D3, it: int, x: D3, r: D3, z: D3, scalars: D2):
    """alpha = r.z / p.Ap; x += alpha p; r -= alpha q; z = M^-1 r; slot it+1 gets r.z and r.r."""
    j, k = kc.tid()
    pap = scalars[it, PAP]
    alpha = kc.float64(0.0)
    if pap > kc.float64(0.0):
        alpha = scalars[it, RZ] / pap
    rz = kc.float64(0.0)
    rr = kc.float64(0.0)
    for i in range(p.shape[0]):
        x[i, j, k] = x[i, j, k] + alpha * p[i, j, k]
        ri = r[i, j, k] - alpha * q[i, j, k]
        zi = ri * inv_diag[i, j, k]
        r[i, j, k] = ri
        z[i, j, k] = zi
        rz += ri * zi
        rr += ri * ri
    kc.atomic_add(scalars, it + 1, RZ, rz)
    kc.atomic_add(scalars, it + 1, RR, rr)


@kc.kernel
def cg_direction_kernel(z: D3, it: int, scalars: D2, p: D3):
    """beta = r.z(new) / r.z(old); p = z + beta p."""
    j, k = kc.tid()
    old = scalars[it, RZ]
    beta = kc.float64(0.0)
    if old > kc.float64(0.0):
        beta = scalars[it + 1, RZ] / old
    for i in range(z.shape[0]):
        p[i, j, k] = z[i, j, k] + beta * p[i, j, k]


@kc.kernel
def sum_rows64_kernel(x: D3, solid: I3, out: D1, slot: int):
    j, k = kc.tid()
    acc = kc.float64(0.0)
    for i in range(x.shape[0]):
        if solid[i, j, k] == 0:
            acc += x[i, j, k]
    kc.atomic_add(out, slot, acc)


@kc.kernel
def cg_finish_kernel(x: D3, solid: I3, sums: D1, n_fluid: float, out: F3):
    """out = x - mean(x) on fluid cells (float32), 0 in solids."""
    i, j, k = kc.tid()
    val = kc.float64(0.0)
    if solid[i, j, k] == 0:
        val = x[i, j, k] - sums[1] / kc.float64(n_fluid)
    out[i, j, k] = float(val)


@kc.kernel
def add_kernel(a: F3, out: F3):
    i, j, k = kc.tid()
    out[i, j, k] = out[i, j, k] + a[i, j, k]


class PoissonCG:
    """Matrix-free Jacobi-PCG for ``A x = b`` on the fluid cells of a (nx, ny, nz) solid mask.

    Args:
        solid: int32 (nx, ny, nz) array, 1 = solid cell.
        tol: stop when ||r||_2 <= tol ||b - mean(b)||_2.
        max_iter: iteration cap (a warning when reached).
        check_every: iterations between host reads of the residual.

    Attributes after ``solve``: ``iterations``, ``residual`` (relative 2-norm).
    """

    def __init__(self, solid, tol=1e-7, max_iter=None, check_every=8):
        self.solid = solid
        self.device = solid.device
        self.shape = tuple(solid.shape)
        self.rows = (self.shape[1], self.shape[2])
        self.tol = float(tol)
        # Jacobi-PCG on a Poisson matrix needs O(cells per side) iterations
        self.max_iter = int(max_iter) if max_iter else 100 + 8 * max(self.shape)
        self.check_every = int(check_every)
        dev = self.device
        self.inv_diag = kc.zeros(self.shape, dtype=kc.float64, device=dev)
        self.x, self.r, self.z, self.p, self.q = (kc.zeros(self.shape, dtype=kc.float64, device=dev) for _ in range(5))
        self.sums = kc.zeros(2, dtype=kc.float64, device=dev)
        self.scalars = kc.zeros((self.max_iter + 2, 3), dtype=kc.float64, device=dev)
        self.iterations = 0
        self.residual = 0.0
        self.update_mask()

    def update_mask(self):
        """Recompute the preconditioner and the fluid-cell count after the solid mask changed."""
        kc.launch(inverse_diagonal_kernel, dim=self.shape, inputs=[self.solid], outputs=[self.inv_diag],
                  device=self.device, record_tape=False)
        self.n_fluid = int(np.count_nonzero(self.solid.numpy() == 0))

    def solve(self, b, out):
        """Write the zero-mean solution of A x = b - mean(b) into ``out`` (float32 (nx, ny, nz)); not taped."""
        dev, rows, solid = self.device, self.rows, self.solid
        if self.n_fluid == 0:
            out.zero_()
            return out
        L = lambda k, inputs: kc.launch(k, dim=rows, inputs=inputs, device=dev, record_tape=False)  # noqa: E731
        self.sums.zero_()
        self.scalars.zero_()
        L(sum_rows_kernel, [b, solid, self.sums, 0])
        L(cg_init_kernel, [b, solid, self.inv_diag, self.sums, float(self.n_fluid), self.x, self.r, self.z, self.p,
                           self.scalars])
        rr0 = float(self.scalars.numpy()[0, RR])
        it = 0
        rel = 0.0
        if rr0 > 0.0:
            target = self.tol * self.tol * rr0
            while True:
                L(cg_apply_kernel, [self.p, solid, it, self.q, self.scalars])
                L(cg_update_kernel, [self.p, self.q, self.inv_diag, it, self.x, self.r, self.z, self.scalars])
                L(cg_direction_kernel, [self.z, it, self.scalars, self.p])
                it += 1
                if it % self.check_every == 0 or it == self.max_iter:
                    rr = float(self.scalars.numpy()[it, RR])
                    rel = (rr / rr0) ** 0.5
                    if rr <= target:
                        break
                    if it == self.max_iter:
                        warnings.warn(f"SolverGridFluid: pressure CG stopped at max_iter={self.max_iter} with relative "
                                      f"residual {rel:.3g} > tol={self.tol:g} (a domain split by solids, or raise "
                                      "max_iter)", RuntimeWarning, stacklevel=3)
                        break
        self.iterations, self.residual = it, rel
        L(sum_rows64_kernel, [self.x, solid, self.sums, 1])
        kc.launch(cg_finish_kernel, dim=self.shape, inputs=[self.x, solid, self.sums, float(self.n_fluid)],
                  outputs=[out], device=dev, record_tape=False)
        return out


def taped_solve(cg, b, out):
    """``out = cg.solve(b)`` recorded on the active tapes as one step whose adjoint is another solve.

    The solve operator S is symmetric (see the module docstring), so b.grad += S out.grad.
    """
    cg.solve(b, out)
    from kernelcore.device import get_runtime

    rt = get_runtime()
    if not rt.tape_stack or b.grad is None:
        return out

    def backward():
        if out.grad is None or b.grad is None:
            return
        adj = kc.zeros(out.shape, dtype=float, device=out.device)
        cg.solve(out.grad, adj)
        kc.launch(add_kernel, dim=adj.shape, inputs=[adj], outputs=[b.grad], device=adj.device, record_tape=False)
        out.grad.zero_()  # consumed, as by a store

    seen = set()
    for tape in reversed(rt.tape_stack):  # every enclosing tape records it, as launches are
        if id(tape) not in seen:
            seen.add(id(tape))
            tape.record_func(backward, [b, out])
    return out
