"""SolverVBD for cloth: analytic hanging stretch, converged results independent of the iteration count,
contact with a sphere, vertex colouring, errors."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.solvers.vbd import colour_vertices, vertex_adjacency

from test_cloth import grid_mesh, hanging_elongation


def run(model, solver, steps, dt, control=None):
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
    return s0


def test_vbd_hanging_cloth_has_the_analytic_stretch():
    # the strip of tests/sim/test_cloth.py, now at a large step (1/30 s) and with no damping but implicit Euler's
    mu, rho, g, h, nx, ny = 5.0, 0.2, 9.81, 0.05, 3, 12
    H = ny * h
    v, tris = grid_mesh(nx, ny, h)
    b = sim.ModelBuilder(gravity=(0, -g, 0))
    b.add_cloth_mesh(v, tris, density=rho, tri_ke=mu, tri_ka=0.0, tri_kd=0.0, edge_ke=0.0)
    for i in np.nonzero(np.isclose(v[:, 1], H))[0]:
        b.particle_mass[i] = 0.0
    m = b.finalize()
    s = run(m, sim.SolverVBD(m, iterations=100, chebyshev_rho=0.95), 100, 1.0 / 30.0)
    q = s.particle_q.numpy()
    assert np.all(np.isfinite(q))
    elongation = -q[np.nonzero(v[:, 1] == 0)[0], 1].mean()
    expected = hanging_elongation(mu, rho, g, H)
    assert expected > 0.05 * H   # large stretch: the nonlinearity matters
    assert abs(elongation - expected) < 0.05 * expected, (elongation, expected)
    assert np.abs(s.particle_qd.numpy()).max() < 1e-3   # at rest


def hanging(iterations, steps=4, dt=1.0 / 30.0, ke=1e3, rho=0.0):
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), (0.1, 0, 0, 0.995), (0, 0, 0), 4, 4, 0.05, 0.05, 0.01, fix_top=True,
                     tri_ke=ke, tri_ka=ke, tri_kd=0.5, edge_ke=0.01, edge_kd=0.001)
    m = b.finalize()
    s = run(m, sim.SolverVBD(m, iterations=iterations, chebyshev_rho=rho), steps, dt)
    return s.particle_q.numpy().astype(np.float64)


def test_vbd_converged_result_does_not_depend_on_iteration_count():
    ref = hanging(300)
    sag = ref[:, 1].max() - ref[:, 1].min()
    assert np.all(np.isfinite(ref)) and sag > 0.1
    assert np.abs(hanging(150) - ref).max() < 1e-3 * sag
    # Chebyshev acceleration changes the path, not the fixed point
    assert np.abs(hanging(60, rho=0.9) - ref).max() < 1e-3 * sag
    # few sweeps are not converged: the comparisons above can tell
    assert np.abs(hanging(3) - ref).max() > 1e-2 * sag


def test_vbd_stiffness_is_a_property_of_the_material():
    stiff = hanging(150, ke=1e3)
    soft = hanging(150, ke=20.0)
    assert soft[:, 1].min() < stiff[:, 1].min() - 0.01


def test_vbd_cloth_on_a_sphere_stays_outside():
    b = sim.ModelBuilder()
    b.set_ground_plane()
    R, r = 0.15, 0.01
    b.add_shape_sphere((0.0, 0.2, 0.0), R)
    b.add_cloth_grid((-0.2, 0.4, 0.2), (-np.sqrt(0.5), 0, 0, np.sqrt(0.5)), (0, 0, 0), 10, 10, 0.04, 0.04, 0.002,
                     tri_ke=500.0, tri_ka=500.0, tri_kd=0.1, edge_ke=0.001, particle_radius=r)
    m = b.finalize()
    solver = sim.SolverVBD(m, iterations=10)
    s0, s1 = m.state(), m.state()
    for _ in range(60):
        solver.step(m, s0, s1, None, 1.0 / 60.0)
        s0, s1 = s1, s0
        q = s0.particle_q.numpy()
        assert np.all(np.isfinite(q))
        # never inside the sphere by more than the thickness (the particle radius)
        assert (np.linalg.norm(q - (0, 0.2, 0), axis=1) - R).min() > -r
    assert (np.linalg.norm(q - (0, 0.2, 0), axis=1) - R).min() > r - 2e-3   # and resting on its surface layer
    assert q[:, 1].max() > 0.3          # draped over the top, not fallen through
    assert q[:, 1].min() > 0.0          # and not through the ground


def test_vbd_colours_share_no_element_and_cover_every_moving_vertex():
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 5, 3, 0.1, 0.1, 0.01, fix_left=True)
    m = b.finalize()
    tris, bend = m.tri_indices.numpy(), m.edge_indices.numpy()
    movable = m.particle_inv_mass.numpy() > 0
    colours = colour_vertices([tris, bend], m.particle_count, movable)
    assert sorted(np.concatenate(colours).tolist()) == np.nonzero(movable)[0].tolist()
    for c in colours:
        members = set(c.tolist())
        for element in list(tris) + list(bend):
            assert len(members.intersection(element.tolist())) <= 1
    start, adj = vertex_adjacency(tris, m.particle_count)
    for p in range(m.particle_count):
        for t, a in adj[start[p]:start[p + 1]]:
            assert tris[t][a] == p
    assert start[-1] == tris.size


def test_vbd_errors():
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 1, 1, 0.1, 0.1, 0.01)
    m = b.finalize()
    with pytest.raises(ValueError, match="iterations must be >= 1"):
        sim.SolverVBD(m, iterations=0)
    with pytest.raises(ValueError, match="contact_ke"):
        sim.SolverVBD(m, contact_ke=-1.0)
    with pytest.raises(ValueError, match="chebyshev_rho"):
        sim.SolverVBD(m, chebyshev_rho=1.0)
    solver = sim.SolverVBD(m)
    with pytest.raises(ValueError, match="dt must be finite"):
        solver.step(m, m.state(), m.state(), None, 0.0)


def test_vbd_names_what_it_ignores():
    b = sim.ModelBuilder()
    body = b.add_body(mass=1.0, inertia=np.eye(3))
    b.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=body)
    b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 1, 1, 0.1, 0.1, 0.01, tri_drag=0.5)
    b.add_cloth_attachment(0, body)
    with pytest.warns(UserWarning, match=r"ignores air drag/lift \(tri_drag, tri_lift\)") as record:
        sim.SolverVBD(b.finalize())
    # body shapes and attachments are handled now: not named
    assert not any("shapes on bodies" in str(w.message) or "attachment" in str(w.message) for w in record)


def small_cloth(requires_grad=False):
    b = sim.ModelBuilder()
    b.set_ground_plane()
    b.add_cloth_grid((0, 0.05, 0), (0.1, 0.05, 0.02, 0.99), (0.2, -0.5, 0.1), 3, 3, 0.05, 0.05, 0.01, fix_left=True,
                     tri_ke=200.0, tri_ka=100.0, tri_kd=0.2, edge_ke=0.01, edge_kd=0.001, particle_radius=0.01)
    return b.finalize(requires_grad=requires_grad)


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_vbd_on_a_tape_takes_the_same_steps(rho):
    m = small_cloth(requires_grad=True)
    solver = sim.SolverVBD(m, iterations=6, chebyshev_rho=rho)
    plain = [m.state() for _ in range(4)]
    taped = [m.state() for _ in range(4)]
    tape = kc.Tape()
    for k in range(3):
        solver.step(m, plain[k], plain[k + 1], None, 1.0 / 60.0)
        with tape:
            solver.step(m, taped[k], taped[k + 1], None, 1.0 / 60.0)
    np.testing.assert_allclose(taped[-1].particle_q.numpy(), plain[-1].particle_q.numpy(), atol=1e-6)
    np.testing.assert_allclose(taped[-1].particle_qd.numpy(), plain[-1].particle_qd.numpy(), atol=1e-4)
    assert plain[-1].particle_q.numpy()[:, 1].min() < 0.05      # it fell and touched the ground region


@kc.kernel
def weighted_position_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def test_vbd_gradients_match_finite_differences():
    steps, dt = 4, 1.0 / 60.0
    m = small_cloth(requires_grad=True)
    solver = sim.SolverVBD(m, iterations=4, chebyshev_rho=0.5)
    rng = np.random.default_rng(5)
    w = kc.array(rng.normal(size=(m.particle_count, 3)).astype(np.float32), dtype=kc.vec3)
    v0 = m.particle_qd.numpy().copy()
    mat0 = m.tri_materials.numpy().copy()

    def forward(v, ke_scale, tape=None):
        m.tri_materials.assign(kc.array((mat0 * np.array([ke_scale, 1, 1, 1, 1], np.float32)).astype(np.float32),
                                        dtype=float))
        states = [m.state() for _ in range(steps + 1)]
        states[0].particle_qd.assign(kc.array(v.astype(np.float32), dtype=kc.vec3))
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        if tape is None:
            for k in range(steps):
                solver.step(m, states[k], states[k + 1], None, dt)
            return float((states[-1].particle_q.numpy().astype(np.float64) * w.numpy()).sum()), states
        with tape:
            for k in range(steps):
                solver.step(m, states[k], states[k + 1], None, dt)
            kc.launch(weighted_position_loss, dim=m.particle_count, inputs=[states[-1].particle_q, w, loss])
        return loss, states

    tape = kc.Tape()
    loss, states = forward(v0, 1.0, tape)
    tape.backward(loss=loss)
    g_v = states[0].particle_qd.grad.numpy().astype(np.float64)
    g_ke = float((m.tri_materials.grad.numpy()[:, 0].astype(np.float64) * mat0[:, 0]).sum())   # d loss / d scale
    tape.zero()
    d = rng.normal(size=v0.shape)
    d[m.particle_inv_mass.numpy() == 0] = 0.0
    eps = 1e-2
    fd_v = (forward(v0 + eps * d, 1.0)[0] - forward(v0 - eps * d, 1.0)[0]) / (2 * eps)
    assert abs((g_v * d).sum()) > 1e-3
    assert (g_v * d).sum() == pytest.approx(fd_v, rel=0.03, abs=1e-4)
    fd_ke = (forward(v0, 1.05)[0] - forward(v0, 0.95)[0]) / 0.1
    assert g_ke == pytest.approx(fd_ke, rel=0.05, abs=1e-4)
