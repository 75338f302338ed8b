"""SolverPBF: one step against a numpy re-implementation, a resting tank, a dam break.

The numpy reference (float64) follows the formulas of sim/pbf_kernels.py's docstring
independently of the kernels: predicted positions, density constraint multipliers,
position updates with the artificial pressure, velocity update, vorticity, XSPH and
vorticity confinement.
"""
import math
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim

G = 9.81


def poly6(r2, h):
    return np.where(r2 < h * h, 315.0 / (64.0 * math.pi * h ** 9) * np.clip(h * h - r2, 0, None) ** 3, 0.0)


def spiky_grad(d, h):
    r = np.linalg.norm(d, axis=-1, keepdims=True)
    ok = (r < h) & (r > 1e-6 * h)
    coef = -45.0 / (math.pi * h ** 6)
    return np.where(ok, coef * (h - r) ** 2 * d / np.where(ok, r, 1.0), 0.0)


def reference_step(x, v, vol, h, dt, g, iterations, eps_rel, scorr_k, scorr_dq, xsph, conf):
    """One PBF step in float64 with all pairs within h (no boundaries)."""
    n = len(x)
    p = x + dt * (v + dt * g)
    eps = eps_rel / h ** 2
    w_dq = poly6((scorr_dq * h) ** 2, h)
    off = ~np.eye(n, dtype=bool)
    for _ in range(iterations):
        d = p[:, None, :] - p[None, :, :]                       # d[i, j] = p_i - p_j
        r2 = (d ** 2).sum(-1)
        ratio = (vol[None, :] * poly6(r2, h)).sum(1)            # includes j = i (W(0))
        gw = spiky_grad(d, h) * vol[None, :, None] * off[..., None]
        grad_i = gw.sum(1)
        denom = (gw ** 2).sum((1, 2)) + (grad_i ** 2).sum(1) + eps
        lam = -np.maximum(ratio - 1.0, 0.0) / denom
        s = -scorr_k * h * h * (poly6(r2, h) / w_dq) ** 4
        coeff = vol[None, :] * (lam[:, None] + lam[None, :] + s) * off
        p = p + (coeff[..., None] * spiky_grad(d, h)).sum(1)
    v1 = (p - x) / dt
    d = p[:, None, :] - p[None, :, :]
    r2 = (d ** 2).sum(-1)
    gW = spiky_grad(d, h) * off[..., None]
    dv = v1[None, :, :] - v1[:, None, :]                        # v_j - v_i
    omega = (np.cross(gW, dv) * vol[None, :, None]).sum(1)
    wn = np.linalg.norm(omega, axis=1)
    eta = (gW * (vol[None, :] * (wn[None, :] - wn[:, None]))[..., None]).sum(1)
    en = np.linalg.norm(eta, axis=1, keepdims=True)
    acc = conf * np.cross(eta / np.where(en > 1e-12, en, 1.0), omega) * (en > 1e-12)
    smooth = (dv * (vol[None, :] * poly6(r2, h) * off)[..., None]).sum(1)
    return p, v1 + xsph * smooth + dt * acc


def cluster_model(n=40, seed=3, spacing=0.1, spread=0.15):
    rng = np.random.default_rng(seed)
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    pos = rng.uniform(-spread, spread, (n, 3)) + 2.0
    vel = rng.normal(scale=0.5, size=(n, 3))
    b.add_particles(pos, vel, radius=0.02, volume=spacing ** 3, density=1000.0)
    return b.finalize()


@pytest.mark.parametrize("iterations,scorr_k,xsph,conf", [(1, 0.0, 0.0, 0.0), (3, 0.05, 0.0, 0.0),
                                                          (2, 0.0, 0.2, 0.0), (2, 0.01, 0.1, 0.5)])
def test_one_step_matches_numpy_reference(iterations, scorr_k, xsph, conf):
    model = cluster_model()
    h, dt = 0.25, 2.0e-3
    solver = sim.SolverPBF(model, smoothing_length=h, bounds=((0.0,) * 3, (4.0,) * 3), iterations=iterations,
                           relaxation=0.05, scorr_k=scorr_k, scorr_dq=0.2, xsph=xsph, vorticity_confinement=conf,
                           wall_density=False)
    s0, s1 = model.state(), model.state()
    solver.step(model, s0, s1, None, dt)
    x = s0.particle_q.numpy().astype(np.float64)
    v = s0.particle_qd.numpy().astype(np.float64)
    vol = model.particle_mass.numpy().astype(np.float64) / solver.rest_density
    p_ref, v_ref = reference_step(x, v, vol, h, dt, np.array([0.0, -G, 0.0]), iterations, 0.05, scorr_k, 0.2, xsph,
                                  conf)
    moved = np.abs(p_ref - (x + dt * v)).max()
    assert moved > 1e-4, "the scene must exercise the density constraint"
    np.testing.assert_allclose(s1.particle_q.numpy(), p_ref, atol=2e-6 + 1e-3 * moved)
    scale = np.abs(v_ref - v).max()
    np.testing.assert_allclose(s1.particle_qd.numpy(), v_ref, atol=1e-3 * scale + 1e-4)


def test_vorticity_of_rigid_rotation_is_twice_the_angular_velocity():
    s = 0.05
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_particle_grid((0.5, 0.5, 0.5), (0.0, 0.0, 0.0), 12, 12, 12, s, density=1000.0, radius=0.02)
    model = b.finalize()
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0,) * 3, (2.0,) * 3))
    state = model.state()
    q = state.particle_q.numpy()
    omega_true = np.array([0.3, -1.0, 0.5])
    centre = q.mean(0)
    state.particle_qd.assign(kc.array(np.cross(omega_true, q - centre).astype(np.float32), dtype=kc.vec3))
    buf = solver.buffers_for(state)
    solver._find_neighbors(state.particle_q, buf.neighbors)
    solver.K.compute_vorticity(model, state.particle_q, state.particle_qd, solver.particle_rest_volume,
                               buf.neighbors, solver.h, buf.omega, buf.omega_norm)
    inner = np.all(np.abs(q - centre) < 5 * s - 1e-6, axis=1) & np.all(np.abs(q - centre) > 0, axis=1)
    om = buf.omega.numpy()[inner]
    # the SPH curl of a lattice is an estimate: direction exact, magnitude within a few percent
    np.testing.assert_allclose(om.mean(0), 2 * omega_true, rtol=0.1, atol=0.1)
    cos = (om @ omega_true) / (np.linalg.norm(om, axis=1) * np.linalg.norm(omega_true))
    assert cos.min() > 0.999


def tank(n=8, s=0.02, **kw):
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_particle_grid((s / 2,) * 3, (0.0, 0.0, 0.0), n, n, n, s, density=1000.0, radius=s / 2)
    model = b.finalize()
    L = n * s
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (L, 2 * L, L)), **kw)
    return model, solver


@pytest.mark.parametrize("lanes", [False, True])   # True: the lanes over cell-sorted particles (sim/pbf_sort.py)
def test_hydrostatic_tank_settles_at_rest_density(lanes):
    n, s = 8, 0.02
    # lanes: one fixed capacity (the settling tank's longest list runs 32 -> 53, which would build
    # the modules of 32, 40, 48 and 56 slots: most of this test's time on a clean cache)
    kw = dict(lane_capacity=56) if lanes else {}
    model, solver = tank(n, s, xsph=0.1, lanes=lanes, **kw)
    states = [model.state(), model.state()]
    y0 = states[0].particle_q.numpy()[:, 1].mean()
    dt = 1.0 / 200
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # every lanes step must run the lanes (no scalar fallback)
        for _ in range(400):    # 2 s, about 15 sloshing periods of the tank
            solver.step(model, states[0], states[1], None, dt)
            states.reverse()
    assert (solver._lane_scratch is not None) == lanes
    q = states[0].particle_q.numpy()
    v = np.linalg.norm(states[0].particle_qd.numpy(), axis=1)
    assert q.shape[0] == n ** 3 and np.all(np.isfinite(q)) and np.all(np.isfinite(v))
    assert np.all(q >= solver.lower) and np.all(q <= solver.upper)        # no particle lost
    # volume kept: the centre of mass does not sink (walls counted as fluid in the density)
    assert abs(q[:, 1].mean() - y0) < 0.05 * y0
    # at rest: speeds small against the free-fall speed over the depth sqrt(g H) = 1.25 m/s
    assert v.mean() < 0.01 and v.max() < 0.05
    # density error of the particles with a full neighbourhood (at least h from walls and surface)
    h = solver.h
    top = q[:, 1].max()
    inner = np.all((q > h) & (q < np.array([n * s, top, n * s]) - h), axis=1)
    assert inner.sum() >= 20
    rho = solver.density(states[0])[inner]
    err = np.abs(rho / solver.rest_density - 1.0)
    assert err.mean() < 0.01, err.mean()


def ritter_front(q, s, nz, x0, depth_band):
    """Where the depth profile of a dam break reaches zero [m], extrapolated from its resolved part.

    Ritter's depth is h = (2 c0 - (x - x0) / t)^2 / (9 g): sqrt(h) falls linearly in x to zero at
    the front x0 + 2 c0 t.  The particles' depth (volume per unit width and length, in columns
    2 s wide) is fitted where it lies inside ``depth_band`` (several particles deep) and the line
    is extrapolated to zero depth.
    """
    bw = 2.0 * s
    edges = np.arange(x0, q[:, 0].max() + bw, bw)
    count, _ = np.histogram(q[:, 0], edges)
    depth = count * s ** 2 / (nz * bw)
    x = 0.5 * (edges[1:] + edges[:-1])
    fit = (depth > depth_band[0]) & (depth < depth_band[1])
    assert fit.sum() >= 3, "too few resolved columns to fit the depth profile"
    slope, intercept = np.polyfit(x[fit], np.sqrt(depth[fit]), 1)
    return -intercept / slope


@pytest.mark.parametrize("lanes", [False, True])
def test_dam_break_discharge_and_front_follow_ritter(lanes):
    """Shallow dam break on a dry frictionless bed (Ritter's solution of the shallow-water equations).

    At the dam site the depth 4/9 H and speed 2/3 sqrt(g H) are constant in time, so the
    volume that has passed it grows as 8/27 sqrt(g H) H t per unit width.  The front, where
    the depth reaches zero, runs at 2 sqrt(g H): measured where the resolved depth profile
    extrapolates to zero (ritter_front).  The foremost row of particles cannot be thinner
    than a particle: along Ritter's characteristics u + 2 sqrt(g h) = 2 sqrt(g H), so a layer
    one spacing s deep runs at 2 sqrt(g H) - 2 sqrt(g s) (0.68 of the ideal front at H = 10 s,
    0.78 at 20 s; see sim/README.md).
    """
    s = 0.02
    nx, ny, nz = 40, 10, 4
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_particle_grid((s / 2,) * 3, (0.0, 0.0, 0.0), nx, ny, nz, s, density=1000.0, radius=s / 2)
    model = b.finalize()
    H, W = ny * s, nx * s
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (W + 10 * H, 2 * H, nz * s)),
                           lanes=lanes, lane_capacity=56 if lanes else None)   # the tank's module (longest list 51)
    c0, T = math.sqrt(G * H), math.sqrt(H / G)
    states = [model.state(), model.state()]
    dt, t, rows = 0.025 * T, 0.0, []
    while t < 3.0 * T - 1e-9:
        solver.step(model, states[0], states[1], None, dt)
        states.reverse()
        t += dt
        q = states[0].particle_q.numpy()
        passed = (q[:, 0] > W).sum() * s ** 3 / (nz * s)       # area past the dam [m^2]
        tip = np.sort(q[:, 0])[-2 * nz] + s / 2                 # the foremost row of particles
        front = ritter_front(q, s, nz, W, (0.1 * H, 0.35 * H)) if t >= 1.5 * T - 1e-9 else np.nan
        rows.append((t, passed, tip, front))
    r = np.array(rows)
    late = r[:, 0] >= 1.0 * T
    discharge = np.polyfit(r[late, 0], r[late, 1], 1)[0]
    assert discharge == pytest.approx(8.0 / 27.0 * c0 * H, rel=0.1)
    # the front's mean speed since the dam opened, sampled from 1.5 T on (the median: a single
    # profile only a few particles deep is noisy)
    fitted = r[:, 0] >= 1.5 * T - 1e-9
    front_speed = np.median((r[fitted, 3] - W) / r[fitted, 0])
    assert front_speed == pytest.approx(2 * c0, rel=0.1)
    tip_speed = np.polyfit(r[late, 0], r[late, 2], 1)[0]
    assert tip_speed == pytest.approx(2 * c0 - 2 * math.sqrt(G * s), rel=0.1)
    assert len(states[0].particle_q.numpy()) == nx * ny * nz


def cube_mesh(half):
    """Closed cube (8 vertices, 12 triangles wound counter-clockwise seen from outside)."""
    p = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], np.float64) * half
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    tris = []
    for a, b, c, d in quads:
        tris += [(a, b, c), (a, c, d)]
    return p, np.array(tris)


@pytest.mark.parametrize("obstacle", ["box", "mesh"])
def test_static_obstacle_blocks_the_flow_like_its_signed_distance(obstacle):
    """Water thrown at a static cube stops at its face; the cube as a triangle mesh acts like the
    analytic box (same signed distance), and without it the water passes."""
    def run(kind):
        s = 0.02
        b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
        b.add_particle_grid((0.03, 0.01, 0.03), (2.0, 0.0, 0.0), 6, 4, 4, s, density=1000.0, radius=0.5 * s)
        centre, half = (0.3, 0.1, 0.08), 0.1
        if kind == "box":
            b.add_shape_box(centre, half_extents=(half, half, half))
        elif kind == "mesh":
            pts, tris = cube_mesh(half)
            b.add_shape_mesh(pts, tris, pos=centre)
        model = b.finalize()
        solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (1.0, 0.5, 0.16)))
        states = [model.state(), model.state()]
        for _ in range(60):
            solver.step(model, states[0], states[1], None, 2.5e-3)
            states.reverse()
        return states[0].particle_q.numpy(), 0.3 - 0.1 - 0.5 * s

    q, face = run(obstacle)
    assert np.all(np.isfinite(q))
    low = q[:, 1] < 0.2 - 0.01           # beside the cube (it spans y in [0, 0.2])
    assert low.sum() > 50 and q[low, 0].max() <= face + 1e-4
    free, _ = run(None)
    assert free[:, 0].max() > face + 0.1
    if obstacle == "mesh":
        box, _ = run("box")
        np.testing.assert_allclose(q, box, atol=2e-3)


def test_pair_cache_gives_the_same_steps():
    """The square roots kept from the multiplier and vorticity passes (pair_cache, steps without
    gradients) change no result: 20 steps of a splashing block with every term on, against
    recomputing them."""
    def run(cache):
        model, solver = tank(6, 0.02, xsph=0.05, vorticity_confinement=0.3, scorr_k=0.01, pair_cache=cache)
        states = [model.state(), model.state()]
        q = states[0].particle_q.numpy()
        states[0].particle_qd.assign(kc.array(np.cross(q - q.mean(0), [0.0, 0.0, 4.0]).astype(np.float32),
                                              dtype=kc.vec3))
        for _ in range(20):
            solver.step(model, states[0], states[1], None, 2e-3)
            states.reverse()
        assert (solver._pairs is not None) == cache
        return states[0].particle_q.numpy(), states[0].particle_qd.numpy()

    (q1, v1), (q0, v0) = run(True), run(False)
    assert np.abs(q0 - tank(6, 0.02)[0].particle_q.numpy()).max() > 0.01, "the block must move"
    np.testing.assert_allclose(q1, q0, atol=1e-6)
    np.testing.assert_allclose(v1, v0, atol=1e-4 * np.abs(v0).max())
