"""Cloth (builder, membrane, bending) under SolverSemiImplicit against analytic solutions and finite differences."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder.cloth import dihedral_angle


def grid_mesh(nx, ny, h):
    """Vertices (x fastest) and triangles of an nx x ny grid of squares of side h in the x-y plane."""
    y, x = np.meshgrid(np.arange(ny + 1), np.arange(nx + 1), indexing="ij")
    v = np.stack([x.ravel() * h, y.ravel() * h, np.zeros(x.size)], 1)
    tris = []
    for j in range(ny):
        for i in range(nx):
            a, b, c, d = j * (nx + 1) + i, j * (nx + 1) + i + 1, (j + 1) * (nx + 1) + i + 1, (j + 1) * (nx + 1) + i
            tris += [(a, b, c), (a, c, d)] if (i + j) % 2 == 0 else [(a, b, d), (b, c, d)]
    return v, np.array(tris)


def run(model, solver, steps, dt, control=None):
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
    return s0


def test_builder_arrays_rest_shape_and_fixed_particles():
    b = sim.ModelBuilder()
    rot = (0.0, 0.0, np.sin(0.3), np.cos(0.3))   # arbitrary rotation about z: rest shapes do not change
    r = b.add_cloth_grid(pos=(1, 2, 3), rot=rot, vel=(0, 0, 0), dim_x=3, dim_y=2, cell_x=0.2, cell_y=0.1, mass=0.5,
                         fix_left=True, tri_ke=7.0, tri_ka=3.0, tri_kd=0.5, edge_ke=2.0, edge_kd=0.1)
    m = b.finalize()
    assert list(r) == list(range(12)) and m.tri_count == 12
    # interior edges of a 3 x 2 grid: 2*3 vertical-ish + 3*1 horizontal + 6 diagonals = 3*1 + 2*2 + 6 = 13
    assert m.edge_count == 13
    np.testing.assert_allclose(m.tri_areas.numpy(), 0.5 * 0.2 * 0.1, rtol=1e-5)
    mass = m.particle_mass.numpy().reshape(3, 4)
    assert np.all(mass[:, 0] == 0) and np.all(mass[:, 1:] == 0.5)
    np.testing.assert_allclose(m.tri_materials.numpy()[:, :3], np.tile([7.0, 3.0, 0.5], (12, 1)))
    np.testing.assert_allclose(m.edge_bending_properties.numpy(), np.tile([2.0, 0.1], (13, 1)))
    np.testing.assert_allclose(m.edge_rest_angle.numpy(), 0.0, atol=1e-6)
    # tri_poses invert each triangle's rest edges: |D^-1 applied to the rest edges| = identity
    q = m.particle_q.numpy().astype(np.float64)
    for t, (i, j, k) in enumerate(m.tri_indices.numpy()):
        F = np.stack([q[j] - q[i], q[k] - q[i]], 1) @ m.tri_poses.numpy()[t]
        np.testing.assert_allclose(F.T @ F, np.eye(2), atol=1e-5)
    # each bending edge's 4 particles: the opposite vertices share a triangle with the edge
    tris = {frozenset(t) for t in m.tri_indices.numpy().tolist()}
    for o0, o1, e0, e1 in m.edge_indices.numpy().tolist():
        assert frozenset((o0, e0, e1)) in tris and frozenset((o1, e0, e1)) in tris


def test_rest_dihedral_angle_of_a_folded_mesh():
    # two triangles folded by 90 degrees about the x axis
    v = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, 0, 1]], float)
    b = sim.ModelBuilder()
    b.add_cloth_mesh(v, [[0, 1, 2], [1, 0, 3]], density=1.0)
    assert b.edge_count == 1
    assert abs(abs(b.edge_rest_angle[0]) - np.pi / 2) < 1e-9
    assert abs(dihedral_angle(*v[list(b.edge_indices[0])])) == pytest.approx(np.pi / 2)


def hanging_elongation(mu, rho, g, H):
    """Analytic elongation [m] of a strip of height H hanging under its weight: mu s (s^2 - 1) = rho g Y."""
    Y = np.linspace(0.0, H, 2001)
    s = np.array([np.real(r[np.argmin(np.abs(r - 1.0))]) for r in
                  (np.roots([mu, 0.0, -mu, -rho * g * y]) for y in Y)])
    return np.trapezoid(s - 1.0, Y) if hasattr(np, "trapezoid") else np.trapz(s - 1.0, Y)


def test_hanging_cloth_has_the_analytic_stretch():
    mu, rho, g, h, nx, ny = 5.0, 0.2, 9.81, 0.05, 3, 12
    H = ny * h
    v, tris = grid_mesh(nx, ny, h)
    b = sim.ModelBuilder(gravity=(0, -g, 0), particle_damping=3.0)
    # lambda = 0: no Poisson coupling, so the strip is in exact uniaxial tension
    b.add_cloth_mesh(v, tris, density=rho, tri_ke=mu, tri_ka=0.0, tri_kd=0.05, edge_ke=0.0)
    top = np.nonzero(np.isclose(v[:, 1], H))[0]
    for i in top:
        b.particle_mass[i] = 0.0
    m = b.finalize()
    s = run(m, sim.SolverSemiImplicit(m), 2500, 2e-3)
    q = s.particle_q.numpy()
    assert np.all(np.isfinite(q))
    bottom = np.nonzero(v[:, 1] == 0)[0]
    elongation = -q[bottom, 1].mean()
    expected = hanging_elongation(mu, rho, g, H)
    assert expected > 0.05 * H   # large stretch: the nonlinearity matters
    assert abs(elongation - expected) < 0.05 * expected, (elongation, expected)
    assert np.abs(s.particle_qd.numpy()).max() < 1e-3   # at rest


@pytest.mark.parametrize("mu, lam", [(4.0, 0.0), (3.0, 2.0)])
def test_uniform_membrane_stretch_area_ratio(mu, lam):
    # a free square under a uniform outward nominal traction t [N/m] on its sides (consistent nodal loads):
    # the linear triangles reproduce the uniform state exactly, s (mu + lambda) (s^2 - 1) = t, area ratio s^2
    n, h, t = 4, 0.25, 1.5
    v, tris = grid_mesh(n, n, h)
    b = sim.ModelBuilder(gravity=(0, 0, 0), particle_damping=4.0)
    b.add_cloth_mesh(v, tris, density=0.5, tri_ke=mu, tri_ka=lam, tri_kd=0.05, edge_ke=0.0)
    m = b.finalize()
    c = m.control()
    f = np.zeros((len(v), 3), np.float32)
    L = n * h
    for i, (x, y, _) in enumerate(v):
        for coord, side in ((x, 0), (y, 1)):
            for end, sign in ((0.0, -1.0), (L, 1.0)):
                if np.isclose(coord, end):
                    other = y if side == 0 else x
                    share = h / 2 if np.isclose(other, 0) or np.isclose(other, L) else h
                    f[i, side] += sign * t * share
    c.particle_f_ext.assign(kc.array(f, dtype=kc.vec3))
    s = run(m, sim.SolverSemiImplicit(m), 2500, 2e-3, control=c)
    q = s.particle_q.numpy().astype(np.float64)
    area = sum(0.5 * np.linalg.norm(np.cross(q[j] - q[i], q[k] - q[i])) for i, j, k in tris)
    roots = np.roots([mu + lam, 0.0, -(mu + lam), -t])
    stretch = np.real(roots[np.argmin(np.abs(roots - 1.0))])
    assert stretch ** 2 > 1.2
    assert area / L ** 2 == pytest.approx(stretch ** 2, rel=5e-3)


def test_bending_holds_a_cantilever():
    # a strip clamped along its two leftmost columns (a hinge line alone would let it swing freely)
    def droop(edge_ke):
        b = sim.ModelBuilder(particle_damping=2.0)
        b.add_cloth_grid((0, 1, 0), (-np.sqrt(0.5), 0, 0, np.sqrt(0.5)), (0, 0, 0), 6, 1, 0.05, 0.05, 0.002,
                         tri_ke=200.0, tri_ka=100.0, tri_kd=0.1, edge_ke=edge_ke, edge_kd=0.0)
        for i in (0, 1, 7, 8):
            b.particle_mass[i] = 0.0
        m = b.finalize()
        s = run(m, sim.SolverSemiImplicit(m), 2000, 5e-4)
        q = s.particle_q.numpy()
        assert np.all(np.isfinite(q))
        return 1.0 - q[:, 1].min()
    assert droop(0.5) < 0.3 * droop(0.0)


@kc.kernel
def weighted_position_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def test_gradients_through_ground_contact_match_finite_differences():
    steps, dt = 60, 2e-3

    def build():
        b = sim.ModelBuilder(particle_damping=0.0)
        # frictionless: a friction law switching between its sticking and sliding branches puts kinks in the
        # loss that a finite difference of any useful size straddles somewhere among 9 particles x 60 steps
        b.set_material(0, ke=2e3, restitution=0.3, mu=0.0)
        b.set_ground_plane()
        b.add_cloth_grid((0, 0.08, 0), (0.2, 0.1, 0.05, 0.97), (0.3, -1.0, 0.1), 2, 2, 0.1, 0.1, 0.01,
                         tri_ke=30.0, tri_ka=10.0, tri_kd=0.1, edge_ke=0.01, edge_kd=0.001, particle_radius=0.01)
        return b.finalize(requires_grad=True)

    m = build()
    solver = sim.SolverSemiImplicit(m)
    rng = np.random.default_rng(3)
    w = kc.array(rng.normal(size=(m.particle_count, 3)).astype(np.float32), dtype=kc.vec3)
    v0 = m.particle_qd.numpy().copy()
    mat0 = m.tri_materials.numpy().copy()

    def forward(v, ke_scale, tape=None):
        m.tri_materials.assign(kc.array((mat0 * np.array([ke_scale, 1, 1, 1, 1], np.float32)).astype(np.float32),
                                        dtype=float))
        states = [m.state() for _ in range(steps + 1)]
        states[0].particle_qd.assign(kc.array(v.astype(np.float32), dtype=kc.vec3))
        loss = kc.zeros(1, dtype=float, requires_grad=True)

        def go():
            for k in range(steps):
                solver.step(m, states[k], states[k + 1], None, dt)
            kc.launch(weighted_position_loss, dim=m.particle_count, inputs=[states[-1].particle_q, w, loss])
        if tape is None:
            go()
        else:
            with tape:
                go()
        return loss, states

    tape = kc.Tape()
    loss, states = forward(v0, 1.0, tape)
    assert states[-1].particle_q.numpy()[:, 1].min() < 0.02   # it did reach the ground
    tape.backward(loss=loss)
    g_v = states[0].particle_qd.grad.numpy().astype(np.float64)
    g_mat = m.tri_materials.grad.numpy().astype(np.float64)
    tape.zero()

    def host(v, s):
        _, st = forward(v, s)
        return float((st[-1].particle_q.numpy().astype(np.float64) * w.numpy()).sum())

    d = rng.normal(size=v0.shape)
    eps = 1e-3   # contact is smooth only on the scale of one step's motion: a small, centred difference
    fd_v = (host(v0 + eps * d, 1.0) - host(v0 - eps * d, 1.0)) / (2 * eps)
    assert fd_v == pytest.approx((g_v * d).sum(), rel=0.03, abs=1e-3)
    eps = 2e-3
    fd_ke = (host(v0, 1.0 + eps) - host(v0, 1.0 - eps)) / (2 * eps)
    an_ke = (g_mat[:, 0] * mat0[:, 0]).sum()     # d loss / d ke_scale
    assert abs(fd_ke) > 1e-4
    assert an_ke == pytest.approx(fd_ke, rel=0.05, abs=1e-4)


@pytest.mark.parametrize("call, match", [
    (lambda b: b.add_triangle(0, 1, 2), r"add_triangle: triangle 0 \(0, 1, 2\) is degenerate"),
    (lambda b: b.add_triangle(0, 1, 3, tri_ke=-1.0), r"add_triangle: tri_ke of triangle 0 must be"),
    (lambda b: b.add_triangle(0, 1, 1), r"add_triangle: triangle 0 repeats"),
    (lambda b: b.add_triangle(0, 1, 9), r"add_triangle: particle 9 does not exist"),
    (lambda b: b.add_edge(0, 3, 1, 2, edge_ke=-2.0), r"add_edge: edge_ke of edge 0 must be"),
    (lambda b: b.add_cloth_mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, -1, 0]],
                                [[0, 1, 2], [1, 0, 3], [0, 1, 4]]),
     r"add_cloth_mesh: mesh edge \(0, 1\) is shared by 3 triangles"),
    (lambda b: b.add_cloth_mesh([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]]),
     r"add_cloth_mesh: triangle 0 \(\d+, \d+, \d+\) is degenerate"),
    (lambda b: b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 2, 2, 0.1, 0.1, 1.0, edge_ke=-1.0),
     r"add_cloth_grid: edge_ke of edge 0"),
    (lambda b: b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 2, 2, 0.1, 0.1, 1.0, tri_ka=float("nan")),
     r"add_cloth_grid: tri_ka of triangle 0"),
])
def test_bad_cloth_input_is_named(call, match):
    b = sim.ModelBuilder()
    for p in ((0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)):
        b.add_particle(p)
    with pytest.raises(ValueError, match=match):
        call(b)


def test_air_drag_gives_the_terminal_velocity_and_lift_its_direction():
    # a horizontal sheet falling flat: drag tri_drag A v^2 balances m g at v_t = sqrt(m g / (tri_drag A));
    # area-lumped masses get the same share of the weight as of the drag, so the sheet stays flat
    drag, n, h, density = 0.5, 4, 0.1, 0.05
    v, tris = grid_mesh(n, n, h)
    s = np.sqrt(0.5)
    b = sim.ModelBuilder()
    b.add_cloth_mesh(v, tris, rot=(-s, 0, 0, s), density=density, tri_ke=2.0, tri_ka=2.0, tri_kd=0.001,
                     tri_drag=drag, edge_ke=0.0)
    m = b.finalize()
    st = run(m, sim.SolverSemiImplicit(m), 3000, 1e-3)
    vy = st.particle_qd.numpy()[:, 1]
    v_t = np.sqrt(density * 9.81 / drag)
    assert np.ptp(vy) < 1e-3 * v_t
    assert -vy.mean() == pytest.approx(v_t, rel=0.01)
    mass = 0.002
    # lift on a sheet at 45 degrees to a horizontal wind: tri_lift A |v|^2 c sqrt(1 - c^2), across the wind
    lift, speed = 0.3, 2.0
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    ang = np.pi / 8   # a rotation by 45 degrees about z: the normal (0, 0, 1) of the grid stays across the wind
    b.add_cloth_grid((0, 0, 0), (0, np.sin(ang), 0, np.cos(ang)), (speed, 0, 0), 2, 2, h, h, mass, tri_ke=0.0,
                     tri_ka=0.0, tri_kd=0.0, tri_lift=lift, edge_ke=0.0)
    m = b.finalize()
    s0, s1 = m.state(), m.state()
    sim.SolverSemiImplicit(m).step(m, s0, s1, None, 1e-3)
    f = s1.particle_f.numpy().astype(np.float64).sum(0)
    q = m.particle_q.numpy().astype(np.float64)
    nrm = np.cross(q[1] - q[0], q[n // 2 + 1] - q[0])
    nrm /= np.linalg.norm(nrm)
    c = nrm @ np.array([1.0, 0, 0])
    np.testing.assert_allclose(f, -lift * (2 * h) ** 2 * speed ** 2 * c * (nrm - c * np.array([1.0, 0, 0])), atol=1e-6)


def test_gradient_with_respect_to_the_motion_of_fixed_particles():
    # the top row is kinematic (mass 0) and moves with a prescribed velocity: d loss / d that velocity
    steps, dt = 80, 2e-3
    b = sim.ModelBuilder(particle_damping=0.5)
    b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 2, 3, 0.1, 0.1, 0.01, fix_top=True, tri_ke=20.0,
                     tri_ka=10.0, tri_kd=0.05, edge_ke=0.01, edge_kd=0.0)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    fixed = m.particle_inv_mass.numpy() == 0
    rng = np.random.default_rng(2)
    w = rng.normal(size=(m.particle_count, 3)).astype(np.float32)

    def forward(u, tape=None):
        v = np.zeros((m.particle_count, 3), np.float32)
        v[fixed] = u
        states = [m.state() for _ in range(steps + 1)]
        states[0].particle_qd.assign(kc.array(v, dtype=kc.vec3))
        with (tape if tape is not None else _nothing()):
            for k in range(steps):
                solver.step(m, states[k], states[k + 1], None, dt)
        return states

    u0 = np.array([0.3, 0.5, -0.2])
    tape = kc.Tape()
    states = forward(u0, tape)
    tape.backward(grads={states[-1].particle_q: kc.array(w, dtype=kc.vec3)})
    g = states[0].particle_qd.grad.numpy().astype(np.float64)[fixed].sum(0)

    def host(u):
        return float((forward(u)[-1].particle_q.numpy().astype(np.float64) * w).sum())

    eps = 1e-2
    fd = np.array([(host(u0 + eps * e) - host(u0 - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(g, fd, rtol=0.02, atol=2e-3)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False
