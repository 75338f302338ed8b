"""SolverGridFluid: incompressibility after projection, rest states, buoyancy, walls and solids.

Divergence is measured as max |div u| dx / max |u| (the net outflow of a cell relative to the
velocity scale), the quantity the pressure projection drives to zero.
"""
import numpy as np
import pytest

import kernelcore as kc
from sim.solvers.grid_fluid import SolverGridFluid


def random_velocity(solver, state, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    for name in ("u", "v", "w"):
        a = getattr(state, name)
        if a is not None:
            a.assign(kc.from_numpy((scale * rng.standard_normal(a.shape)).astype(np.float32)))


def relative_divergence(solver, state):
    div = solver.divergence(state).numpy()
    speed = max(np.abs(getattr(state, n).numpy()).max() for n in ("u", "v", "w") if getattr(state, n) is not None)
    return float(np.abs(div).max() * solver.dx / speed)


def face_speed(state):
    return max(float(np.abs(getattr(state, n).numpy()).max()) for n in ("u", "v", "w") if getattr(state, n) is not None)


@pytest.mark.parametrize("res,center", [((24, 20), (1.2, 1.0)), ((12, 10, 8), (0.6, 0.5, 0.4))])
@pytest.mark.parametrize("advection", ["semi_lagrangian", "maccormack"])
def test_projection_leaves_no_divergence_around_a_sphere(res, center, advection):
    solver = SolverGridFluid(res, dx=0.1, advection=advection, vorticity=0.2, smoke_weight=1.0)
    solver.add_solid_sphere(center, 0.3)
    solid = solver.solid_mask.numpy()
    assert 0 < solid.sum() < solid.size
    a, b = solver.state(), solver.state()
    random_velocity(solver, a)
    a.density.assign(kc.from_numpy(np.random.default_rng(1).random(a.density.shape).astype(np.float32)))
    assert relative_divergence(solver, a) > 0.5  # the random field is far from divergence-free
    solver.step(a, b, 0.01)
    assert relative_divergence(solver, b) < 1e-5
    # solid faces carry no normal velocity: the fluid does not enter the sphere
    u = b.u.numpy()
    s = solid.astype(bool)
    pad = np.zeros((1,) + s.shape[1:], bool)
    touches = np.concatenate([s, pad]) | np.concatenate([pad, s])
    assert np.all(u[touches] == 0.0)
    assert np.all(u[0] == 0.0) and np.all(u[-1] == 0.0)  # domain walls


def test_divergence_matches_numpy():
    solver = SolverGridFluid((7, 5), dx=0.2)
    st = solver.state()
    random_velocity(solver, st, seed=4)
    u, v = st.u.numpy().astype(np.float64), st.v.numpy().astype(np.float64)
    ref = (u[1:] - u[:-1] + v[:, 1:] - v[:, :-1]) / 0.2
    np.testing.assert_allclose(solver.divergence(st).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_still_fluid_stays_still_under_uniform_gravity():
    """Uniform smoke in a closed box with a solid: buoyancy is a pure gradient, the projection
    cancels it exactly (hydrostatic pressure), and nothing moves."""
    solver = SolverGridFluid((16, 16), dx=0.05, smoke_weight=9.81, vorticity=0.3, viscosity=1e-3)
    solver.add_solid_box((0.4, 0.3), (0.1, 0.05))
    states = [solver.state(), solver.state()]
    states[0].density.fill_(1.0)
    for k in range(20):
        solver.step(states[k % 2], states[(k + 1) % 2], 0.02)
    st = states[0]
    assert face_speed(st) < 1e-5
    # hydrostatic pressure: dp/dy = -rho_fluid * smoke_weight * density in the fluid
    p = st.pressure.numpy()
    np.testing.assert_allclose(p[2, 1:] - p[2, :-1], -9.81 * 0.05, rtol=1e-3)
    np.testing.assert_allclose(st.density.numpy()[solver.solid_mask.numpy() == 0], 1.0, rtol=1e-6)


def smoke_centroid(state):
    d = state.density.numpy().astype(np.float64)
    per_row = d.sum(axis=tuple(a for a in range(d.ndim) if a != 1))
    return float((per_row * (np.arange(d.shape[1]) + 0.5)).sum() / d.sum())


@pytest.mark.parametrize("dim", [2, 3])
def test_hot_smoke_rises_and_heavy_smoke_sinks(dim):
    res = (16, 24) if dim == 2 else (8, 12, 8)
    for heat_lift, smoke_weight, sign in ((4.0, 0.0, 1), (0.0, 4.0, -1)):
        solver = SolverGridFluid(res, dx=0.05, heat_lift=heat_lift, smoke_weight=smoke_weight, vorticity=0.1)
        a, b = solver.state(), solver.state()
        blob = np.zeros(res, np.float32)
        sl = (slice(res[0] // 2 - 2, res[0] // 2 + 2), slice(9, 14)) + ((slice(2, 6),) if dim == 3 else ())
        blob[sl] = 1.0
        a.density.assign(kc.from_numpy(blob))
        a.temperature.assign(kc.from_numpy(blob))
        y0 = smoke_centroid(a)
        states = [a, b]
        for k in range(20):
            solver.step(states[k % 2], states[(k + 1) % 2], 0.02)
        dy = smoke_centroid(states[0]) - y0
        assert sign * dy > 0.5, (heat_lift, smoke_weight, dy)  # more than half a cell in the expected direction
        assert relative_divergence(solver, states[0]) < 1e-5


def test_no_slip_walls_slow_a_vortex_more_than_free_slip():
    energies = {}
    for boundary in ("free_slip", "no_slip"):
        solver = SolverGridFluid((16, 16), dx=np.pi / 16, viscosity=0.05, boundary=boundary)
        st = solver.state()
        x = np.arange(17) * solver.dx
        yc = (np.arange(16) + 0.5) * solver.dx
        st.u.assign(kc.from_numpy((np.sin(x)[:, None] * np.cos(yc)[None, :]).astype(np.float32)))
        st.v.assign(kc.from_numpy((-np.cos(yc)[:, None] * np.sin(x)[None, :]).astype(np.float32)))
        states = [st, solver.state()]
        for k in range(10):
            solver.step(states[k % 2], states[(k + 1) % 2], 0.05)
        energies[boundary] = sum(float((getattr(states[0], n).numpy() ** 2).sum()) for n in ("u", "v"))
    assert energies["no_slip"] < 0.9 * energies["free_slip"]


def test_solid_from_volume_sdf_matches_the_analytic_sphere():
    geometry = pytest.importorskip("geometry")
    res, dx, c, r = (12, 10, 8), 0.1, np.array([0.6, 0.5, 0.4]), 0.27
    h = 0.05
    pts = np.stack(np.meshgrid(*[np.arange(40) * h - 0.5 + 0.5 * h for _ in range(3)], indexing="ij"), -1)
    # sample the sdf on a finer grid offset by half a voxel so no cell centre sits on a voxel boundary
    lo = np.array([-0.5 + 0.5 * h] * 3)
    sdf = np.linalg.norm(pts - c, axis=-1) - r
    vol = geometry.Volume.load_from_numpy(sdf, min_world=tuple(lo), voxel_size=h, bg_value=1.0)
    a = SolverGridFluid(res, dx=dx)
    a.add_solid_sdf(vol)
    b = SolverGridFluid(res, dx=dx)
    b.add_solid_sphere(c, r)
    ma, mb = a.solid_mask.numpy(), b.solid_mask.numpy()
    assert mb.sum() > 20
    # linear interpolation of a sphere's sdf is exact to O(h^2): only cells at the surface may differ
    centres = (np.stack(np.meshgrid(*[np.arange(n) for n in res], indexing="ij"), -1) + 0.5) * dx
    near = np.abs(np.linalg.norm(centres - c, axis=-1) - r) < 0.01
    assert np.array_equal(ma[~near], mb[~near])


@pytest.mark.parametrize("res", [(40, 32), (16, 12, 10)])
def test_multigrid_and_jacobi_preconditioners_agree_and_multigrid_needs_far_fewer_iterations(res):
    out, iters = {}, {}
    for pre in ("multigrid", "jacobi"):
        solver = SolverGridFluid(res, dx=0.05, preconditioner=pre, warm_start=False)
        solver.add_solid_sphere(tuple(0.4 * n * 0.05 for n in res), 0.2)
        a, b = solver.state(), solver.state()
        random_velocity(solver, a, seed=7)
        solver.step(a, b, 0.01)
        assert relative_divergence(solver, b) < 1e-5
        out[pre] = b.u.numpy()
        iters[pre] = solver.last_cg_iterations
    np.testing.assert_allclose(out["multigrid"], out["jacobi"], atol=1e-5 * np.abs(out["jacobi"]).max())
    assert iters["multigrid"] * 4 <= iters["jacobi"], iters


def rotating_blob(advection, steps=20):
    """A smoke disc carried by a solid-body-like rotation; returns (initial, final) density."""
    n = 32
    solver = SolverGridFluid((n, n), dx=1.0 / n, advection=advection)
    st = solver.state()
    xf, xc = np.arange(n + 1) / n, (np.arange(n) + 0.5) / n
    # streamfunction psi = sin(pi x) sin(pi y): u = dpsi/dy, v = -dpsi/dx, divergence-free, no flow through walls
    st.u.assign(kc.from_numpy((np.sin(np.pi * xf)[:, None] * np.pi * np.cos(np.pi * xc)[None, :]).astype(np.float32)))
    st.v.assign(kc.from_numpy((-np.pi * np.cos(np.pi * xc)[:, None] * np.sin(np.pi * xf)[None, :]).astype(np.float32)))
    x, y = np.meshgrid(xc, xc, indexing="ij")
    rho0 = np.exp(-((x - 0.5) ** 2 + (y - 0.75) ** 2) / (2 * 0.06 ** 2)).astype(np.float32)
    st.density.assign(kc.from_numpy(rho0))
    states = [st, solver.state()]
    for k in range(steps):
        solver.step(states[k % 2], states[(k + 1) % 2], 0.01)
    return rho0, states[steps % 2].density.numpy()


def test_maccormack_keeps_a_smoke_blob_sharper_than_semi_lagrangian():
    rho0, sl = rotating_blob("semi_lagrangian")
    _, mc = rotating_blob("maccormack")
    # both stay within the initial bounds (the limiter forbids new extrema) ...
    assert sl.max() <= rho0.max() + 1e-6 and mc.max() <= rho0.max() + 1e-6 and mc.min() >= -1e-6
    # ... but first-order semi-Lagrangian smears the peak much more
    assert mc.max() > sl.max() + 0.1 * rho0.max(), (sl.max(), mc.max())


def test_vorticity_confinement_keeps_more_kinetic_energy():
    energies = {}
    for eps in (0.0, 2.0):
        solver = SolverGridFluid((24, 24), dx=1.0 / 24, vorticity=eps)
        st = solver.state()
        random_velocity(solver, st, seed=3, scale=0.3)
        states = [st, solver.state()]
        for k in range(10):
            solver.step(states[k % 2], states[(k + 1) % 2], 0.01)
        energies[eps] = sum(float((getattr(states[0], n).numpy().astype(np.float64) ** 2).sum()) for n in ("u", "v"))
    assert energies[2.0] > 1.05 * energies[0.0], energies
