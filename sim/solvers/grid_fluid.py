"""SolverGridFluid: incompressible smoke on a staggered (MAC) grid, 2-D or 3-D, differentiable.

One step (all kernels in sim/grid_fluid_kernels.py and sim/grid_fluid_cg.py):

1. advect velocity, smoke density and temperature semi-Lagrangian (midpoint back-trace,
   bilinear/trilinear sampling), optionally MacCormack with a min/max limiter;
2. viscosity, explicit, sub-cycled so that each sub-step keeps nu dt / dx^2 <= 0.9 / (2 d);
3. add buoyancy ``(-smoke_weight rho + heat_lift (T - ambient)) e_y`` and vorticity
   confinement (after diffusion, so that a gradient force such as uniform gravity is
   cancelled exactly by the projection);
4. zero the normal velocity on the domain walls and solid faces;
5. project: preconditioned CG (a multigrid V-cycle, or Jacobi) solves ``A psi = -(net outflow)`` (A = -dx^2 Laplacian
   with zero-flux walls) and ``u -= grad psi``; ``pressure = rho_fluid dx psi / dt`` [Pa].

Walls: the domain boundary and solid cells are static walls.  ``boundary="free_slip"``
(default) only stops the normal velocity; ``"no_slip"`` also makes the viscous term see a
zero tangential velocity on walls (ghost velocity = -interior).  For an inviscid fluid
(viscosity 0) the two coincide, as they should.

Differentiability: with ``state(requires_grad=True)`` every kernel of ``step`` is recorded on
an active ``kc.Tape``; the pressure solve is recorded as one ``Tape.record_func`` step whose
adjoint is a second CG solve with the same symmetric operator.  Each ``state_out`` owns its
step's intermediate arrays (created on the first step into it), so a taped run keeps one
set per state and nothing the backward pass reads is overwritten.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

import kernelcore as kc

from .. import grid_fluid_advect as A
from .. import grid_fluid_kernels as K
from .. import grid_fluid_levelset as LS
from .. import grid_fluid_liquid as L
from ..grid_fluid_cg import PoissonCG, taped_solve

BOUNDARIES = ("free_slip", "no_slip")
ADVECTION = ("semi_lagrangian", "maccormack")
PRECONDITIONERS = ("multigrid", "jacobi")


class GridFluidState:
    """Fields of a MAC grid fluid.

    Attributes (kc float32 arrays; d = 2 or 3):
        u: (nx + 1, ny[, nz]) x-velocity [m/s] on faces x = i dx.
        v: (nx, ny + 1[, nz]) y-velocity [m/s] on faces y = j dx.
        w: (nx, ny, nz + 1) z-velocity [m/s] (3-D only; None in 2-D).
        density: (nx, ny[, nz]) smoke density [kg/m^3 or any unit, see smoke_weight].
        temperature: (nx, ny[, nz]) [K or any unit, see heat_lift].
        pressure: (nx, ny[, nz]) [Pa] from the last projection (for rho_fluid; zero mean).
        solid: (nx, ny[, nz]) int32, 1 = solid cell (shared with the solver).
        phi: (nx, ny[, nz]) liquid level set [m], negative inside the liquid (``liquid=True``
            only; None otherwise); starts all air (phi = nx + ny + nz cells).
    """

    def __init__(self, solver, requires_grad):
        nx, ny, nz = solver._shape3
        dev, rg = solver.device, requires_grad
        cells = solver.res

        def face(axis):
            s = list(cells)
            s[axis] += 1
            return kc.zeros(tuple(s), dtype=float, device=dev, requires_grad=rg)

        self.u = face(0)
        self.v = face(1)
        self.w = face(2) if solver.dim == 3 else None
        self.density = kc.zeros(cells, dtype=float, device=dev, requires_grad=rg)
        self.temperature = kc.zeros(cells, dtype=float, device=dev, requires_grad=rg)
        self.pressure = kc.zeros(cells, dtype=float, device=dev, requires_grad=rg)
        self.solid = solver.solid_mask
        self.phi = None
        if solver.liquid:
            self.phi = kc.zeros(cells, dtype=float, device=dev)
            LS.fill(self.phi.reshape(solver._shape3), sum(solver._shape3) * solver.dx)
        self.requires_grad = bool(rg)
        self._scratch = {}
        self._solver_id = id(solver)

    def scratch(self, name, shape, dtype=float):
        """This state's buffer ``name`` (made on first use, kept for the next step into this state)."""
        a = self._scratch.get(name)
        if a is None or tuple(a.shape) != tuple(shape):
            a = kc.zeros(shape, dtype=dtype, device=self.u.device, requires_grad=self.requires_grad)
            self._scratch[name] = a
        return a


def _positive_int_tuple(res):
    try:
        t = tuple(int(r) for r in res)
        ok = all(int(r) == r for r in res) and len(t) in (2, 3)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"SolverGridFluid: res must be (nx, ny) or (nx, ny, nz) integers, got {res!r}")
    if any(r < 1 for r in t):
        raise ValueError(f"SolverGridFluid: res={res!r} must have every entry >= 1 (a resolution of zero has no cells)")
    return t


def _finite(name, value, minimum=None, strict=False):
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"SolverGridFluid: {name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or (minimum is not None and (x <= minimum if strict else x < minimum)):
        bound = "" if minimum is None else f" {'>' if strict else '>='} {minimum:g}"
        raise ValueError(f"SolverGridFluid: {name} must be finite{bound}, got {value!r}")
    return x


class SolverGridFluid:
    """Incompressible fluid (smoke) on a MAC grid of ``res`` cells of size ``dx``.

    Args:
        res: (nx, ny) or (nx, ny, nz) cells, each >= 1.
        dx: cell size [m] (> 0).  The domain is [0, nx dx] x [0, ny dx] [x [0, nz dx]].
        viscosity: kinematic viscosity nu [m^2/s] (>= 0).
        advection: "semi_lagrangian" or "maccormack".
        boundary: "free_slip" or "no_slip" (domain walls and solids).
        smoke_weight: downward acceleration per unit smoke density [m/s^2 per density unit].
        heat_lift: upward acceleration per unit temperature above ``ambient`` [m/s^2 per K].
        ambient: ambient temperature.
        vorticity: vorticity-confinement strength epsilon (dimensionless, >= 0).
        rho: fluid density [kg/m^3], only to report ``state.pressure`` in Pa.
        cfl: ``step`` raises when max|u| dt / dx exceeds it (semi-Lagrangian advection is
            stable beyond 1, but a back-trace longer than a few cells skips over solids).
        tol: relative residual of the pressure CG (2-norm; 1e-7 leaves the discrete
            divergence below 1e-6 of the velocity scale).
        max_iter: CG iteration cap (default 100 + 8 max(res)).
        warm_start: start CG from the pressure potential of the step that made ``state_in``.
        preconditioner: "multigrid" (one geometric V-cycle, sim/grid_fluid_mg.py) or "jacobi".
        liquid: a free-surface liquid instead of smoke: a level set ``state.phi`` (negative in
            the liquid; fill it with ``add_liquid_box``) is advected and redistanced, gravity
            acts, and the pressure is solved on liquid cells only with p = 0 on the surface
            (ghost fluid, sim/grid_fluid_liquid.py).  Differentiable with the surface held
            fixed: on a Tape, gradients flow through the velocity advection, gravity, the
            pressure solve (its adjoint is another solve on the same liquid cells) and the
            extension into the air, while the level set's advection and redistancing are not
            differentiated (the liquid/air classification of cells is discontinuous).  Exact
            where a perturbation does not move the surface within the step; ``state.phi``
            gets no gradient.  A taped run needs a fresh output state per step, as always.
            Buoyancy and vorticity confinement are smoke features and must stay 0.
        gravity: downward (-y) acceleration [m/s^2] of the liquid (>= 0; liquid only).
        redistance_iterations: reinitialisation iterations of phi per step (liquid only).
        device: kernelcore device.
    """

    def __init__(self, res, dx, viscosity=0.0, advection="semi_lagrangian", boundary="free_slip",
                 smoke_weight=0.0, heat_lift=0.0, ambient=0.0, vorticity=0.0, rho=1.0, cfl=5.0,
                 tol=1e-7, max_iter=None, warm_start=True, preconditioner="multigrid", liquid=False, gravity=9.81,
                 redistance_iterations=4, device=None):
        self.res = _positive_int_tuple(res)
        self.dim = len(self.res)
        self.dx = _finite("dx", dx, 0.0, strict=True)
        self.viscosity = _finite("viscosity", viscosity, 0.0)
        if advection not in ADVECTION:
            raise ValueError(f"SolverGridFluid: advection must be one of {ADVECTION}, got {advection!r}")
        if boundary not in BOUNDARIES:
            raise ValueError(f"SolverGridFluid: boundary must be one of {BOUNDARIES}, got {boundary!r}")
        self.advection, self.boundary = advection, boundary
        self.smoke_weight = _finite("smoke_weight", smoke_weight)
        self.heat_lift = _finite("heat_lift", heat_lift)
        self.ambient = _finite("ambient", ambient)
        self.vorticity = _finite("vorticity", vorticity, 0.0)
        self.rho = _finite("rho", rho, 0.0, strict=True)
        self.cfl = _finite("cfl", cfl, 0.0, strict=True)
        self.tol = _finite("tol", tol, 0.0, strict=True)
        if max_iter is not None and (isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1):
            raise ValueError(f"SolverGridFluid: max_iter must be None or an integer >= 1, got {max_iter!r}")
        self.warm_start = bool(warm_start)
        if preconditioner not in PRECONDITIONERS:
            raise ValueError(f"SolverGridFluid: preconditioner must be one of {PRECONDITIONERS}, got {preconditioner!r}")
        self.liquid = bool(liquid)
        self.gravity = _finite("gravity", gravity, 0.0)
        self.redistance_iterations = int(_finite("redistance_iterations", redistance_iterations, 1.0))
        if self.liquid and (self.smoke_weight != 0.0 or self.heat_lift != 0.0 or self.vorticity != 0.0):
            raise ValueError("SolverGridFluid: liquid=True takes smoke_weight=0, heat_lift=0 and vorticity=0 (smoke "
                             f"forces), got smoke_weight={smoke_weight!r}, heat_lift={heat_lift!r}, "
                             f"vorticity={vorticity!r}")
        self.device = kc.get_device(device)
        self._shape3 = self.res if self.dim == 3 else self.res + (1,)
        self.solid_mask = kc.zeros(self.res, dtype=kc.int32, device=self.device)
        self._solid3 = self.solid_mask.reshape(self._shape3)
        self.cg = PoissonCG(self._solid3, tol=self.tol, max_iter=max_iter, preconditioner=preconditioner)
        # 2-D runs as one layer of 3-D cells with a zero z-velocity that nothing writes
        nx, ny, _ = self._shape3
        self._zero_w = kc.zeros((nx, ny, 2), dtype=float, device=self.device) if self.dim == 2 else None
        self._max_speed = kc.zeros(1, dtype=float, device=self.device)
        self.liquid_cg = L.LiquidPoissonCG(self._solid3, tol=self.tol, max_iter=max_iter) if self.liquid else None

    # -- solids ------------------------------------------------------------------------------------
    def _pad(self, p, name):
        a = np.asarray(p, np.float64).reshape(-1)
        if a.shape not in ((self.dim,), (3,)) or not np.all(np.isfinite(a)):
            raise ValueError(f"SolverGridFluid: {name} must be {self.dim} finite numbers, got {p!r}")
        out = np.zeros(3)
        out[:len(a)] = a
        if self.dim == 2:
            out[2] = 0.5 * self.dx  # the cell layer's centre: 2-D shapes are their cross-section
        return out

    def add_solid_sphere(self, center, radius):
        """Make cells whose centre is inside the sphere (circle in 2-D) solid; centre [m], radius [m] > 0."""
        c = self._pad(center, "center")
        r = _finite("radius", radius, 0.0, strict=True)
        K.mark_sphere(c, r, self.dx, self._solid3)
        self.cg.update_mask()

    def add_solid_box(self, center, half_extents):
        """Make cells whose centre is inside the axis-aligned box solid (half extents [m] > 0)."""
        c = self._pad(center, "center")
        h = np.asarray(half_extents, np.float64).reshape(-1)
        if h.shape not in ((self.dim,), (3,)) or not np.all(np.isfinite(h)) or np.any(h <= 0):
            raise ValueError(f"SolverGridFluid: half_extents must be {self.dim} finite numbers > 0, got {half_extents!r}")
        hh = np.full(3, 1.0e30)
        hh[:len(h)] = h
        if self.dim == 2:
            hh[2] = 1.0e30
        K.mark_box(c, hh, self.dx, self._solid3)
        self.cg.update_mask()

    def add_solid_sdf(self, volume):
        """Make cells whose centre has a negative signed distance in ``geometry.Volume`` (world = grid metres) solid."""
        from ..grid_fluid_volume import mark_volume

        mark_volume(volume, self.dx, self._solid3, 2 if self.dim == 2 else 3)
        self.cg.update_mask()

    def emit(self, state, center, half_extents, density=1.0, temperature=0.0):
        """A source: raise ``state.density`` / ``temperature`` to at least the given values in the
        cells whose centre lies inside the box (centre, half extents [m]).  In place, so not for
        a state a Tape has already read; call it between steps."""
        c = self._pad(center, "center")
        h = np.asarray(half_extents, np.float64).reshape(-1)
        if h.shape not in ((self.dim,), (3,)) or not np.all(np.isfinite(h)) or np.any(h <= 0):
            raise ValueError(f"SolverGridFluid.emit: half_extents must be {self.dim} finite numbers > 0, got {half_extents!r}")
        hh = np.full(3, 1.0e30)
        hh[:len(h)] = h
        if self.dim == 2:
            hh[2] = 1.0e30
        for name, value in (("density", density), ("temperature", temperature)):
            f = self._cell(getattr(state, name))
            tmp = kc.clone(f)
            K.emit_box(tmp, c, hh, self.dx, _finite(name, value), f)

    # -- states ------------------------------------------------------------------------------------
    def state(self, requires_grad=False):
        """A zero state (fluid at rest, no smoke; with ``liquid=True`` no liquid) on this grid."""
        return GridFluidState(self, requires_grad)

    # -- liquid ------------------------------------------------------------------------------------
    def _require_liquid(self, what):
        if not self.liquid:
            raise ValueError(f"SolverGridFluid.{what}: needs a solver made with liquid=True")

    def add_liquid_box(self, state, center, half_extents):
        """Add liquid in the axis-aligned box (centre, half extents [m] > 0) to ``state.phi``
        (union with what is there).  A box reaching past the domain walls fills up to them."""
        self._require_liquid("add_liquid_box")
        c = self._pad(center, "center")
        h = np.asarray(half_extents, np.float64).reshape(-1)
        if h.shape not in ((self.dim,), (3,)) or not np.all(np.isfinite(h)) or np.any(h <= 0):
            raise ValueError(f"SolverGridFluid.add_liquid_box: half_extents must be {self.dim} finite numbers > 0, "
                             f"got {half_extents!r}")
        hh = np.full(3, 1.0e6)
        hh[:len(h)] = h
        if self.dim == 2:
            hh[2] = 1.0e6
        phi = self._cell(state.phi)
        LS.add_box(kc.clone(phi), c, hh, self.dx, phi)

    def liquid_volume(self, state):
        """Liquid volume [m^3; m^2 in 2-D] of ``state``: the sum over fluid cells of
        clamp(1/2 - phi / dx, 0, 1) dx^d (one device read)."""
        self._require_liquid("liquid_volume")
        acc = kc.zeros(1, dtype=kc.float64, device=self.device)
        LS.volume_cells(self._cell(state.phi), self._solid3, self.dx, acc)
        return float(acc.numpy()[0]) * self.dx ** self.dim

    def _views(self, st):
        s3 = self._shape3
        nx, ny, nz = s3
        if self.dim == 3:
            return st.u, st.v, st.w
        return st.u.reshape((nx + 1, ny, 1)), st.v.reshape((nx, ny + 1, 1)), self._zero_w

    def _cell(self, a):
        return a.reshape(self._shape3)

    def _check_state(self, st, name):
        if not isinstance(st, GridFluidState) or st._solver_id != id(self):
            raise ValueError(f"SolverGridFluid.step: {name} must be a state made by this solver's state()")

    def max_speed(self, state):
        """Largest face speed max(|u|, |v|, |w|) [m/s] (one device read)."""
        self._max_speed.zero_()
        for q in self._views(state)[:self.dim]:
            K.max_abs(q, self._max_speed)
        return float(self._max_speed.numpy()[0])

    def divergence(self, state):
        """Cell-centred discrete divergence [1/s] of ``state``'s velocity (0 in solid cells), a new kc array."""
        out = kc.zeros(self.res, dtype=float, device=self.device)
        u, v, w = self._views(state)
        K.net_outflow(u, v, w, self._solid3, 1.0 / self.dx, self._cell(out))
        return out

    # -- stepping ----------------------------------------------------------------------------------
    def step(self, state_in, state_out, dt):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (a different state)."""
        self._check_state(state_in, "state_in")
        self._check_state(state_out, "state_out")
        if state_in is state_out:
            raise ValueError("SolverGridFluid.step: state_out must differ from state_in (the step reads one and "
                             "writes the other)")
        try:
            ok = math.isfinite(float(dt)) and float(dt) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"SolverGridFluid.step: dt must be a finite number > 0, got {dt!r}")
        dt = float(dt)
        speed = self.max_speed(state_in)
        if not speed < 1.0e38:
            raise ValueError("SolverGridFluid.step: state_in holds a non-finite velocity (NaN or inf)")
        if speed * dt / self.dx > self.cfl:
            raise ValueError(f"SolverGridFluid.step: dt={dt:g} s gives a CFL number max|u| dt / dx = "
                             f"{speed:.4g} * {dt:g} / {self.dx:g} = {speed * dt / self.dx:.3g} over the limit "
                             f"cfl={self.cfl:g}; take a smaller dt (at most {self.cfl * self.dx / speed:.4g} s)")
        if self.liquid:
            return self._step_liquid(state_in, state_out, dt)
        out = state_out
        d, s3 = self.dim, self._shape3
        solid = self._solid3
        h = dt / self.dx
        vel_in = self._views(state_in)
        face_shapes = [tuple(q.shape) for q in vel_in]
        offsets = [(0.0, 0.5, 0.5), (0.5, 0.0, 0.5), (0.5, 0.5, 0.0)]
        cell_off = (0.5, 0.5, 0.5)
        u_in, v_in, w_in = vel_in

        def advect(q, offset, name, dst, axis=None):
            return self._advect(q, offset, vel_in, h, out, name, dst, axis)

        # 1. advection
        vel = [advect(vel_in[a], offsets[a], f"adv{a}", out.scratch(f"adv{a}", face_shapes[a]), axis=a)
               for a in range(d)]
        if self.advection == "semi_lagrangian":  # one back-trace for both cell fields
            A.advect_cells(self._cell(state_in.density), self._cell(state_in.temperature), u_in, v_in, w_in,
                           h, self._cell(out.density), self._cell(out.temperature))
        else:
            advect(self._cell(state_in.density), cell_off, "rho", self._cell(out.density))
            advect(self._cell(state_in.temperature), cell_off, "temp", self._cell(out.temperature))
        # 2. viscosity, explicit, sub-cycled for stability
        if self.viscosity > 0.0:
            n_sub = self.viscosity_substeps(dt)
            c = self.viscosity * (dt / n_sub) / (self.dx * self.dx)
            for s in range(n_sub):
                vel = [self._viscous(vel[a], a, c, out.scratch(f"visc{s}_{a}", face_shapes[a])) for a in range(d)]
        # 3. forces, after diffusion: a force that is a pure gradient (uniform gravity on uniform
        #    smoke) is then cancelled exactly by the projection and a fluid at rest stays at rest
        use_conf = self.vorticity > 0.0
        buoyant = self.smoke_weight != 0.0 or self.heat_lift != 0.0
        if use_conf or buoyant:
            conf = out.scratch("conf", s3, kc.vec3)
            if use_conf:
                omega = out.scratch("omega", s3, kc.vec3)
                w_adv = vel[2] if d == 3 else self._zero_w
                K.vorticity_confinement(vel[0], vel[1], w_adv, solid, self.dx, self.vorticity, omega, conf)
            forced = []
            for a in range(d):
                dst = out.scratch(f"force{a}", face_shapes[a])
                K.face_forces(vel[a], a, solid, self._cell(out.density), self._cell(out.temperature), conf, use_conf,
                              self.smoke_weight, self.heat_lift, self.ambient, dt, dst)
                forced.append(dst)
            walled = forced  # face_forces also zeroed the walls' faces
        else:
            # 4. walls
            walled = []
            for a in range(d):
                dst = out.scratch(f"wall{a}", face_shapes[a])
                K.enforce_walls(vel[a], a, solid, dst)
                walled.append(dst)
        # 5. projection
        w_walled = walled[2] if d == 3 else self._zero_w
        rhs = out.scratch("rhs", s3)
        K.net_outflow(walled[0], walled[1], w_walled, solid, -1.0, rhs)
        psi = out.scratch("psi", s3)
        # the previous step's potential is a good first guess in a flow that changes smoothly
        guess = state_in._scratch.get("psi") if self.warm_start else None
        taped_solve(self.cg, rhs, psi, guess)
        dst_vel = self._views(out)
        for a in range(d):
            K.subtract_gradient(walled[a], a, solid, psi, dst_vel[a])
        K.scale(psi, self.rho * self.dx / dt, self._cell(out.pressure))

    def _advect(self, q, offset, vel_in, h, out, name, dst, axis=None):
        """``q`` (cells or faces at ``offset``) carried by the face velocities ``vel_in`` over ``h`` = dt/dx
        cells into ``dst``, by the solver's advection scheme.  ``axis``: ``q`` is that face velocity
        component, which has its own vectorised kernel (sim/grid_fluid_advect.py, the same numbers)."""
        u_in, v_in, w_in = vel_in

        def back_trace(src, sign, into):
            if axis is None or sign < 0:
                K.advect(src, u_in, v_in, w_in, offset, sign * h, into)
            else:
                A.advect_face(axis, u_in, v_in, w_in, h, into)

        if self.advection == "semi_lagrangian":
            back_trace(q, 1.0, dst)
            return dst
        fwd = out.scratch(name + "_fwd", q.shape)
        bwd = out.scratch(name + "_bwd", q.shape)
        back_trace(q, 1.0, fwd)
        back_trace(fwd, -1.0, bwd)
        K.maccormack(q, fwd, bwd, u_in, v_in, w_in, offset, h, dst)
        return dst

    def _step_liquid(self, state_in, out, dt):
        """One free-surface liquid step (see ``liquid`` in the class docstring)."""
        from kernelcore.device import get_runtime

        taped = bool(get_runtime().tape_stack)
        d, s3 = self.dim, self._shape3
        solid = self._solid3
        h = dt / self.dx
        vel_in = self._views(state_in)
        u_in, v_in, w_in = vel_in
        face_shapes = [tuple(q.shape) for q in vel_in]
        offsets = [(0.0, 0.5, 0.5), (0.5, 0.0, 0.5), (0.5, 0.5, 0.0)]

        def advect(q, offset, name, dst, axis=None):
            return self._advect(q, offset, vel_in, h, out, name, dst, axis)

        # 1. advection of velocity and level set, then redistancing
        vel = [advect(vel_in[a], offsets[a], f"adv{a}", out.scratch(f"adv{a}", face_shapes[a]), axis=a)
               for a in range(d)]
        with L.untaped():   # the surface is held fixed for gradients (see ``liquid`` in the class docstring)
            phi_adv = advect(self._cell(state_in.phi), (0.5, 0.5, 0.5), "phi", out.scratch("phi_adv", s3))
            phi = self._cell(out.phi)
            LS.redistance(phi_adv, self.dx, self.redistance_iterations, out.scratch("phi_a", s3),
                          out.scratch("phi_b", s3), phi)
        # 2. viscosity, 3. gravity, 4. walls
        if self.viscosity > 0.0:
            n_sub = self.viscosity_substeps(dt)
            c = self.viscosity * (dt / n_sub) / (self.dx * self.dx)
            for s in range(n_sub):
                vel = [self._viscous(vel[a], a, c, out.scratch(f"visc{s}_{a}", face_shapes[a])) for a in range(d)]
        if self.gravity != 0.0:
            g = out.scratch("gravity1", face_shapes[1])
            L.add_gravity(vel[1], 1, solid, -self.gravity * dt, g)
            vel[1] = g
        walled = []
        for a in range(d):
            dst = out.scratch(f"wall{a}", face_shapes[a])
            K.enforce_walls(vel[a], a, solid, dst)
            walled.append(dst)
        # 5. projection on the liquid cells, p = 0 on the surface
        w_walled = walled[2] if d == 3 else self._zero_w
        rhs = out.scratch("rhs", s3)
        K.net_outflow(walled[0], walled[1], w_walled, solid, -1.0, rhs)
        psi = out.scratch("psi", s3)
        # the liquid cells of this step's phi, again before the adjoint solve (the CG is shared by all steps)
        taped_solve(self.liquid_cg, rhs, psi, prepare=lambda: self.liquid_cg.update(phi))
        # 6. extend the liquid's velocity into the air, as far as the next step's back-trace reaches
        sweeps = max(2, int(math.ceil(self.cfl)) + 1)
        dst_vel = self._views(out)
        for a in range(d):
            proj = out.scratch(f"proj{a}", face_shapes[a])
            valid = out.scratch(f"valid{a}", face_shapes[a], kc.int32)
            L.subtract_liquid_gradient(walled[a], a, solid, phi, psi, proj, valid)
            if taped:   # one buffer per sweep: the backward pass reads each sweep's inputs
                ext_q = [out.scratch(f"ext{a}_{n}", face_shapes[a]) for n in range(sweeps - 1)]
                ext_v = [out.scratch(f"ext_valid{a}_{n}", face_shapes[a], kc.int32) for n in range(sweeps - 1)]
            else:
                ext_q = out.scratch(f"ext{a}", face_shapes[a])
                ext_v = out.scratch(f"ext_valid{a}", face_shapes[a], kc.int32)
            L.extend(proj, valid, sweeps, ext_q, ext_v, dst_vel[a],
                     out.scratch(f"valid_out{a}", face_shapes[a], kc.int32))
        K.scale(psi, self.rho * self.dx / dt, self._cell(out.pressure))

    def viscosity_substeps(self, dt):
        """Explicit diffusion sub-steps per step: nu dt_sub / dx^2 <= 0.9 / (2 d)."""
        c = self.viscosity * dt / (self.dx * self.dx)
        return max(1, int(math.ceil(c * 2 * self.dim / 0.9)))

    def _viscous(self, q, axis, c, dst):
        K.viscosity_step(q, axis, self._solid3, self.dim, self.boundary == "no_slip", c, dst)
        return dst

    @property
    def last_cg_iterations(self):
        return self.cg.iterations

    @property
    def last_cg_residual(self):
        return self.cg.residual
