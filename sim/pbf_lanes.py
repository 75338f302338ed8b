"""Vectorised pair loops of SolverPBF (``SolverPBF(..., lanes=True)``): the density multipliers
and the position updates with 8 particles per AVX2 vector instead of one.

Why: the neighbour loops of sim/pbf_kernels.py have one trip count per particle, so GCC keeps
them scalar (one ``vsqrtss`` / ``vdivss`` per pair).  Here each particle's loop runs a fixed
number of neighbour slots (``capacity``: one of ``CAPACITIES`` holding the step's longest list,
SolverPBF's ``lane_capacity`` or the smallest, kept while it holds: each is a module); slots past a particle's count read a stale but valid
index and get weight 0 (``kc.where``, not a branch).  Fixed trip counts make the kernels
straight-line, so ``@kc.kernel(simd=True)`` runs 16 particles per ``omp simd`` loop and GCC
vectorises across them (docs/cpu_codegen.md, "SIMD lanes").  Three things had to be just so
(each blocked the vectorisation on its own, checked with -fopt-info-vec):

- positions as three float arrays (``px, py, pz``): a vec3 element loaded by a computed index
  is not vectorised ("no vectype");
- branch-free kernel functions (``poly6_select``, ``spiky_factor_select``): the ``if`` of
  pbf_kernels.poly6 inside a function is not if-converted around the loads;
- ``kc.max(nb[i, k], 0)`` as the index: an index not known to be >= 0 goes through the
  negative-index wrap, whose select keeps GCC from building the gather;

and the module is built with ``LANE_FLAGS`` (kernelcore.toolchain.MODULE_FLAGS):

- ``-mtune-ctrl=^use_gather``: the AVX2 gather instructions that -march=native picks on this AMD
  EPYC ran a masked load loop 2.8x slower than scalar code, the element-by-element loads GCC
  emits instead are faster than scalar;
- the slot loop is a runtime loop in the kernel (``range(kc.int32(capacity))``, not a constant
  range the frontend unrolls): unrolled in the generated code, 48 slots made each CUDA kernel
  ~4000 lines, and NVRTC took ~15 minutes per capacity module in the suite's CUBIN check.  GCC
  unrolls it instead, before vectorising across particles, once its complete-peeling limits
  (``--param`` below: the loop's branch count stopped it) admit a loop of CAPACITIES[-1] slots.
  Without them GCC vectorises the slot loop itself (in-order reductions, 1.6x slower); the
  tests check for the complete unroll (tests/sim/test_pbf_lanes.py).

The arithmetic (including the square root and division of the spiky gradient) is then one
vector instruction per 8 pairs.  The pair terms are kc.func shared with sim/pbf_lanes_box.py.

Results: the same operations in the same order as lambda_kernel / delta_kernel (the padding
adds exact zeros), so the multipliers and positions are bit-identical to the scalar kernels
(tests/sim/test_pbf_lanes.py).  Forward only: taped steps use the scalar kernels.  The
per-particle parts that loop over shapes (walls counted as fluid, body reactions, boundary
projections) run in plain kernels after the pair sums (``lambda_finish_kernel``,
``delta_finish_kernel``).
"""
from __future__ import annotations

import os

import kernelcore as kc
from kernelcore import config, toolchain

from .pbf_bodies import body_density
from .pbf_kernels import (boundary_density, correct_position, poly6_coefficient, scorr_constants, shape_inputs,
                          spiky_coefficient)

#: neighbour slots per vector step (AVX2: 8 floats): capacities are multiples of it
CHUNK = 8
#: padded neighbour-loop lengths; a step takes the smallest that holds its longest list
CAPACITIES = (32, 40, 48, 56, 64, 80, 96)
#: GCC flags of the lanes modules (see the module docstring): gathers off, and complete peeling
#: of a slot loop of up to 128 iterations (defaults: 16 iterations, 200 insns, 16 branches)
LANE_FLAGS = ["-mtune-ctrl=^use_gather", "--param=max-completely-peel-times=128",
              "--param=max-completely-peeled-insns=200000", "--param=max-peel-branches=4096"]


@kc.func
def poly6_select(r2: float, h2: float, coef: float) -> float:
    """pbf_kernels.poly6 without a branch: coef (h^2 - r^2)^3 inside h, 0 outside [1/m^3]."""
    t = kc.max(h2 - r2, 0.0)
    return coef * t * t * t


@kc.func
def spiky_factor_select(r2: float, h: float, coef: float) -> float:
    """pbf_kernels.spiky_factor without a branch (the square root of a clamped r2, then a select)."""
    lo = 1.0e-12 * h * h
    r = kc.sqrt(kc.max(r2, lo))
    t = h - r
    return kc.where(r2 < h * h, kc.where(r2 > lo, coef * t * t / r, 0.0), 0.0)


@kc.func
def density_term(d: kc.vec3, vj: float, h: float, h2: float, poly6_coef: float, spiky_coef: float) -> kc.vec4:
    """One neighbour's share of the density constraint (d = x_i - x_j [m], vj its volume weight, 0
    for a padding slot): (vj grad W [1/m], vj W / rho0), as lambda_kernel's pair loop."""
    r2 = kc.dot(d, d)
    g = d * (spiky_factor_select(r2, h, spiky_coef) * vj)
    return kc.vec4(g[0], g[1], g[2], vj * poly6_select(r2, h2, poly6_coef))


@kc.func
def delta_term(d: kc.vec3, vj: float, li: float, lj: float, h: float, h2: float, poly6_coef: float,
               spiky_coef: float, scorr_k: float, scorr_inv_w: float) -> kc.vec3:
    """One neighbour's share of the position update [m] (li, lj: the pair's multipliers; artificial
    pressure scorr_k (W / W(dq))^4), as delta_kernel's pair loop."""
    r2 = kc.dot(d, d)
    s = poly6_select(r2, h2, poly6_coef) * scorr_inv_w
    s2 = s * s
    return d * (spiky_factor_select(r2, h, spiky_coef) * (vj * (li + lj - scorr_k * s2 * s2)))


@kc.func
def slot_volume(volume: kc.array(dtype=float), j: int, k: int, n: int) -> float:
    """Volume weight [m^3] of neighbour slot k (of n live slots) holding particle j: 0 for a padding slot."""
    return kc.where(k < n, volume[j], 0.0)


@kc.func
def uniform_slot_volume(volume: kc.array(dtype=float), j: int, k: int, n: int) -> float:
    """slot_volume when every particle has the volume ``volume[0]``: the same values without the
    per-slot load of ``volume[j]`` (one of the five element-by-element loads per slot of the
    multiplier pass: 12 % of lambda_box at 64K particles, one thread)."""
    return kc.where(k < n, volume[0], 0.0)


def slot_volume_func(uniform: bool):
    """The slot-volume kc.func of the ``uniform`` kernels (a closure constant of each kernel factory)."""
    return uniform_slot_volume if uniform else slot_volume


@kc.func
def lambda_of(ratio: float, grad_i: kc.vec3, sq: float, eps: float) -> float:
    """The density multiplier [m^2] from the summed ratio rho/rho0, grad_i C and sum |grad_j C|^2."""
    return -kc.max(ratio - 1.0, 0.0) / (sq + kc.dot(grad_i, grad_i) + eps)


# The slot loops run range(kc.int32(slots)): one flat loop that the frontend never unrolls (an
# int32 bound; the former nest of a chunk loop over range(CHUNK), both <= config.max_unroll, was
# unrolled: huge CUDA code); GCC unrolls it on the CPU (LANE_FLAGS).

def _lambda_pairs(slots, uniform=False):
    volume_of = slot_volume_func(uniform)

    def lambda_pairs(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                     volume: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int),
                     h: float, poly6_coef: float, spiky_coef: float,
                     sums: kc.array(dtype=kc.vec4), sum_sq: kc.array(dtype=float)):
        i = kc.tid()
        x = kc.vec3(px[i], py[i], pz[i])
        n = nb_count[i]
        h2 = h * h
        acc = kc.vec4(0.0, 0.0, 0.0, volume[i] * poly6_select(0.0, h2, poly6_coef))   # (grad_i, rho_i / rho0)
        sq = float(0.0)
        for k in range(kc.int32(slots)):
            j = kc.max(nb[i, k], 0)
            t = density_term(x - kc.vec3(px[j], py[j], pz[j]), volume_of(volume, j, k, n), h, h2, poly6_coef,
                             spiky_coef)   # padding slots weigh nothing
            acc += t   # (one vec4 sum: packing it per slot cost GCC 8 %)
            g = kc.vec3(t[0], t[1], t[2])
            sq += kc.dot(g, g)
        sums[i] = acc
        sum_sq[i] = sq

    return lambda_pairs


def _delta_pairs(slots, uniform=False):
    volume_of = slot_volume_func(uniform)

    def delta_pairs(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                    volume: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int),
                    lam: kc.array(dtype=float), h: float, poly6_coef: float, spiky_coef: float, scorr_k: float,
                    scorr_inv_w: float, dp_out: kc.array(dtype=kc.vec3)):
        i = kc.tid()
        x = kc.vec3(px[i], py[i], pz[i])
        n = nb_count[i]
        li = lam[i]
        h2 = h * h
        dp = kc.vec3(0.0, 0.0, 0.0)
        for k in range(kc.int32(slots)):
            j = kc.max(nb[i, k], 0)
            dp += delta_term(x - kc.vec3(px[j], py[j], pz[j]), volume_of(volume, j, k, n), li, lam[j], h, h2,
                             poly6_coef, spiky_coef, scorr_k, scorr_inv_w)
        dp_out[i] = dp

    return delta_pairs


def _vorticity_pairs(slots, uniform=False):
    volume_of = slot_volume_func(uniform)

    def vorticity_pairs(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                        vx: kc.array(dtype=float), vy: kc.array(dtype=float), vz: kc.array(dtype=float),
                        volume: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2),
                        nb_count: kc.array(dtype=int), h: float, spiky_coef: float,
                        omega: kc.array(dtype=kc.vec3), omega_norm: kc.array(dtype=float)):
        i = kc.tid()
        x = kc.vec3(px[i], py[i], pz[i])
        vi = kc.vec3(vx[i], vy[i], vz[i])
        n = nb_count[i]
        w = kc.vec3(0.0, 0.0, 0.0)
        for k in range(kc.int32(slots)):
            j = kc.max(nb[i, k], 0)
            vj = volume_of(volume, j, k, n)
            d = x - kc.vec3(px[j], py[j], pz[j])
            f = spiky_factor_select(kc.dot(d, d), h, spiky_coef)
            w += kc.cross(d * f, kc.vec3(vx[j], vy[j], vz[j]) - vi) * vj   # as vorticity_kernel
        omega[i] = w
        omega_norm[i] = kc.length(w)

    return vorticity_pairs


def _finish_pairs(slots, uniform=False):
    volume_of = slot_volume_func(uniform)

    def finish_pairs(px: kc.array(dtype=float), py: kc.array(dtype=float), pz: kc.array(dtype=float),
                     vx: kc.array(dtype=float), vy: kc.array(dtype=float), vz: kc.array(dtype=float),
                     omega: kc.array(dtype=kc.vec3), omega_norm: kc.array(dtype=float), volume: kc.array(dtype=float),
                     inv_mass: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int),
                     h: float, poly6_coef: float, spiky_coef: float, xsph: float, confinement: float, dt: float,
                     v_out: kc.array(dtype=kc.vec3)):
        i = kc.tid()
        x = kc.vec3(px[i], py[i], pz[i])
        vi = kc.vec3(vx[i], vy[i], vz[i])
        n = nb_count[i]
        h2 = h * h
        wi = omega_norm[i]
        smooth = kc.vec3(0.0, 0.0, 0.0)
        eta = kc.vec3(0.0, 0.0, 0.0)   # (summed also without confinement, then unused: no branch in the loop)
        for k in range(kc.int32(slots)):
            j = kc.max(nb[i, k], 0)
            vj = volume_of(volume, j, k, n)
            d = x - kc.vec3(px[j], py[j], pz[j])
            r2 = kc.dot(d, d)
            smooth += (kc.vec3(vx[j], vy[j], vz[j]) - vi) * (vj * poly6_select(r2, h2, poly6_coef))
            eta += d * (spiky_factor_select(r2, h, spiky_coef) * (vj * (omega_norm[j] - wi)))
        eta_len = kc.length(eta)
        push = kc.where(confinement > 0.0, kc.where(eta_len > 1.0e-12, confinement, 0.0), 0.0)
        acc = kc.cross(eta / kc.max(eta_len, 1.0e-12), omega[i]) * push   # as finish_kernel's confinement
        acc = kc.where(push > 0.0, acc, kc.vec3(0.0, 0.0, 0.0))
        v_out[i] = kc.where(inv_mass[i] > 0.0, vi + smooth * xsph + acc * dt, vi)

    return finish_pairs


_PAIR_KERNELS = {}


def lane_module(name: str, capacity: int, uniform: bool = False) -> str:
    """The kernel-module name of one capacity's lanes (``name``: the Python module's; ``uniform``: the
    uniform-volume kernels, a module of their own), with LANE_FLAGS registered for it; a ValueError
    for a capacity that is not a positive multiple of CHUNK."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity % CHUNK or capacity <= 0:
        raise ValueError(f"{name}: capacity must be a positive multiple of {CHUNK}, got {capacity!r}")
    module = f"{name}_{capacity}" + ("_uniform" if uniform else "")
    if "clang" not in os.path.basename(config.cxx):
        toolchain.MODULE_FLAGS[module] = list(LANE_FLAGS)
    return module


def pair_kernels(capacity: int, uniform: bool = False):
    """(lambda_pairs, delta_pairs, vorticity_pairs, finish_pairs) kernels for neighbour lists padded to ``capacity`` slots, each
    capacity in a module of its own (built on first use, with the module flags above).  ``uniform``: the
    kernels for particles that all have the volume ``volume[0]`` (bit-identical results, one load less per slot)."""
    name = lane_module(__name__, capacity, uniform)   # (checked first: 56.0 would find 56's kernels)
    key = (capacity, bool(uniform))
    if key not in _PAIR_KERNELS:
        _PAIR_KERNELS[key] = tuple(kc.kernel(make(capacity, bool(uniform)), enable_backward=False, simd=True, module=name)
                                   for make in (_lambda_pairs, _delta_pairs, _vorticity_pairs, _finish_pairs))
    return _PAIR_KERNELS[key]


def capacity_for(longest: int, max_neighbors: int):
    """The smallest of CAPACITIES holding ``longest`` neighbours and within ``max_neighbors`` (the
    lists' row length), or None (then the scalar kernels run)."""
    return next((c for c in CAPACITIES if longest <= c <= max_neighbors), None)


@kc.kernel(enable_backward=False)
def split_kernel(p: kc.array(dtype=kc.vec3), px: kc.array(dtype=float), py: kc.array(dtype=float),
                 pz: kc.array(dtype=float)):
    i = kc.tid()
    x = p[i]
    px[i] = x[0]
    py[i] = x[1]
    pz[i] = x[2]


@kc.kernel(enable_backward=False)
def lambda_finish_kernel(p: kc.array(dtype=kc.vec3), sums: kc.array(dtype=kc.vec4), sum_sq: kc.array(dtype=float),
                         h: float, eps: float, walls: int, lower: kc.vec3, upper: kc.vec3, ground: int,
                         ground_normal: kc.vec3, ground_offset: float, shape_count: int, mesh_reach: float,
                         shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                         shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                         shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                         body_shapes: int, body_q: kc.array(dtype=kc.transform), lam: kc.array(dtype=float),
                         wall: kc.array(dtype=kc.vec4)):
    i = kc.tid()
    x = p[i]
    s = sums[i]
    ratio = s[3]
    grad_i = kc.vec3(s[0], s[1], s[2])
    if walls != 0:   # as lambda_kernel, after the pair sums
        wb = boundary_density(x, h, lower, upper, ground, ground_normal, ground_offset, shape_count, mesh_reach,
                              shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh)
        wall[i] = wb   # delta_finish_kernel's, at the same positions
        ratio += wb[3]
        grad_i += kc.vec3(wb[0], wb[1], wb[2])
        bb = body_density(x, h, body_shapes, shape_count, mesh_reach, shape_type, shape_body, shape_pos, shape_rot,
                          shape_scale, shape_mesh, body_q)
        ratio += bb[3]
        grad_i += kc.vec3(bb[0], bb[1], bb[2])
    lam[i] = lambda_of(ratio, grad_i, sum_sq[i], eps)


@kc.kernel(enable_backward=False)
def delta_finish_kernel(p: kc.array(dtype=kc.vec3), dp_pairs: kc.array(dtype=kc.vec3), lam: kc.array(dtype=float),
                        wall: kc.array(dtype=kc.vec4),
                        inv_mass: kc.array(dtype=float), radius: kc.array(dtype=float), h: float, walls: int,
                        lower: kc.vec3, upper: kc.vec3, ground: int, ground_normal: kc.vec3, ground_offset: float,
                        shape_count: int, mesh_reach: float, shape_type: kc.array(dtype=int),
                        shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                        shape_mesh: kc.array(dtype=kc.uint64), body_shapes: int,
                        body_q: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3),
                        mass: kc.array(dtype=float), inv_dt2: float,
                        p_out: kc.array(dtype=kc.vec3), body_force: kc.array(dtype=kc.vec3),
                        body_torque: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    x = p[i]
    if inv_mass[i] > 0.0:   # as delta_kernel, after the pair sum
        x = correct_position(x, dp_pairs[i], lam[i], wall[i], walls, h, radius[i], mass[i] * inv_dt2, lower, upper,
                             ground, ground_normal, ground_offset, shape_count, mesh_reach, shape_type, shape_body,
                             shape_pos, shape_rot, shape_scale, shape_mesh, body_shapes, body_q, body_com, body_force,
                             body_torque)   # wall[i]: boundary_density at x, from lambda_finish_kernel
    p_out[i] = x


class LaneScratch:
    """The lanes' scratch arrays (solver-owned, reused by every iteration and step; forward only):
    px, py, pz float (N,) [m] (and qx, qy, qz: the other half of sim/pbf_lanes_box.py's double buffer); vx, vy, vz float (N,) [m/s]; sums vec4 (N,) (grad [1/m], rho / rho0); sum_sq float (N,) [1/m^2];
    dp vec3 (N,) [m]; wall vec4 (N,) (the walls' density gradient [1/m] and volume fraction at the
    iteration's positions, pbf_kernels.boundary_density: computed once for both finish kernels)."""

    def __init__(self, n, device):
        self.px, self.py, self.pz = (kc.zeros(n, dtype=float, device=device) for _ in range(3))
        self.vx, self.vy, self.vz = (kc.zeros(n, dtype=float, device=device) for _ in range(3))
        self.qx, self.qy, self.qz = (kc.zeros(n, dtype=float, device=device) for _ in range(3))   # pbf_lanes_box
        self.sums = kc.zeros(n, dtype=kc.vec4, device=device)
        self.sum_sq = kc.zeros(n, dtype=float, device=device)
        self.dp = kc.zeros(n, dtype=kc.vec3, device=device)
        self.wall = kc.zeros(n, dtype=kc.vec4, device=device)


class ModelParticles:
    """The model's per-particle mass [kg], inv_mass [1/kg] and radius [m] arrays (user order)."""

    def __init__(self, model):
        self.mass, self.inv_mass, self.radius = model.particle_mass, model.particle_inv_mass, model.particle_radius


def split_positions(model, p, scratch):
    kc.launch(split_kernel, dim=model.particle_count, inputs=[p], outputs=[scratch.px, scratch.py, scratch.pz],
              device=model.device, record_tape=False)


def compute_lambda(model, p, volume, nbl, h, eps, walls, bounds, bodies, lam, scratch, capacity, uniform=False):
    """pbf_kernels.compute_lambda with the pair sums in lanes (``capacity``: see capacity_for; ``uniform``:
    every entry of ``volume`` is the same, see pair_kernels); leaves ``p`` split into scratch.px/py/pz
    for apply_delta at the same positions."""
    lam_pairs = pair_kernels(capacity, uniform)[0]
    split_positions(model, p, scratch)
    kc.launch(lam_pairs, dim=model.particle_count,
              inputs=[scratch.px, scratch.py, scratch.pz, volume, nbl.nb, nbl.count, h, poly6_coefficient(h),
                      spiky_coefficient(h)],
              outputs=[scratch.sums, scratch.sum_sq], device=model.device, record_tape=False)
    kc.launch(lambda_finish_kernel, dim=model.particle_count,
              inputs=[p, scratch.sums, scratch.sum_sq, h, eps, int(walls), *bounds, *shape_inputs(model),
                      bodies.count, bodies.body_q],
              outputs=[lam, scratch.wall], device=model.device, record_tape=False)


def apply_delta(model, p, volume, nbl, lam, h, scorr_k, scorr_dq, walls, bounds, bodies, dt, p_out, scratch,
                capacity, particles=None, uniform=False):
    """pbf_kernels.apply_delta with the pair sum in lanes; ``scratch`` holds ``p`` split by compute_lambda
    and its wall terms (compute_lambda at the same ``p`` must run first).
    ``particles``: per-particle mass, inv_mass and radius arrays in the order of ``p`` (default the
    model's; sim/pbf_sort.SortedParticles for cell-sorted steps)."""
    particles = ModelParticles(model) if particles is None else particles
    delta_pairs = pair_kernels(capacity)[1]
    k_h2, inv_w = scorr_constants(h, scorr_k, scorr_dq)
    kc.launch(delta_pairs, dim=model.particle_count,
              inputs=[scratch.px, scratch.py, scratch.pz, volume, nbl.nb, nbl.count, lam, h, poly6_coefficient(h),
                      spiky_coefficient(h), k_h2, inv_w],
              outputs=[scratch.dp], device=model.device, record_tape=False)
    kc.launch(delta_finish_kernel, dim=model.particle_count,
              inputs=[p, scratch.dp, lam, scratch.wall, particles.inv_mass, particles.radius, h, int(walls), *bounds,
                      *shape_inputs(model), *bodies.inputs(model, dt, particles.mass)],
              outputs=[p_out, *bodies.outputs()], device=model.device, record_tape=False)


def compute_vorticity(model, p, v, volume, nbl, h, omega, omega_norm, scratch, capacity, uniform=False):
    """pbf_kernels.compute_vorticity in lanes; leaves ``p`` and ``v`` split in ``scratch`` for
    finish_velocity; ``uniform``: as compute_lambda."""
    split_positions(model, p, scratch)
    kc.launch(split_kernel, dim=model.particle_count, inputs=[v], outputs=[scratch.vx, scratch.vy, scratch.vz],
              device=model.device, record_tape=False)
    kc.launch(pair_kernels(capacity, uniform)[2], dim=model.particle_count,
              inputs=[scratch.px, scratch.py, scratch.pz, scratch.vx, scratch.vy, scratch.vz, volume, nbl.nb,
                      nbl.count, h, spiky_coefficient(h)],
              outputs=[omega, omega_norm], device=model.device, record_tape=False)


def finish_velocity(model, p, v, omega, omega_norm, volume, nbl, h, xsph, confinement, dt, v_out, scratch, capacity,
                    split=True, particles=None, uniform=False):
    """pbf_kernels.finish_velocity in lanes; ``split=False``: ``scratch`` already holds ``p`` and ``v``
    (compute_vorticity ran at the same positions and velocities); ``particles``, ``uniform``: as apply_delta."""
    particles = ModelParticles(model) if particles is None else particles
    if split:
        split_positions(model, p, scratch)
        kc.launch(split_kernel, dim=model.particle_count, inputs=[v], outputs=[scratch.vx, scratch.vy, scratch.vz],
                  device=model.device, record_tape=False)
    kc.launch(pair_kernels(capacity, uniform)[3], dim=model.particle_count,
              inputs=[scratch.px, scratch.py, scratch.pz, scratch.vx, scratch.vy, scratch.vz, omega, omega_norm,
                      volume, particles.inv_mass, nbl.nb, nbl.count, h, poly6_coefficient(h),
                      spiky_coefficient(h), float(xsph), float(confinement), float(dt)],
              outputs=[v_out], device=model.device, record_tape=False)
