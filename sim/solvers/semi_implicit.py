"""Semi-implicit (symplectic) Euler for particles and rigid bodies: gravity, drag, springs, contacts.

Forces of one step are evaluated at ``state_in`` and accumulated in
``state_out.particle_f``, then velocities and positions are advanced into
``state_out``.  ``state_in`` is only read, nothing is allocated per step and nothing
is read back to the host, so a Tape records a step and replays its adjoint.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from ..worlds import require_one_environment
from ..body_integrate import eval_body_control_forces, integrate_bodies, zero_body_forces
from ..contact_limits import warn_if_capped
from ..collide_body_mesh import eval_particle_body_mesh_contacts, make_body_mesh_contacts
from ..collide_bodies import body_static_contact_capacity, body_static_pairs, eval_body_static_contacts
from ..contacts import OVERFLOW_FAMILIES, check_contact_overflow, state_contacts
from ..collide_shapes import eval_particle_shape_contacts
from ..joint_forces import check_maximal_joints, eval_joint_forces
from ..integrate import eval_control_forces, integrate_particles, zero_forces
from ..springs import eval_springs
from ..cloth_forces import eval_cloth_forces
from ..cloth_attachment import eval_cloth_attachments
from ..toi import MAX_IMPACTS, TOI_STATIC_KINDS, body_toi_shapes, integrate_bodies_toi, integrate_particles_toi
from ..toi_shapes import SweptBodyShapes, body_shape_toi_all_shapes, body_shape_toi_shapes, integrate_shape_bodies_toi
from ..toi_body_pairs import BodyPairToiShapes, body_pair_toi, needs_body_pair_toi, warn_unswept_bodies
from .checks import check_dt, check_step_arguments, reports_non_finite


def _refuse_mixed_environments(solver, model):
    """The features of this solver whose kernels do not read particle_world/body_world/shape_world
    raise when the model holds several environments (sim/worlds.py)."""
    where = type(solver).__name__
    if solver.toi:
        require_one_environment(model, where, "toi=True (time of impact)")
    if solver.self_contact is not None:
        require_one_environment(model, where, "cloth self-contact")
    if solver.body_mesh_contacts is not None or (model.body_mesh_shape_indices and model.particle_count):
        require_one_environment(model, where, "contact with mesh shapes on or against bodies")


class SolverSemiImplicit:
    """Explicit forces + semi-implicit Euler integration of particles.

    Args:
        model: the :class:`sim.Model` to simulate.
        particle_contacts: also collide particles with each other (DEM) through a
            ``geometry.HashGrid`` rebuilt every step.
        grid_dim: cells per axis of that hash grid (None: chosen from the particle
            count; the grid wraps around, so its size only affects speed).
        brute_force_contacts: find particle pairs by testing all pairs instead of a
            hash grid (O(n^2): a reference for tests and tiny scenes).
        toi: time-of-impact contacts (sim/toi.py) for particles and single-sphere bodies
            against the ground and static planes, spheres and boxes (up to four impacts per
            step), and (sim/toi_shapes.py) for box, capsule, mesh and compound (several spheres,
            boxes, capsules, meshes) bodies against the ground and static planes, spheres, boxes,
            capsules and triangle meshes (sim/toi_mesh.py, sim/toi_mesh_body.py), and
            (sim/toi_body_pairs.py, with sim/toi_mesh_pairs.py for mesh shapes) for impacts
            between two such bodies, instead of penalty forces: nothing tunnels, bounces have
            exactly the material's restitution at any step, and gradients through a bounce are
            those of the real bounce.  Other contacts (slow contacts between swept bodies other
            than two spheres; particles against static meshes; particle pairs) stay penalty
            contacts.
        max_impacts: with ``toi``, body-body impacts per body per step (an integer >= 1, default 4):
            after the earliest impacts the rest of the step is swept again with the new velocities,
            up to this many passes (sim/toi_body_pairs.py; a ball between two free plates, Newton's
            cradle).  1: one body-body impact per body and step, two single spheres then meeting in
            sim/toi.py.  Impacts with static colliders have their own bound (four per step).

    After a step, ``solver.contacts`` (the same object as ``state_out.contacts``, see
    sim/contacts.py) holds the body-static contacts the step found, and
    ``solver.body_pair_contacts`` (``state_out.body_pair_contacts``) the body-body ones.

    Which to pick: penalty contacts (the default) give resting contact, rolling and
    stacking through a stiffness ``ke`` that the step must resolve; with ``toi=True`` fast
    or thin things do not pass through each other and bounce gradients do not depend on
    ``ke`` or ``dt`` (DiffTaichi's bouncing-ball problem), which matters for optimising
    throws and impacts.

    body_pair_slots: contact slots per (body shape, contact point) for body-body contacts,
        i.e. the most other shapes one contact point may touch in a step (default 12); a
        step that finds more raises an error naming this argument.

    joint_attach_ke, joint_attach_kd: stiffness [N/m and N m/rad] and damping [N s/m and
        N m s/rad] that hold the bodies of joints together in maximal coordinates (Newton's
        names); joint limits, PD drives, damping and ``Control.joint_f`` act on each joint's
        coordinate measured from the bodies (sim/joint_forces.py).  Explicit: the step must
        resolve them, ``dt < 0.2 sqrt(min(m, I) / joint_attach_ke)``.  ``state.joint_q`` is not
        updated (``sim.eval_ik`` reads the coordinates from the bodies); d6 joints raise.

    mesh_contact_slots: contact slots per mesh contact query (static mesh vertices under one
        body shape; shapes at one vertex of a mesh body) (default 16); a step that finds more
        raises an error naming this argument.

    self_contact: cloth self-collision (None/False: off; True: ``sim.ClothSelfContact(model)``
        with its defaults; or a ``sim.ClothSelfContact``): vertex-triangle and edge-edge
        repulsion with a thickness and a step bound so that cloth never passes through
        itself (see sim/cloth_self_contact.py).  Not combined with ``toi=True``.

    Stability: the time step should resolve the stiffest contact or spring,
    ``dt < 0.2 * sqrt(m / ke)`` is a safe rule of thumb.
    """

    def __init__(self, model, particle_contacts: bool = False, grid_dim: int | None = None,
                 brute_force_contacts: bool = False, toi: bool = False, self_contact=None,
                 body_pair_slots: int = 12, mesh_contact_slots: int = 16, joint_attach_ke: float = 1.0e4,
                 joint_attach_kd: float = 1.0e2, max_impacts: int | None = None):
        self.model = model
        self.max_impacts = _max_impacts(max_impacts, toi)
        self.joint_attach_ke = _non_negative(joint_attach_ke, "joint_attach_ke")
        self.joint_attach_kd = _non_negative(joint_attach_kd, "joint_attach_kd")
        self.self_contact = _cloth_self_contact(model, self_contact, toi)
        self.toi = bool(toi)
        self.particle_contacts = bool(particle_contacts)
        self.brute_force_contacts = bool(brute_force_contacts)
        self.particle_grid = None
        if self.particle_contacts and model.particle_count and not self.brute_force_contacts:
            from ..collide_particles import make_particle_grid

            self.particle_grid = make_particle_grid(model, grid_dim)
        _warn_if_joints(model, type(self).__name__)
        self._joint_bodies = bool(getattr(model, "joint_count", 0)) and model.body_count > 0
        self.body_static_pairs = None
        self.body_toi_shapes = None
        self.body_pairs = None
        self.body_pair_toi_shape = None  # swept bodies for sim/toi_body_pairs.py (None: not needed)
        swept_all = []  # every shape of the bodies sim/toi_shapes.py sweeps
        if model.body_count:
            swept, swept_all = [], []
            if self.toi:
                warn_unswept_bodies(model, type(self).__name__)
                shapes = body_toi_shapes(model)
                boxes = body_shape_toi_shapes(model)  # box, capsule and compound bodies: sim/toi_shapes.py
                swept_all = body_shape_toi_all_shapes(model, boxes)
                shapes[boxes >= 0] = -2
                swept = [int(s) for s in shapes if s >= 0]  # single spheres: sim/toi.py
                self.body_toi_shapes = kc.array(shapes, dtype=kc.int32, device=model.device)
                self.body_shape_toi = SweptBodyShapes(model, meshes=True)  # mesh bodies too (sim/toi_mesh_body.py)
                self.body_shape_toi_ids = kc.array(np.nonzero(boxes >= 0)[0].astype(np.int32), dtype=kc.int32,
                                                   device=model.device)
                self._no_speed = kc.zeros(1, dtype=float, device=model.device)
                # with several impacts per step two spheres meet in sim/toi_body_pairs.py too (one pass there
                # per impact); sim/toi.py takes one body-body impact per sphere and step
                sphere_pairs = self.max_impacts > 1
                if needs_body_pair_toi(model, shapes >= 0, sphere_pairs):
                    self.body_pair_toi_shape = BodyPairToiShapes(model, self.body_shape_toi, shapes >= 0,
                                                                 sphere_pairs=sphere_pairs)
            self.body_static_pairs = body_static_pairs(model, swept, TOI_STATIC_KINDS, swept_shapes_all=swept_all)
            if model.body_count > 1:
                from ..collide_body_pairs import BodyPairContacts

                # pairs with a box or capsule keep their penalty contacts below the resting speed (they
                # hold resting stacks); sim/toi_body_pairs.py takes the impacts faster than that
                impact = swept + swept_all  # mesh bodies too (sim/toi_mesh_pairs.py)
                impact = impact if self.body_pair_toi_shape is not None else []
                self.body_pairs = BodyPairContacts(model, swept_shapes=swept, slots_per_thread=body_pair_slots,
                                                   impact_shapes=impact)
        if self.toi and model.body_count:
            from ..toi_mesh import warn_large_meshes
            from ..toi_mesh_seams import static_mesh_seams

            warn_large_meshes(model, type(self).__name__)
            static_mesh_seams(model)  # once, here: the sweep reads them each step (and a Tape need not see it)
        # mesh shapes that bodies touch (or None); swept shapes meet static shapes and meshes in the sweep
        # (sim/toi_shapes.py, sim/toi_mesh.py, sim/toi_mesh_body.py), not in penalty contacts
        self.body_mesh_contacts = make_body_mesh_contacts(
            model, mesh_contact_slots, exclude_shapes=swept_all if self.toi else (),
            impact_shapes=swept + swept_all if self.body_pair_toi_shape is not None else ())
        _refuse_mixed_environments(self, model)
        # contacts that found no slot, one counter per family (sim/contacts.py), shared by the step's body-static
        # and body-body arrays: zeroed once and read back once per step
        self._contact_overflow = kc.zeros(OVERFLOW_FAMILIES, dtype=kc.int32, device=model.device)
        #: the body-static contacts of the last step (``state_out.contacts``, see sim/contacts.py)
        self.contacts = None
        #: the body-body contacts of the last step (``state_out.body_pair_contacts``; None without them)
        self.body_pair_contacts = None
        self._cap_checked = set()  # time steps checked by sim/contact_limits.py
        self._mesh_contacts = None
        if model.mesh_shape_indices:
            from ..collide_mesh import eval_particle_mesh_contacts

            self._mesh_contacts = eval_particle_mesh_contacts

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control`` may be None)."""
        check_step_arguments(model, state_in, state_out, control)
        check_dt(dt, type(self).__name__)
        forces = state_out.particle_f
        wrenches = state_out.body_f
        zero_forces(forces)
        zero_body_forces(wrenches)
        eval_control_forces(model, control, forces)
        eval_springs(model, state_in, forces)
        eval_cloth_forces(model, state_in, forces)
        if self.self_contact is not None:
            self.self_contact.refit(model, state_in)
            self.self_contact.eval(model, state_in, forces)
        if self.particle_contacts:
            self._eval_particle_contacts(model, state_in, forces, dt)
        eval_particle_shape_contacts(model, state_in, forces, dt, toi=self.toi, wrenches=wrenches)
        eval_cloth_attachments(model, state_in, forces, wrenches)
        if model.body_mesh_shape_indices and model.particle_count:
            eval_particle_body_mesh_contacts(model, state_in, forces, wrenches, dt)
        if self._mesh_contacts is not None:
            self._mesh_contacts(model, state_in, forces, dt)
        if self.self_contact is not None:
            self.self_contact.integrate(model, state_in, forces, state_out, dt)
        elif self.toi:
            integrate_particles_toi(model, state_in, forces, state_out, dt, wrenches)
        else:
            integrate_particles(model, state_in, forces, state_out, dt)
        if model.body_count:
            if dt not in self._cap_checked:
                self._cap_checked.add(dt)
                warn_if_capped(model, dt, type(self).__name__)  # light bodies' contacts softened (sim/contact.py)
            eval_body_control_forces(model, control, wrenches)
            if self._joint_bodies:
                eval_joint_forces(model, state_in, control, wrenches, self.joint_attach_ke, self.joint_attach_kd)
            mesh = self.body_mesh_contacts  # mesh contacts go into the same arrays, after the primitives'
            overflow = self._contact_overflow
            overflow.zero_()
            contacts = state_contacts(state_out, body_static_contact_capacity(self.body_static_pairs)
                                      + (mesh.static_capacity() if mesh is not None else 0), model.device,
                                      model.requires_grad, overflow=overflow)
            eval_body_static_contacts(model, state_in, self.body_static_pairs, wrenches, dt, contacts, meshes=mesh,
                                      check_overflow=False)
            self.contacts = contacts
            if self.body_pairs is not None:
                pair_contacts = state_contacts(state_out, self.body_pairs.capacity()
                                               + (mesh.pair_capacity() if mesh is not None else 0), model.device,
                                               model.requires_grad, name="body_pair_contacts", overflow=overflow)
                self.body_pairs.eval(model, state_in, wrenches, dt, pair_contacts, meshes=mesh, check_overflow=False)
                self.body_pair_contacts = pair_contacts
            if (self.body_pairs is not None and self.body_pairs.active) or mesh is not None:
                check_contact_overflow(overflow, self.body_pairs, mesh)  # the step's one read-back of them
            if self.toi:
                start = state_in
                sphere_pairs = self.body_pairs
                if self.body_pair_toi_shape is not None:
                    # body-body impacts (other than sphere-sphere with max_impacts=1): a virtual start state
                    # (sim/toi_body_pairs.py)
                    start = body_pair_toi(model, state_in, wrenches, state_out, dt, self.body_pair_toi_shape,
                                          self.body_pairs, self.max_impacts)
                    if self.body_pair_toi_shape.sphere_pairs:
                        sphere_pairs = None  # met there already
                integrate_bodies_toi(model, start, wrenches, state_out, dt, self.body_toi_shapes, sphere_pairs,
                                     self._no_speed)
                integrate_shape_bodies_toi(model, start, wrenches, state_out, dt, self.body_shape_toi_ids,
                                           self.body_shape_toi)
            else:
                integrate_bodies(model, state_in, wrenches, state_out, dt)

    def _eval_particle_contacts(self, model, state, forces, dt):
        from ..collide_particles import eval_particle_contacts, eval_particle_contacts_brute

        if self.brute_force_contacts:
            eval_particle_contacts_brute(model, state, forces, dt)
        else:
            eval_particle_contacts(model, state, forces, dt, self.particle_grid)


def _warn_if_joints(model, solver_name):
    """Joints are held by penalty forces (sim/joint_forces.py): d6 joints raise, ignored armature warns."""
    message = check_maximal_joints(model, solver_name)
    if message:
        import warnings

        warnings.warn(message, stacklevel=3)


def _max_impacts(value, toi):
    """The solver's ``max_impacts`` (default 4), checked; warned about without ``toi`` (it is not used)."""
    if value is None:
        return MAX_IMPACTS
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"SolverSemiImplicit: max_impacts must be an integer >= 1, got {value!r}")
    if not toi:
        import warnings

        warnings.warn(f"SolverSemiImplicit: max_impacts={value} is not used without toi=True", stacklevel=3)
    return int(value)


def _non_negative(value, name):
    value = float(value)
    if not np.isfinite(value) or value < 0.0:
        raise ValueError(f"SolverSemiImplicit: {name} must be a finite number >= 0, got {value!r}")
    return value


def _cloth_self_contact(model, self_contact, toi):
    if self_contact is None or self_contact is False:
        return None
    if toi:
        raise ValueError("SolverSemiImplicit: self_contact and toi=True cannot be combined yet "
                         "(the self-contact step bound has its own integrator)")
    from ..cloth_self_contact import ClothSelfContact

    return ClothSelfContact(model) if self_contact is True else self_contact


class SolverDEM(SolverSemiImplicit):
    """SolverSemiImplicit with particle-particle contacts (discrete element method) on.

    Normal spring-dashpot, Coulomb friction and optional cohesion, parameters from the
    particles' contact materials (see :mod:`sim.contact`).
    """

    def __init__(self, model, grid_dim: int | None = None, brute_force_contacts: bool = False, toi: bool = False):
        super().__init__(model, particle_contacts=True, grid_dim=grid_dim, brute_force_contacts=brute_force_contacts,
                         toi=toi)
