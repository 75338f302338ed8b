"""Free-surface liquid on the MAC grid: ghost-fluid pressure solve, gravity, velocity extension.

Liquid cells are fluid (non-solid) cells with ``phi < 0`` (sim/grid_fluid_levelset.py).  The
pressure potential psi is solved on liquid cells only; air is at psi = 0 on the surface
phi = 0 (ghost fluid, Gibou et al. 2002 / Enright et al. 2003): between a liquid cell L and an
air cell A the surface lies at the fraction ``theta = phi_L / (phi_L - phi_A)`` of the way
from L to A, and the linear extrapolation through psi = 0 there gives the ghost value
``psi_A = psi_L (1 - 1 / theta)``.  The operator stays symmetric (the air neighbour only adds
``1 / theta`` to L's diagonal) and is positive definite as soon as the liquid touches air,
so conjugate gradients (Jacobi-preconditioned, float64 vectors) solve it without the
mean removal of the closed smoke box.  theta is clamped below at ``THETA_MIN`` so that a
surface passing right by a cell centre does not make the system ill-conditioned.

Faces with liquid on neither side get velocities by extension: a few sweeps, each giving an
unset face the average of its already-set neighbours (same component), so that the next
semi-Lagrangian back-trace and the level-set advection see a smooth velocity near the surface.
"""
from __future__ import annotations


import numpy as np

import kernelcore as kc

from .grid_fluid_cg import FLUID_BIT, RR, CHUNK, cg_finish_kernel, cg_init_kernel, pcg_iterations
from .grid_fluid_kernels import axis_step, face_constrained

F1 = kc.array(dtype=float)
D1 = kc.array(dtype=kc.float64)
I1 = kc.array(dtype=kc.int32)
D2 = kc.array(dtype=kc.float64, ndim=2)
F3 = kc.array(dtype=float, ndim=3)
I3 = kc.array(dtype=kc.int32, ndim=3)
D3 = kc.array(dtype=kc.float64, ndim=3)

THETA_MIN = 0.01


@kc.func
def is_liquid(phi: F3, solid: I3, i: int, j: int, k: int):
    """1 for a cell inside the domain, not solid, with phi < 0."""
    r = 0
    if i >= 0 and j >= 0 and k >= 0 and i < solid.shape[0] and j < solid.shape[1] and k < solid.shape[2]:
        if solid[i, j, k] == 0 and phi[i, j, k] < 0.0:
            r = 1
    return r


@kc.func
def surface_fraction(phi_liquid: float, phi_air: float):
    """theta: where along liquid -> air the surface phi = 0 lies, clamped to [THETA_MIN, 1]."""
    return kc.clamp(phi_liquid / (phi_liquid - phi_air), THETA_MIN, 1.0)


@kc.kernel
def liquid_flags_kernel(phi: F3, solid: I3, flags: I3, extra: D3, inv_diag: D3):
    """Per liquid cell: neighbour bits of the liquid neighbours (sim/grid_fluid_cg.py layout), the
    ghost-fluid diagonal ``extra = sum over air neighbours of 1 / theta`` and 1 / (full diagonal)."""
    i, j, k = kc.tid()
    f = 0
    n = kc.float64(0.0)
    e = kc.float64(0.0)
    if is_liquid(phi, solid, i, j, k) != 0:
        f = FLUID_BIT
        pc = phi[i, j, k]
        for a in range(3):
            for side in range(2):
                sgn = 2 * side - 1
                ni = i + sgn * axis_step(a, 0)
                nj = j + sgn * axis_step(a, 1)
                nk = k + sgn * axis_step(a, 2)
                if ni >= 0 and nj >= 0 and nk >= 0 and ni < solid.shape[0] and nj < solid.shape[1] and nk < solid.shape[2]:
                    if solid[ni, nj, nk] == 0:
                        pn = phi[ni, nj, nk]
                        if pn < 0.0:
                            f = f + (1 << (2 * a + side))
                            n += kc.float64(1.0)
                        else:
                            e += kc.float64(1.0) / kc.float64(surface_fraction(pc, pn))
    flags[i, j, k] = f
    extra[i, j, k] = e
    val = kc.float64(0.0)
    if n + e > kc.float64(0.0):
        val = kc.float64(1.0) / (n + e)
    inv_diag[i, j, k] = val


class LiquidPoissonCG:
    """Jacobi-preconditioned CG for the ghost-fluid pressure system on the liquid cells.

    Args:
        solid: int32 (nx, ny, nz) solid mask (1 = solid).
        tol: stop when ||r||_2 <= tol ||b||_2 (b restricted to liquid cells).
        max_iter: iteration cap (a warning when reached; default 100 + 8 max(shape)).
        check_every: iterations between host reads of the residual.

    ``update(phi)`` rebuilds the liquid flags from a level set (float32 (nx, ny, nz)) before
    each ``solve``.  Attributes after ``solve``: ``iterations``, ``residual``, ``n_liquid``.
    """

    def __init__(self, solid, tol=1e-7, max_iter=None, check_every=8):
        self.solid = solid
        self.device = solid.device
        self.shape = tuple(solid.shape)
        self.n = int(np.prod(self.shape))
        self.chunks = (self.n + CHUNK - 1) // CHUNK
        self.tol = float(tol)
        self.max_iter = int(max_iter) if max_iter else 100 + 8 * max(self.shape)
        self.check_every = int(check_every)
        dev = self.device
        self.flags = kc.zeros(self.shape, dtype=kc.int32, device=dev)
        self.extra = kc.zeros(self.shape, dtype=kc.float64, device=dev)
        self.inv_diag = kc.zeros(self.shape, dtype=kc.float64, device=dev)
        self.x, self.r, self.z, self.p, self.q = (kc.zeros(self.n, dtype=kc.float64, device=dev) for _ in range(5))
        self.scalars = kc.zeros((self.max_iter + 2, 4), dtype=kc.float64, device=dev)
        self.zero_sums = kc.zeros(3, dtype=kc.float64, device=dev)   # no mean to remove: the CG kernels' sums stay 0
        self.iterations = 0
        self.residual = 0.0

    def update(self, phi):
        kc.launch(liquid_flags_kernel, dim=self.shape, inputs=[phi, self.solid],
                  outputs=[self.flags, self.extra, self.inv_diag], device=self.device, record_tape=False)

    def solve(self, b, out, guess=None):
        """Write the solution of A x = b (liquid cells; 0 elsewhere) into ``out`` (float32, the grid's shape).

        The smoke solver's CG (sim/grid_fluid_cg.py) with the ghost-fluid diagonal ``extra`` and
        no mean removal: its kernels get zero sums (mean 0 exactly, so the same numbers).  The map
        b -> out is symmetric (A restricted to the liquid cells, extended by zero), so the Tape's
        adjoint is the same solve (grid_fluid_cg.taped_solve).  ``guess`` must be None (no warm start)."""
        if guess is not None:
            raise ValueError("LiquidPoissonCG.solve: no warm start (guess must be None)")
        dev = self.device
        b1, out1 = b.reshape((self.n,)), out.reshape((self.n,))
        flags, inv_diag, extra = (a.reshape((self.n,)) for a in (self.flags, self.inv_diag, self.extra))
        self.scalars.zero_()
        self.zero_sums.zero_()
        kc.launch(cg_init_kernel, dim=self.chunks,
                  inputs=[b1, flags, inv_diag, self.zero_sums, 1.0, self.x, self.r, self.z, self.p, self.scalars],
                  device=dev, record_tape=False)
        rr0 = float(self.scalars.numpy()[0, RR])
        self.iterations, self.residual = pcg_iterations(
            self, flags, inv_diag, rr0, extra=extra, stop_note="SolverGridFluid(liquid=True): pressure CG",
            hint="liquid sealed off from air by solids, or raise max_iter")
        kc.launch(cg_finish_kernel, dim=self.n, inputs=[self.x, flags, self.zero_sums, 1.0], outputs=[out1],
                  device=dev, record_tape=False)
        return out


# ------------------------------------------------------------------------------------------------
# velocity: gravity, ghost-fluid pressure gradient, extension into the air
# ------------------------------------------------------------------------------------------------
@kc.kernel
def gravity_kernel(q: F3, axis: int, solid: I3, dv: float, q_out: F3):
    """q_out = q + dv on the free faces (dv = -g dt along y)."""
    i, j, k = kc.tid()
    val = q[i, j, k]
    if face_constrained(solid, axis, i, j, k) == 0:
        val = val + dv
    q_out[i, j, k] = val


@kc.kernel
def liquid_gradient_kernel(q: F3, axis: int, solid: I3, phi: F3, psi: F3, q_out: F3, valid: I3):
    """q_out = q - grad psi on free faces with liquid on at least one side (ghost psi in the air cell);
    ``valid`` = 1 there, 0 on faces left to extension (all-air faces), 2 on walls (fixed at 0)."""
    i, j, k = kc.tid()
    di = axis_step(axis, 0)
    dj = axis_step(axis, 1)
    dk = axis_step(axis, 2)
    val = q[i, j, k]
    ok = 2
    if face_constrained(solid, axis, i, j, k) == 0:
        ok = 0
        lo = is_liquid(phi, solid, i - di, j - dj, k - dk)
        hi = is_liquid(phi, solid, i, j, k)
        if lo != 0 and hi != 0:
            val = val - (psi[i, j, k] - psi[i - di, j - dj, k - dk])
            ok = 1
        elif lo != 0:
            th = surface_fraction(phi[i - di, j - dj, k - dk], phi[i, j, k])
            val = val + psi[i - di, j - dj, k - dk] / th
            ok = 1
        elif hi != 0:
            th = surface_fraction(phi[i, j, k], phi[i - di, j - dj, k - dk])
            val = val - psi[i, j, k] / th
            ok = 1
    q_out[i, j, k] = val
    valid[i, j, k] = ok


@kc.kernel
def extend_kernel(q: F3, valid: I3, q_out: F3, valid_out: I3):
    """One extension sweep: an unset face (valid 0) takes the mean of its set neighbours (valid 1)."""
    i, j, k = kc.tid()
    val = q[i, j, k]
    ok = valid[i, j, k]
    if ok == 0:
        s = 0.0
        m = 0
        for a in range(3):
            for side in range(2):
                sgn = 2 * side - 1
                ni = i + sgn * axis_step(a, 0)
                nj = j + sgn * axis_step(a, 1)
                nk = k + sgn * axis_step(a, 2)
                if ni >= 0 and nj >= 0 and nk >= 0 and ni < q.shape[0] and nj < q.shape[1] and nk < q.shape[2]:
                    if valid[ni, nj, nk] == 1:
                        s += q[ni, nj, nk]
                        m += 1
        if m > 0:
            val = s / float(m)
            ok = 1
        else:
            val = 0.0
    q_out[i, j, k] = val
    valid_out[i, j, k] = ok


class untaped:
    """Context: launches inside are not recorded on the active Tapes (the level set's motion,
    which the liquid's gradients treat as fixed; see SolverGridFluid's ``liquid``)."""

    def __enter__(self):
        from kernelcore.device import get_runtime

        self._stack = get_runtime().tape_stack
        self._saved = self._stack[:]
        self._stack.clear()
        return self

    def __exit__(self, *exc):
        self._stack[:] = self._saved
        return False


def add_gravity(q, axis, solid, dv, q_out):
    kc.launch(gravity_kernel, dim=q.shape, inputs=[q, int(axis), solid, float(dv)], outputs=[q_out], device=q.device)


def subtract_liquid_gradient(q, axis, solid, phi, psi, q_out, valid):
    kc.launch(liquid_gradient_kernel, dim=q.shape, inputs=[q, int(axis), solid, phi, psi], outputs=[q_out, valid],
              device=q.device)


def extend(q, valid, sweeps, scratch_q, scratch_valid, q_out, valid_out):
    """``sweeps`` (>= 1) extension sweeps from (q, valid); the last writes (q_out, valid_out).
    The scratch pair is the ping-pong buffer (distinct from the other arrays); or lists of
    ``sweeps - 1`` arrays each, one per sweep, so that no array is written twice (a Tape's
    backward pass reads every sweep's inputs as they were)."""
    cur_q, cur_v = q, valid
    for n in range(sweeps):
        if isinstance(scratch_q, (list, tuple)):
            last = n == sweeps - 1
            dst_q, dst_v = (q_out, valid_out) if last else (scratch_q[n], scratch_valid[n])
            kc.launch(extend_kernel, dim=q.shape, inputs=[cur_q, cur_v], outputs=[dst_q, dst_v], device=q.device)
            cur_q, cur_v = dst_q, dst_v
            continue
        # alternate so that the last sweep writes the output and none reads what it writes
        to_out = (sweeps - 1 - n) % 2 == 0
        dst_q, dst_v = (q_out, valid_out) if to_out else (scratch_q, scratch_valid)
        kc.launch(extend_kernel, dim=q.shape, inputs=[cur_q, cur_v], outputs=[dst_q, dst_v], device=q.device)
        cur_q, cur_v = dst_q, dst_v
    return q_out
