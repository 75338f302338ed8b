"""The contact law shared by every particle collision kernel (kernel functions only).

Normal force: a linear spring-dashpot on the overlap ``d = -gap`` (gap < 0 in contact),

    f_n = max(ke * d - kd * v_n * [d > 0], 0),   kd = 2 zeta sqrt(m_eff ke),

where ``m_eff = 1 / (w_a + w_b)`` is the reduced mass and ``zeta`` the damping ratio
that gives the material's coefficient of restitution for this pushing-only law (see
``sim.builder.materials.damping_ratio_from_restitution``).  The clamp keeps the
contact from pulling; cohesion is added separately: a pull of ``cohesion`` [N] while
touching that fades linearly to zero over ``cohesion_distance`` of separation.

Onset smoothing: sampled once per step, a contact that starts part-way through a
step would give an impulse that depends on where in the step it started, and the
damping term would switch on abruptly.  The result, a loss that is a sawtooth in the
initial conditions, makes gradients useless.  So ``max(d, 0)`` and the indicator
``[d > 0]`` are replaced by their averages over the window of gaps the contact sweeps
in one step, ``gap +- |v_n| dt / 2``: for a contact approaching at constant speed the
summed impulse no longer depends on the phase, and everything is continuous in the
inputs.  In steady contact (or when the window lies entirely inside the overlap) the
law is exactly the spring-dashpot above.

Friction: Coulomb, ``f_t = -mu f_n v_t / |v_t|``, except when that force would reverse
the sliding within a few steps: then it is viscous, ``f_t = -v_t m_eff / (4 dt)``,
which brings the sliding to rest over about four steps.  This keeps static friction
stable for any contact stiffness (a fixed regularisation speed would need
``dt < 2 m v_s / (mu f_n)``, which stiff contacts break, with exploding gradients).

A pair of materials mixes every parameter by averaging.

Light rigid bodies (``mixed_body_contact_force``, every rigid-body and link contact): the
explicit step of a spring-dashpot on an effective mass ``1/w`` is stable only while
``ke w dt^2 + 2 kd w dt < 4``, and the points of one body add up (a box on a face: four
corners, and its rocking mode is 1.5x stiffer than one corner).  An 8 g box at dt = 1e-3
with ke = 1e4 has ``ke w dt^2 ~ 4`` at a corner (w includes the rotation, 4/m there) and
hopped away; a 0.5 g sphere flew off.  So a body's contact point, with ``w`` its effective
inverse mass along the normal (rotation included), takes ``ke w dt^2`` capped at
STIFFNESS_LIMIT (0.2) and then ``kd w dt`` at DAMPING_LIMIT (0.4), through a smooth min
(:func:`soft_cap`, so forces and gradients stay continuous).  A capped body still rests,
sinking ``g dt^2 / 0.2``-ish (5e-5 m at dt = 1e-3) whatever its mass; a heavy point
(``ke w dt^2 <= 0.05``: a 1 kg box at ke = 1e4, dt = 1e-3) keeps the law above to 1e-6.
Not covered: many points pressing one body at once (a mesh with dozens of vertices on a
face), where the per-point caps add up past the limit.  Particles keep the uncapped law
(``mixed_contact_force``).
"""
from __future__ import annotations

import kernelcore as kc

#: largest ``ke w dt^2`` of a body contact point (w: its effective inverse mass along the normal)
STIFFNESS_LIMIT = kc.constant(0.2)
#: largest ``kd w dt`` of a body contact point
DAMPING_LIMIT = kc.constant(0.4)


@kc.func
def soft_cap(x: float) -> float:
    """Factor ``(1 + x^8)^(-1/8)`` (x >= 0): ~1 below x = 0.5 (1 - 5e-4 there), ~1/x above x = 2, smooth
    in between, so ``x * soft_cap(x)`` is a differentiable min(x, 1)."""
    s = float(1.0)
    if x > 1.0:  # the same function written without overflowing x^8
        y = 1.0 / x
        y2 = y * y
        y4 = y2 * y2
        s = y / kc.sqrt(kc.sqrt(kc.sqrt(1.0 + y4 * y4)))
    else:
        x2 = x * x
        x4 = x2 * x2
        s = 1.0 / kc.sqrt(kc.sqrt(kc.sqrt(1.0 + x4 * x4)))
    return s


@kc.func
def stable_spring_dashpot(ke: float, damping_ratio: float, inv_mass_sum: float, dt: float) -> kc.vec2:
    """(stiffness [N/m], damping [N s/m]) of a contact point whose effective inverse mass along the normal is
    ``inv_mass_sum`` [1/kg], softened where the explicit step would be unstable: ``ke w dt^2`` is capped at
    STIFFNESS_LIMIT and then ``kd w dt`` at DAMPING_LIMIT (smoothly, by :func:`soft_cap`)."""
    k = ke * soft_cap(ke * inv_mass_sum * dt * dt / STIFFNESS_LIMIT)
    kd = 2.0 * damping_ratio * kc.sqrt(k / inv_mass_sum)
    kd = kd * soft_cap(kd * inv_mass_sum * dt / DAMPING_LIMIT)
    return kc.vec2(k, kd)


@kc.func
def contact_force(n: kc.vec3, gap: float, v_rel: kc.vec3, inv_mass_sum: float, ke: float, damping_ratio: float,
                  mu: float, cohesion: float, cohesion_distance: float, dt: float, stable: int) -> kc.vec3:
    """Force [N] on body a from a contact with body b.

    n: unit normal pointing from b to a; gap: separation [m] (< 0: overlap);
    v_rel: velocity of a minus velocity of b [m/s]; inv_mass_sum: w_a + w_b [1/kg] (> 0);
    dt: time step [s]; stable: 1 caps the stiffness and damping (:func:`stable_spring_dashpot`; body
    contacts), 0 uses ke and ``2 zeta sqrt(m_eff ke)`` as given (particles).
    """
    vn = kc.dot(n, v_rel)
    window = kc.abs(vn) * dt
    hi = 0.5 * window - gap   # deepest overlap in the window
    fn = float(0.0)
    if hi > 0.0:
        overlap = -gap          # window entirely in contact
        touching = float(1.0)
        if hi < window:         # the window straddles the surface: box-filter averages
            overlap = hi * hi / (2.0 * window)
            touching = hi / window
        k = ke
        kd = float(0.0)
        if stable != 0:
            kkd = stable_spring_dashpot(ke, damping_ratio, inv_mass_sum, dt)
            k = kkd[0]
            kd = kkd[1]
        else:
            kd = 2.0 * damping_ratio * kc.sqrt(ke / inv_mass_sum)
        fn = kc.max(k * overlap - kd * vn * touching, 0.0)
    fc = float(0.0)
    if cohesion > 0.0:
        if gap < 0.0:
            fc = cohesion
        elif gap < cohesion_distance:
            fc = cohesion * (1.0 - gap / cohesion_distance)
    ft = kc.vec3(0.0, 0.0, 0.0)
    if fn > 0.0:
        vt = v_rel - n * vn
        vt_len = kc.length(vt)
        viscosity = 0.25 / (inv_mass_sum * dt)
        ft = vt * (-viscosity)
        if vt_len * viscosity > mu * fn:
            ft = vt * (-mu * fn / vt_len)
    return n * (fn - fc) + ft


@kc.func
def mixed_law(n: kc.vec3, gap: float, v_rel: kc.vec3, inv_mass_sum: float, ma: int, mb: int,
              material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
              material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
              material_cohesion_distance: kc.array(dtype=float), dt: float, stable: int) -> kc.vec3:
    """contact_force with the parameters of materials ``ma`` and ``mb`` averaged."""
    return contact_force(n, gap, v_rel, inv_mass_sum,
                         0.5 * (material_ke[ma] + material_ke[mb]),
                         0.5 * (material_damping_ratio[ma] + material_damping_ratio[mb]),
                         0.5 * (material_mu[ma] + material_mu[mb]),
                         0.5 * (material_cohesion[ma] + material_cohesion[mb]),
                         0.5 * (material_cohesion_distance[ma] + material_cohesion_distance[mb]), dt, stable)


@kc.func
def mixed_contact_force(n: kc.vec3, gap: float, v_rel: kc.vec3, inv_mass_sum: float, ma: int, mb: int,
                        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
                        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
                        material_cohesion_distance: kc.array(dtype=float), dt: float) -> kc.vec3:
    """contact_force with the parameters of materials ``ma`` and ``mb`` averaged (particles)."""
    return mixed_law(n, gap, v_rel, inv_mass_sum, ma, mb, material_ke, material_damping_ratio, material_mu,
                     material_cohesion, material_cohesion_distance, dt, 0)


@kc.func
def mixed_body_contact_force(n: kc.vec3, gap: float, v_rel: kc.vec3, inv_mass_sum: float, ma: int, mb: int,
                             material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
                             material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
                             material_cohesion_distance: kc.array(dtype=float), dt: float) -> kc.vec3:
    """mixed_contact_force for a rigid body's contact point, stable for any mass and time step
    (``inv_mass_sum``: the point's effective inverse mass along the normal, rotation included)."""
    return mixed_law(n, gap, v_rel, inv_mass_sum, ma, mb, material_ke, material_damping_ratio, material_mu,
                     material_cohesion, material_cohesion_distance, dt, 1)


def material_inputs(model):
    """The material arrays in the order mixed_contact_force takes them."""
    return [model.material_ke, model.material_damping_ratio, model.material_mu, model.material_cohesion,
            model.material_cohesion_distance]
