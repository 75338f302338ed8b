"""Particles: the ModelBuilder part that adds point masses."""
from __future__ import annotations

import warnings

import numpy as np

import kernelcore as kc


def _vec3(v, who, what):
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{who}: {what} must be 3 finite numbers, got {v!r}")
    return a


def _per_particle(value, shape, who, what):
    """``value`` (one value, or one per particle) broadcast to ``shape`` as float64; a ValueError
    naming the call and argument when it does not fit."""
    a = np.asarray(value, dtype=np.float64)
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"{who}: {what} must be one value or one per particle {shape}, got shape {a.shape}") from None


class ParticleBuilder:
    """Mixin: particles (positions [m], velocities [m/s], masses [kg], radii [m])."""

    #: radius used when add_particle gets none [m]
    default_particle_radius = 0.1

    def _init_particles(self):
        self.particle_q = []
        self.particle_qd = []
        self.particle_mass = []
        self.particle_radius = []
        self.particle_material = []
        self.particle_volume = []   # MPM volume [m^3] (area [m^2] in 2-D); 0 for plain particles
        self.particle_world = []    # environment index (-1: shared), see add_builder / begin_world

    @property
    def particle_count(self) -> int:
        return len(self.particle_q)

    def add_particle(self, pos, vel=(0.0, 0.0, 0.0), mass: float = 1.0, radius: float | None = None,
                     material: int = 0, volume: float = 0.0) -> int:
        """Add one particle and return its index.

        Args:
            pos: position (3,) [m].
            vel: velocity (3,) [m/s].
            mass: mass [kg]; 0 makes the particle kinematic (not moved by forces).
            radius: contact radius [m] (``default_particle_radius`` when None).
            material: contact material index (see add_material).
            volume: the particle's share of a continuum [m^3] for SolverMPM (0: none).
        """
        radius = self.default_particle_radius if radius is None else radius
        self._check_mass_radius(mass, radius, "add_particle")
        volume = _check_volume(volume, "add_particle")
        material = self._check_material(material, "add_particle")
        self.particle_q.append(tuple(_vec3(pos, "add_particle", "pos")))
        self.particle_qd.append(tuple(_vec3(vel, "add_particle", "vel")))
        self.particle_mass.append(float(mass))
        self.particle_radius.append(float(radius))
        self.particle_material.append(material)
        self.particle_volume.append(volume)
        self._pad_particle_world()
        return len(self.particle_q) - 1

    def add_particles(self, pos, vel=None, mass=None, radius=None, material: int = 0, volume=0.0,
                      density: float | None = None) -> range:
        """Add many particles at once; returns the range of their indices.

        Args:
            pos: positions (n, 3) [m].
            vel: velocities (n, 3) [m/s] or None for zero.
            mass: scalar or (n,) masses [kg] (1 kg when None).
            radius: scalar or (n,) radii [m] (``default_particle_radius`` when None).
            material: contact material index for all of them.
            volume: scalar or (n,) continuum volumes [m^3] for SolverMPM (0: none).  In 2-D
                only the ratio mass / volume (the density) matters, so any consistent unit works.
            density: if given, mass = density * volume [kg/m^3] (``mass`` is then ignored).
        """
        pos = np.asarray(pos, dtype=np.float64)
        if pos.size == 0:
            pos = pos.reshape(0, 3)
        if pos.ndim != 2 or pos.shape[1] != 3:
            raise ValueError(f"add_particles: pos must have shape (n, 3), got {pos.shape}")
        n = len(pos)
        volume = _per_particle(volume, (n,), "add_particles", "volume")
        if n:
            _check_volume(volume.min(), "add_particles")
            _check_volume(volume.max(), "add_particles")
        if density is not None:
            if not (np.isfinite(density) and density > 0):
                raise ValueError(f"add_particles: density must be finite and > 0, got {density!r}")
            if n and volume.min() <= 0:
                raise ValueError("add_particles: density needs a volume > 0 for every particle")
            if mass is not None:
                warnings.warn("add_particles: mass is ignored because density is given (mass = density * volume)",
                              stacklevel=2)
            mass = density * volume
        elif mass is None:
            mass = 1.0
        vel = np.zeros((n, 3)) if vel is None else _per_particle(vel, (n, 3), "add_particles", "vel")
        radius = self.default_particle_radius if radius is None else radius
        mass = _per_particle(mass, (n,), "add_particles", "mass")
        radius = _per_particle(radius, (n,), "add_particles", "radius")
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))):
            raise ValueError("add_particles: positions and velocities must be finite")
        if n:
            self._check_mass_radius(mass.min(), radius.min(), "add_particles")
            self._check_mass_radius(mass.max(), radius.max(), "add_particles")
        material = self._check_material(material, "add_particles")
        start = self.particle_count
        self.particle_q.extend(map(tuple, pos.tolist()))
        self.particle_qd.extend(map(tuple, vel.tolist()))
        self.particle_mass.extend(mass.tolist())
        self.particle_radius.extend(radius.tolist())
        self.particle_material.extend([material] * n)
        self.particle_volume.extend(volume.tolist())
        self._pad_particle_world()
        return range(start, start + n)

    def add_particle_grid(self, lower, vel, dim_x: int, dim_y: int, dim_z: int, spacing: float,
                          mass: float | None = None, radius: float | None = None, jitter: float = 0.0, seed: int = 0,
                          material: int = 0, volume: float | None = None, density: float | None = None) -> range:
        """Add a regular block of ``dim_x * dim_y * dim_z`` particles; returns their indices.

        Particle (i, j, k) sits at ``lower + spacing * (i, j, k)`` plus a uniform random
        offset of up to ``jitter`` [m] per axis.  Indices run x fastest, then y, then z.

        Args:
            lower: position of particle (0, 0, 0) (3,) [m].
            vel: initial velocity of every particle (3,) [m/s].
            spacing: distance between neighbours [m].
            mass: mass of each particle [kg] (or give ``density``).
            radius: contact radius [m] (``default_particle_radius`` when None).
            volume: continuum volume of each particle for SolverMPM [m^3]; with ``density``
                it defaults to ``spacing ** 3`` (one particle per cube of the lattice).
            density: mass = density * volume [kg/m^3] (instead of ``mass``).
        """
        dims = [int(dim_x), int(dim_y), int(dim_z)]
        if min(dims) < 1:
            raise ValueError(f"add_particle_grid: dimensions must be >= 1, got {dims}")
        if not spacing > 0:
            raise ValueError(f"add_particle_grid: spacing must be > 0, got {spacing!r}")
        if mass is None and density is None:
            raise ValueError("add_particle_grid: give mass or density")
        if volume is None:
            volume = spacing ** 3 if density is not None else 0.0
        lower = _vec3(lower, "add_particle_grid", "lower")
        vel = _vec3(vel, "add_particle_grid", "vel")
        k, j, i = np.meshgrid(np.arange(dims[2]), np.arange(dims[1]), np.arange(dims[0]), indexing="ij")
        pos = lower + spacing * np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1).astype(np.float64)
        if jitter:
            pos = pos + np.random.default_rng(seed).uniform(-jitter, jitter, pos.shape)
        return self.add_particles(pos, vel, mass, radius, material, volume=volume, density=density)

    def _finalize_particle_volumes(self, m, device, requires_grad):
        m.particle_volume = kc.array(np.asarray(self.particle_volume, np.float32).reshape(-1), dtype=float,
                                     device=device, requires_grad=requires_grad)
        m.particle_continuum = any(v > 0 for v in self.particle_volume)

    @staticmethod
    def _check_mass_radius(mass, radius, who):
        if not np.isfinite(mass) or mass < 0:
            raise ValueError(f"{who}: mass must be finite and >= 0, got {mass!r}")
        if not np.isfinite(radius) or radius <= 0:
            raise ValueError(f"{who}: radius must be finite and > 0, got {radius!r}")

    def _pad_particle_world(self) -> list:
        """``particle_world`` grown to ``particle_count``: particles appended without it (by other
        domains) join the current world (-1 outside begin_world/end_world)."""
        missing = self.particle_count - len(self.particle_world)
        if missing > 0:
            self.particle_world.extend([getattr(self, "current_world", -1)] * missing)
        return self.particle_world

    def _finalize_particles(self, m, device, requires_grad):
        n = self.particle_count
        q = np.asarray(self.particle_q, np.float32).reshape(n, 3)
        qd = np.asarray(self.particle_qd, np.float32).reshape(n, 3)
        mass = np.asarray(self.particle_mass, np.float32).reshape(n)
        inv = np.zeros_like(mass)
        np.divide(1.0, mass, out=inv, where=mass > 0)
        m.particle_count = n
        m.particle_q = kc.array(q, dtype=kc.vec3, device=device, requires_grad=requires_grad)
        m.particle_qd = kc.array(qd, dtype=kc.vec3, device=device, requires_grad=requires_grad)
        m.particle_mass = kc.array(mass, dtype=float, device=device, requires_grad=requires_grad)
        m.particle_inv_mass = kc.array(inv, dtype=float, device=device, requires_grad=requires_grad)
        m.particle_radius = kc.array(np.asarray(self.particle_radius, np.float32).reshape(n), dtype=float,
                                     device=device, requires_grad=requires_grad)
        m.particle_material = kc.array(np.asarray(self.particle_material, np.int32).reshape(n), dtype=kc.int32,
                                       device=device)
        m.particle_world = kc.array(np.asarray(self._pad_particle_world(), np.int32).reshape(n), dtype=kc.int32,
                                    device=device)
        m.particle_max_radius = float(max(self.particle_radius)) if n else 0.0
        m.particle_damping = float(self.particle_damping)
        self._finalize_particle_volumes(m, device, requires_grad)


def _check_volume(volume, who):
    if not (np.isfinite(volume) and volume >= 0):
        raise ValueError(f"{who}: volume must be finite and >= 0, got {float(volume)!r}")
    return float(volume)
