"""SolverMPM with static meshes and rigid bodies (sim/mpm_colliders.py): no penetration, two-way
coupling (buoyancy, exact momentum exchange) and gradients through it against finite differences."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def box_mesh(h):
    """Closed box mesh (8 points, 12 triangles, counter-clockwise seen from outside), half extents h."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64) * h
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return corners, np.array(tris, np.int32)


def box_signed_distance(q, centre, h):
    d = np.abs(q - centre) - h
    return np.where(np.all(d < 0, 1), d.max(1), np.linalg.norm(np.maximum(d, 0), axis=1))


# ------------------------------------------------------------------------------------------------
# static mesh
# ------------------------------------------------------------------------------------------------
SAND_DX = 1.0 / 16
BOX_CENTRE = np.array([0.5, 0.25, 0.5])
BOX_HALF = np.array([0.2, 0.1, 0.2])


def pour_sand(collider, steps=150):
    """A sand block dropped on a box collider (3-D); returns the worst signed distance seen and the end state."""
    b = sim.ModelBuilder(gravity=(0.0, -9.8, 0.0))
    mat = b.add_material(model="sand", youngs_modulus=2.0e4, poisson_ratio=0.3)
    if collider == "mesh":
        pts, tris = box_mesh(BOX_HALF)
        b.add_shape_mesh(pts, tris, pos=tuple(BOX_CENTRE))
    elif collider == "box":
        b.add_shape_box(pos=tuple(BOX_CENTRE), half_extents=tuple(BOX_HALF))
    b.add_particle_grid((0.4, 0.45, 0.4), (0.0, 0.0, 0.0), 8, 8, 8, SAND_DX / 2, density=1500.0, material=mat)
    model = b.finalize()
    solver = sim.SolverMPM(model, dx=SAND_DX, bounds=((0.0,) * 3, (1.0,) * 3), dim=3, friction=0.5)
    s0, s1 = model.state(), model.state()
    worst = np.inf
    for _ in range(steps):
        solver.step(model, s0, s1, None, 2.0e-3)
        s0, s1 = s1, s0
        q = s0.particle_q.numpy().astype(np.float64)
        worst = min(worst, box_signed_distance(q, BOX_CENTRE, BOX_HALF).min())
    return worst, q


def test_sand_poured_on_a_static_mesh_box_stays_on_top():
    worst, q = pour_sand("mesh")
    # grid colliders act on nodes, so a particle may sink up to about one cell into the surface; it never passes
    assert worst > -SAND_DX, worst / SAND_DX
    top = BOX_CENTRE[1] + BOX_HALF[1]
    over = np.all(np.abs(q[:, [0, 2]] - BOX_CENTRE[[0, 2]]) < BOX_HALF[[0, 2]] - SAND_DX, axis=1)
    assert over.sum() > 0.3 * len(q)   # it spreads on the top; most of it stays above the box
    assert q[over, 1].min() > top - SAND_DX
    # the same box as an analytic shape gives the same pile (the mesh query finds the same surface)
    _, q_box = pour_sand("box")
    np.testing.assert_allclose(q, q_box, atol=0.1 * SAND_DX)
    # without the collider the sand falls through where the box was
    worst_none, _ = pour_sand(None)
    assert worst_none < -SAND_DX


# ------------------------------------------------------------------------------------------------
# rigid bodies
# ------------------------------------------------------------------------------------------------
def tank_with_body(relative_density, half=0.1):
    """2-D water tank (0.8 x 0.3 m) and a square body (side 2 half) dropped from above its surface."""
    b = sim.ModelBuilder(gravity=(0.0, -9.8, 0.0))
    mat = b.add_material(model="fluid", youngs_modulus=2.0e4, poisson_ratio=0.3)
    dx, rho = 1.0 / 32, 1000.0
    sp = dx / 2
    b.add_particle_grid((0.1 + sp / 2, 0.1 + sp / 2, 0.0), (0.0, 0.0, 0.0), 51, 19, 1, sp, density=rho, material=mat)
    # a 2-D particle stands for a slab `sp` thick (volume sp^3): the body's mass per that thickness
    mass = relative_density * rho * sp * (2 * half) ** 2
    body = b.add_body(xform=(0.5, 0.55, 0.0, 0.0, 0.0, 0.0, 1.0), mass=mass)
    b.add_shape_box(half_extents=(half, half, 0.05), body=body)
    model = b.finalize()
    solver = sim.SolverMPM(model, dx=dx, bounds=((0.1, 0.1), (0.9, 0.9)), dim=2)
    return model, solver


def drop(model, solver, seconds, dt=1.0e-3):
    s0, s1 = model.state(), model.state()
    heights = []
    for _ in range(int(round(seconds / dt))):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        heights.append(float(s0.body_q.numpy()[0, 1]))
    return np.array(heights), s0


def test_light_body_floats_and_dense_body_sinks_in_mpm_fluid():
    h_light, _ = drop(*tank_with_body(0.3), 1.0)
    h_dense, _ = drop(*tank_with_body(3.0), 1.0)
    # both fall 0.05 m freely before touching the water (surface at 0.4, body bottom at 0.45)
    assert h_light[90] == pytest.approx(h_dense[90], abs=1e-4)
    # the light one stays at the surface (centre near 0.4 + half - 0.3 * 2 half = 0.44; it bobs);
    # the dense one goes through the water to the tank floor (0.1) and beyond (no body-wall contact)
    assert h_light[-300:].min() > 0.3, h_light[-300:].min()
    assert h_dense[-1] < 0.1
    # the water slows the dense one: it is far behind free fall from its entry
    t_entry = 0.1
    free_fall = 0.55 - 0.5 * 9.8 * 1.0 ** 2
    assert h_dense[-1] > free_fall + 0.5 * 9.8 * t_entry ** 2 + 0.5, (h_dense[-1], free_fall)


def body_in_blob(vel=(1.0, 0.3, -0.2), ang=(0.5, -1.0, 2.0), body_mass=None, requires_grad=False, dim=3,
                 material="fixed_corotated"):
    """An elastic (or fluid) blob at rest, hit by a moving box body; no gravity, far from the walls."""
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mat = b.add_material(model=material, youngs_modulus=3.0e3, poisson_ratio=0.3)
    dx = 1.0 / 24
    if dim == 3:
        b.add_particle_grid((0.45, 0.4, 0.4), (0.0, 0.0, 0.0), 6, 6, 6, dx / 2, density=1000.0, material=mat,
                            jitter=0.002, seed=2)
        body = b.add_body(xform=(0.35, 0.45, 0.45, 0.0, 0.0, 0.0, 1.0), vel=vel, ang_vel=ang, mass=body_mass)
        b.add_shape_box(half_extents=(0.04, 0.05, 0.06), body=body, density=400.0)
    else:
        b.add_particle_grid((0.45, 0.4, 0.0), (0.0, 0.0, 0.0), 8, 8, 1, dx / 2, density=1000.0, material=mat,
                            jitter=0.002, seed=2)
        body = b.add_body(xform=(0.35, 0.47, 0.0, 0.0, 0.0, 0.0, 1.0), vel=(vel[0], vel[1], 0.0),
                          ang_vel=(0.0, 0.0, ang[2]), mass=body_mass)
        b.add_shape_box(half_extents=(0.04, 0.05, 0.05), body=body, density=400.0 * dx / 2 / 0.1)
    model = b.finalize(requires_grad=requires_grad)
    solver = sim.SolverMPM(model, dx=dx, bounds=((0.0,) * dim, (1.0,) * dim), dim=dim)
    return model, solver


def quat_matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def total_momenta(model, state, dx):
    """Linear and angular momentum (about the origin) of particles (APIC, with the affine term
    m dx^2/4 axial(C - C^T), quadratic B-splines) + bodies, float64."""
    m = model.particle_mass.numpy().astype(np.float64)
    x = state.particle_q.numpy().astype(np.float64)
    v = state.particle_qd.numpy().astype(np.float64)
    C = state.particle_C.numpy().astype(np.float64)
    P = (m[:, None] * v).sum(0)
    L_aff = np.stack([C[:, 2, 1] - C[:, 1, 2], C[:, 0, 2] - C[:, 2, 0], C[:, 1, 0] - C[:, 0, 1]], axis=1)
    L = (m[:, None] * (np.cross(x, v) + dx * dx / 4.0 * L_aff)).sum(0)
    bq = state.body_q.numpy().astype(np.float64)
    bqd = state.body_qd.numpy().astype(np.float64)
    M = model.body_mass.numpy().astype(np.float64)
    I_body = model.body_inertia.numpy().astype(np.float64)
    com = model.body_com.numpy().astype(np.float64)
    for k in range(model.body_count):
        R = quat_matrix(bq[k, 3:])
        x = bq[k, :3] + R @ com[k]
        v, w = bqd[k, :3], bqd[k, 3:]
        P = P + M[k] * v
        L = L + M[k] * np.cross(x, v) + R @ I_body[k] @ R.T @ w
    return P, L


def test_body_and_material_exchange_momentum_exactly():
    model, solver = body_in_blob()
    dx = solver.dx
    s0, s1 = model.state(), model.state()
    P0, L0 = total_momenta(model, s0, dx)
    v_body0 = s0.body_qd.numpy()[0, :3].copy()
    for _ in range(60):
        solver.step(model, s0, s1, None, 2.0e-3)
        s0, s1 = s1, s0
    P1, L1 = total_momenta(model, s0, dx)
    v_body1 = s0.body_qd.numpy()[0, :3]
    p_particles = (model.particle_mass.numpy()[:, None] * s0.particle_qd.numpy()).sum(0)
    # the body hit the blob: it lost momentum to it, and the blob moves
    assert abs(v_body1[0]) < 0.9 * abs(v_body0[0])
    assert np.linalg.norm(p_particles) > 0.1 * np.linalg.norm(P0)
    np.testing.assert_allclose(P1, P0, atol=2e-5 * np.linalg.norm(P0))
    np.testing.assert_allclose(L1, L0, atol=2e-3 * np.linalg.norm(L0))


def test_heavy_still_body_acts_like_a_static_shape():
    """A body of 1e9 kg at rest is a static collider: same particle paths as the static box
    (no gravity, which would move the body; the sand is thrown at it)."""
    def run(body):
        b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        mat = b.add_material(model="sand", youngs_modulus=2.0e4, poisson_ratio=0.3)
        if body:
            k = b.add_body(xform=(0.5, 0.25, 0.0, 0.0, 0.0, 0.0, 1.0), mass=1.0e9, inertia=(1e9, 1e9, 1e9))
            b.add_shape_box(half_extents=(0.2, 0.1, 0.1), body=k)
        else:
            b.add_shape_box(pos=(0.5, 0.25, 0.0), half_extents=(0.2, 0.1, 0.1))
        b.add_particle_grid((0.4, 0.45, 0.0), (0.3, -1.5, 0.0), 8, 8, 1, 1.0 / 32, density=1500.0, material=mat)
        model = b.finalize()
        solver = sim.SolverMPM(model, dx=1.0 / 16, bounds=((0.0,) * 2, (1.0,) * 2), dim=2, friction=0.5)
        s0, s1 = model.state(), model.state()
        for _ in range(120):
            solver.step(model, s0, s1, None, 2.0e-3)
            s0, s1 = s1, s0
        return s0
    s_body, s_static = run(True), run(False)
    q = s_body.particle_q.numpy()
    assert q[:, 1].min() > 0.35 - 1.0 / 16   # it held the sand
    np.testing.assert_allclose(q, s_static.particle_q.numpy(), atol=1e-5)
    np.testing.assert_allclose(s_body.body_qd.numpy(), 0.0, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# gradients
# ------------------------------------------------------------------------------------------------
@kc.kernel
def coupled_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), body_q: kc.array(dtype=kc.transform),
                 wb: kc.vec3, loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))
    if p == 0:
        kc.atomic_add(loss, 0, kc.dot(kc.transform_get_translation(body_q[0]), wb))


STEPS, DT = 40, 2.0e-3


def simulate(model, solver, w, wb, v0_body=None, v0_particles=None, tape=None):
    states = [model.state() for _ in range(STEPS + 1)]
    if v0_body is not None:
        states[0].body_qd.assign(v0_body)
    if v0_particles is not None:
        states[0].particle_qd.assign(v0_particles)
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def go():
        for k in range(STEPS):
            solver.step(model, states[k], states[k + 1], None, DT)
        kc.launch(coupled_loss, dim=model.particle_count, inputs=[states[-1].particle_q, w, states[-1].body_q, wb,
                                                                   loss])

    if tape is None:
        go()
    else:
        with tape:
            go()
    return loss, states


def host_loss(states, w, wb):
    q = states[-1].particle_q.numpy().astype(np.float64)
    x = states[-1].body_q.numpy()[0, :3].astype(np.float64)
    return float((q * w.numpy()).sum() + x @ np.asarray(wb, np.float64))


@pytest.mark.parametrize("dim", [2, 3])
def test_gradients_through_body_coupling_match_finite_differences(dim):
    model, solver = body_in_blob(vel=(1.5, 0.2, 0.1), ang=(0.0, 0.0, 1.0), requires_grad=True, dim=dim)
    rng = np.random.default_rng(3)
    w = rng.normal(size=(model.particle_count, 3)).astype(np.float32)
    if dim == 2:
        w[:, 2] = 0.0
    w = kc.array(w, dtype=kc.vec3)
    wb = kc.vec3(2.0, -1.0, 0.5 if dim == 3 else 0.0)
    tape = kc.Tape()
    loss, states = simulate(model, solver, w, wb, tape=tape)
    tape.backward(loss=loss)
    g_body = states[0].body_qd.grad.numpy().astype(np.float64)[0]
    g_part = states[0].particle_qd.grad.numpy().astype(np.float64)
    assert np.all(np.isfinite(g_body)) and np.all(np.isfinite(g_part))
    bqd0 = model.body_qd.numpy().astype(np.float64)
    qd0 = model.particle_qd.numpy().astype(np.float64)
    dir_b = np.array([1.0, -0.5, 0.3 if dim == 3 else 0.0, 0.0, 0.0, 0.7 if dim == 2 else 0.2])
    dir_p = rng.normal(size=qd0.shape)
    if dim == 2:
        dir_p[:, 2] = 0.0

    def f_body(eps):
        _, s = simulate(model, solver, w, wb, v0_body=(bqd0 + eps * dir_b).astype(np.float32))
        return host_loss(s, w, wb)

    def f_part(eps):
        _, s = simulate(model, solver, w, wb, v0_particles=(qd0 + eps * dir_p).astype(np.float32))
        return host_loss(s, w, wb)

    # contacts switch on and off with the velocity: a small step keeps the runs on one side of every switch
    for f, g, d, eps in ((f_body, g_body, dir_b, 1e-3), (f_part, g_part, dir_p, 1e-3)):
        fd = (f(eps) - f(-eps)) / (2 * eps)
        an = float((g * d).sum())
        assert an == pytest.approx(fd, rel=0.05, abs=0.02 * abs(fd) + 1e-3), (an, fd)
