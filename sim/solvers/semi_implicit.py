"""Semi-implicit (symplectic) Euler for particles: gravity, drag, springs, contacts.

Forces of one step are evaluated at ``state_in`` and accumulated in
``state_out.particle_f``, then velocities and positions are advanced into
``state_out``.  ``state_in`` is only read, nothing is allocated per step and nothing
is read back to the host, so a Tape records a step and replays its adjoint.
"""
from __future__ import annotations

from ..collide_shapes import eval_particle_shape_contacts
from ..integrate import eval_control_forces, integrate_particles, zero_forces
from ..springs import eval_springs
from .checks import check_step_arguments


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

    Stability: the time step should resolve the stiffest contact or spring,
    ``dt < 0.2 * sqrt(m / ke)`` is a safe rule of thumb.
    """

    def __init__(self, model, particle_contacts: bool = False, grid_dim: int | None = None,
                 brute_force_contacts: bool = False):
        self.model = model
        self.particle_contacts = bool(particle_contacts)
        self.brute_force_contacts = bool(brute_force_contacts)
        self.particle_grid = None
        if self.particle_contacts and model.particle_count and not self.brute_force_contacts:
            from ..collide_particles import make_particle_grid

            self.particle_grid = make_particle_grid(model, grid_dim)
        self._mesh_contacts = None
        if model.mesh_shape_indices:
            from ..collide_mesh import eval_particle_mesh_contacts

            self._mesh_contacts = eval_particle_mesh_contacts

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control`` may be None)."""
        check_step_arguments(model, state_in, state_out, control)
        forces = state_out.particle_f
        zero_forces(forces)
        eval_control_forces(model, control, forces)
        eval_springs(model, state_in, forces)
        if self.particle_contacts:
            self._eval_particle_contacts(model, state_in, forces, dt)
        eval_particle_shape_contacts(model, state_in, forces, dt)
        if self._mesh_contacts is not None:
            self._mesh_contacts(model, state_in, forces, dt)
        integrate_particles(model, state_in, forces, state_out, dt)

    def _eval_particle_contacts(self, model, state, forces, dt):
        from ..collide_particles import eval_particle_contacts, eval_particle_contacts_brute

        if self.brute_force_contacts:
            eval_particle_contacts_brute(model, state, forces, dt)
        else:
            eval_particle_contacts(model, state, forces, dt, self.particle_grid)


class SolverDEM(SolverSemiImplicit):
    """SolverSemiImplicit with particle-particle contacts (discrete element method) on.

    Normal spring-dashpot, Coulomb friction and optional cohesion, parameters from the
    particles' contact materials (see :mod:`sim.contact`).
    """

    def __init__(self, model, grid_dim: int | None = None, brute_force_contacts: bool = False):
        super().__init__(model, particle_contacts=True, grid_dim=grid_dim, brute_force_contacts=brute_force_contacts)
