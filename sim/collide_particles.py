"""Particle-particle contacts (DEM) found through a geometry.HashGrid (kernels + launchers).

Every particle gathers the forces from its neighbours (each pair is evaluated from both
sides with the same law, so momentum is conserved and no atomics are needed between
threads).  Threads run in the grid's cell order for memory locality.

Environments (``Model.particle_world``): pairs of two different environments are skipped.
When several environments overlap in space (sweep variants packed at the same place), the
grid is built over positions shifted by a per-environment offset, so that each query meets
its own environment's particles, not K times as many; forces use the true positions.
"""
from __future__ import annotations

import math

import kernelcore as kc
import geometry  # noqa: F401  (adds the hash_grid_* builtins)
from kernelcore.device import get_runtime

from .contact import material_inputs, mixed_contact_force


@kc.func
def pair_force(i: int, j: int, x: kc.vec3, v: kc.vec3, r: float, w: float, mi: int, wi: int,
               q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
               inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int),
               particle_world: kc.array(dtype=int),
               material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
               material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
               material_cohesion_distance: kc.array(dtype=float), reach: float, dt: float) -> kc.vec3:
    """Force [N] on particle i (position x, velocity v, radius r, inverse mass w > 0) from particle j.

    reach: the largest cohesion distance of any material [m].
    wi: i's environment; particles of two different environments never touch (-1: shared).
    """
    f = kc.vec3(0.0, 0.0, 0.0)
    wj = particle_world[j]
    if j != i and (wi == wj or wi < 0 or wj < 0):
        d = x - q[j]
        dist = kc.length(d)
        gap = dist - r - radius[j]
        v_rel = v - qd[j]
        # cheap reject: no force beyond the cohesion range plus half the smoothing window
        if gap < reach + 0.5 * dt * kc.length(v_rel) and dist > 1.0e-9:
            f = mixed_contact_force(d / dist, gap, v_rel, w + inv_mass[j], mi, particle_material[j], material_ke,
                                    material_damping_ratio, material_mu, material_cohesion,
                                    material_cohesion_distance, dt)
    return f


@kc.kernel
def eval_particle_contacts_kernel(
        grid: kc.uint64, grid_q: kc.array(dtype=kc.vec3), q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
        radius: kc.array(dtype=float), inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int),
        particle_world: kc.array(dtype=int),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), search: float, reach: float, dt: float,
        f: kc.array(dtype=kc.vec3)):
    # grid_q: the positions the grid was built over (q, or q shifted per environment)
    t = kc.tid()
    i = kc.hash_grid_point_id(grid, t)
    if i >= 0:
        w = inv_mass[i]
        if w > 0.0:
            x = q[i]
            v = qd[i]
            r = radius[i]
            mi = particle_material[i]
            wi = particle_world[i]
            fi = kc.vec3(0.0, 0.0, 0.0)
            query = kc.hash_grid_query(grid, grid_q[i], r + search)
            j = int(0)
            while kc.hash_grid_query_next(query, j):
                fi = fi + pair_force(i, j, x, v, r, w, mi, wi, q, qd, radius, inv_mass, particle_material,
                                     particle_world, material_ke,
                                     material_damping_ratio, material_mu, material_cohesion,
                                     material_cohesion_distance, reach, dt)
            f[i] += fi


@kc.kernel
def shift_points_kernel(q: kc.array(dtype=kc.vec3), shift: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    out[i] = q[i] + shift[i]


@kc.kernel
def eval_particle_contacts_brute_kernel(
        n: int, q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
        inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int), particle_world: kc.array(dtype=int),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), reach: float, dt: float, f: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    w = inv_mass[i]
    if w > 0.0:
        x = q[i]
        v = qd[i]
        r = radius[i]
        mi = particle_material[i]
        wi = particle_world[i]
        fi = kc.vec3(0.0, 0.0, 0.0)
        for j in range(n):
            fi = fi + pair_force(i, j, x, v, r, w, mi, wi, q, qd, radius, inv_mass, particle_material,
                                 particle_world, material_ke, material_damping_ratio, material_mu, material_cohesion,
                                 material_cohesion_distance, reach, dt)
        f[i] += fi


def contact_search_distance(model) -> float:
    """Largest centre distance minus own radius at which a neighbour can exert a force [m].

    The other particle's radius, the cohesion range, and a margin of a tenth of a radius
    for the onset smoothing window of sim/contact.py (half the distance a contact closes
    in one step: a stable step moves particles much less than that).
    """
    return model.particle_max_radius * 1.1 + model.material_max_cohesion_distance


def make_particle_grid(model, grid_dim=None):
    """A geometry.HashGrid sized for the model's particles (``grid_dim`` cells per axis, auto when None)."""
    if grid_dim is None:
        grid_dim = int(min(128, max(8, 2 ** math.ceil(math.log2(max(1.0, 1.5 * model.particle_count ** (1 / 3)))))))
    grid = geometry.HashGrid(grid_dim, grid_dim, grid_dim, device=model.device)
    grid.reserve(model.particle_count)
    return grid


def world_grid_shift(model, grid, cell):
    """Per-particle grid offsets [m] (vec3, (N,)) that spread overlapping environments over the
    grid's hash table, or None when the particles are in at most one environment or some are
    shared (world -1).

    Environment w moves by ``cell * dim * frac(w * alpha)`` per axis (a Weyl sequence with
    irrational ``alpha``): spread evenly over the periodic table whatever the count.  Cached
    on the grid per cell size.
    """
    cached = getattr(grid, "_world_shift", None)
    if cached is not None and cached[0] == cell and cached[1] == model.particle_count:
        return cached[2]
    import numpy as np

    world = model.particle_world.numpy()
    if len(np.unique(world[world >= 0])) <= 1 or (world < 0).any():
        shift = None  # one environment, or shared particles that every environment's queries must meet
    else:
        alpha = np.array([0.6180339887, 0.7548776662, 0.5698402910])
        dims = np.array([grid.dim_x, grid.dim_y, grid.dim_z], np.float64)
        w = np.maximum(world, 0).astype(np.float64)[:, None]
        off = cell * dims * np.mod(w * alpha, 1.0)
        shift = kc.array(off.astype(np.float32), dtype=kc.vec3, device=model.device)
    grid._world_shift = (cell, model.particle_count, shift)
    return shift


def _build_off_tape(grid, points, cell, shift=None, shifted=None):
    """grid.build without recording its (non-differentiable) build launch on an active Tape.

    The build kernel has no adjoint, and a recorded launch without one makes
    Tape.backward() fail; the neighbour lists need no gradient anyway.
    """
    stack = get_runtime().tape_stack
    saved = stack[:]
    stack.clear()
    try:
        if shift is not None:
            kc.launch(shift_points_kernel, dim=len(points), inputs=[points, shift], outputs=[shifted],
                      device=points.device)
            points = shifted
        grid.build(points, cell)
    finally:
        stack[:] = saved


def _shifted_buffer(grid, q):
    """The array the shifted positions go into (kept on the grid; a new one per launch on a Tape,
    so that each recorded launch keeps its own)."""
    buf = getattr(grid, "_shifted_q", None)
    if buf is None or len(buf) != len(q) or get_runtime().tape_stack:
        buf = kc.empty(len(q), dtype=kc.vec3, device=q.device)
        grid._shifted_q = buf
    return buf


def eval_particle_contacts(model, state, forces, dt, grid):
    """Add particle-particle contact forces [N] of ``state`` to ``forces`` (vec3, (n,)).

    Rebuilds ``grid`` (a geometry.HashGrid) over ``state.particle_q`` first.  On a Tape the
    rebuild is recorded too, so the adjoint of this launch sees the same neighbours.
    """
    n = model.particle_count
    if n == 0:
        return
    search = contact_search_distance(model)
    cell = model.particle_max_radius + search
    q = state.particle_q
    shift = world_grid_shift(model, grid, cell)
    grid_q = q if shift is None else _shifted_buffer(grid, q)
    _build_off_tape(grid, q, cell, shift, grid_q)
    inputs = [grid.id, grid_q, q, state.particle_qd, model.particle_radius, model.particle_inv_mass,
              model.particle_material,
              model.particle_world, *material_inputs(model), search, model.material_max_cohesion_distance, float(dt)]
    kc.launch(eval_particle_contacts_kernel, dim=n, inputs=inputs, outputs=[forces], device=model.device)
    tapes = get_runtime().tape_stack
    if tapes:
        # runs just before this launch's adjoint in the reverse pass: restore the grid it used
        tapes[-1].record_func(lambda: _build_off_tape(grid, q, cell, shift, grid_q), [])


def eval_particle_contacts_brute(model, state, forces, dt):
    """eval_particle_contacts by testing all pairs (O(n^2)): a reference and for tiny scenes."""
    n = model.particle_count
    if n == 0:
        return
    kc.launch(eval_particle_contacts_brute_kernel, dim=n,
              inputs=[n, state.particle_q, state.particle_qd, model.particle_radius, model.particle_inv_mass,
                      model.particle_material, model.particle_world, *material_inputs(model),
                      model.material_max_cohesion_distance,
                      float(dt)],
              outputs=[forces], device=model.device)
