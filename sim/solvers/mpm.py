"""SolverMPM: moving-least-squares MPM with APIC transfers on a dense grid, 2-D or 3-D.

Particles carry position, velocity, the APIC affine matrix C, the elastic deformation
gradient F and a plastic scalar Jp (``State.particle_C/F/Jp``); materials come from
``builder.add_material(model=...)`` and particles from ``add_particles(..., volume=,
density=)``.  A step is zero grid -> P2G -> grid update -> G2P (sim/mpm_transfer.py).

Differentiability and memory: each step writes its grid (momentum, mass, velocity) into
buffers owned by ``state_out`` (``state_out.mpm_grid``, attached on the first step that
writes into that state and reused afterwards).  A taped run over N states therefore keeps
N grids, which is what the backward pass reads, and nothing is overwritten.  Per state:
particles ``N_p (3 vec3 + 2 mat33 + 1 float) = 112 N_p`` bytes, grid ``(d + 1 + d) 4 nodes``
bytes and, in a differentiated run, the P2G affine matrices ``36 N_p`` (``MPMGrid.affine``),
doubled with gradients.  The 2-D diffmpm size (6.4K particles, 128^2 grid, 1024 steps)
needs about 1025 x 2 x (0.95 + 0.36) MB ~ 2.7 GB.

A taped 2-D step on the CPU without shapes, bodies or SDF colliders records one
``Tape.record_func`` whose backward runs hand-written adjoints (sim/mpm_adjoint_2d.py) in
place of the automatic adjoints of its launches (the same gradients; the backward's kernels
1.7x, 2-D diffmpm fwd+bwd 1.3x faster on one thread); other steps record their launches.

An untaped 3-D step on the CPU whose grid has no gradients runs the forward-only P2G and G2P of
sim/mpm_fast_3d.py (equal to float32 rounding; the 3-D benchmark step 1.37x faster, one thread;
its scatter sorted by x-slab and run slab by slab without atomics, on all threads).
"""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc
from kernelcore.device import get_runtime

from ..worlds import require_one_environment
from ..mpm_constitutive import MPM_FLUID, MPM_MODEL_CODES, MPM_NONE, MPM_SNOW
from ..body_integrate import add_spatial_kernel, integrate_bodies_kernel, zero_body_forces
from ..mpm_colliders import body_contact_mass
from ..mpm_transfer import BOUNDARY_CODES, active_box, grid_to_particle, particle_to_grid, update_grid, zero_grid
from ..mpm_volume_colliders import check_volumes, volume_collider_arrays
from .checks import check_dt, reports_non_finite
from ..mpm_adjoint_2d import record_step_2d
from ..mpm_fast_3d import grid_to_particle_fast, particle_to_grid_fast

#: grid nodes added outside ``bounds`` on each side; the walls act on the nodes from the
#: bound outwards, and a stencil (3 nodes) always fits.
GRID_PAD = 3


class MPMGrid:
    """One step's dense grid: momentum ``mv`` [kg m/s], mass ``m`` [kg], velocity ``v`` [m/s].

    ``shape`` = nodes per axis (d,), node (i, j[, k]) at ``lower + dx (i, j[, k])``.
    """

    def __init__(self, shape, lower, dx, pad, device, requires_grad, body_count=0):
        vec = kc.vec2 if len(shape) == 2 else kc.vec3
        self.shape = tuple(int(s) for s in shape)
        self.lower = lower
        self.dx = float(dx)
        self.pad = int(pad)
        self.mv = kc.zeros(self.shape, dtype=vec, device=device, requires_grad=requires_grad)
        self.m = kc.zeros(self.shape, dtype=float, device=device, requires_grad=requires_grad)
        self.v = kc.zeros(self.shape, dtype=vec, device=device, requires_grad=requires_grad)
        #: per rigid body: mass [kg] of the grid nodes touching it this step (sim/mpm_colliders.py)
        self.body_contact_mass = kc.zeros(body_count, dtype=float, device=device, requires_grad=requires_grad)
        #: per particle: the APIC affine matrix of a differentiated step (see particle_affine)
        self.affine = None
        #: per particle: log J of a taped neo-Hookean 2-D step (sim/mpm_adjoint_2d.step_log_j)
        self.log_J = None

    def particle_affine(self, count):
        """Per-particle APIC affine matrices [kg/s] (count,) of the split, differentiated P2G
        (sim/mpm_transfer.particle_to_grid); made on first use."""
        if self.affine is None or self.affine.shape[0] != count:
            self.affine = kc.zeros(count, dtype=kc.mat33, device=self.m.device, requires_grad=self.m.requires_grad)
        return self.affine

    @property
    def nbytes(self) -> int:
        d = len(self.shape)
        return int(np.prod(self.shape)) * 4 * (2 * d + 1)


class SolverMPM:
    """MLS-MPM (APIC, quadratic B-splines) for the model's continuum particles.

    Args:
        model: a :class:`sim.Model` whose particles all have a volume > 0 and a material
            made with ``add_material(model=...)``.
        dx: grid spacing [m] (> 0).
        bounds: (lower, upper) corners of the domain [m], d numbers each (3 allowed in 2-D,
            z ignored).  Walls sit on these bounds; every particle must start inside.
        dim: 2 (x, y; plane strain, particles keep their z) or 3.
        boundary: "sticky" (walls stop the material), "slip" (normal velocity removed) or
            "separate" (only velocity into a wall removed); also used for the ground plane
            and the model's shapes: static sphere/box/capsule/plane/mesh colliders and the
            shapes carried by rigid bodies (velocity relative to the body's surface).
        friction: Coulomb friction coefficient of walls and colliders (slip/separate): a node
            pressing on a wall loses up to ``friction * |v_n|`` of its tangential speed.
        actuation_axis: unit material direction (3,) along which ``Control.particle_actuation``
            pulls [Pa] (default y, as in diffmpm).
        cfl: time-step guard: ``step`` raises when ``dt > cfl * dx / c``, c the largest
            elastic wave speed sqrt((lambda + 2 mu) / rho) (bulk sqrt(K / rho) for fluids)
            of the initial materials.  Fast particles (|v| dt > dx) are not checked (that
            would need a read-back from the device).
        gravity: (3,) [m/s^2], default the model's gravity.
        sdf_colliders: static ``geometry.Volume`` signed-distance colliders [m] (one or a list;
            negative inside, background > 0): grid nodes inside get the ``boundary`` rule with
            the SDF's gradient as normal (sim/mpm_volume_colliders.py; 2-D samples z = 0).

    The particles' materials are read when the solver is made (the CFL guard's wave speed, and
    the P2G kernel: one specialised to the model when all particles share one); make a new
    solver after changing them.

    Rigid bodies (two-way coupling, sim/mpm_colliders.py): grid nodes inside a body's shape
    are projected against the body's moving surface (its pose and velocity at the step's
    start); the momentum they lose is the material's impulse on the body, written as a
    wrench into ``state_out.body_f`` [N, N m] (plus ``control.body_f``).  ``step`` then moves
    the bodies under that wrench and ``gravity`` (sim/body_integrate.py, Newton-Euler), so
    material + bodies exchange momentum exactly.  Bodies here feel only the material, gravity
    and ``control.body_f``: no body-body, body-ground or body-wall contacts, no joints.

    Attributes:
        max_dt: the largest time step the guard accepts [s].
        grid_shape: nodes per axis.
    """

    def __init__(self, model, dx: float, bounds, dim: int = 3, boundary: str = "separate", friction: float = 0.0,
                 actuation_axis=(0.0, 1.0, 0.0), cfl: float = 0.5, gravity=None, sdf_colliders=None):
        if dim not in (2, 3):
            raise ValueError(f"SolverMPM: dim must be 2 or 3, got {dim!r}")
        try:
            dx_ok = math.isfinite(float(dx)) and float(dx) > 0
        except (TypeError, ValueError):
            dx_ok = False
        if not dx_ok:
            raise ValueError(f"SolverMPM: dx must be a finite number > 0, got {dx!r}")
        if boundary not in BOUNDARY_CODES:
            raise ValueError(f"SolverMPM: boundary must be one of {sorted(BOUNDARY_CODES)}, got {boundary!r}")
        if not (math.isfinite(friction) and friction >= 0):
            raise ValueError(f"SolverMPM: friction must be finite and >= 0, got {friction!r}")
        self.friction = float(friction)
        if not (math.isfinite(cfl) and cfl > 0):
            raise ValueError(f"SolverMPM: cfl must be finite and > 0, got {cfl!r}")
        require_one_environment(model, "SolverMPM", "the shared background grid")
        self.model = model
        self.dim = int(dim)
        self.dx = float(dx)
        self.boundary = BOUNDARY_CODES[boundary]
        self.cfl = float(cfl)
        lower, upper = self._check_bounds(bounds)
        self.bounds = (lower, upper)
        cells = np.maximum(np.ceil((upper - lower) / self.dx - 1e-6).astype(int), 1)
        self.grid_shape = tuple(int(c) + 2 * GRID_PAD + 1 for c in cells)
        glo = np.zeros(3)
        glo[:dim] = lower - GRID_PAD * self.dx
        self.grid_lower = kc.vec3(*glo)
        axis = np.asarray(actuation_axis, np.float64).reshape(-1)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or np.linalg.norm(axis) < 1e-12:
            raise ValueError(f"SolverMPM: actuation_axis must be 3 finite numbers, not all zero, got {actuation_axis!r}")
        self.actuation_axis = kc.vec3(*(axis / np.linalg.norm(axis)))
        g = np.asarray(model.gravity if gravity is None else gravity, np.float64).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"SolverMPM: gravity must be 3 finite numbers, got {gravity!r}")
        if dim == 2:
            g[2] = 0.0
        self.gravity = kc.vec3(*g)
        self._check_particles()
        self.wave_speed = self._max_wave_speed()
        self.max_dt = self.cfl * self.dx / self.wave_speed
        # grid nodes below this mass get no velocity (see mpm_transfer.update_grid): 1e-9 of the
        # lightest particle changes momentum far below float32 round-off
        self.min_node_mass = 1.0e-9 * float(model.particle_mass.numpy().min())
        self._zero_actuation = kc.zeros(model.particle_count, dtype=float, device=model.device)
        # one material model for every particle: P2G runs a kernel without the other models' code
        codes = np.unique(model.material_mpm_model.numpy()[model.particle_material.numpy()])
        self.model_code = int(codes[0]) if len(codes) == 1 else None
        #: meshes are searched this far from a grid node [m] (sim/mpm_colliders.py)
        self.mesh_reach = 4.0 * self.dx
        self._no_body_f = kc.zeros(0, dtype=kc.spatial_vector, device=model.device)
        self._cpu = kc.get_device(model.device).is_cpu
        #: static SDF colliders (geometry.Volume), kept alive here, and their kernel arrays
        self.sdf_colliders = check_volumes(sdf_colliders)
        self._volume_arrays = volume_collider_arrays(self.sdf_colliders, model.device) if self.sdf_colliders else None
        #: a taped step takes the hand-written 2-D adjoints (sim/mpm_adjoint_2d.py): 2-D on the CPU, walls and
        #: ground only (no shapes, bodies or SDF colliders, whose grid update keeps the automatic adjoint)
        self._hand_adjoints = (self.dim == 2 and self._cpu and model.body_count == 0 and model.shape_count == 0
                               and self._volume_arrays is None)
        #: an untaped 3-D step on the CPU without gradients takes the forward-only fast P2G (sim/mpm_fast_3d.py)
        self._fast_3d = self.dim == 3 and self._cpu

    # -- construction checks ------------------------------------------------------------------------
    def _check_bounds(self, bounds):
        d = self.dim
        try:
            lower = np.asarray(bounds[0], np.float64).reshape(-1)
            upper = np.asarray(bounds[1], np.float64).reshape(-1)
            ok = len(bounds) == 2
        except (TypeError, IndexError, ValueError):
            ok = False
        if ok and d == 2 and lower.shape == (3,) and upper.shape == (3,):
            lower, upper = lower[:2], upper[:2]
        if not ok or lower.shape != (d,) or upper.shape != (d,) or not (np.all(np.isfinite(lower))
                                                                       and np.all(np.isfinite(upper))):
            raise ValueError(f"SolverMPM: bounds must be (lower, upper) with {d} finite numbers each, got {bounds!r}")
        if np.any(upper - lower < 2 * self.dx):
            raise ValueError(f"SolverMPM: bounds={bounds!r} must span at least 2 dx = {2 * self.dx:g} m on every axis")
        return lower, upper

    def _check_particles(self):
        m = self.model
        if m.particle_count == 0:
            raise ValueError("SolverMPM: the model has no particles")
        d = self.dim
        q = m.particle_q.numpy()[:, :d]
        lower, upper = self.bounds
        outside = np.nonzero(np.any((q < lower) | (q > upper), axis=1))[0]
        if len(outside):
            p = int(outside[0])
            raise ValueError(f"SolverMPM: bounds=({lower.tolist()}, {upper.tolist()}) do not contain particle {p} at "
                             f"{q[p].tolist()} ({len(outside)} particles outside)")
        vol = m.particle_volume.numpy()
        if np.any(vol <= 0):
            p = int(np.nonzero(vol <= 0)[0][0])
            raise ValueError(f"SolverMPM: particle {p} has no volume; add MPM particles with add_particles(..., "
                             "volume=..., density=...) or add_particle_grid(..., density=...)")
        codes = m.material_mpm_model.numpy()[m.particle_material.numpy()]
        if np.any(codes == MPM_NONE):
            p = int(np.nonzero(codes == MPM_NONE)[0][0])
            raise ValueError(f"SolverMPM: particle {p} has material {int(m.particle_material.numpy()[p])} without a "
                             f"continuum model; create one with add_material(model=one of {sorted(MPM_MODEL_CODES)})")
        if np.any(m.particle_mass.numpy() <= 0):
            raise ValueError("SolverMPM: every MPM particle needs a mass > 0")

    def _max_wave_speed(self):
        """Largest elastic wave speed [m/s] over the particles' initial materials."""
        m = self.model
        mat = m.particle_material.numpy()
        rho = m.particle_mass.numpy().astype(np.float64) / m.particle_volume.numpy()
        E = m.material_youngs_modulus.numpy().astype(np.float64)[mat]
        nu = m.material_poisson_ratio.numpy().astype(np.float64)[mat]
        code = m.material_mpm_model.numpy()[mat]
        mu = E / (2 * (1 + nu))
        la = E * nu / ((1 + nu) * (1 - 2 * nu))
        modulus = la + 2 * mu
        bulk = E / (3 * (1 - 2 * nu))
        modulus = np.where(code == MPM_FLUID, bulk, modulus)
        # snow stiffens under compression: allow for Jp down to 1 - theta_c
        hard = m.material_hardening.numpy().astype(np.float64)[mat] * m.material_critical_compression.numpy()[mat]
        modulus = np.where(code == MPM_SNOW, modulus * np.exp(hard), modulus)
        return float(np.sqrt(np.max(modulus / rho)))

    # -- stepping ----------------------------------------------------------------------------------
    def grid_for(self, state):
        """The grid buffers owned by ``state`` (created the first time a step writes into it)."""
        g = state.mpm_grid
        if g is None or g.shape != self.grid_shape or g.dx != self.dx:
            g = MPMGrid(self.grid_shape, self.grid_lower, self.dx, GRID_PAD, self.model.device,
                        state.particle_q.requires_grad, self.model.body_count)
            state.mpm_grid = g
        return g

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out``; ``control.particle_actuation`` [Pa] may be None."""
        check_dt(dt, "SolverMPM")
        if not (dt > 0 and dt <= self.max_dt):
            raise ValueError(f"SolverMPM.step: dt={dt!r} must lie in (0, {self.max_dt:.4g}] s: the CFL guard "
                             f"cfl * dx / c = {self.cfl:g} * {self.dx:g} / {self.wave_speed:.4g} m/s (take substeps "
                             f"of at most SolverMPM.max_dt, or pass a larger cfl=)")
        if state_in.particle_F is None or state_out.particle_F is None:
            raise ValueError("SolverMPM.step: states need particle_F/C/Jp: make them with model.state() on a model "
                             "with continuum particles (volume > 0)")
        act = None if control is None else getattr(control, "particle_actuation", None)
        if act is None:
            act = self._zero_actuation
        grid = self.grid_for(state_out)
        # on the CPU, clear and update only the nodes the particles touch (a read of the positions
        # there costs microseconds; on a GPU it would be a synchronisation, so the whole grid is
        # used).  Bodies keep the whole grid: body_contact_mass reads every node.
        box = None
        if self._cpu and model.body_count == 0:
            box = active_box(state_in.particle_q.numpy(), grid)
        if self._hand_adjoints and grid.mv.grad is not None and get_runtime().tape_stack:
            # a taped 2-D step: one record_func whose backward runs hand-written adjoints (sim/mpm_adjoint_2d.py)
            record_step_2d(self, model, state_in, state_out, act, grid, dt, box)
            return
        zero_grid(grid, model.device, box)
        fast = self._fast_3d and grid.mv.grad is None and not get_runtime().tape_stack
        if fast:
            particle_to_grid_fast(model, state_in, act, self.actuation_axis, grid, dt, state_out, self.model_code)
        else:
            particle_to_grid(model, state_in, act, self.actuation_axis, grid, dt, state_out, self.model_code)
        bodies = model.body_count > 0
        wrenches = state_out.body_f if bodies else self._no_body_f
        if bodies:
            zero_body_forces(wrenches)
            if control is not None and getattr(control, "body_f", None) is not None:
                kc.launch(add_spatial_kernel, dim=model.body_count, inputs=[control.body_f, wrenches],
                          device=model.device)
        body_q = state_in.body_q if bodies else model.body_q
        body_qd = state_in.body_qd if bodies else model.body_qd
        if bodies:
            body_contact_mass(model, grid, self.min_node_mass, self.gravity, self.boundary, dt, self.mesh_reach,
                              body_q, body_qd, grid.body_contact_mass)
        colliders = (self.mesh_reach, body_q, body_qd, grid.body_contact_mass, wrenches)
        update_grid(model, grid, self.min_node_mass, self.gravity, self.boundary, self.friction, dt, colliders,
                    self._volume_arrays, box)
        if fast:
            grid_to_particle_fast(model, state_in, grid, dt, state_out)
        else:
            grid_to_particle(model, state_in, grid, dt, state_out)
        if bodies:
            kc.launch(integrate_bodies_kernel, dim=model.body_count,
                      inputs=[state_in.body_q, state_in.body_qd, wrenches, model.body_com, model.body_inv_mass,
                              model.body_inertia, model.body_inv_inertia, self.gravity, float(dt)],
                      outputs=[state_out.body_q, state_out.body_qd], device=model.device)
