"""Contact materials: the ModelBuilder part that declares how surfaces touch."""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc


#: largest damping ratio used (restitution below ``restitution_of_damping_ratio(2)`` ~ 0.048
#: behaves like it): stronger damping would need ever smaller time steps.
MAX_DAMPING_RATIO = 2.0


def restitution_of_damping_ratio(zeta: float) -> float:
    """Restitution of a bounce on a linear spring-dashpot whose force is clamped at zero.

    The contact pushes only: it ends when ``k d + c d' = 0`` (before the overlap d reaches
    zero), not when d = 0, so the bounce is livelier than the classic unclamped
    ``exp(-zeta pi / sqrt(1 - zeta^2))`` and never quite reaches zero.  Closed forms for the
    under- and overdamped oscillator (time in units of 1 / omega).
    """
    z = float(zeta)
    if z <= 0.0:
        return 1.0
    if abs(z - 1.0) < 1e-9:
        z = 1.0 + 1e-9
    if z < 1.0:
        s = math.sqrt(1.0 - z * z)
        theta = math.pi - math.atan2(2.0 * z * s, 1.0 - 2.0 * z * z)  # phase at which the force vanishes
        return math.exp(-z * theta / s) * abs(math.cos(theta) - z / s * math.sin(theta))
    s = math.sqrt(z * z - 1.0)
    r1, r2 = -z + s, -z - s
    t = math.log((1.0 + 2.0 * z * r2) / (1.0 + 2.0 * z * r1)) / (r1 - r2)
    return abs(r1 * math.exp(r1 * t) - r2 * math.exp(r2 * t)) / (r1 - r2)


def damping_ratio_from_restitution(e: float) -> float:
    """Damping ratio of the (pushing-only) spring-dashpot contact whose bounce has restitution ``e``.

    Inverts :func:`restitution_of_damping_ratio` by bisection; e = 1 gives 0 (elastic),
    values below what ``MAX_DAMPING_RATIO`` gives are clamped to it.  The relation holds for
    a contact much stiffer than gravity's pull and resolved by several time steps.
    """
    e = float(e)
    if e >= 1.0:
        return 0.0
    if e <= restitution_of_damping_ratio(MAX_DAMPING_RATIO):
        return MAX_DAMPING_RATIO
    lo, hi = 0.0, MAX_DAMPING_RATIO  # restitution decreases with the damping ratio
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if restitution_of_damping_ratio(mid) > e:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


class MaterialBuilder:
    """Mixin: contact materials. Material 0 always exists (the builder's default)."""

    def _init_materials(self):
        self.material_ke = []
        self.material_restitution = []
        self.material_mu = []
        self.material_cohesion = []
        self.material_cohesion_distance = []
        self.material_continuum = []   # per material: dict of continuum (MPM) parameters
        self.add_material()

    @property
    def material_count(self) -> int:
        return len(self.material_ke)

    def add_material(self, ke: float = 1.0e4, restitution: float = 0.5, mu: float = 0.5,
                     cohesion: float = 0.0, cohesion_distance: float = 0.0, model: str | None = None,
                     youngs_modulus: float = 1.0e5, poisson_ratio: float = 0.3, hardening: float = 10.0,
                     critical_compression: float = 2.5e-2, critical_stretch: float = 7.5e-3,
                     friction_angle: float = 30.0, viscosity: float = 0.0) -> int:
        """Add a contact material (and, with ``model``, a continuum material for SolverMPM); return its index.

        Args:
            ke: normal contact stiffness [N/m].
            restitution: coefficient of restitution of a head-on bounce, in [0, 1].
            mu: Coulomb friction coefficient (>= 0).
            cohesion: attractive normal force while in contact [N] (>= 0); fades to zero
                over ``cohesion_distance`` of separation.
            cohesion_distance: separation over which cohesion fades [m] (>= 0).
            model: continuum model for ``sim.SolverMPM``: "neo_hookean", "fixed_corotated",
                "snow", "sand" or "fluid" (None: contact only).  See sim/mpm_constitutive.py.
            youngs_modulus: E [Pa] (> 0); fluid: bulk modulus K = E / (3 (1 - 2 nu)).
            poisson_ratio: nu in (-1, 0.5).
            hardening: snow hardening coefficient xi (Lame parameters times exp(xi (1 - Jp))).
            critical_compression, critical_stretch: snow theta_c, theta_s (singular values
                of the elastic F stay in [1 - theta_c, 1 + theta_s]).
            friction_angle: sand Drucker-Prager friction angle [degrees], in [0, 90).
            viscosity: fluid dynamic viscosity [Pa s] (>= 0).
        """
        checks = {"ke": ke, "mu": mu, "cohesion": cohesion, "cohesion_distance": cohesion_distance}
        for name, v in checks.items():
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"add_material: {name} must be finite and >= 0, got {v!r}")
        if not 0.0 <= restitution <= 1.0:
            raise ValueError(f"add_material: restitution must be in [0, 1], got {restitution!r}")
        self.material_ke.append(float(ke))
        self.material_restitution.append(float(restitution))
        self.material_mu.append(float(mu))
        self.material_cohesion.append(float(cohesion))
        self.material_cohesion_distance.append(float(cohesion_distance))
        self.material_continuum.append(_check_continuum(
            model=model, youngs_modulus=youngs_modulus, poisson_ratio=poisson_ratio, hardening=hardening,
            critical_compression=critical_compression, critical_stretch=critical_stretch,
            friction_angle=friction_angle, viscosity=viscosity))
        return len(self.material_ke) - 1

    def set_material(self, index: int, **params):
        """Change fields of an existing material (same keywords as add_material)."""
        cur = dict(ke=self.material_ke[index], restitution=self.material_restitution[index],
                   mu=self.material_mu[index],
                   cohesion=self.material_cohesion[index], cohesion_distance=self.material_cohesion_distance[index],
                   **self.material_continuum[index])
        unknown = set(params) - set(cur)
        if unknown:
            raise TypeError(f"set_material: unknown material parameter(s) {sorted(unknown)}")
        cur.update(params)
        n = self.material_count
        self.add_material(**cur)  # validates
        for name in ("ke", "restitution", "mu", "cohesion", "cohesion_distance", "continuum"):
            lst = getattr(self, "material_" + name)
            lst[index] = lst.pop()
        assert self.material_count == n

    def _check_material(self, index, who):
        if not 0 <= int(index) < self.material_count:
            raise ValueError(f"{who}: material {index} does not exist ({self.material_count} defined)")
        return int(index)

    def _finalize_materials(self, m, device, requires_grad):
        def arr(values):
            return kc.array(np.asarray(values, np.float32), dtype=float, device=device, requires_grad=requires_grad)

        m.material_count = self.material_count
        m.material_ke = arr(self.material_ke)
        m.material_restitution = arr(self.material_restitution)
        m.material_damping_ratio = arr([damping_ratio_from_restitution(e) for e in self.material_restitution])
        m.material_mu = arr(self.material_mu)
        m.material_cohesion = arr(self.material_cohesion)
        m.material_cohesion_distance = arr(self.material_cohesion_distance)
        m.material_max_cohesion_distance = float(max(self.material_cohesion_distance))
        _finalize_continuum(m, self.material_continuum, device, requires_grad)


def _check_continuum(model, youngs_modulus, poisson_ratio, hardening, critical_compression, critical_stretch,
                     friction_angle, viscosity):
    """Validate add_material's continuum keywords; returns them as a dict (model None: contact only)."""
    from ..mpm_constitutive import MPM_MODEL_CODES

    if model is not None and model not in MPM_MODEL_CODES:
        raise ValueError(f"add_material: model must be one of {sorted(MPM_MODEL_CODES)} or None, got {model!r}")
    if not (np.isfinite(youngs_modulus) and youngs_modulus > 0):
        raise ValueError(f"add_material: youngs_modulus must be finite and > 0, got {youngs_modulus!r}")
    if not (np.isfinite(poisson_ratio) and -1.0 < poisson_ratio < 0.5):
        raise ValueError(f"add_material: poisson_ratio must lie in (-1, 0.5), got {poisson_ratio!r}")
    for name, v in (("hardening", hardening), ("viscosity", viscosity)):
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"add_material: {name} must be finite and >= 0, got {v!r}")
    for name, v in (("critical_compression", critical_compression), ("critical_stretch", critical_stretch)):
        if not (np.isfinite(v) and 0 <= v < 1):
            raise ValueError(f"add_material: {name} must lie in [0, 1), got {v!r}")
    if not (np.isfinite(friction_angle) and 0 <= friction_angle < 90):
        raise ValueError(f"add_material: friction_angle must lie in [0, 90) degrees, got {friction_angle!r}")
    return dict(model=model, youngs_modulus=float(youngs_modulus), poisson_ratio=float(poisson_ratio),
                hardening=float(hardening), critical_compression=float(critical_compression),
                critical_stretch=float(critical_stretch), friction_angle=float(friction_angle),
                viscosity=float(viscosity))


def _finalize_continuum(m, continuum, device, requires_grad):
    """Model.material_mpm_model (int codes) and one float array (M,) per continuum parameter."""
    from ..mpm_constitutive import MPM_MODEL_CODES, MPM_NONE

    def arr(key, scale=1.0):
        return kc.array(np.asarray([c[key] * scale for c in continuum], np.float32), dtype=float, device=device,
                        requires_grad=requires_grad)

    codes = [MPM_MODEL_CODES.get(c["model"], MPM_NONE) for c in continuum]
    m.material_mpm_model = kc.array(np.asarray(codes, np.int32), dtype=kc.int32, device=device)
    m.material_mpm_model_names = [c["model"] for c in continuum]
    m.material_youngs_modulus = arr("youngs_modulus")
    m.material_poisson_ratio = arr("poisson_ratio")
    m.material_hardening = arr("hardening")
    m.material_critical_compression = arr("critical_compression")
    m.material_critical_stretch = arr("critical_stretch")
    m.material_friction_angle = arr("friction_angle", math.pi / 180.0)
    m.material_viscosity = arr("viscosity")
