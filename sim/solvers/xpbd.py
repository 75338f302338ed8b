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
                          xpbd_bending_copy, xpbd_contacts_copy, xpbd_stretch_compliance, xpbd_stretch_copy,
                          xpbd_sweeps, xpbd_velocities)
from .checks import check_dt, check_step_arguments, reports_non_finite


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


def _colour_maps(colours, constraints, inv_mass, code_scale, device):
    """(colour of each constraint (m,), slot (colours, particles)): for each colour and moving
    particle, ``code_scale * constraint + place of the particle in it``, or -1."""
    constraints = np.asarray(constraints, np.int64).reshape(len(constraints), -1) if len(constraints) \
        else np.zeros((0, 1), np.int64)   # a model without cloth: nothing to map
    colour_of = np.full(len(constraints), -1, np.int32)
    slot = np.full((max(len(colours), 1), len(inv_mass)), -1, np.int32)
    for k, colour in enumerate(colours):
        for c in colour.numpy().tolist():
            colour_of[c] = k
            for place, p in enumerate(constraints[c].tolist()):
                if inv_mass[p] > 0:
                    slot[k, p] = code_scale * c + (place if code_scale > 1 else 0)
    return kc.array(colour_of, dtype=kc.int32, device=device), kc.array(slot, dtype=kc.int32, device=device)


def _concatenated(colours, device):
    joined = np.concatenate([c.numpy() for c in colours]) if colours else np.zeros(0, np.int32)
    return kc.array(joined.astype(np.int32), dtype=kc.int32, device=device)


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

    single_launch: run all sweeps of a step in one single-threaded launch (xpbd_sweeps_kernel,
        the default: a step is then three launches) instead of one launch per colour and sweep
        (which spreads a colour over threads; worth it only for very large cloths on idle
        cores).  Both give bit-identical results.

    Differentiable: while a ``kc.Tape`` records, ``step`` runs the same sweeps out of place
    (every colour writes new position and multiplier arrays, kept alive by the tape, see
    sim/xpbd_cloth.py), so gradients flow to the initial state, the control forces, the
    materials (``Model.tri_materials`` tri_ke/tri_ka through the per-edge compliance,
    ``Model.edge_bending_properties``) and through the ground and shape contacts.  The
    recorded step takes ``iterations x (colours + 1)`` launches and arrays of the particle
    count; it gives the same positions as the step off the tape (to float rounding).
    """

    def __init__(self, model, iterations: int = 20, single_launch: bool = True):
        iterations = int(iterations)
        self.single_launch = bool(single_launch)
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
        self.stretch_count = len(edges)
        self.stretch_pairs = kc.array(edges.astype(np.int32).reshape(-1, 2), dtype=kc.int32, device=dev)
        self.stretch_rest = kc.array(rest.astype(np.float32), dtype=float, device=dev)
        # the triangles of each edge (CSR), so the compliance is a kernel of the model's tri_materials
        # (recomputed on a tape: gradients reach tri_ke and tri_ka)
        index = {tuple(e): n for n, e in enumerate(edges.tolist())}
        edge_tris = [[] for _ in range(len(edges))]
        for t, (a, b, c) in enumerate(tris.tolist()):
            for u, v in ((a, b), (b, c), (c, a)):
                edge_tris[index[(min(u, v), max(u, v))]].append(t)
        start = np.cumsum([0] + [len(t) for t in edge_tris]).astype(np.int32)
        self.edge_tri_start = kc.array(start, dtype=kc.int32, device=dev)
        self.edge_tris = kc.array(np.asarray([t for ts in edge_tris for t in ts], np.int32), dtype=kc.int32,
                                  device=dev)
        self.stretch_compliance = kc.zeros(len(edges), dtype=float, device=dev)   # filled by each step
        self.stretch_lambda = kc.zeros(len(edges), dtype=float, device=dev)
        self.stretch_colours = [kc.array(c, dtype=kc.int32, device=dev)
                                for c in colour_constraints(edges, model.particle_count, inv_mass)]
        bend = model.edge_indices.numpy() if model.edge_count else np.zeros((0, 4), np.int32)
        self.bending_lambda = kc.zeros(model.edge_count, dtype=float, device=dev)
        self.bending_colours = [kc.array(c, dtype=kc.int32, device=dev)
                                for c in colour_constraints(bend, model.particle_count, inv_mass)]
        # the colours one after the other: the order of the single-launch sweeps (xpbd_sweeps)
        self.stretch_order = _concatenated(self.stretch_colours, dev)
        self.bending_order = _concatenated(self.bending_colours, dev)
        # for the out-of-place sweeps on a tape: each constraint's colour, each (colour, particle)'s constraint
        self.stretch_colour_of, self.stretch_slot = _colour_maps(self.stretch_colours, edges, inv_mass, 1, dev)
        self.bending_colour_of, self.bending_slot = _colour_maps(self.bending_colours, bend, inv_mass, 4, dev)
        mu = model.material_mu.numpy() if model.material_count else np.zeros(1, np.float32)
        pmat = int(model.particle_material.numpy()[0]) if model.particle_count else 0
        self.ground_mu = 0.5 * (mu[pmat] + mu[model.ground_material])
        smat = model.shape_material.numpy() if model.shape_count else np.zeros(0, np.int32)
        self.shape_mu = kc.array((0.5 * (mu[pmat] + mu[smat])).astype(np.float32), dtype=float, device=dev)

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control`` may be None)."""
        check_step_arguments(model, state_in, state_out, control)
        check_dt(dt, "SolverXPBD")
        if model.particle_count == 0:
            return
        if get_runtime().tape_stack:
            self._step_recorded(model, state_in, state_out, control, dt)
            return
        q = state_out.particle_q
        if self.stretch_count:   # from the model's materials as they are now (like the taped step)
            xpbd_stretch_compliance(model, self.edge_tri_start, self.edge_tris, self.stretch_rest,
                                    self.stretch_compliance)
        xpbd_predict(model, state_in, control, state_out, dt)
        self.stretch_lambda.zero_()
        self.bending_lambda.zero_()
        if self.single_launch:
            xpbd_sweeps(model, self, state_in, q, dt)
        else:
            for _ in range(self.iterations):
                for colour in self.stretch_colours:
                    xpbd_project_stretch(model, colour, self.stretch_pairs, self.stretch_rest,
                                         self.stretch_compliance, self.stretch_lambda, q, dt)
                for colour in self.bending_colours:
                    xpbd_project_bending(model, colour, self.bending_lambda, q, dt)
                xpbd_project_contacts(model, state_in, self.ground_mu, self.shape_mu, q)
        xpbd_velocities(model, state_in, state_out, dt)

    def _step_recorded(self, model, state_in, state_out, control, dt):
        """The step out of place, every launch recorded on the active Tape (see the class docstring)."""
        dev, n = model.device, model.particle_count

        def new(count, dtype):
            return kc.zeros(count, dtype=dtype, device=dev, requires_grad=True)

        compliance = new(self.stretch_count, float)
        if self.stretch_count:
            xpbd_stretch_compliance(model, self.edge_tri_start, self.edge_tris, self.stretch_rest, compliance,
                                    record=True)
        q = new(n, kc.vec3)
        xpbd_predict(model, state_in, control, state_out, dt, q=q, record=True)
        lam_s = new(self.stretch_count, float)
        lam_b = new(model.edge_count, float)
        for k in range(self.iterations):
            for c in range(len(self.stretch_colours)):
                lam_next, q_next = new(self.stretch_count, float), new(n, kc.vec3)
                xpbd_stretch_copy(model, self, c, compliance, lam_s, q, lam_next, q_next, dt)
                lam_s, q = lam_next, q_next
            for c in range(len(self.bending_colours)):
                lam_next, q_next = new(model.edge_count, float), new(n, kc.vec3)
                xpbd_bending_copy(model, self, c, lam_b, q, lam_next, q_next, dt)
                lam_b, q = lam_next, q_next
            q_next = state_out.particle_q if k == self.iterations - 1 else new(n, kc.vec3)
            xpbd_contacts_copy(model, state_in, self.ground_mu, self.shape_mu, q, q_next)
            q = q_next
        xpbd_velocities(model, state_in, state_out, dt, record=True)
