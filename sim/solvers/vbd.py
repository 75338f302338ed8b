"""SolverVBD: vertex block descent for cloth (stiff cloth at large time steps).

See sim/vbd_cloth.py for the energies and the per-vertex Newton step, and docs/cloth.md
for when to use which cloth solver.
"""
from __future__ import annotations

import warnings

import numpy as np

import kernelcore as kc
from kernelcore.device import get_runtime

from ..worlds import require_one_environment, static_shapes_in_environments
from ..vbd_cloth import (vbd_advance_bodies, vbd_chebyshev, vbd_chebyshev_copy, vbd_predict, vbd_solve_colour,
                        vbd_solve_colour_copy, vbd_velocities)
from ..vbd_self_contact import find_self_contact_pairs
from .checks import check_dt, check_step_arguments, reports_non_finite


def vertex_adjacency(elements, particle_count):
    """CSR of the elements around each particle: (start (n + 1,), pairs (k, 2) = (element, local corner)).

    ``elements``: (m, c) particle indices.  Negative indices (none) are skipped.
    """
    elements = np.asarray(elements, np.int64).reshape(len(elements), -1)
    m, c = elements.shape
    owner = np.repeat(np.arange(m), c)
    corner = np.tile(np.arange(c), m)
    vert = elements.ravel()
    keep = vert >= 0
    owner, corner, vert = owner[keep], corner[keep], vert[keep]
    order = np.argsort(vert, kind="stable")
    start = np.zeros(particle_count + 1, np.int64)
    np.add.at(start, vert + 1, 1)
    start = np.cumsum(start)
    pairs = np.stack([owner[order], corner[order]], 1) if len(order) else np.zeros((0, 2), np.int64)
    return start.astype(np.int32), pairs.astype(np.int32)


def colour_vertices(element_lists, particle_count, movable):
    """Greedy vertex colouring: lists of movable particles, no two of one list sharing an element.

    ``element_lists``: arrays (m, c) of particle indices (triangles, bending edges).
    ``movable``: bool (n,) — particles of mass 0 are not coloured (they never move).
    Returns a list of int32 arrays, largest first.
    """
    neighbours = [set() for _ in range(particle_count)]
    for elements in element_lists:
        for row in np.asarray(elements, np.int64).reshape(len(elements), -1).tolist():
            for a in row:
                neighbours[a].update(row)
    colour = np.full(particle_count, -1, np.int64)
    if particle_count == 0:
        return []
    # highest degree first: fewer colours than the index order on irregular meshes
    for v in sorted(np.nonzero(movable)[0].tolist(), key=lambda v: -len(neighbours[v])):
        taken = {colour[u] for u in neighbours[v]}
        k = 0
        while k in taken:
            k += 1
        colour[v] = k
    lists = [np.nonzero(colour == k)[0].astype(np.int32) for k in range(colour.max() + 1)]
    return sorted(lists, key=len, reverse=True)


def _warn_unhandled(model):
    """Say which parts of ``model`` SolverVBD leaves out (rather than drop them silently)."""
    left_out = []
    if model.tri_count and np.any(model.tri_materials.numpy()[:, 3:5] > 0):
        left_out.append("air drag/lift (tri_drag, tri_lift)")
    if model.shape_count:
        body = model.shape_body.numpy()
        kind = model.shape_type.numpy()
        if np.any((body >= 0) & (kind == 3)):   # MESH
            left_out.append(f"{int(np.sum((body >= 0) & (kind == 3)))} mesh shapes on bodies")
    if left_out:
        warnings.warn("SolverVBD ignores " + ", ".join(left_out) + " (SolverSemiImplicit handles them)",
                      stacklevel=3)


class VBDStepContext:
    """What one step's sweeps read besides the model: body poses at the step's end and body velocities,
    and with self-contact the pair lists and step bounds of the step (kept alive by a Tape's launches)."""

    def __init__(self, body_q_end, body_qd, pairs=None, bound=None, dummy=None):
        self.body_q_end = body_q_end
        self.body_qd = body_qd
        self.pairs = pairs
        self.slots = pairs.slots if pairs is not None else 0
        self.count = pairs.count if pairs is not None else dummy[0]
        self.pairs_array = pairs.pairs if pairs is not None else dummy[1]
        self.bound = bound if bound is not None else dummy[2]


class SolverVBD:
    """Vertex block descent (Chen et al. 2024) for cloth: implicit Euler, one 3x3 Newton step per vertex.

    Args:
        model: the :class:`sim.Model` (triangles and bending edges from the cloth builder).
        iterations: Gauss-Seidel sweeps over the vertex colours per step.  At convergence
            every vertex is at a stationary point of the step's incremental potential, so the
            result does not change with more iterations.
        contact_ke: penalty stiffness of the contacts with the ground and static shapes [N/m]
            (a particle rests ``m g / contact_ke`` deep).
        friction_eps: tangential motion per step below which friction acts as a spring [m].
        chebyshev_rho: spectral radius estimate for Chebyshev acceleration in ``[0, 1)``
            (0: off; 0.9 to 0.95 typical).  It changes the path, not the fixed point.

    The material is the one of SolverSemiImplicit: StVK membrane (``tri_ke``, ``tri_ka``,
    damping ``tri_kd``), dihedral bending (``edge_ke``, ``edge_kd``), ``particle_damping``
    as drag, ``control.particle_f_ext``.  Contacts (penalty ``contact_ke``, Coulomb friction
    ``mu``, the average of the particle's and the shape's materials): the ground, static
    shapes, static triangle meshes, and shapes on bodies.  Bodies are kinematic here: each
    step moves them with their velocity (``state_out.body_q`` from ``state_in``'s pose and
    ``body_qd``); the cloth does not push them.  Cloth attachments
    (``add_cloth_attachment``) pull their particles towards the anchors on those bodies.
    Air (``tri_drag``/``tri_lift``) and mesh shapes on bodies are not handled (a warning
    says so; see docs/cloth.md).

        self_contact: cloth self-collision (None/False: off; True: ``sim.ClothSelfContact(model)``;
            or a :class:`sim.ClothSelfContact` for its ``thickness``, ``ke`` [N/m] and
            ``search_radius``): vertex-triangle and edge-edge penalty energies inside each
            vertex's Newton step, and every vertex's displacement over a step limited to 0.4 of
            its distance to the nearest element, so that the cloth never passes through itself
            (see sim/vbd_self_contact.py).  Not combined with ``chebyshev_rho > 0``.

    Differentiable: while a ``kc.Tape`` records, ``step`` runs the same sweeps out of place
    (every colour sweep writes a new position array, kept alive by the tape), so gradients
    flow through the fixed number of iterations to the initial state, the materials and
    the rest shape; slower (each sweep touches every particle) and memory grows with
    ``iterations x colours x particles`` per step.  Off a tape the sweeps run in place.
    """

    def __init__(self, model, iterations: int = 10, contact_ke: float = 1.0e4, friction_eps: float = 1.0e-4,
                 chebyshev_rho: float = 0.0, self_contact=None):
        iterations = int(iterations)
        if iterations < 1:
            raise ValueError(f"SolverVBD: iterations must be >= 1, got {iterations}")
        if not (np.isfinite(contact_ke) and contact_ke >= 0):
            raise ValueError(f"SolverVBD: contact_ke must be finite and >= 0 [N/m], got {contact_ke!r}")
        if not (np.isfinite(friction_eps) and friction_eps > 0):
            raise ValueError(f"SolverVBD: friction_eps must be finite and > 0 [m], got {friction_eps!r}")
        if not (0.0 <= chebyshev_rho < 1.0):
            raise ValueError(f"SolverVBD: chebyshev_rho must be in [0, 1), got {chebyshev_rho!r}")
        if self_contact is not None and self_contact is not False and chebyshev_rho > 0.0:
            raise ValueError(f"SolverVBD: self_contact cannot be combined with chebyshev_rho > 0 (the "
                             f"over-relaxation would step past the no-crossing bound), got {chebyshev_rho!r}")
        _warn_unhandled(model)
        if static_shapes_in_environments(model):
            require_one_environment(model, "SolverVBD", "contact with static shapes of one environment")
        if self_contact is not None and self_contact is not False:
            require_one_environment(model, "SolverVBD", "cloth self-contact")
        self.model = model
        self.iterations = iterations
        self.contact_ke = float(contact_ke)
        self.friction_eps = float(friction_eps)
        self.chebyshev_rho = float(chebyshev_rho)
        dev = model.device
        n = model.particle_count
        tris = model.tri_indices.numpy() if model.tri_count else np.zeros((0, 3), np.int32)
        bend = model.edge_indices.numpy() if model.edge_count else np.zeros((0, 4), np.int32)
        start, adj = vertex_adjacency(tris, n)
        self.tri_start = kc.array(start, dtype=kc.int32, device=dev)
        self.tri_adj = kc.array(adj.reshape(-1, 2), dtype=kc.int32, device=dev)
        start, adj = vertex_adjacency(bend, n)
        self.edge_start = kc.array(start, dtype=kc.int32, device=dev)
        self.edge_adj = kc.array(adj.reshape(-1, 2), dtype=kc.int32, device=dev)
        movable = model.particle_inv_mass.numpy() > 0 if n else np.zeros(0, bool)
        self.colours = [kc.array(c, dtype=kc.int32, device=dev) for c in colour_vertices([tris, bend], n, movable)]
        self.movers = kc.array(np.nonzero(movable)[0].astype(np.int32), dtype=kc.int32, device=dev)
        colour_of = np.full(n, -1, np.int32)
        for k, c in enumerate(self.colours):
            colour_of[c.numpy()] = k
        self.colour_of = kc.array(colour_of, dtype=kc.int32, device=dev)
        self.all_particles = kc.array(np.arange(n, dtype=np.int32), dtype=kc.int32, device=dev)
        self.inertia = kc.zeros(n, dtype=kc.vec3, device=dev)
        self._start = kc.zeros(n, dtype=kc.vec3, device=dev)
        self._prev = kc.zeros(n, dtype=kc.vec3, device=dev)
        mu = model.material_mu.numpy() if model.material_count else np.zeros(1, np.float32)
        pmat = int(model.particle_material.numpy()[0]) if n else 0
        self.ground_mu = 0.5 * (mu[pmat] + mu[model.ground_material])
        smat = model.shape_material.numpy() if model.shape_count else np.zeros(0, np.int32)
        self.shape_mu = kc.array((0.5 * (mu[pmat] + mu[smat])).astype(np.float32), dtype=float, device=dev)
        self._init_colliders(model)
        self._init_self_contact(model, self_contact)

    def _init_colliders(self, model):
        """Static meshes, body data and the attachments around each particle (CSR)."""
        dev, n = model.device, model.particle_count
        self.mesh_count = len(model.mesh_shape_indices)
        self.mesh_shapes = model.mesh_shapes if self.mesh_count else kc.zeros(0, dtype=kc.int32, device=dev)
        self.shape_mesh = model.shape_mesh if model.shape_count else kc.zeros(0, dtype=kc.uint64, device=dev)
        self.body_com = model.body_com if model.body_count else kc.zeros(0, dtype=kc.vec3, device=dev)
        self._no_body_q = kc.zeros(0, dtype=kc.transform, device=dev)
        self._no_body_qd = kc.zeros(0, dtype=kc.spatial_vector, device=dev)
        na = getattr(model, "attachment_count", 0)
        if na:
            start, adj = vertex_adjacency(model.attachment_particle.numpy().reshape(na, 1), n)
            self.att_body, self.att_anchor = model.attachment_body, model.attachment_anchor
            self.att_props = model.attachment_properties
        else:
            start, adj = np.zeros(n + 1, np.int32), np.zeros((0, 2), np.int32)
            self.att_body = kc.zeros(0, dtype=kc.int32, device=dev)
            self.att_anchor = kc.zeros(0, dtype=kc.vec3, device=dev)
            self.att_props = kc.zeros((0, 2), dtype=float, device=dev)
        self.att_start = kc.array(start, dtype=kc.int32, device=dev)
        self.att_adj = kc.array(adj.reshape(-1, 2), dtype=kc.int32, device=dev)

    def _init_self_contact(self, model, self_contact):
        dev, n = model.device, model.particle_count
        if self_contact is None or self_contact is False:
            self.self_contact = None
        else:
            from ..cloth_self_contact import ClothSelfContact

            self.self_contact = ClothSelfContact(model) if self_contact is True else self_contact
        sc = self.self_contact
        self.sc_edges = sc.edges if sc is not None else kc.zeros((0, 2), dtype=kc.int32, device=dev)
        self.sc_thickness = sc.thickness if sc is not None else 0.0
        self.sc_ke = sc.ke if sc is not None else 0.0
        self.scratch = kc.zeros(n, dtype=kc.vec3, device=dev)
        self._pairs = None
        self._no_pairs = (kc.zeros(0, dtype=kc.int32, device=dev), kc.zeros((0, 3), dtype=kc.int32, device=dev),
                          kc.zeros(0, dtype=float, device=dev))

    def _context(self, model, state_in, state_out, dt, taping):
        """Advance the bodies and, with self-contact, find the step's pairs and bounds at ``state_in``."""
        if model.body_count:
            vbd_advance_bodies(model, state_in, state_out, dt, record=taping)
            body_q_end, body_qd = state_out.body_q, state_in.body_qd
        else:
            body_q_end, body_qd = self._no_body_q, self._no_body_qd
        sc = self.self_contact
        if sc is None:
            return VBDStepContext(body_q_end, body_qd, dummy=self._no_pairs)
        sc.refit(model, state_in)
        bound = sc.step_bound(model, state_in, state_out)
        # on a Tape every step keeps its own lists (the reverse pass reads them); off it they are reused
        pairs = find_self_contact_pairs(model, sc, state_in.particle_q, lists=None if taping else self._pairs)
        if not taping:
            self._pairs = pairs
        return VBDStepContext(body_q_end, body_qd, pairs, bound, dummy=self._no_pairs)

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control`` may be None)."""
        check_step_arguments(model, state_in, state_out, control)
        check_dt(dt, "SolverVBD")
        if model.particle_count == 0:
            return
        if get_runtime().tape_stack:
            self._step_recorded(model, state_in, state_out, control, dt)
            return
        ctx = self._context(model, state_in, state_out, dt, taping=False)
        q = state_out.particle_q
        vbd_predict(model, state_in, control, q, self.inertia, dt)
        rho2, omega = self.chebyshev_rho ** 2, 1.0
        for k in range(self.iterations):
            if rho2 > 0.0:
                self._start.assign(q)
                if k == 0:
                    self._prev.assign(q)
            for c in range(len(self.colours)):
                vbd_solve_colour(model, self, c, state_in.particle_q, q, dt, ctx)
            if rho2 > 0.0 and self.movers.shape[0]:
                # Chebyshev semi-iterative weights (Wang 2015): 1, 2 / (2 - rho^2), 4 / (4 - rho^2 omega), ...
                omega = 1.0 if k == 0 else (2.0 / (2.0 - rho2) if k == 1 else 4.0 / (4.0 - rho2 * omega))
                vbd_chebyshev(model, self.movers, self._start, omega, self._prev, q)
        vbd_velocities(model, state_in, state_out, dt)

    def _step_recorded(self, model, state_in, state_out, control, dt):
        """The step out of place, every launch recorded on the active Tape (see the class docstring)."""
        dev, n = model.device, model.particle_count

        def positions():
            return kc.zeros(n, dtype=kc.vec3, device=dev, requires_grad=True)

        ctx = self._context(model, state_in, state_out, dt, taping=True)
        inertia = positions()
        q = positions()
        vbd_predict(model, state_in, control, q, inertia, dt, record=True)
        rho2, omega = self.chebyshev_rho ** 2, 1.0
        prev = q
        sweeps = self.iterations * len(self.colours)
        done = 0
        for k in range(self.iterations):
            start = q
            for c in range(len(self.colours)):
                done += 1
                last = done == sweeps and rho2 == 0.0
                q_next = state_out.particle_q if last else positions()
                vbd_solve_colour_copy(model, self, c, state_in.particle_q, inertia, q, q_next, dt, ctx)
                q = q_next
            if rho2 > 0.0:
                omega = 1.0 if k == 0 else (2.0 / (2.0 - rho2) if k == 1 else 4.0 / (4.0 - rho2 * omega))
                q_next = state_out.particle_q if k == self.iterations - 1 else positions()
                vbd_chebyshev_copy(model, q, prev, omega, q_next)
                q = q_next
            prev = start
        if q is not state_out.particle_q:   # no colour (nothing moves): the prediction is the result
            kc.copy(state_out.particle_q, q)
        vbd_velocities(model, state_in, state_out, dt, record=True)
