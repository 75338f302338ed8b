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
symplectic Euler step of a spring-dashpot on an effective mass ``1/w`` multiplies (overlap,
velocity dt) by a matrix of determinant ``1 - b`` and trace ``2 - a - b`` (``a = ke w dt^2``,
``b = kd w dt``), stable only while ``a + 2 b < 4`` (and ``b < 2``).  An 8 g box at dt = 1e-3 with
ke = 1e4 has ``a ~ 5`` at a corner (w includes the rotation, 4/m there) and hopped away; a 0.5 g
sphere flew off.  So a body's contact point, with ``w`` its effective inverse mass along the normal
(rotation included), bends ``a`` smoothly below STIFFNESS_LIMIT (1) once it passes STIFFNESS_KNEE
(0.5), then bends ``a + 2 b = a + 4 zeta sqrt(a)`` below STABILITY_LIMIT (3.8) once it passes
STABILITY_KNEE (3.4), by lowering ke further (zeta kept), with :func:`soft_min` (C2, so forces and
gradients stay continuous).  Below both knees the law is the uncapped one bit for bit: a 0.1 kg
cube at default ke and dt = 1e-3 (``a = 0.4``), an 8 kg box at ke = 2e5 (0.2 per pair point), a
1 kg box with restitution 0 at dt = 2e-3 (``a + 2 b = 3.36`` at a corner).  The per-point bound is
not a body's: several points of one body add up (a box on a face rocks at 1.5 times a corner's
rate; heavy boxes at ``a + 2 b ~ 3.4`` rock on their corners), so as the first cap softens a point
(by ``1 - k/ke``, 0 .. 1) the second knee and limit move to LIGHT_KNEE (1.2) and LIGHT_LIMIT (1.6):
a light box then rests at any restitution, sinking about ``g dt^2 / a`` (1e-5 .. 2e-4 m at dt =
1e-3).  :mod:`sim.contact_limits` tells the solvers, from the model, when the cap may act (they warn
once).  Particles keep the uncapped law (``mixed_contact_force``).
"""
from __future__ import annotations

import kernelcore as kc

#: ``ke w dt^2`` of a body contact point (w: its effective inverse mass along the normal) is kept as is up to
#: STIFFNESS_KNEE and bent smoothly below STIFFNESS_LIMIT above it
STIFFNESS_KNEE = kc.constant(0.5)
STIFFNESS_LIMIT = kc.constant(1.0)
#: the same for the explicit step's stability measure ``ke w dt^2 + 2 kd w dt`` (< 4), by lowering ke further,
#: for a point the first cap leaves alone ...
STABILITY_KNEE = kc.constant(3.4)
STABILITY_LIMIT = kc.constant(3.8)
#: ... moving to these as the first cap softens the point (a light body: its points add up, see above)
LIGHT_KNEE = kc.constant(1.2)
LIGHT_LIMIT = kc.constant(1.6)


@kc.func
def soft_min(x: float, knee: float, limit: float) -> float:
    """``min(x, limit)`` with its corner rounded: ``x`` itself (bit for bit) up to ``knee`` (< limit), then
    ``knee + (limit - knee) tanh((x - knee) / (limit - knee))``, which meets it with equal first and second
    derivatives and stays below ``limit``."""
    y = x
    if x > knee:
        span = limit - knee
        y = knee + span * kc.tanh((x - knee) / span)
    return y


@kc.func
def stable_spring_dashpot(ke: float, damping_ratio: float, inv_mass_sum: float, dt: float) -> kc.vec2:
    """(stiffness [N/m], damping [N s/m]) of a contact point whose effective inverse mass along the normal is
    ``inv_mass_sum`` [1/kg]: ``ke`` and ``2 zeta sqrt(ke / w)`` where the explicit step is well inside its
    stability region, else with ``ke w dt^2`` bent below STIFFNESS_LIMIT and then ``ke w dt^2 + 2 kd w dt``
    below STABILITY_LIMIT by :func:`soft_min` (module docstring)."""
    k = ke
    light = float(0.0)  # how much the first cap softened the point, 0 (not) .. 1
    a = ke * inv_mass_sum * dt * dt
    if a > STIFFNESS_KNEE:
        k = ke * (soft_min(a, STIFFNESS_KNEE, STIFFNESS_LIMIT) / a)
        light = 1.0 - k / ke
    # with kd = 2 zeta sqrt(k / w): ke w dt^2 + 2 kd w dt = x + 4 zeta sqrt(x), x = k w dt^2
    x = k * inv_mass_sum * dt * dt
    two_zeta = 2.0 * damping_ratio
    s = x + 2.0 * two_zeta * kc.sqrt(x)
    knee = STABILITY_KNEE - (STABILITY_KNEE - LIGHT_KNEE) * light
    if s > knee:
        s = soft_min(s, knee, STABILITY_LIMIT - (STABILITY_LIMIT - LIGHT_LIMIT) * light)
        root = s / (kc.sqrt(two_zeta * two_zeta + s) + two_zeta)  # sqrt(x) with x + 2 two_zeta sqrt(x) = s
        k = k * (root * root / x)
    kd = 2.0 * damping_ratio * kc.sqrt(k / inv_mass_sum)
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
