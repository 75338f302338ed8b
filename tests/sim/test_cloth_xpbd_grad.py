"""SolverXPBD on a kc.Tape: the recorded (out-of-place) step equals the in-place one, and its
gradients w.r.t. initial velocity, membrane and bending stiffness match float64 central finite
differences through ground contact; the single-launch sweeps equal the per-colour launches."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.cloth_forces import dihedral_angle_gradients, dihedral_gradient, dihedral_theta

STEPS, DT = 5, 1.0 / 60.0
RADIUS = 0.01


def small_cloth(requires_grad=False):
    b = sim.ModelBuilder()
    b.set_ground_plane()
    b.add_shape_sphere((0.3, -0.05, 0.0), 0.08)
    b.add_cloth_grid((0, 0.05, 0), (0.1, 0.05, 0.02, 0.99), (0.2, -0.5, 0.1), 3, 3, 0.05, 0.05, 0.01, fix_left=True,
                     tri_ke=200.0, tri_ka=100.0, edge_ke=0.01, particle_radius=RADIUS)
    return b.finalize(requires_grad=requires_grad)


def run(m, solver, states, tape=None):
    for k in range(STEPS):
        if tape is None:
            solver.step(m, states[k], states[k + 1], None, DT)
        else:
            with tape:
                solver.step(m, states[k], states[k + 1], None, DT)


def test_xpbd_on_a_tape_takes_the_same_steps_and_touches_the_ground():
    m = small_cloth(requires_grad=True)
    solver = sim.SolverXPBD(m, iterations=5)
    plain = [m.state() for _ in range(STEPS + 1)]
    taped = [m.state() for _ in range(STEPS + 1)]
    run(m, solver, plain)
    run(m, solver, taped, kc.Tape())
    np.testing.assert_allclose(taped[-1].particle_q.numpy(), plain[-1].particle_q.numpy(), atol=2e-6)
    np.testing.assert_allclose(taped[-1].particle_qd.numpy(), plain[-1].particle_qd.numpy(), atol=2e-4)
    q = plain[-1].particle_q.numpy()
    assert np.sum(q[:, 1] < RADIUS + 1e-4) >= 3      # several particles rest on the ground


def test_single_launch_sweeps_equal_per_colour_launches():
    m = small_cloth()
    a, b = sim.SolverXPBD(m, iterations=4), sim.SolverXPBD(m, iterations=4, single_launch=False)
    sa = [m.state() for _ in range(STEPS + 1)]
    sb = [m.state() for _ in range(STEPS + 1)]
    run(m, a, sa)
    run(m, b, sb)
    np.testing.assert_array_equal(sa[-1].particle_q.numpy(), sb[-1].particle_q.numpy())


@kc.kernel
def weighted_position_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def test_xpbd_gradients_match_finite_differences_through_contact():
    m = small_cloth(requires_grad=True)
    solver = sim.SolverXPBD(m, iterations=4)
    rng = np.random.default_rng(7)
    w = kc.array(rng.normal(size=(m.particle_count, 3)).astype(np.float32), dtype=kc.vec3)
    v0 = m.particle_qd.numpy().copy()
    mat0 = m.tri_materials.numpy().copy()
    bend0 = m.edge_bending_properties.numpy().copy()

    def forward(v, ke_scale=1.0, bend_scale=1.0, tape=None):
        m.tri_materials.assign(kc.array((mat0 * np.array([ke_scale, ke_scale, 1, 1, 1])).astype(np.float32),
                                        dtype=float))
        m.edge_bending_properties.assign(kc.array((bend0 * np.array([bend_scale, 1])).astype(np.float32),
                                                  dtype=float))
        states = [m.state() for _ in range(STEPS + 1)]
        states[0].particle_qd.assign(kc.array(v.astype(np.float32), dtype=kc.vec3))
        if tape is None:
            run(m, solver, states)
            return float((states[-1].particle_q.numpy().astype(np.float64) * w.numpy()).sum()), states
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        run(m, solver, states, tape)
        with tape:
            kc.launch(weighted_position_loss, dim=m.particle_count, inputs=[states[-1].particle_q, w, loss])
        return loss, states

    tape = kc.Tape()
    loss, states = forward(v0, tape=tape)
    tape.backward(loss=loss)
    g_v = states[0].particle_qd.grad.numpy().astype(np.float64)
    mat_g = m.tri_materials.grad.numpy().astype(np.float64)
    g_ke = float((mat_g[:, 0] * mat0[:, 0] + mat_g[:, 1] * mat0[:, 1]).sum())        # d loss / d membrane scale
    g_bend = float((m.edge_bending_properties.grad.numpy()[:, 0].astype(np.float64) * bend0[:, 0]).sum())
    tape.zero()
    d = rng.normal(size=v0.shape)
    d[m.particle_inv_mass.numpy() == 0] = 0.0
    eps = 1e-2
    fd_v = (forward(v0 + eps * d)[0] - forward(v0 - eps * d)[0]) / (2 * eps)
    assert abs((g_v * d).sum()) > 1e-3
    assert (g_v * d).sum() == pytest.approx(fd_v, rel=0.03, abs=1e-4)
    fd_ke = (forward(v0, ke_scale=1.05)[0] - forward(v0, ke_scale=0.95)[0]) / 0.1
    assert abs(fd_ke) > 1e-4
    assert g_ke == pytest.approx(fd_ke, rel=0.05, abs=1e-4)
    fd_bend = (forward(v0, bend_scale=1.2)[0] - forward(v0, bend_scale=0.8)[0]) / 0.4
    assert g_bend == pytest.approx(fd_bend, rel=0.1, abs=1e-4)


@kc.kernel
def dihedral_both(x: kc.array(dtype=kc.vec3, ndim=2), fused: kc.array(dtype=kc.mat44),
                  theta: kc.array(dtype=float), grads: kc.array(dtype=kc.vec3, ndim=2)):
    t = kc.tid()
    fused[t] = dihedral_angle_gradients(x[t, 0], x[t, 1], x[t, 2], x[t, 3])
    theta[t] = dihedral_theta(x[t, 0], x[t, 1], x[t, 2], x[t, 3])
    for k in range(4):
        grads[t, k] = dihedral_gradient(x[t, 0], x[t, 1], x[t, 2], x[t, 3], k)


def numpy_dihedral(x):
    x0, x1, x2, x3 = x
    e = x3 - x2
    n1 = np.cross(x2 - x0, x3 - x0)
    n2 = np.cross(x3 - x1, x2 - x1)
    return np.arctan2(np.dot(np.cross(n1, n2), e) / np.linalg.norm(e), np.dot(n1, n2))


def test_fused_dihedral_angle_and_gradients_match_the_separate_ones_and_fd():
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(16, 4, 3))
    x = kc.array(pts.astype(np.float32), dtype=kc.vec3)
    fused = kc.zeros(16, dtype=kc.mat44)
    theta = kc.zeros(16, dtype=float)
    grads = kc.zeros((16, 4), dtype=kc.vec3)
    kc.launch(dihedral_both, dim=16, inputs=[x], outputs=[fused, theta, grads])
    f = fused.numpy().astype(np.float64)
    np.testing.assert_allclose(f[:, :, 3], np.repeat(theta.numpy()[:, None], 4, axis=1), atol=1e-5)
    np.testing.assert_allclose(f[:, :, :3], grads.numpy(), rtol=1e-4, atol=1e-4)
    for t in range(16):
        assert f[t, 0, 3] == pytest.approx(numpy_dihedral(pts[t]), abs=1e-5)
        h = 1e-6
        for k in range(4):
            for c in range(3):
                p, m = pts[t].copy(), pts[t].copy()
                p[k, c] += h
                m[k, c] -= h
                fd = (numpy_dihedral(p) - numpy_dihedral(m)) / (2 * h)
                assert f[t, k, c] == pytest.approx(fd, rel=1e-3, abs=1e-3 * (1 + abs(fd)))
