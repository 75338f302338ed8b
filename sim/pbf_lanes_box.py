"""SolverPBF's lanes for a fluid bounded by its box alone (no ground plane, no shapes, no bodies):
each Jacobi iteration is two vectorised kernels instead of four.

Why: in the general lanes step (sim/pbf_lanes.py) the per-particle boundary terms run in plain
kernels after the pair sums (``lambda_finish_kernel``, ``delta_finish_kernel``), because the loops
over shapes keep GCC from vectorising; at 64K particles they were about 9 % of a step, plus a
split of the positions into three float arrays per iteration.  With only the box, the boundary
terms are six wall_volume calls and a clamp: written branch-free (``wall_volume_select``) they
vectorise with the pair loop, so here

- ``lambda_box`` sums the pairs, adds the box walls' volume and writes lambda;
- ``delta_box`` sums the pairs, adds the walls' share, projects into the box and writes the new
  positions as three float arrays (``scratch.qx/qy/qz``), which the next iteration reads directly;
- after the last iteration ``join_kernel`` packs them into the step's vec3 positions.

The operations and their order are those of the general lanes step (the terms of the absent
ground, shapes and bodies are exact zeros there), so the results are bit-identical to it
(tests/sim/test_pbf_lanes.py).  Only the last iteration's positions are written to the step's
buffers; the intermediate ``pbf_buffers.p[k]`` are not (these steps are not taped).
"""
from __future__ import annotations

import kernelcore as kc

from .pbf_lanes import (delta_term, density_term, lambda_of, lane_module, poly6_select, slot_volume_func,
                        split_positions)
from .pbf_kernels import poly6_coefficient, scorr_constants, spiky_coefficient


@kc.func
def wall_volume_select(sd: float, h: float) -> kc.vec2:
    """pbf_boundary.wall_volume without a branch (the same arithmetic, then selects): (phi, d phi / d sd)."""
    u = kc.min(kc.max(sd / h, 0.0), 1.0)   # only lanes with sd < h (u < 1) are kept
    u2 = u * u
    f = u * (1.0 + u2 * (-4.0 / 3.0 + u2 * (6.0 / 5.0 + u2 * (-4.0 / 7.0 + u2 / 9.0))))
    a = 1.0 - u2
    a2 = a * a
    dphi = kc.where(sd > 0.0, -(315.0 / 256.0) * a2 * a2 / h, 0.0)
    inside = sd < h
    return kc.vec2(kc.where(inside, (315.0 / 256.0) * (128.0 / 315.0 - f), 0.0), kc.where(inside, dphi, 0.0))


@kc.func
def box_density(x: kc.vec3, h: float, lower: kc.vec3, upper: kc.vec3) -> kc.vec4:
    """pbf_kernels.boundary_density of the box walls alone, branch-free: (d phi / dx [1/m], phi)."""
    wx0 = wall_volume_select(x[0] - lower[0], h)
    wx1 = wall_volume_select(upper[0] - x[0], h)
    wy0 = wall_volume_select(x[1] - lower[1], h)
    wy1 = wall_volume_select(upper[1] - x[1], h)
    wz0 = wall_volume_select(x[2] - lower[2], h)
    wz1 = wall_volume_select(upper[2] - x[2], h)
    phi = float(0.0)
    phi += wx0[0] + wx1[0] + wy0[0] + wy1[0] + wz0[0] + wz1[0]
    return kc.vec4(wx0[1] - wx1[1], wy0[1] - wy1[1], wz0[1] - wz1[1], phi)


def _lambda_box(slots, uniform=False):
    volume_of = slot_volume_func(uniform)

    def lambda_box(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                   volume: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int),
                   h: float, poly6_coef: float, spiky_coef: float, eps: float, wall_weight: float, lower: kc.vec3,
                   upper: kc.vec3, lam: kc.array(dtype=float)):
        i = kc.tid()
        x = kc.vec3(px[i], py[i], pz[i])
        n = nb_count[i]
        h2 = h * h
        acc = kc.vec4(0.0, 0.0, 0.0, volume[i] * poly6_select(0.0, h2, poly6_coef))   # (grad_i, rho_i / rho0)
        sq = float(0.0)
        for k in range(kc.int32(slots)):   # pbf_lanes.lambda_pairs' loop (a runtime loop: see there)
            j = kc.max(nb[i, k], 0)
            t = density_term(x - kc.vec3(px[j], py[j], pz[j]), volume_of(volume, j, k, n), h, h2, poly6_coef,
                             spiky_coef)
            acc += t   # (one vec4 sum: packing it per slot cost GCC 8 %)
            g = kc.vec3(t[0], t[1], t[2])
            sq += kc.dot(g, g)
        wb = box_density(x, h, lower, upper) * wall_weight   # as lambda_finish_kernel (x 1 or 0: exact)
        lam[i] = lambda_of(acc[3] + wb[3], kc.vec3(acc[0], acc[1], acc[2]) + kc.vec3(wb[0], wb[1], wb[2]), sq, eps)

    return lambda_box


def _delta_box(slots, uniform=False):
    volume_of = slot_volume_func(uniform)

    def delta_box(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                  volume: kc.array(dtype=float), inv_mass: kc.array(dtype=float), radius: kc.array(dtype=float),
                  nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int), lam: kc.array(dtype=float),
                  h: float, poly6_coef: float, spiky_coef: float, scorr_k: float, scorr_inv_w: float, wall_weight: float,
                  lower: kc.vec3, upper: kc.vec3,
                  qx: kc.array(dtype=float), qy: kc.array(dtype=float), qz: kc.array(dtype=float)):
        i = kc.tid()
        x = kc.vec3(px[i], py[i], pz[i])
        n = nb_count[i]
        li = lam[i]
        h2 = h * h
        dp = kc.vec3(0.0, 0.0, 0.0)
        for k in range(kc.int32(slots)):   # pbf_lanes.delta_pairs' loop
            j = kc.max(nb[i, k], 0)
            dp += delta_term(x - kc.vec3(px[j], py[j], pz[j]), volume_of(volume, j, k, n), li, lam[j], h, h2,
                             poly6_coef, spiky_coef, scorr_k, scorr_inv_w)
        wb = box_density(x, h, lower, upper)   # as correct_position: the walls' share, then the box
        dp += (kc.vec3(wb[0], wb[1], wb[2]) * li) * wall_weight
        r = radius[i]
        y = x + dp
        moves = inv_mass[i] > 0.0   # kinematic particles keep their place
        # into [lower + r, upper - r], per component (vec3 min / max and selects kept GCC from vectorising)
        qx[i] = kc.where(moves, kc.min(kc.max(y[0], lower[0] + r), upper[0] - r), x[0])
        qy[i] = kc.where(moves, kc.min(kc.max(y[1], lower[1] + r), upper[1] - r), x[1])
        qz[i] = kc.where(moves, kc.min(kc.max(y[2], lower[2] + r), upper[2] - r), x[2])

    return delta_box


_BOX_KERNELS = {}


def box_kernels(capacity: int, uniform: bool = False):
    """(lambda_box, delta_box) for neighbour lists padded to ``capacity`` slots (a module per capacity
    and ``uniform``, built on first use with pbf_lanes.LANE_FLAGS; ``uniform``: see pbf_lanes.pair_kernels)."""
    name = lane_module(__name__, capacity, uniform)   # (checked first: 56.0 would find 56's kernels)
    key = (capacity, bool(uniform))
    if key not in _BOX_KERNELS:
        _BOX_KERNELS[key] = tuple(kc.kernel(make(capacity, bool(uniform)), enable_backward=False, simd=True, module=name)
                                  for make in (_lambda_box, _delta_box))
    return _BOX_KERNELS[key]


@kc.kernel(enable_backward=False)
def join_kernel(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                p: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    p[i] = kc.vec3(px[i], py[i], pz[i])


def box_only(model, bodies) -> bool:
    """Whether the model's fluid is bounded by SolverPBF's box alone (these kernels apply)."""
    return model.shape_count == 0 and not model.ground and bodies.count == 0


def iterate(model, positions, volume, nbl, lams, h, eps, scorr_k, scorr_dq, walls, bounds, scratch, capacity,
            particles, uniform=False):
    """All Jacobi iterations of a box-only lanes step: ``positions`` (iterations + 1 vec3 (N,) [m]):
    reads [0], writes [-1]; ``lams``: the iterations' multipliers float (N,) [m^2]; ``bounds``:
    SolverPBF's boundary inputs (lower, upper first); ``particles``: inv_mass and radius in the
    order of ``positions`` (pbf_lanes.ModelParticles or pbf_sort.SortedParticles); ``uniform``: every
    entry of ``volume`` is the same (box_kernels)."""
    lam_k, delta_k = box_kernels(capacity, uniform)
    lower, upper = bounds[0], bounds[1]
    k_h2, inv_w = scorr_constants(h, scorr_k, scorr_dq)
    p6, sp = poly6_coefficient(h), spiky_coefficient(h)
    n = model.particle_count
    wall_weight = 1.0 if walls else 0.0   # a factor, not a select on vec3s (GCC did not vectorise those)
    split_positions(model, positions[0], scratch)
    cur, nxt = (scratch.px, scratch.py, scratch.pz), (scratch.qx, scratch.qy, scratch.qz)
    for lam in lams:
        kc.launch(lam_k, dim=n, inputs=[*cur, volume, nbl.nb, nbl.count, h, p6, sp, eps, wall_weight, lower, upper],
                  outputs=[lam], device=model.device, record_tape=False)
        kc.launch(delta_k, dim=n, inputs=[*cur, volume, particles.inv_mass, particles.radius, nbl.nb, nbl.count, lam,
                                          h, p6, sp, k_h2, inv_w, wall_weight, lower, upper],
                  outputs=list(nxt), device=model.device, record_tape=False)
        cur, nxt = nxt, cur
    kc.launch(join_kernel, dim=n, inputs=list(cur), outputs=[positions[-1]], device=model.device, record_tape=False)
