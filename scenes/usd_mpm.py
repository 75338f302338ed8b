"""The ``kc:mpm:*`` part of scene files: settings of ``kc:solver = "mpm"`` scenes.

On the ``PhysicsScene`` (read only when ``kc:solver = "mpm"``; elsewhere they are
reported as having no effect):

* ``float kc:mpm:dx`` — grid spacing [stage units] (required);
* ``point3f kc:mpm:lower``, ``point3f kc:mpm:upper`` — the domain box whose faces are
  walls (required; every particle must start inside);
* ``int kc:mpm:dim`` — 3 (default) or 2 (x, y; particles keep their z);
* ``token kc:mpm:boundary`` — ``"sticky"``, ``"slip"`` or ``"separate"`` (default) for the
  walls and the static colliders; ``float kc:mpm:friction`` — their Coulomb coefficient;
* ``float kc:mpm:cfl`` — the time-step guard's factor (default 0.5): a run whose
  ``kc:timeStep / kc:substeps`` exceeds ``cfl * dx / c`` stops before simulating and says
  how many substeps are needed.

On ``Points`` of such a scene (every Points prim is MPM material there):

* ``token kc:mpm:material`` — ``"neo_hookean"``, ``"fixed_corotated"``, ``"snow"``,
  ``"sand"`` or ``"fluid"`` (required);
* ``float kc:mpm:youngsModulus`` [Pa], ``kc:mpm:poissonRatio``, ``kc:mpm:hardening``,
  ``kc:mpm:criticalCompression``, ``kc:mpm:criticalStretch``, ``kc:mpm:frictionAngle``
  [degrees], ``kc:mpm:viscosity`` [Pa s] — as ``ModelBuilder.add_material``;
* ``float kc:mpm:volume`` — volume of each particle [stage units^3]; default
  ``kc:grid:spacing^3`` for a generated grid, else ``(2 radius)^3``.  ``kc:density`` then
  gives mass = density * volume.

A ``Cube`` prim with ``kc:mpm:material`` (and no PhysicsCollisionAPI) in such a scene is a
block of material: filled with particles ``kc:mpm:spacing`` apart (default dx / 2), with
``kc:density``, ``kc:velocity`` and the material attributes above (:func:`read_cube_block`).
"""
from __future__ import annotations

import math

import numpy as np

import sim
from sim.mpm_constitutive import MPM_MODEL_CODES

#: USD name -> add_material keyword of the continuum parameters
MATERIAL_PARAMS = {"youngsModulus": "youngs_modulus", "poissonRatio": "poisson_ratio", "hardening": "hardening",
                   "criticalCompression": "critical_compression", "criticalStretch": "critical_stretch",
                   "frictionAngle": "friction_angle", "viscosity": "viscosity"}
BOUNDARIES = ("sticky", "slip", "separate")


class MPMSettings:
    """SolverMPM's arguments read from the PhysicsScene (lengths in metres)."""

    def __init__(self, dx, lower, upper, dim, boundary, friction, cfl, prim_path):
        self.dx, self.lower, self.upper, self.dim = dx, lower, upper, dim
        self.boundary, self.friction, self.cfl, self.prim_path = boundary, friction, cfl, prim_path

    def make_solver(self, model):
        return sim.SolverMPM(model, dx=self.dx, bounds=(self.lower, self.upper), dim=self.dim,
                             boundary=self.boundary, friction=self.friction, cfl=self.cfl)

    def describe(self):
        return (f"MPM: dx {self.dx:g} m, domain {np.round(self.lower, 4).tolist()} - "
                f"{np.round(self.upper, 4).tolist()} m, dim {self.dim}, {self.boundary} walls, friction "
                f"{self.friction:g}, cfl {self.cfl:g}")


def read_scene_settings(reader, prim):
    """MPMSettings of the PhysicsScene ``prim`` of an ``kc:solver = "mpm"`` scene."""
    if prim is None:
        raise reader.err(None, 'kc:solver "mpm" needs kc:mpm:dx, kc:mpm:lower and kc:mpm:upper on the PhysicsScene')
    dx = reader.attr(prim, "kc:mpm:dx")
    if dx is None or np.ndim(dx) or not dx > 0:
        raise reader.err(prim, f"kc:mpm:dx must be a number > 0 (grid spacing) in an MPM scene, got {dx}")
    lower = reader.attr(prim, "kc:mpm:lower", kind="vec3")
    upper = reader.attr(prim, "kc:mpm:upper", kind="vec3")
    if lower is None or upper is None:
        raise reader.err(prim, "kc:mpm:lower and kc:mpm:upper (corners of the MPM domain) are required in an "
                               "MPM scene")
    dim = reader.attr(prim, "kc:mpm:dim", 3, kind="int")
    if dim not in (2, 3):
        raise reader.err(prim, f"kc:mpm:dim must be 2 or 3, got {dim}")
    span = (upper - lower)[:dim]
    if np.any(span < 2 * dx):
        raise reader.err(prim, f"kc:mpm:upper - kc:mpm:lower = {span.tolist()} must be at least 2 kc:mpm:dx = "
                               f"{2 * dx:g} on every axis")
    boundary = reader.attr(prim, "kc:mpm:boundary", "separate", kind="token")
    if boundary not in BOUNDARIES:
        from .schema import suggest

        raise reader.err(prim, f"kc:mpm:boundary must be one of {BOUNDARIES}, got '{boundary}'"
                               f"{suggest(boundary, BOUNDARIES)}")
    friction = reader.attr(prim, "kc:mpm:friction", 0.0)
    if np.ndim(friction) or friction < 0:
        raise reader.err(prim, f"kc:mpm:friction must be a number >= 0, got {friction}")
    cfl = reader.attr(prim, "kc:mpm:cfl", 0.5)
    if np.ndim(cfl) or not cfl > 0:
        raise reader.err(prim, f"kc:mpm:cfl must be a number > 0, got {cfl}")
    mpu = reader.mpu
    return MPMSettings(float(dx) * mpu, lower * mpu, upper * mpu, int(dim), boundary, float(friction), float(cfl),
                       str(prim.GetPath()))


def read_continuum(reader, prim, n, spacing, radius):
    """(material index, volume (n,) [m^3]) of the MPM Points ``prim`` with ``n`` points;
    ``spacing`` [stage units] of a generated grid or None, ``radius`` (n,) [m]."""
    model = reader.attr(prim, "kc:mpm:material", kind="token")
    if model is None:
        raise reader.err(prim, f"Points of an MPM scene need kc:mpm:material (one of "
                               f"{sorted(MPM_MODEL_CODES)})")
    params = {}
    for usd_name, py_name in MATERIAL_PARAMS.items():
        v = reader.attr(prim, f"kc:mpm:{usd_name}")
        if v is not None:
            if np.ndim(v):
                raise reader.err(prim, f"kc:mpm:{usd_name} must be a single value, got {v.tolist()}")
            params[py_name] = float(v)
    try:
        mat = reader.scene.builder.add_material(model=model, **params)
    except ValueError as e:
        text = str(e).replace("add_material: ", "")
        for usd_name, py_name in MATERIAL_PARAMS.items():
            text = text.replace(f"{py_name} ", f"kc:mpm:{usd_name} ")
        text = text.replace("model must be", "kc:mpm:material must be")
        raise reader.err(prim, text) from None
    volume = reader.attr(prim, "kc:mpm:volume")
    if volume is not None:
        volume = np.asarray(volume, np.float64).reshape(-1)
        if volume.size not in (1, n):
            raise reader.err(prim, f"kc:mpm:volume has {volume.size} values for {n} points (give one or one per point)")
        if not np.all(volume > 0):
            raise reader.err(prim, f"kc:mpm:volume must be > 0, got {float(volume.min()):g}")
        volume = np.broadcast_to(volume * reader.mpu ** 3, (n,)).copy()
    elif spacing is not None:
        volume = np.full(n, (float(spacing) * reader.mpu) ** 3)
    else:
        volume = (2.0 * np.asarray(radius, np.float64)) ** 3
    return mat, volume


def check_time_step(scene, solver, substeps):
    """A message when ``scene.frame_dt / substeps`` exceeds ``solver.max_dt``, else None."""
    max_dt = getattr(solver, "max_dt", None)
    dt = scene.frame_dt / substeps
    if not isinstance(max_dt, float) or dt <= max_dt:  # only SolverMPM has a fixed limit (SolverPBF's is a method of the state)
        return None
    need = math.ceil(scene.frame_dt / max_dt * (1 + 1e-9))
    return (f"{scene.path}: the time step {dt:.4g} s (kc:timeStep {scene.frame_dt:.4g} s / {substeps} substeps) "
            f"exceeds the MPM stability limit {max_dt:.4g} s (kc:mpm:cfl * kc:mpm:dx / wave speed "
            f"{solver.wave_speed:.4g} m/s); use kc:substeps (or --substeps) >= {need}")


def read_cube_block(reader, prim):
    """Fill a ``Cube`` prim carrying ``kc:mpm:material`` with MPM particles (an MPM scene only).

    ``float kc:mpm:spacing`` [stage units] (default half of ``kc:mpm:dx``): particles sit at
    the centres of cells of about that size filling the cube (rotation and scale of its
    transform included; in 2-D one layer at the cube's z); each has the cell's volume, a
    radius of half the spacing and mass ``kc:density`` [kg/m^3] * volume; ``vector3f
    kc:velocity`` is their initial velocity.  The material attributes are those of Points.
    """
    if prim.HasAPI(reader.UsdPhysics.CollisionAPI):
        raise reader.err(prim, "a Cube with kc:mpm:material is MPM material, not a collider: remove "
                               "PhysicsCollisionAPI (or kc:mpm:material)")
    mpm = reader.scene.mpm
    size = reader.attr(prim, "size", 2.0)
    if np.ndim(size) or not size > 0:
        raise reader.err(prim, f"size must be > 0, got {size}")
    t, q, s = reader.decompose(prim)
    extent = float(size) * np.abs(s) * reader.mpu
    spacing = reader.attr(prim, "kc:mpm:spacing")
    if spacing is None:
        spacing = 0.5 * mpm.dx
    elif np.ndim(spacing) or not spacing > 0:
        shown = spacing.tolist() if np.ndim(spacing) else f"{spacing:g}"
        raise reader.err(prim, f"kc:mpm:spacing must be a number > 0, got {shown}")
    else:
        spacing = float(spacing) * reader.mpu
    counts = np.maximum(np.round(extent / spacing).astype(np.int64), 1)
    if mpm.dim == 2:
        counts[2] = 1
    reader.plan_particles(prim, int(np.prod(counts)), f"a Cube of {counts.tolist()} particles")
    axes = [((np.arange(c) + 0.5) / c - 0.5) * e for c, e in zip(counts, extent)]
    if mpm.dim == 2:
        axes[2] = np.zeros(1)
    k, j, i = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    local = np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1)
    from sim.builder import quat_to_matrix

    world = local @ quat_to_matrix(q).T + t
    n = len(world)
    cell = extent / counts
    volume = float(np.prod(cell[:2]) * (spacing if mpm.dim == 2 else cell[2]))
    radius = np.full(n, 0.5 * spacing)
    mat, _ = read_continuum(reader, prim, n, None, radius)
    density = reader.attr(prim, "kc:density")
    if density is None or np.ndim(density) or not density > 0:
        raise reader.err(prim, f"kc:density must be a number > 0 for an MPM Cube, got {density}")
    vel = reader.attr(prim, "kc:velocity", np.zeros(3), kind="vec3") * reader.mpu
    b = reader.scene.builder
    rng = b.add_particles(world, np.tile(vel, (n, 1)), float(density) * volume, radius, material=mat,
                          volume=volume)
    path = str(prim.GetPath())
    reader.scene.particle_groups.append((path, rng))
    color = reader.display_color(prim)
    if color is not None:
        reader.scene.group_colors[path] = color
    reader.scene.items.append((path, f"Cube of MPM material: {n} particles ({counts.tolist()}), spacing "
                                     f"{spacing:g} m, mass {float(density) * volume * n:g} kg"))
