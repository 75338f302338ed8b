"""MPM constitutive models and plastic return mappings against numpy implementations of the same formulas,
and a sand column that collapses into a heap whose slope matches the friction angle."""
import math

import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.mpm_constitutive import MPM_FIXED_COROTATED, MPM_FLUID, MPM_NEO_HOOKEAN, MPM_SAND, MPM_SNOW, \
    update_particle_material


@kc.kernel
def material_kernel(kind: int, F: kc.array(dtype=kc.mat33), C: kc.array(dtype=kc.mat33), Jp: kc.array(dtype=float),
                    dt: float, E: float, nu: float, hardening: float, theta_c: float, theta_s: float,
                    friction: float, viscosity: float, act: kc.array(dtype=float), axis: kc.vec3,
                    F_out: kc.array(dtype=kc.mat33), Jp_out: kc.array(dtype=float), tau_out: kc.array(dtype=kc.mat33)):
    p = kc.tid()
    Fn, Jn, tau = update_particle_material(kind, F[p], C[p], Jp[p], dt, E, nu, hardening, theta_c, theta_s,
                                           friction, viscosity, act[p], axis)
    F_out[p] = Fn
    Jp_out[p] = Jn
    tau_out[p] = tau


P = dict(dt=1e-3, E=1.0e4, nu=0.3, hardening=10.0, theta_c=0.025, theta_s=0.0075, friction=math.radians(30.0),
         viscosity=0.7)
AXIS = np.array([0.0, 0.6, 0.8])


def run_kernel(kind, F, C, Jp, act):
    n = len(F)
    out = [kc.zeros(n, dtype=kc.mat33), kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.mat33)]
    kc.launch(material_kernel, dim=n,
              inputs=[kind, kc.array(F.astype(np.float32), dtype=kc.mat33), kc.array(C.astype(np.float32), dtype=kc.mat33),
                      kc.array(Jp.astype(np.float32), dtype=float), P["dt"], P["E"], P["nu"], P["hardening"],
                      P["theta_c"], P["theta_s"], P["friction"], P["viscosity"],
                      kc.array(act.astype(np.float32), dtype=float), kc.vec3(*AXIS)],
              outputs=out)
    return [o.numpy().astype(np.float64) for o in out]


# -------------------------------------------------------------------------------------------------
# numpy references (float64), written from the papers' formulas
# -------------------------------------------------------------------------------------------------
def lame(E, nu):
    return E / (2 * (1 + nu)), E * nu / ((1 + nu) * (1 - 2 * nu))


def svd(F):
    U, s, Vt = np.linalg.svd(F)
    return U, s, Vt.T


def tau_fixed_corotated(F, mu, la):
    U, s, V = svd(F)
    R = U @ V.T
    J = np.linalg.det(F)
    return 2 * mu * (F - R) @ F.T + la * (J - 1) * J * np.eye(3)


def tau_neo_hookean(F, mu, la):
    J = np.linalg.det(F)
    return mu * (F @ F.T - np.eye(3)) + la * np.log(J) * np.eye(3)


def reference(kind, F_old, C, Jp, act):
    """Returns (F_new, Jp_new, tau) of one particle."""
    mu, la = lame(P["E"], P["nu"])
    F = (np.eye(3) + P["dt"] * C) @ F_old
    if kind == MPM_NEO_HOOKEAN:
        tau = tau_neo_hookean(F, mu, la)
    elif kind == MPM_FIXED_COROTATED:
        tau = tau_fixed_corotated(F, mu, la)
    elif kind == MPM_SNOW:       # Stomakhin et al. 2013
        U, s, V = svd(F)
        sc = np.clip(s, 1 - P["theta_c"], 1 + P["theta_s"])
        Jp = Jp * np.prod(s) / np.prod(sc)
        F = U @ np.diag(sc) @ V.T
        h = np.exp(P["hardening"] * (1 - Jp))
        tau = tau_fixed_corotated(F, mu * h, la * h)
    elif kind == MPM_SAND:       # Klar et al. 2016, Drucker-Prager on the Hencky strain
        U, s, V = svd(F)
        eps = np.log(s)
        tr = eps.sum()
        dev = eps - tr / 3
        sp = np.sin(P["friction"])
        alpha = np.sqrt(2 / 3) * 2 * sp / (3 - sp)
        if tr >= 0:
            eps = np.zeros(3)
        else:
            dgamma = np.linalg.norm(dev) + (3 * la + 2 * mu) / (2 * mu) * tr * alpha
            if dgamma > 0:
                eps = eps - dgamma * dev / np.linalg.norm(dev)
        F = U @ np.diag(np.exp(eps)) @ V.T
        tau = U @ np.diag(2 * mu * eps + la * eps.sum()) @ U.T
    elif kind == MPM_FLUID:      # weakly compressible: J only
        K = P["E"] / (3 * (1 - 2 * P["nu"]))
        Jp = Jp * np.linalg.det(np.eye(3) + P["dt"] * C)
        F = np.eye(3)
        tau = K * (Jp - 1) * Jp * np.eye(3) + P["viscosity"] * Jp * (C + C.T)
    fa = F @ AXIS
    return F, Jp, tau + act * np.outer(fa, fa)


def samples(n, spread, seed, c_scale=20.0, squeeze=0.15):
    rng = np.random.default_rng(seed)
    scale = rng.uniform(1 - squeeze, 1 + 0.8 * squeeze, (n, 1, 1))          # compression and tension
    F = scale * (np.eye(3) + spread * rng.normal(size=(n, 3, 3)))
    F[np.linalg.det(F) < 0] *= -1                        # keep det F > 0 (no inverted particles)
    C = c_scale * rng.normal(size=(n, 3, 3))
    Jp = rng.uniform(0.9, 1.05, n)
    act = rng.normal(0.0, 100.0, n)
    return F, C, Jp, act


@pytest.mark.parametrize("kind,small", [(MPM_NEO_HOOKEAN, False), (MPM_FIXED_COROTATED, False), (MPM_SNOW, False),
                                        (MPM_SNOW, True), (MPM_SAND, False), (MPM_FLUID, False)])
def test_material_update_matches_numpy(kind, small):
    """small: deformations inside snow's elastic window (the clamp leaves F and Jp alone)."""
    F, C, Jp, act = samples(64, 0.002, seed=kind, c_scale=0.5, squeeze=0.0) if small else samples(64, 0.08, seed=kind)
    F_k, Jp_k, tau_k = run_kernel(kind, F, C, Jp, act)
    for p in range(len(F)):
        F_r, Jp_r, tau_r = reference(kind, F[p], C[p], Jp[p], act[p])
        np.testing.assert_allclose(F_k[p], F_r, atol=2e-5, err_msg=f"F, particle {p}")
        np.testing.assert_allclose(Jp_k[p], Jp_r, rtol=2e-5, err_msg=f"Jp, particle {p}")
        np.testing.assert_allclose(tau_k[p], tau_r, atol=2e-4 * P["E"] * 0.05 + 1e-3,
                                   rtol=2e-4, err_msg=f"tau, particle {p}")


def test_return_mappings_hit_every_case():
    """The samples above exercise each branch (else the comparison would not cover it)."""
    F, C, Jp, act = samples(64, 0.08, seed=MPM_SAND)
    mu, la = lame(P["E"], P["nu"])
    sp = np.sin(P["friction"])
    alpha = np.sqrt(2 / 3) * 2 * sp / (3 - sp)
    cases = set()
    for p in range(len(F)):
        Ft = (np.eye(3) + P["dt"] * C[p]) @ F[p]
        eps = np.log(np.linalg.svd(Ft, compute_uv=False))
        tr = eps.sum()
        dg = np.linalg.norm(eps - tr / 3) + (3 * la + 2 * mu) / (2 * mu) * tr * alpha
        cases.add("tension" if tr >= 0 else ("project" if dg > 0 else "elastic"))
    assert cases == {"tension", "project", "elastic"}
    F, C, Jp, act = samples(64, 0.08, seed=MPM_SNOW)
    s = np.linalg.svd((np.eye(3) + P["dt"] * C) @ F, compute_uv=False)
    assert np.any(s > 1 + P["theta_s"]) and np.any(s < 1 - P["theta_c"])
    F, C, Jp, act = samples(64, 0.002, seed=MPM_SNOW, c_scale=0.5, squeeze=0.0)
    s = np.linalg.svd((np.eye(3) + P["dt"] * C) @ F, compute_uv=False)
    assert np.all((s > 1 - P["theta_c"]) & (s < 1 + P["theta_s"]))


@pytest.mark.parametrize("phi", [25.0, 40.0])
def test_sand_column_collapses_to_its_friction_angle(phi):
    """2-D collapse of a low sand column: the heap's flanks come to rest near the friction angle.

    A column of cohesionless Drucker-Prager sand, twice as wide as tall (aspect 0.5, so the
    collapse is slow and the top stays flat), on a sticky floor: its sides fail and slide
    until the flanks stand at the angle of repose, which for this model is the friction
    angle.  The slope is fitted to the free surface between 25 % and 75 % of the final
    height; two angles show that the slope follows phi (a tall, fast collapse would run out
    further and end several degrees flatter, as real sand does).
    """
    dx = 1.0 / 64
    sp = dx / 2
    nx, ny = 40, 20
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mat = b.add_material(model="sand", youngs_modulus=2.0e5, poisson_ratio=0.3, friction_angle=phi)
    b.add_particle_grid((0.5 - nx * sp / 2 + sp / 2, sp / 2, 0.0), (0.0, 0.0, 0.0), nx, ny, 1, sp, density=2000.0,
                        material=mat)
    model = b.finalize()
    solver = sim.SolverMPM(model, dx=dx, bounds=((0.0, 0.0), (1.0, 0.6)), dim=2, boundary="sticky")
    dt = 0.9 * solver.max_dt
    s0, s1 = model.state(), model.state()
    for _ in range(int(1.0 / dt)):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    q = s0.particle_q.numpy().astype(np.float64)
    assert np.max(np.abs(s0.particle_qd.numpy())) < 0.05, "the heap should be at rest"
    # free-surface height in bins of one cell, both flanks folded onto r = |x - centre|
    r = np.abs(q[:, 0] - 0.5)
    edges = np.arange(0.0, r.max() + dx, dx)
    h = np.array([q[(r >= a) & (r < a + dx), 1].max() for a in edges[:-1]])
    rc = edges[:-1] + dx / 2
    top = h.max()
    sel = (h > 0.25 * top) & (h < 0.75 * top)
    assert sel.sum() >= 4
    angle = math.degrees(math.atan(-np.polyfit(rc[sel], h[sel], 1)[0]))
    assert abs(angle - phi) < 5.0, angle
