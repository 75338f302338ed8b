"""SolverPBF: position-based fluids (Macklin & Mueller 2013) on a geometry.HashGrid.

Why PBF and not DFSPH: both keep a liquid incompressible with a large time step; DFSPH
(divergence-free SPH) solves a pressure Poisson-like system twice per step with
stiffness factors and an explicit force integration that must also respect a viscosity
and a CFL condition, and its warm starts carry state from step to step.  PBF projects
positions onto the density constraint with a fixed, small number of Jacobi iterations:
every iteration is two gather kernels over a neighbour list, nothing is carried between
steps but positions and velocities, and the whole step is a short, fixed chain of
kernels, which is what a Tape differentiates well (each iteration's positions and
multipliers are kept, none is overwritten).  The price: with few iterations the density
error grows with the depth of the fluid (the constraint converges from the surface
down); raise ``iterations`` for deep tanks.

A step (``step(model, state_in, state_out, control, dt)``):

1. predict the bodies' end-of-step poses (free flight) and ``p0 = x + dt (v + dt (g + f_ext / m))``,
   projected onto the boundaries;
2. sort ``p0`` into the hash grid and build per-particle neighbour lists (pairs closer than
   1.1 h) -- once per step, kept with ``state_out`` so a Tape's backward pass replays the
   same pairs (``lanes=True`` steps: particles sorted by cell and searched in cell ranges
   instead, sim/pbf_sort.py);
3. ``iterations`` Jacobi iterations: multipliers ``lambda_k`` of the density constraint at
   ``p_k``, then ``p_{k+1}`` = boundary projection of ``p_k + dp(lambda_k)``, with the
   artificial pressure ``s_corr`` against particle clustering (sim/pbf_kernels.py);
4. ``v = (p_K - x) / dt``; vorticity ``omega = curl v`` (SPH); XSPH viscosity
   ``v += c sum_j V_j (v_j - v) W`` and vorticity confinement ``v += dt eps (N x omega)``;
   ``state_out.particle_q = p_K``;
5. the bodies: semi-implicit Euler from ``state_in`` with the fluid's reaction (every
   position correction a body caused, as the opposite impulse) plus ``control.body_f``.

Parameters and what they mean:

- ``smoothing_length`` h [m]: the kernel radius (poly6 density, spiky gradient).  With a
  particle spacing s, h = 2 s gives about 30 neighbours in 3-D; the resolution of the
  fluid is h, every length below it is smoothed away.
- ``rest_density`` rho0 [kg/m^3]: default: the particles' mass / volume (builder
  ``add_particle_grid(..., density=...)``).  Each particle's rest volume is m / rho0.
- ``iterations``: Jacobi iterations per step; the density error falls with more.
- ``relaxation`` epsilon (dimensionless): added to the constraint's gradient norm
  (``epsilon / h^2``, the scale of that norm) so that particles with few neighbours do
  not get huge corrections; larger is softer.
- ``scorr_k``, ``scorr_dq``: artificial pressure ``s_corr = -scorr_k h^2 (W(r) /
  W(scorr_dq h))^4``: a small repulsion that keeps particles from clustering in pairs
  (tensile instability) and gives a surface tension-like effect; 0 turns it off.
- ``xsph`` c (dimensionless, ~0.01): XSPH viscosity, the velocity is relaxed towards the
  kernel-weighted mean of its neighbours' (this is the fluid's viscosity; the material's
  ``viscosity`` is SolverMPM's).
- ``vorticity_confinement`` epsilon [m/s]: acceleration ``epsilon (N x omega)`` that
  restores rotation lost to the position projection (0: off).
- ``bounds`` (lower, upper) [m]: the domain box; particles are kept their radius inside it.
  The ground plane and the model's static sphere, box, capsule, plane and mesh shapes are
  boundaries too (frictionless), and so are the shapes on free bodies, which receive the
  fluid's reaction (two-way coupling, sim/pbf_bodies.py): the step predicts the bodies'
  poses (free flight under gravity and ``control.body_f``), uses them as boundaries, then
  integrates the bodies with the reaction added.  Body-body and body-ground contacts are
  not part of SolverPBF; models with joints are refused.
- ``cfl``: the largest ``max|v| dt / h`` a step accepts (checked on the host each step
  from ``state_in``'s particles and body centres of mass plus gravity's ``|g| dt``; ``check_input=False`` skips the checks and
  their read-back).

Memory: each output state owns its step's buffers (``iterations + 3`` vec3 arrays,
``iterations + 1`` floats, the neighbour lists, int (N, max_neighbors), and a few (B,) body
arrays), so a taped run of S steps keeps S sets; two states ping-ponged keep two.  The
solver owns one float (N, max_neighbors) pair cache (``pair_cache=True``): in steps whose
states do not require gradients, the multiplier pass stores each pair's spiky-gradient
factor (its square root and division) and the position update of the same iteration reads
it, as XSPH and confinement read the vorticity pass's (about 14 % less time per step at
64K particles); taped steps recompute instead, so the backward pass needs no per-iteration
pair arrays.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import kernelcore as kc

from .checks import check_dt, check_step_arguments, reports_non_finite
from ..worlds import require_one_environment


class PBFNeighbors:
    """Neighbour lists of one step: ``nb`` int (N, max_neighbors + 1) (the last column is the
    branch-free search's scratch slot, sim/pbf_neighbors.py), ``count`` int (N,) (<= max_neighbors)."""

    def __init__(self, n, max_neighbors, device):
        from ..pbf_neighbors import list_width

        self.nb = kc.zeros((n, list_width(max_neighbors)), dtype=kc.int32, device=device)
        self.count = kc.zeros(n, dtype=kc.int32, device=device)


class PBFBuffers:
    """One step's intermediate arrays, owned by the state the step writes (see module docstring).

    p: list of iterations + 1 vec3 (N,) positions [m] (p[0] predicted, p[-1] final);
    lam: list of iterations float (N,) multipliers [m^2]; v: vec3 (N,) velocity before XSPH
    [m/s]; omega: vec3 (N,) vorticity [1/s]; omega_norm: float (N,) its length [1/s];
    neighbors: PBFNeighbors; bodies: BodyCoupling (sim/pbf_bodies.py).
    """

    def __init__(self, model, iterations, max_neighbors, device, requires_grad):
        from ..pbf_bodies import BodyCoupling

        n = model.particle_count

        def vec():
            return kc.zeros(n, dtype=kc.vec3, device=device, requires_grad=requires_grad)

        self.iterations = iterations
        self.max_neighbors = max_neighbors
        self.p = [vec() for _ in range(iterations + 1)]
        self.lam = [kc.zeros(n, dtype=float, device=device, requires_grad=requires_grad) for _ in range(iterations)]
        self.v = vec()
        self.omega = vec()
        self.omega_norm = kc.zeros(n, dtype=float, device=device, requires_grad=requires_grad)
        self.neighbors = PBFNeighbors(n, max_neighbors, device)
        self.bodies = BodyCoupling(model, device, requires_grad)


def _positive(name, value, allow_zero=False):
    try:
        v = float(value)
        ok = math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"SolverPBF: {name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


def _runs_on_cpu(device) -> bool:
    return kc.get_device(device).is_cpu


class SolverPBF:
    """Position-based fluid for all of the model's particles (see the module docstring).

    Args:
        model: a :class:`sim.Model`; every particle with mass > 0 is fluid.
        smoothing_length: kernel radius h [m] (> 0).
        bounds: (lower, upper) corners of the domain box [m], 3 numbers each.
        iterations: density-constraint Jacobi iterations per step (>= 1).
        rest_density: rho0 [kg/m^3]; None: the particles' mass / volume.
        relaxation: constraint relaxation epsilon (dimensionless, > 0).
        scorr_k, scorr_dq: artificial pressure strength (>= 0) and reference distance (in (0, 1), units of h).
        xsph: XSPH viscosity coefficient (>= 0).
        vorticity_confinement: confinement strength [m/s] (>= 0).
        cfl: largest accepted max|v| dt / h (> 0).
        max_neighbors: capacity of each particle's neighbour list (a step that needs more raises).
        gravity: (3,) [m/s^2], default the model's.
        wall_density: count the boundaries as fluid at rest in the density (see
            sim/pbf_boundary.wall_volume); without it particles crowd against walls.
        check_input: check CFL, domain and neighbour capacity on the host every step.
        pair_cache: in steps that are not differentiated (states without requires_grad), keep each
            pair's kernel-gradient factor (a square root and a division) from the multiplier pass for
            the position update, and from the vorticity pass for XSPH and confinement
            (N * max_neighbors floats; the same result, fewer square roots).
        fast_math: run the pair-loop kernels (neighbour lists, multipliers, position updates,
            vorticity, XSPH) in their fast-math builds (@kc.kernel(fast_math=True),
            docs/cpu_codegen.md): results differ by rounding; NaN still reaches the checks.
        lanes: on the CPU, in steps that are not differentiated, run the four pair loops after the
            neighbour search (multipliers, position updates, vorticity, XSPH + confinement) 8 particles
            per vector (sim/pbf_lanes.py: neighbour lists padded to a fixed length, bit-identical
            results); steps whose longest neighbour list exceeds pbf_lanes.CAPACITIES (or
            max_neighbors) take the scalar kernels.  Takes precedence over fast_math and pair_cache
            for those passes (fast_math then applies to the neighbour search only).  Without a ground
            plane, shapes or bodies, each iteration runs sim/pbf_lanes_box.py's two kernels (the box
            walls inside the pair loops; the same results; ``solver.box_lanes = False`` turns it off).
            When every particle has the same rest volume (``solver.uniform_volume``, set at construction),
            the lanes take kernels that do not load each neighbour's volume (the same results, about 7 %
            less time per step at 64K particles).
        cell_sort: with ``lanes``, sort the particles by cell every step and search the neighbours in
            the sorted cell ranges (sim/pbf_sort.py; same neighbour sets, sums in another order, so
            results differ from ``cell_sort=False`` by rounding); the state keeps the user's order.
            Default (None): on with ``lanes``; ``cell_sort=True`` without ``lanes`` is warned about
            (it has no effect there).
        lane_capacity: with ``lanes``, the padded neighbour-loop length (one of pbf_lanes.CAPACITIES,
            <= max_neighbors).  Each capacity is a module of its own, built on first use (minutes of g++
            under load), so a fixed one builds one module; steps whose longest list exceeds it take the
            scalar kernels (warned once).  Default (None): the smallest capacity that holds the longest
            list, kept while it holds (grow-only: a fluid whose longest list goes up and down between
            steps does not build or switch modules back and forth).
    """

    def __init__(self, model, smoothing_length: float, bounds, iterations: int = 4, rest_density: float | None = None,
                 relaxation: float = 1.0e-2, scorr_k: float = 1.0e-4, scorr_dq: float = 0.2, xsph: float = 0.01,
                 vorticity_confinement: float = 0.0, cfl: float = 0.5, max_neighbors: int = 96, gravity=None,
                 wall_density: bool = True, check_input: bool = True, pair_cache: bool = True,
                 fast_math: bool = False, lanes: bool = False, cell_sort: bool | None = None,
                 lane_capacity: int | None = None):
        from .. import pbf_kernels   # imports geometry (the hash grid builtins): only when a PBF solver is made

        self.K = pbf_kernels
        K = pbf_kernels
        require_one_environment(model, "SolverPBF", "the fluid's particle neighbourhoods")
        self.model = model
        self.h = _positive("smoothing_length (the kernel radius; it sets the resolution)", smoothing_length)
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise ValueError(f"SolverPBF: iterations must be an integer >= 1, got {iterations!r}")
        if isinstance(max_neighbors, bool) or not isinstance(max_neighbors, (int, np.integer)) or max_neighbors < 1:
            raise ValueError(f"SolverPBF: max_neighbors must be an integer >= 1, got {max_neighbors!r}")
        self.iterations = int(iterations)
        self.max_neighbors = int(max_neighbors)
        self.relaxation = _positive("relaxation", relaxation)
        self.scorr_k = _positive("scorr_k", scorr_k, allow_zero=True)
        self.scorr_dq = _positive("scorr_dq", scorr_dq)
        if self.scorr_dq >= 1.0:
            raise ValueError(f"SolverPBF: scorr_dq must lie in (0, 1) (a fraction of h), got {scorr_dq!r}")
        self.xsph = _positive("xsph", xsph, allow_zero=True)
        self.vorticity_confinement = _positive("vorticity_confinement", vorticity_confinement, allow_zero=True)
        self.cfl = _positive("cfl", cfl)
        self.check_input = bool(check_input)
        self.wall_density = bool(wall_density)
        g = np.asarray(model.gravity if gravity is None else gravity, np.float64).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"SolverPBF: gravity must be 3 finite numbers, got {gravity!r}")
        self.gravity = kc.vec3(*g)
        self._gravity_norm = float(np.linalg.norm(g))
        self._check_model()
        self.lower, self.upper = self._check_bounds(bounds)
        self._check_inside(model.particle_q.numpy(), "the model's particle", "bounds")
        self.rest_density = self._rest_density(rest_density)
        dev = model.device
        vol = model.particle_mass.numpy().astype(np.float64) / self.rest_density
        vol32 = vol.astype(np.float32)
        self.particle_rest_volume = kc.array(vol32, dtype=float, device=dev)
        # one volume for all: the lanes take their uniform-volume kernels (sim/pbf_lanes.pair_kernels)
        self._one_volume = bool(vol32.size) and bool(np.all(vol32 == vol32[0]))
        self._uniform_volume = self._one_volume
        self._bounds = K.boundary_inputs(model, kc.vec3(*self.lower), kc.vec3(*self.upper),
                                         max(self.h, 2.0 * model.particle_max_radius))
        import geometry

        cell = K.NEIGHBOR_SKIN * self.h
        dims = [int(min(128, max(1, math.ceil(e / cell)))) for e in (self.upper - self.lower)]
        self.grid = geometry.HashGrid(*dims, device=dev)
        self.grid.reserve(model.particle_count)
        self._overflow = kc.zeros(1, dtype=kc.int32, device=dev)
        self._zero_force = kc.zeros(model.particle_count, dtype=kc.vec3, device=dev)
        self.pair_cache = bool(pair_cache)
        self.fast_math = bool(fast_math)
        self._pairs = None
        self.lanes = bool(lanes) and _runs_on_cpu(dev)
        self._lane_scratch = None
        self.lane_capacity = self._check_lane_capacity(lane_capacity, lanes)
        self._lane_current = self.lane_capacity   # the capacity the lanes run (grow-only when not fixed)
        self._lane_warnings = set()   # reasons already warned about (each once per solver)
        self.cell_sort = cell_sort is None or bool(cell_sort)
        self.box_lanes = True   # with lanes and no shapes or ground: sim/pbf_lanes_box.py (False: the general lanes)
        if cell_sort and not lanes:
            warnings.warn("SolverPBF(cell_sort=True) has no effect without lanes=True: the scalar kernels "
                          "search the hash grid in the user's particle order", UserWarning, stacklevel=2)
        self._sorted = None
        self._sort_warned = False
        if lanes and not self.lanes:
            self._warn_lanes_off("the model is on a CUDA device (sim/pbf_lanes.py vectorises CPU loops only)",
                                 stacklevel=3)

    # -- construction checks --------------------------------------------------------------------
    def _check_model(self):
        m = self.model
        if m.particle_count == 0:
            raise ValueError("SolverPBF: the model has no particles")
        visc = getattr(m, "material_viscosity", None)
        if visc is not None:
            used = np.unique(m.particle_material.numpy())
            v = visc.numpy()[used]
            if np.any(v > 0):
                # the continuum material's viscosity belongs to SolverMPM; reading it here silently would
                # be a second meaning, ignoring it silently would hide the user's setting
                warnings.warn(f"SolverPBF: material viscosity {float(v.max()):g} Pa s (add_material(viscosity=...)) "
                              f"has no effect on PBF; its viscosity is the xsph= coefficient", stacklevel=3)
        if getattr(m, "joint_count", 0):
            raise ValueError(f"SolverPBF: the model has {m.joint_count} joints; SolverPBF moves free bodies only "
                             "(the fluid's reaction, gravity and control.body_f), not articulations")

    def _check_lane_capacity(self, capacity, lanes):
        if capacity is None:
            return None
        from .. import pbf_lanes

        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) \
                or capacity not in pbf_lanes.CAPACITIES or capacity > self.max_neighbors:
            raise ValueError(f"SolverPBF: lane_capacity must be one of {pbf_lanes.CAPACITIES} and <= "
                             f"max_neighbors={self.max_neighbors}, got {capacity!r}")
        if not lanes:
            warnings.warn(f"SolverPBF(lane_capacity={capacity}) has no effect without lanes=True", UserWarning,
                          stacklevel=3)
        return int(capacity)

    def _check_bounds(self, bounds):
        try:
            lower = np.asarray(bounds[0], np.float64).reshape(-1)
            upper = np.asarray(bounds[1], np.float64).reshape(-1)
            ok = len(bounds) == 2 and lower.shape == (3,) and upper.shape == (3,)
        except (TypeError, IndexError, ValueError):
            ok = False
        if not ok or not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
            raise ValueError(f"SolverPBF: bounds must be (lower, upper) with 3 finite numbers each, got {bounds!r}")
        span = 2.0 * self.model.particle_max_radius
        if np.any(upper - lower <= span):
            raise ValueError(f"SolverPBF: bounds={bounds!r} must be wider than a particle diameter ({span:g} m) on "
                             "every axis")
        return lower, upper

    def _check_inside(self, q, what, arg):
        outside = np.nonzero(np.any((q < self.lower) | (q > self.upper), axis=1))[0]
        if len(outside):
            p = int(outside[0])
            raise ValueError(f"SolverPBF: {arg}=({self.lower.tolist()}, {self.upper.tolist()}) does not contain "
                             f"{what} {p} at {q[p].tolist()} ({len(outside)} particles outside)")

    def _rest_density(self, rest_density):
        if rest_density is not None:
            return _positive("rest_density", rest_density)
        m = self.model
        vol = m.particle_volume.numpy().astype(np.float64)
        mass = m.particle_mass.numpy().astype(np.float64)
        fluid = mass > 0
        if np.any(vol[fluid] <= 0):
            raise ValueError("SolverPBF: rest_density=None needs every particle's volume (add them with "
                             "add_particle_grid(..., density=...)); or pass rest_density=")
        rho = mass[fluid] / vol[fluid]
        if rho.max() > rho.min() * (1.0 + 1e-5):
            raise ValueError(f"SolverPBF: the particles' densities range over [{rho.min():g}, {rho.max():g}] kg/m^3; "
                             "one fluid needs one rest_density= ")
        return float(rho.mean())

    @property
    def uniform_volume(self) -> bool:
        """Whether the lanes take their uniform-volume kernels (every particle has one rest volume:
        set at construction; False switches to the kernels that load each neighbour's volume)."""
        return self._uniform_volume

    @uniform_volume.setter
    def uniform_volume(self, value):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"SolverPBF.uniform_volume must be True or False, got {value!r}")
        if value and not self._one_volume:
            raise ValueError("SolverPBF.uniform_volume = True: the particles' rest volumes differ (particle_rest_volume "
                             "has more than one value); the uniform-volume lanes would give every neighbour the first")
        self._uniform_volume = bool(value)

    # -- stepping -------------------------------------------------------------------------------
    def buffers_for(self, state):
        """The step buffers owned by ``state`` (created the first time a step writes into it)."""
        b = getattr(state, "pbf_buffers", None)
        if b is None or b.iterations != self.iterations or b.max_neighbors != self.max_neighbors:
            b = PBFBuffers(self.model, self.iterations, self.max_neighbors, self.model.device,
                           state.particle_q.requires_grad)
            state.pbf_buffers = b
        return b

    def _fastest(self, state):
        """(speed [m/s], 'particle k' or 'body k'): the fastest particle or body centre of mass of ``state``."""
        v = state.particle_qd.numpy().astype(np.float64)
        speed = np.sqrt(np.sum(v * v, axis=1))
        k = int(np.argmax(speed))
        best = (float(speed[k]), f"particle {k}")
        if self.model.body_count and state.body_qd is not None:
            vb = state.body_qd.numpy().astype(np.float64)[:, :3]
            sb = np.sqrt(np.sum(vb * vb, axis=1))
            b = int(np.argmax(sb))
            if sb[b] > best[0]:   # a body sweeping through the fluid moves its particles as fast
                best = (float(sb[b]), f"body {b}")
        return best

    def max_dt(self, state) -> float:
        """Largest dt [s] the CFL check accepts for ``state``'s velocities (solves (|v| + |g| dt) dt = cfl h)."""
        vmax = self._fastest(state)[0]
        g, c = self._gravity_norm, self.cfl * self.h
        if g == 0.0:
            return math.inf if vmax == 0.0 else c / vmax
        return (-vmax + math.sqrt(vmax * vmax + 4.0 * g * c)) / (2.0 * g)

    def _check_state(self, state_in, dt):
        speed, who = self._fastest(state_in)
        number = (speed + self._gravity_norm * dt) * dt / self.h
        if not number <= self.cfl:
            raise ValueError(f"SolverPBF.step: dt={dt!r} gives a CFL number (|v| + |g| dt) dt / h = {number:.3g} "
                             f"over the limit cfl={self.cfl:g} ({who} moves at {speed:.3g} m/s, "
                             f"h = {self.h:g} m); take smaller steps (SolverPBF.max_dt(state)) or raise cfl=")
        self._check_inside(state_in.particle_q.numpy(), "state_in's particle", "bounds")

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control.particle_f_ext`` [N] may be None)."""
        if model is not self.model:
            raise ValueError("SolverPBF.step: model is not the model this solver was made for")
        check_step_arguments(model, state_in, state_out, control)
        check_dt(dt, "SolverPBF")
        if self.check_input:
            self._check_state(state_in, dt)
        f_ext = None if control is None else getattr(control, "particle_f_ext", None)
        if f_ext is None:
            f_ext = self._zero_force
        wrench = None if control is None else getattr(control, "body_f", None)
        buf = self.buffers_for(state_out)
        nbl = buf.neighbors
        bodies = buf.bodies
        K = self.K
        if model.body_count:
            bodies.predict(model, state_in, wrench, self.gravity, dt)
        K.predict(model, state_in, f_ext, self.gravity, dt, self._bounds, bodies, buf.p[0])
        vol = self.particle_rest_volume
        srt = self._cell_sorter(state_in, state_out)
        lanes = None
        if srt is not None:   # lanes over particles sorted by cell (sim/pbf_sort.py)
            scratch = self._scratch()
            srt.sort(model, buf.p[0], state_in.particle_q, vol, scratch)
            if self.check_input:
                self._overflow.zero_()
            srt.find_neighbors(scratch, nbl.nb, nbl.count, self._overflow)
            self._check_overflow()
            lanes = self._lane_capacity(state_in, state_out, nbl)
            if lanes is None:   # lists too long for the lanes: the scalar kernels, in the user's order
                srt = None
        if srt is None:
            self._find_neighbors(buf.p[0], nbl)
            if lanes is None:
                lanes = self._lane_capacity(state_in, state_out, nbl)
        # the arrays the pair loops read: sorted copies, or the user's order
        positions = buf.p if srt is None else [srt.p] + buf.p[1:]
        vol_k = vol if srt is None else srt.volume
        x_prev = state_in.particle_q if srt is None else srt.x_prev
        eps = self.relaxation / (self.h * self.h)
        pairs = self._pair_cache(state_in, state_out)
        box_lanes = lanes is not None and self.box_lanes and model.shape_count == 0 and not model.ground
        if box_lanes:   # the box is the only boundary: two kernels per iteration (sim/pbf_lanes_box.py)
            from .. import pbf_lanes, pbf_lanes_box

            pbf_lanes_box.iterate(model, positions, vol_k, nbl, buf.lam, self.h, eps, self.scorr_k, self.scorr_dq,
                                  self.wall_density, self._bounds, self._lane_scratch, lanes,
                                  pbf_lanes.ModelParticles(model) if srt is None else srt, uniform=self.uniform_volume)
        for k in range(0 if box_lanes else self.iterations):
            if lanes is not None:   # the same multipliers and positions, 8 particles per vector
                L, scratch = self._lanes_module, self._lane_scratch
                L.compute_lambda(model, positions[k], vol_k, nbl, self.h, eps, self.wall_density, self._bounds,
                                 bodies, buf.lam[k], scratch, lanes, uniform=self.uniform_volume)
                L.apply_delta(model, positions[k], vol_k, nbl, buf.lam[k], self.h, self.scorr_k, self.scorr_dq,
                              self.wall_density, self._bounds, bodies, dt, positions[k + 1], scratch, lanes,
                              particles=srt, uniform=self.uniform_volume)
                continue
            K.compute_lambda(model, buf.p[k], vol, nbl, self.h, eps, self.wall_density, self._bounds, bodies,
                             buf.lam[k], pairs, fast_math=self.fast_math)
            K.apply_delta(model, buf.p[k], vol, nbl, buf.lam[k], self.h, self.scorr_k, self.scorr_dq, self.wall_density,
                          self._bounds, bodies, dt, buf.p[k + 1], pairs, fast_math=self.fast_math)
        p = positions[-1]
        K.update_velocity(model, x_prev, p, dt, buf.v)
        v_out = state_out.particle_qd if srt is None else srt.v
        if lanes is not None:   # the same vorticity and velocities, 8 particles per vector
            L, scratch = self._lanes_module, self._lane_scratch
            if self.vorticity_confinement > 0.0:
                L.compute_vorticity(model, p, buf.v, vol_k, nbl, self.h, buf.omega, buf.omega_norm, scratch, lanes,
                                    uniform=self.uniform_volume)
            L.finish_velocity(model, p, buf.v, buf.omega, buf.omega_norm, vol_k, nbl, self.h, self.xsph,
                              self.vorticity_confinement, dt, v_out, scratch, lanes,
                              split=not self.vorticity_confinement > 0.0, particles=srt, uniform=self.uniform_volume)
        else:
            if self.vorticity_confinement > 0.0:
                K.compute_vorticity(model, p, buf.v, vol, nbl, self.h, buf.omega, buf.omega_norm, pairs,
                                    fast_math=self.fast_math)
            else:
                pairs = None   # finish_kernel computes its weights itself
            K.finish_velocity(model, p, buf.v, buf.omega, buf.omega_norm, vol, nbl, self.h, self.xsph,
                              self.vorticity_confinement, dt, state_out.particle_qd, pairs, fast_math=self.fast_math)
        if srt is None:
            kc.copy(state_out.particle_q, p)
        else:
            srt.scatter(p, srt.v, state_out.particle_q, state_out.particle_qd)
        if model.body_count:
            bodies.finish(model, state_in, wrench, self.gravity, dt, state_out)

    def _pair_cache(self, state_in, state_out):
        """The solver's scratch of per-pair spiky factors (float (N, max_neighbors), reused by every
        iteration and step), or None when a gradient may be asked for (the Tape would need one per
        iteration; those steps recompute the pairs in apply_delta instead)."""
        if not self.pair_cache or state_in.particle_q.requires_grad or state_out.particle_q.requires_grad:
            return None
        shape = (self.model.particle_count, self.max_neighbors)
        if self._pairs is None or tuple(self._pairs.shape) != shape:
            self._pairs = kc.zeros(shape, dtype=float, device=self.model.device)
        return self._pairs

    def _lane_capacity(self, state_in, state_out, nbl):
        """The padded neighbour-loop length of this step's lanes (sim/pbf_lanes.py), or None: lanes off,
        a differentiated step, or a neighbour list longer than every lane capacity."""
        if not self.lanes:
            return None
        if state_in.particle_q.requires_grad or state_out.particle_q.requires_grad:
            self._warn_lanes_off("the step is differentiated (its states require gradients; the lanes have no "
                                 "adjoint)")
            return None
        from .. import pbf_lanes

        self._lanes_module = pbf_lanes
        longest = int(nbl.count.numpy().max())   # (N,) ints read back once per step
        current = self._lane_current
        if current is not None and longest <= current:
            capacity = current   # a module already built: a few padding slots cost less than a new module
        elif self.lane_capacity is not None:
            capacity = None
            self._warn_lanes_off(f"a particle has {longest} neighbours, more than lane_capacity={self.lane_capacity}")
        else:
            capacity = pbf_lanes.capacity_for(longest, self.max_neighbors)
            if capacity is None:
                self._warn_lanes_off(f"a particle has {longest} neighbours, more than the largest lane capacity that "
                                     f"fits max_neighbors={self.max_neighbors} (pbf_lanes.CAPACITIES)")
            else:
                self._lane_current = capacity
        if capacity is not None:
            self._scratch()
        return capacity

    def _scratch(self):
        """The lanes' scratch arrays (sim/pbf_lanes.LaneScratch), made on first use."""
        if self._lane_scratch is None:
            from .. import pbf_lanes

            self._lanes_module = pbf_lanes
            self._lane_scratch = pbf_lanes.LaneScratch(self.model.particle_count, self.model.device)
        return self._lane_scratch

    def _cell_sorter(self, state_in, state_out):
        """The cell sort of this step's lanes (sim/pbf_sort.SortedParticles), or None: lanes off, a
        differentiated step, ``cell_sort=False``, or a dense cell grid too large for the particles."""
        if not (self.cell_sort and self.lanes) or state_in.particle_q.requires_grad \
                or state_out.particle_q.requires_grad:
            return None
        if self._sorted is None:
            from .. import pbf_sort

            dims = pbf_sort.grid_dims(self.lower, self.upper, self.h)
            if not pbf_sort.fits(dims, self.model.particle_count):
                if not self._sort_warned:
                    self._sort_warned = True
                    warnings.warn(f"SolverPBF(cell_sort=True): the domain's {dims[0]}x{dims[1]}x{dims[2]} cells of "
                                  f"{pbf_sort.NEIGHBOR_SKIN:g} h are too many for {self.model.particle_count} "
                                  "particles (pbf_sort.CELLS_PER_PARTICLE); the lanes use the hash grid",
                                  stacklevel=4)
                return None
            self._sorted = pbf_sort.SortedParticles(self.model.particle_count, self.lower, self.upper, self.h,
                                                    self.model.device)
        return self._sorted

    def _warn_lanes_off(self, why, stacklevel=5):
        """lanes=True was asked for but this step runs the scalar kernels: say so once per reason (the
        results are the same, only slower, so a warning rather than an error)."""
        if why not in self._lane_warnings:
            self._lane_warnings.add(why)
            warnings.warn(f"SolverPBF(lanes=True): running the scalar pair kernels because {why}",
                          stacklevel=stacklevel)   # 5: the user's solver.step (through reports_non_finite)

    def _find_neighbors(self, p, nbl):
        K = self.K
        from ..collide_particles import _build_off_tape

        _build_off_tape(self.grid, p, K.NEIGHBOR_SKIN * self.h)
        if self.check_input:
            self._overflow.zero_()
        from .. import pbf_neighbors   # pbf_kernels.find_neighbors' lists, without its branch per candidate

        pbf_neighbors.find_neighbors(self.grid, p, self.h, nbl.nb, nbl.count, self._overflow, self.model.device,
                                     fast_math=self.fast_math)
        self._check_overflow()

    def _check_overflow(self):
        """Raise if the last neighbour search overflowed max_neighbors (with check_input)."""
        K = self.K
        if self.check_input:
            most = int(self._overflow.numpy()[0])
            if most:
                raise ValueError(f"SolverPBF.step: a particle has {most} neighbours within {K.NEIGHBOR_SKIN:g} h, more "
                                 f"than max_neighbors={self.max_neighbors}; pass a larger max_neighbors= (or a "
                                 "smaller smoothing_length)")

    # -- diagnostics ----------------------------------------------------------------------------
    def density(self, state) -> np.ndarray:
        """SPH density sum_j m_j W(x_i - x_j) [kg/m^3] of ``state``'s particles (numpy (N,)); not taped."""
        import geometry

        K = self.K
        n = self.model.particle_count
        rho = kc.zeros(n, dtype=float, device=self.model.device)
        grid = geometry.HashGrid(self.grid.dim_x, self.grid.dim_y, self.grid.dim_z, device=self.model.device)
        from ..collide_particles import _build_off_tape

        _build_off_tape(grid, state.particle_q, self.h)
        K.sph_density(grid, state.particle_q, self.model.particle_mass, self.h, rho, self.model.device)
        return rho.numpy().astype(np.float64)
