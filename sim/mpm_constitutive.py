"""MPM constitutive models: Kirchhoff stresses and plastic return mappings (kc.funcs).

Every function works on 3 x 3 deformation gradients.  The 2-D solver embeds its 2 x 2
state as ``[[F2, 0], [0, 1]]`` (plane strain: no out-of-plane total strain), which gives
exactly the usual 2-D formulas for the elastic models; the plastic models are their 3-D
versions under plane strain (sand may flow plastically out of plane, which plane strain
allows: only the total out-of-plane stretch is fixed).

Material codes (``Model.material_mpm_model``) and what ``update_particle_material``
does with the trial elastic gradient ``F = (I + dt C) F_old``:

===========  ========================================================================
code         model
===========  ========================================================================
0            none (contact-only material; the MPM solver refuses such particles)
1            neo_hookean: tau = mu (F F^T - I) + lambda log(J) I
2            fixed_corotated (Stomakhin 2012): tau = 2 mu (F - R) F^T + lambda (J - 1) J I
3            snow (Stomakhin et al. 2013): singular values clamped to
             [1 - theta_c, 1 + theta_s], Jp = det Fp, Lame parameters times
             exp(hardening (1 - Jp)), then fixed-corotated stress
4            sand (Klar et al. 2016): Drucker-Prager return mapping of the Hencky strain
             eps = log(sigma), alpha = sqrt(2/3) 2 sin(phi) / (3 - sin(phi)), cohesionless;
             stress tau = U (2 mu eps + lambda tr(eps) I) U^T
5            fluid (weakly compressible): J tracked in Jp, J <- J det(I + dt C),
             tau = K (J - 1) J I + J viscosity (C + C^T), K = E / (3 (1 - 2 nu)); F reset to I
===========  ========================================================================

Units: stresses [Pa], Young's modulus E [Pa], viscosity [Pa s], friction angle [rad].
"""
from __future__ import annotations

import kernelcore as kc

MPM_NONE = 0
MPM_NEO_HOOKEAN = 1
MPM_FIXED_COROTATED = 2
MPM_SNOW = 3
MPM_SAND = 4
MPM_FLUID = 5
MPM_MODEL_CODES = {"neo_hookean": MPM_NEO_HOOKEAN, "fixed_corotated": MPM_FIXED_COROTATED, "snow": MPM_SNOW,
                   "sand": MPM_SAND, "fluid": MPM_FLUID}

#: smallest singular value / volume ratio fed to a logarithm (inverted or crushed elements
#: would otherwise give NaN): stresses saturate there instead.
MIN_STRETCH = 1.0e-4


@kc.func
def lame_mu(E: float, nu: float):
    """Shear modulus mu = E / (2 (1 + nu)) [Pa]."""
    return E / (2.0 * (1.0 + nu))


@kc.func
def lame_lambda(E: float, nu: float):
    """First Lame parameter lambda = E nu / ((1 + nu) (1 - 2 nu)) [Pa]."""
    return E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))


@kc.func
def kirchhoff_neo_hookean(F: kc.mat33, mu: float, la: float):
    """Kirchhoff stress tau = P F^T of the compressible neo-Hookean solid [Pa]."""
    ident = kc.identity(n=3, dtype=float)
    J = kc.max(kc.determinant(F), MIN_STRETCH)
    return (F * kc.transpose(F) - ident) * mu + ident * (la * kc.log(J))


@kc.func
def kirchhoff_fixed_corotated(F: kc.mat33, mu: float, la: float):
    """Kirchhoff stress of the fixed-corotated solid, R from the polar decomposition [Pa]."""
    ident = kc.identity(n=3, dtype=float)
    R, S = kc.polar(F)
    J = kc.determinant(F)
    return (F - R) * kc.transpose(F) * (2.0 * mu) + ident * (la * (J - 1.0) * J)


@kc.func
def snow_return(F: kc.mat33, Jp: float, theta_c: float, theta_s: float):
    """Clamp the singular values of the trial elastic F; returns (F_elastic, Jp_new).

    Jp = det Fp; the plastic part absorbs what the clamp removes, so det F_total is kept:
    ``Jp_new = Jp det(F) / det(F_elastic)``.
    """
    U, s, V = kc.svd3(F)
    lo = 1.0 - theta_c
    hi = 1.0 + theta_s
    sc = kc.vec3(kc.clamp(s[0], lo, hi), kc.clamp(s[1], lo, hi), kc.clamp(s[2], lo, hi))
    Jp_new = Jp * (s[0] * s[1] * s[2]) / (sc[0] * sc[1] * sc[2])
    return U * kc.diag(sc) * kc.transpose(V), Jp_new


@kc.func
def sand_alpha(friction_angle: float):
    """Drucker-Prager cone coefficient alpha = sqrt(2/3) 2 sin(phi) / (3 - sin(phi))."""
    sp = kc.sin(friction_angle)
    return 0.816496580927726 * 2.0 * sp / (3.0 - sp)


@kc.func
def sand_return(F: kc.mat33, mu: float, la: float, alpha: float):
    """Drucker-Prager projection of the Hencky strain; returns (F_elastic, tau).

    Tension (tr eps >= 0) goes to the cone tip (stress-free, F_elastic = U V^T); inside the
    cone (dgamma <= 0) nothing changes; otherwise the deviatoric strain shrinks by dgamma.
    """
    U, s, V = kc.svd3(F)
    eps = kc.vec3(kc.log(kc.max(s[0], MIN_STRETCH)), kc.log(kc.max(s[1], MIN_STRETCH)),
                  kc.log(kc.max(s[2], MIN_STRETCH)))
    tr = eps[0] + eps[1] + eps[2]
    dev = eps - kc.vec3(tr, tr, tr) * (1.0 / 3.0)
    if tr >= 0.0:
        eps = kc.vec3(0.0, 0.0, 0.0)
    else:
        nrm = kc.length(dev)
        dgamma = nrm + (3.0 * la + 2.0 * mu) / (2.0 * mu) * tr * alpha
        if dgamma > 0.0:
            eps = eps - dev * (dgamma / nrm)
    tr_new = eps[0] + eps[1] + eps[2]
    se = kc.vec3(kc.exp(eps[0]), kc.exp(eps[1]), kc.exp(eps[2]))
    principal = eps * (2.0 * mu) + kc.vec3(tr_new, tr_new, tr_new) * la
    tau = U * kc.diag(principal) * kc.transpose(U)
    return U * kc.diag(se) * kc.transpose(V), tau


# ------------------------------------------------------------------------------------------------
# One particle's update, per model.  Every update_<model> has the signature of
# update_particle_material (``kind`` unused) so that a P2G kernel can be built around any one
# of them (sim/mpm_transfer.py): a kernel for a single-model run carries no code of the other
# models, which makes its adjoint ~2.5x faster (fewer adjoint variables to clear and replay).
# ------------------------------------------------------------------------------------------------
@kc.func
def trial_gradient(F_old: kc.mat33, C: kc.mat33, dt: float):
    """The trial deformation gradient (I + dt C) F_old of an APIC step."""
    return (kc.identity(n=3, dtype=float) + C * dt) * F_old


@kc.func
def with_actuation(tau: kc.mat33, F: kc.mat33, actuation: float, act_axis: kc.vec3):
    """tau + actuation F a a^T F^T: a muscle fibre along the reference direction a pulling with ``actuation`` [Pa]."""
    fa = F * act_axis
    return tau + kc.outer(fa, fa) * actuation


@kc.func
def update_neo_hookean(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                       hardening: float, theta_c: float, theta_s: float, friction_angle: float, viscosity: float,
                       actuation: float, act_axis: kc.vec3):
    F = trial_gradient(F_old, C, dt)
    tau = kirchhoff_neo_hookean(F, lame_mu(E, nu), lame_lambda(E, nu))
    return F, Jp, with_actuation(tau, F, actuation, act_axis)


@kc.func
def update_neo_hookean_plane(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                             hardening: float, theta_c: float, theta_s: float, friction_angle: float,
                             viscosity: float, actuation: float, act_axis: kc.vec3):
    """update_neo_hookean for the 2-D solver's plane-strain state (F_old = [[F2, 0], [0, 1]], C's
    third row and column zero), on the 2 x 2 blocks: the same F and tau (up to rounding) for a
    third of the multiplies, and an adjoint with a third of the variables (its automatic adjoint
    was the largest cost of a differentiated 2-D step)."""
    A00 = 1.0 + dt * C[0, 0]
    A01 = dt * C[0, 1]
    A10 = dt * C[1, 0]
    A11 = 1.0 + dt * C[1, 1]
    f00 = A00 * F_old[0, 0] + A01 * F_old[1, 0]
    f01 = A00 * F_old[0, 1] + A01 * F_old[1, 1]
    f10 = A10 * F_old[0, 0] + A11 * F_old[1, 0]
    f11 = A10 * F_old[0, 1] + A11 * F_old[1, 1]
    mu = lame_mu(E, nu)
    lj = lame_lambda(E, nu) * kc.log(kc.max(f00 * f11 - f01 * f10, MIN_STRETCH))
    # actuation F a a^T F^T with F a = (F2 a_xy, a_z)
    a0 = f00 * act_axis[0] + f01 * act_axis[1]
    a1 = f10 * act_axis[0] + f11 * act_axis[1]
    a2 = act_axis[2]
    t00 = mu * (f00 * f00 + f01 * f01 - 1.0) + lj + actuation * a0 * a0
    t01 = mu * (f00 * f10 + f01 * f11) + actuation * a0 * a1
    t11 = mu * (f10 * f10 + f11 * f11 - 1.0) + lj + actuation * a1 * a1
    t02 = actuation * a0 * a2
    t12 = actuation * a1 * a2
    F = kc.mat33(f00, f01, 0.0, f10, f11, 0.0, 0.0, 0.0, 1.0)
    tau = kc.mat33(t00, t01, t02, t01, t11, t12, t02, t12, lj + actuation * a2 * a2)
    return F, Jp, tau


@kc.func
def update_fixed_corotated(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                           hardening: float, theta_c: float, theta_s: float, friction_angle: float, viscosity: float,
                           actuation: float, act_axis: kc.vec3):
    F = trial_gradient(F_old, C, dt)
    tau = kirchhoff_fixed_corotated(F, lame_mu(E, nu), lame_lambda(E, nu))
    return F, Jp, with_actuation(tau, F, actuation, act_axis)


@kc.func
def update_snow(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                hardening: float, theta_c: float, theta_s: float, friction_angle: float, viscosity: float,
                actuation: float, act_axis: kc.vec3):
    Fe, Jn = snow_return(trial_gradient(F_old, C, dt), Jp, theta_c, theta_s)
    h = kc.exp(hardening * (1.0 - Jn))
    tau = kirchhoff_fixed_corotated(Fe, lame_mu(E, nu) * h, lame_lambda(E, nu) * h)
    return Fe, Jn, with_actuation(tau, Fe, actuation, act_axis)


@kc.func
def update_sand(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                hardening: float, theta_c: float, theta_s: float, friction_angle: float, viscosity: float,
                actuation: float, act_axis: kc.vec3):
    Fs, tau = sand_return(trial_gradient(F_old, C, dt), lame_mu(E, nu), lame_lambda(E, nu), sand_alpha(friction_angle))
    return Fs, Jp, with_actuation(tau, Fs, actuation, act_axis)


@kc.func
def update_fluid(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                 hardening: float, theta_c: float, theta_s: float, friction_angle: float, viscosity: float,
                 actuation: float, act_axis: kc.vec3):
    ident = kc.identity(n=3, dtype=float)
    J = kc.max(Jp * kc.determinant(ident + C * dt), MIN_STRETCH)
    K = E / (3.0 * (1.0 - 2.0 * nu))
    tau = ident * (K * (J - 1.0) * J) + (C + kc.transpose(C)) * (J * viscosity)
    return ident, J, with_actuation(tau, ident, actuation, act_axis)


@kc.func
def update_particle_material(kind: int, F_old: kc.mat33, C: kc.mat33, Jp: float, dt: float, E: float, nu: float,
                             hardening: float, theta_c: float, theta_s: float, friction_angle: float,
                             viscosity: float, actuation: float, act_axis: kc.vec3):
    """Advance one particle's deformation and return (F_new, Jp_new, Kirchhoff stress tau [Pa]).

    ``kind`` picks the model (the codes above; 0 leaves F_old and gives no stress).
    ``actuation`` [Pa] adds an active stress along the material axis ``act_axis``
    (unit, reference frame): tau += actuation F a a^T F^T (a muscle fibre pulling along a).
    """
    F = trial_gradient(F_old, C, dt)
    Jn = Jp
    tau = with_actuation(kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), F, actuation, act_axis)
    if kind == 1:
        F, Jn, tau = update_neo_hookean(kind, F_old, C, Jp, dt, E, nu, hardening, theta_c, theta_s, friction_angle,
                                        viscosity, actuation, act_axis)
    if kind == 2:
        F, Jn, tau = update_fixed_corotated(kind, F_old, C, Jp, dt, E, nu, hardening, theta_c, theta_s,
                                            friction_angle, viscosity, actuation, act_axis)
    if kind == 3:
        F, Jn, tau = update_snow(kind, F_old, C, Jp, dt, E, nu, hardening, theta_c, theta_s, friction_angle,
                                 viscosity, actuation, act_axis)
    if kind == 4:
        F, Jn, tau = update_sand(kind, F_old, C, Jp, dt, E, nu, hardening, theta_c, theta_s, friction_angle,
                                 viscosity, actuation, act_axis)
    if kind == 5:
        F, Jn, tau = update_fluid(kind, F_old, C, Jp, dt, E, nu, hardening, theta_c, theta_s, friction_angle,
                                  viscosity, actuation, act_axis)
    return F, Jn, tau


#: the update of each model code, for kernels specialised to one model (sim/mpm_transfer.py)
MODEL_UPDATES = {MPM_NEO_HOOKEAN: update_neo_hookean, MPM_FIXED_COROTATED: update_fixed_corotated,
                 MPM_SNOW: update_snow, MPM_SAND: update_sand, MPM_FLUID: update_fluid}
#: the 2-D solver's updates where a plane-strain form is cheaper than the 3 x 3 one (others: MODEL_UPDATES)
MODEL_UPDATES_PLANE = {MPM_NEO_HOOKEAN: update_neo_hookean_plane}
