"""Level set of the grid fluid's free-surface liquid: sources, redistancing, volume.

``phi`` is cell-centred (same layout as ``density``), in metres, negative inside the
liquid, and kept close to a signed distance.  Semi-Lagrangian advection (the grid's own
advection kernels) moves it; ``redistance`` then restores |grad phi| = 1 with a few
iterations of the reinitialisation PDE ``phi_t + S(phi0) (|grad phi| - 1) = 0`` (Godunov
upwind gradients), where cells next to the interface use Russo & Smereka's subcell fix
(relax towards phi0 / |grad phi0|, the slope taken across the interface from the two values
straddling it), so the interface itself does not drift: only cells away from it are corrected.  Domain walls act as zero-gradient boundaries.

All kernels work on 3-D arrays; a 2-D grid is one layer (nz = 1), on which the z terms vanish.
"""
from __future__ import annotations

import kernelcore as kc

F3 = kc.array(dtype=float, ndim=3)
I3 = kc.array(dtype=kc.int32, ndim=3)


@kc.func
def neighbour_or_self(phi: F3, i: int, j: int, k: int, axis: int, sgn: int):
    """phi at the neighbour (i, j, k) + sgn e_axis, or phi[i, j, k] outside the array (zero gradient)."""
    ni = i
    nj = j
    nk = k
    if axis == 0:
        ni = i + sgn
    if axis == 1:
        nj = j + sgn
    if axis == 2:
        nk = k + sgn
    val = phi[i, j, k]
    if ni >= 0 and nj >= 0 and nk >= 0 and ni < phi.shape[0] and nj < phi.shape[1] and nk < phi.shape[2]:
        val = phi[ni, nj, nk]
    return val


@kc.kernel
def redistance_kernel(phi: F3, phi0: F3, dx: float, phi_out: F3):
    """One pseudo-time step (dtau = dx / 2) of the reinitialisation PDE, with the subcell fix next to the interface."""
    i, j, k = kc.tid()
    p = phi[i, j, k]
    p0 = phi0[i, j, k]
    s0 = 1.0
    if p0 < 0.0:
        s0 = -1.0
    grad2 = 0.0
    grad0 = 0.0
    near = 0
    for a in range(3):
        pm = neighbour_or_self(phi, i, j, k, a, -1)
        pp = neighbour_or_self(phi, i, j, k, a, 1)
        back = p - pm
        fwd = pp - p
        if s0 > 0.0:
            grad2 += kc.max(kc.max(back, 0.0) ** 2.0, kc.min(fwd, 0.0) ** 2.0)
        else:
            grad2 += kc.max(kc.min(back, 0.0) ** 2.0, kc.max(fwd, 0.0) ** 2.0)
        qm = neighbour_or_self(phi0, i, j, k, a, -1)
        qp = neighbour_or_self(phi0, i, j, k, a, 1)
        # the slope of phi0 along this axis: across the interface where it crosses (the two
        # values straddling it fix its position), else the central difference
        d0 = 0.5 * kc.abs(qp - qm)
        crossed = 0.0
        if qm * p0 < 0.0:
            crossed = kc.abs(p0 - qm)
        if qp * p0 < 0.0:
            crossed = kc.max(crossed, kc.abs(qp - p0))
        if crossed > 0.0:
            near = 1
            d0 = crossed
        grad0 += d0 * d0
    if near != 0:
        # Russo-Smereka: relax towards the distance the original interface implies (cell units)
        dist = p0 / kc.max(kc.sqrt(grad0), 1.0e-6 * dx)
        val = p - 0.5 * (s0 * kc.abs(p) - dist * dx)
    else:
        smooth_sign = p0 / kc.sqrt(p0 * p0 + dx * dx)
        val = p - 0.5 * smooth_sign * (kc.sqrt(grad2) - dx)
    phi_out[i, j, k] = val


@kc.kernel
def liquid_box_kernel(phi: F3, center: kc.vec3, half: kc.vec3, dx: float, phi_out: F3):
    """phi_out = min(phi, signed distance [m] to the box): the union of the liquid with a box."""
    i, j, k = kc.tid()
    q = kc.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5) * dx - center
    d = kc.vec3(kc.abs(q[0]) - half[0], kc.abs(q[1]) - half[1], kc.abs(q[2]) - half[2])
    outside = kc.vec3(kc.max(d[0], 0.0), kc.max(d[1], 0.0), kc.max(d[2], 0.0))
    sdf = kc.length(outside) + kc.min(kc.max(d[0], kc.max(d[1], d[2])), 0.0)
    phi_out[i, j, k] = kc.min(phi[i, j, k], sdf)


@kc.kernel
def fill_kernel(value: float, out: F3):
    i, j, k = kc.tid()
    out[i, j, k] = value


@kc.kernel
def liquid_volume_kernel(phi: F3, solid: I3, dx: float, out: kc.array(dtype=kc.float64)):
    """out[0] += liquid fraction of each fluid cell, clamp(1/2 - phi / dx, 0, 1) (a linear smeared Heaviside)."""
    i, j, k = kc.tid()
    if solid[i, j, k] == 0:
        frac = kc.clamp(0.5 - phi[i, j, k] / dx, 0.0, 1.0)
        kc.atomic_add(out, 0, kc.float64(frac))


def redistance(phi0, dx, iterations, scratch_a, scratch_b, phi_out):
    """``iterations`` (>= 1) reinitialisation steps of ``phi0``; the last writes ``phi_out``.

    ``scratch_a``/``scratch_b`` are ping-pong buffers of phi0's shape (never phi0 or phi_out).
    """
    cur = phi0
    for n in range(iterations):
        dst = phi_out if n == iterations - 1 else (scratch_a if n % 2 == 0 else scratch_b)
        kc.launch(redistance_kernel, dim=phi0.shape, inputs=[cur, phi0, float(dx)], outputs=[dst],
                  device=phi0.device)
        cur = dst
    return phi_out


def add_box(phi, center, half_extents, dx, phi_out):
    kc.launch(liquid_box_kernel, dim=phi.shape, inputs=[phi, kc.vec3(*center), kc.vec3(*half_extents), float(dx)],
              outputs=[phi_out], device=phi.device)


def fill(out, value):
    kc.launch(fill_kernel, dim=out.shape, inputs=[float(value)], outputs=[out], device=out.device)


def volume_cells(phi, solid, dx, out):
    """Add the liquid volume of ``phi`` in cells (cell count, fractional at the surface) into out[0] (float64)."""
    kc.launch(liquid_volume_kernel, dim=phi.shape, inputs=[phi, solid, float(dx)], outputs=[out], device=phi.device,
              record_tape=False)
