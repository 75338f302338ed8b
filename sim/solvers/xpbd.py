"""SolverXPBD: extended position-based dynamics for cloth (stiff cloth at large steps).

See sim/xpbd_cloth.py for the constraint projections and docs/cloth.md for when to use
which cloth solver.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
from kernelcore.device import get_runtime

from ..worlds import require_one_environment, static_shapes_in_environments
from ..xpbd_cloth import (xpbd_predict, xpbd_project_bending, xpbd_project_contacts, xpbd_project_stretch,
                          xpbd_velocities)
from .checks import check_step_arguments, reports_non_finite


def colour_constraints(constraints, particle_count, inv_mass=None):
    """Greedy colouring: lists of constraint indices, no two in a list sharing a particle.

    ``constraints``: (m, k) particle indices.  Particles with inverse mass 0 never move, so
    they do not conflict.  Returns a list of int32 numpy arrays.
    """
    if len(constraints) == 0:   # a model without cloth (particles only): nothing to colour
        return []
    constraints = np.asarray(constraints, np.int64).reshape(len(constraints), -1)
    used = [set() for _ in range(particle_count)]   # colours already touching each particle
    colours = []
    for c, parts in enumerate(constraints.tolist()):
        movers = [p for p in parts if inv_mass is None or inv_mass[p] > 0]
        taken = set().union(*(used[p] for p in movers)) if movers else set()
        k = 0
        while k in taken:
            k += 1
        if k == len(colours):
            colours.append([])
        colours[k].append(c)
        for p in movers:
            used[p].add(k)
    return [np.asarray(c, np.int32) for c in colours]


def mesh_edges(tri_indices):
    """Unique undirected edges (n, 2) of triangles (m, 3), in order of first appearance."""
    seen = {}
    for a, b, c in np.asarray(tri_indices).reshape(-1, 3).tolist():
        for u, v in ((a, b), (b, c), (c, a)):
            seen.setdefault((min(u, v), max(u, v)), None)
    return np.asarray(list(seen), np.int64).reshape(-1, 2)


class SolverXPBD:
    """XPBD for cloth: membrane as edge-length constraints, dihedral bending, contact projection.

    Args:
        model: the :class:`sim.Model` (triangles and bending edges from the cloth builder).
        iterations: Gauss-Seidel sweeps per step.  Multipliers are kept across the sweeps,
            so once converged the result does not change with more iterations.

    Material mapping (an approximation of the StVK membrane of SolverSemiImplicit, exact
    for small uniaxial strain along one edge): every mesh edge e is a distance constraint of
    stiffness ``k_e = sum_{t contains e} (2 tri_ke_t + tri_ka_t) A_t / (3 L_e^2)`` [N/m]
    (compliance 1 / k_e), each triangle sharing its energy equally among its three edges;
    bending edges are constraints ``theta - rest`` with compliance ``1 / edge_ke``.
    ``tri_kd``/``edge_kd`` are not used (the implicit step is already dissipative; the
    model's ``particle_damping`` applies).  Contacts: the ground and static spheres, boxes,
    capsules and planes are projected once per sweep with Coulomb friction (``mu`` of the
    shape's and the particle's materials averaged).

    Not differentiable (positions are updated in place across sweeps): calling ``step``
    while a ``kc.Tape`` records raises an error; use SolverSemiImplicit for gradients.
    """

    def __init__(self, model, iterations: int = 20):
        iterations = int(iterations)
        if iterations < 1:
            raise ValueError(f"SolverXPBD: iterations must be >= 1, got {iterations}")
        if static_shapes_in_environments(model):
            require_one_environment(model, "SolverXPBD", "contact with static shapes of one environment")
        self.model = model
        self.iterations = iterations
        dev = model.device
        inv_mass = model.particle_inv_mass.numpy()
        tris = model.tri_indices.numpy() if model.tri_count else np.zeros((0, 3), np.int32)
        edges = mesh_edges(tris)
        q = model.particle_q.numpy().astype(np.float64)
        rest = np.linalg.norm(q[edges[:, 0]] - q[edges[:, 1]], axis=1) if len(edges) else np.zeros(0)
        stiffness = np.zeros(len(edges))
        index = {tuple(e): n for n, e in enumerate(edges.tolist())}
        if model.tri_count:
            mat = model.tri_materials.numpy().astype(np.float64)
            area = model.tri_areas.numpy().astype(np.float64)
            for t, (a, b, c) in enumerate(tris.tolist()):
                for u, v in ((a, b), (b, c), (c, a)):
                    n = index[(min(u, v), max(u, v))]
                    stiffness[n] += (2.0 * mat[t, 0] + mat[t, 1]) * area[t] / (3.0 * rest[n] ** 2)
        compliance = np.where(stiffness > 0, 1.0 / np.maximum(stiffness, 1e-30), 1e30)
        self.stretch_count = len(edges)
        self.stretch_pairs = kc.array(edges.astype(np.int32).reshape(-1, 2), dtype=kc.int32, device=dev)
        self.stretch_rest = kc.array(rest.astype(np.float32), dtype=float, device=dev)
        self.stretch_compliance = kc.array(compliance.astype(np.float32), dtype=float, device=dev)
        self.stretch_lambda = kc.zeros(len(edges), dtype=float, device=dev)
        self.stretch_colours = [kc.array(c, dtype=kc.int32, device=dev)
                                for c in colour_constraints(edges, model.particle_count, inv_mass)]
        bend = model.edge_indices.numpy() if model.edge_count else np.zeros((0, 4), np.int32)
        self.bending_lambda = kc.zeros(model.edge_count, dtype=float, device=dev)
        self.bending_colours = [kc.array(c, dtype=kc.int32, device=dev)
                                for c in colour_constraints(bend, model.particle_count, inv_mass)]
        mu = model.material_mu.numpy() if model.material_count else np.zeros(1, np.float32)
        pmat = int(model.particle_material.numpy()[0]) if model.particle_count else 0
        self.ground_mu = 0.5 * (mu[pmat] + mu[model.ground_material])
        smat = model.shape_material.numpy() if model.shape_count else np.zeros(0, np.int32)
        self.shape_mu = kc.array((0.5 * (mu[pmat] + mu[smat])).astype(np.float32), dtype=float, device=dev)

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control`` may be None)."""
        check_step_arguments(model, state_in, state_out, control)
        if get_runtime().tape_stack:
            raise RuntimeError("SolverXPBD.step: XPBD is not differentiable (positions are updated in place); "
                               "record SolverSemiImplicit on a kc.Tape instead")
        if model.particle_count == 0:
            return
        q = state_out.particle_q
        xpbd_predict(model, state_in, control, state_out, dt)
        self.stretch_lambda.zero_()
        self.bending_lambda.zero_()
        for _ in range(self.iterations):
            for colour in self.stretch_colours:
                xpbd_project_stretch(model, colour, self.stretch_pairs, self.stretch_rest, self.stretch_compliance,
                                     self.stretch_lambda, q, dt)
            for colour in self.bending_colours:
                xpbd_project_bending(model, colour, self.bending_lambda, q, dt)
            xpbd_project_contacts(model, state_in, self.ground_mu, self.shape_mu, q)
        xpbd_velocities(model, state_in, state_out, dt)
