"""SolverVBD contacts: self-contact (a folded drop never crosses itself), a static mesh sphere, a moving
body's box, attachments to a body, and gradients through contact against float64 finite differences."""
import contextlib

import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.solvers.xpbd import mesh_edges

from test_cloth_contact import edge_triangle_crossings, flap_model


def steps(model, solver, s0, s1, count, dt, check=None):
    for k in range(count):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        if check is not None:
            check(k, s0)
    return s0


@pytest.mark.parametrize("self_contact", [True, False])
def test_vbd_folded_drop_never_crosses_itself(self_contact):
    m = flap_model()
    tris = m.tri_indices.numpy()
    edges = mesh_edges(tris)
    sc = sim.ClothSelfContact(m, thickness=0.006, ke=1e3) if self_contact else None
    solver = sim.SolverVBD(m, iterations=5, contact_ke=1e3, self_contact=sc)
    worst = [0]

    def count(k, s):
        if k % 5 == 4:
            worst[0] = max(worst[0], edge_triangle_crossings(s.particle_q.numpy(), tris, edges))

    q = steps(m, solver, m.state(), m.state(), 200, 2e-3, count).particle_q.numpy()
    if self_contact:
        assert np.all(np.isfinite(q))
        assert worst[0] == 0
        assert q[:, 0].max() < 0.25              # it did fold (the strip was 0.32 m long)
        assert q[:, 1].max() > 0.008             # two layers, one on the other
    else:
        assert worst[0] > 0                      # the counter would catch it: without self-contact it crosses


def uv_sphere(radius, n_lat=10, n_lon=20):
    """Vertices and outward-wound triangles of a UV sphere (a convex polytope inside the sphere)."""
    v = [(0.0, radius, 0.0)]
    for i in range(1, n_lat):
        th = np.pi * i / n_lat
        for j in range(n_lon):
            ph = 2 * np.pi * j / n_lon
            v.append((radius * np.sin(th) * np.cos(ph), radius * np.cos(th), radius * np.sin(th) * np.sin(ph)))
    v.append((0.0, -radius, 0.0))
    v = np.array(v)
    ring = lambda i, j: 1 + (i - 1) * n_lon + j % n_lon   # noqa: E731
    tris = [(0, ring(1, j), ring(1, j + 1)) for j in range(n_lon)]
    for i in range(1, n_lat - 1):
        for j in range(n_lon):
            tris += [(ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)), (ring(i, j), ring(i + 1, j + 1), ring(i, j + 1))]
    tris += [(len(v) - 1, ring(n_lat - 1, j + 1), ring(n_lat - 1, j)) for j in range(n_lon)]
    tris = np.array(tris)
    nrm = np.cross(v[tris[:, 1]] - v[tris[:, 0]], v[tris[:, 2]] - v[tris[:, 0]])
    flip = (nrm * v[tris].mean(1)).sum(1) < 0
    tris[flip] = tris[flip][:, ::-1]
    return v, tris


def convex_distance_lower_bound(q, v, tris):
    """Max over the faces of the signed distance to the face's plane: a lower bound of the distance of
    outside points to a convex polytope (negative inside)."""
    a, b, c = (v[tris[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return ((q[:, None, :] - a[None]) * n[None]).sum(-1).max(1)


def test_vbd_drape_on_a_mesh_sphere_stays_outside_by_the_thickness():
    R, r, centre = 0.15, 0.01, np.array([0.0, 0.2, 0.0])
    v, tris = uv_sphere(R)
    b = sim.ModelBuilder()
    b.set_ground_plane()
    b.add_shape_mesh(v + centre, tris.ravel())
    b.add_cloth_grid((-0.2, 0.4, 0.2), (-np.sqrt(0.5), 0, 0, np.sqrt(0.5)), (0, 0, 0), 10, 10, 0.04, 0.04, 0.002,
                     tri_ke=500.0, tri_ka=500.0, tri_kd=0.1, edge_ke=0.001, particle_radius=r)
    m = b.finalize()
    solver = sim.SolverVBD(m, iterations=10)

    def outside(k, s):
        q = s.particle_q.numpy().astype(np.float64)
        assert np.all(np.isfinite(q))
        # never inside the mesh by more than the thickness (the particle radius)
        assert convex_distance_lower_bound(q - centre, v, tris).min() > -r

    q = steps(m, solver, m.state(), m.state(), 60, 1.0 / 60.0, outside).particle_q.numpy().astype(np.float64)
    assert convex_distance_lower_bound(q - centre, v, tris).min() > r - 2e-3   # resting on its surface layer
    assert q[:, 1].max() > 0.3           # draped over the top, not fallen through
    assert q[:, 1].min() > 0.0           # and not through the ground


def box_and_cloth(speed, attach=False, requires_grad=False):
    """A kinematic box (body) sliding along x at ``speed`` [m/s], a small cloth just above its top face."""
    b = sim.ModelBuilder()
    b.set_material(0, mu=0.8)
    body = b.add_body(xform=kc.transform(kc.vec3(0.0, 0.1, 0.0), kc.quat(0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box(half_extents=(0.15, 0.1, 0.15), body=body, density=100.0)
    s = np.sqrt(0.5)
    r = b.add_cloth_grid((-0.06, 0.21, 0.06), (-s, 0, 0, s), (0, 0, 0), 4, 4, 0.03, 0.03, 0.002, tri_ke=200.0,
                         tri_ka=200.0, tri_kd=0.1, edge_ke=0.001, particle_radius=0.01)
    if attach:
        b.add_cloth_attachment(r[0], body, ke=1e3, kd=1.0)
    b.body_qd[body] = (speed, 0.0, 0.0, 0.0, 0.0, 0.0)
    return b.finalize(requires_grad=requires_grad)


@pytest.mark.parametrize("attach", [False, True])
def test_vbd_cloth_on_a_moving_body_box_follows_it(attach):
    m = box_and_cloth(0.3, attach=attach)
    solver = sim.SolverVBD(m, iterations=8, contact_ke=1e4)
    s = steps(m, solver, m.state(), m.state(), 60, 1.0 / 60.0)
    q = s.particle_q.numpy()
    box = s.body_q.numpy()[0]
    assert box[0] == pytest.approx(0.3, abs=1e-4)           # the body moved with its velocity (kinematic)
    assert np.all(np.isfinite(q))
    assert q[:, 1].min() > 0.2 + 0.01 - 2e-3                 # on the top face (plus the particle radius)
    assert q[:, 1].max() < 0.2 + 0.01 + 2e-3
    # carried along by friction: the cloth's centre moved with the box (it started at x = 0)
    assert q[:, 0].mean() == pytest.approx(box[0], abs=0.01)
    v = s.particle_qd.numpy()
    assert v[:, 0].mean() == pytest.approx(0.3, abs=0.02)
    if attach:
        anchor = m.attachment_anchor.numpy()[0] + box[:3]   # the body does not rotate
        assert np.linalg.norm(q[0] - anchor) < 2e-3


def test_vbd_without_friction_the_box_slides_away_under_the_cloth():
    # the same scene, the friction gone: the test above can fail
    m = box_and_cloth(0.3)
    m.material_mu.assign(kc.array(np.zeros(m.material_mu.shape[0], np.float32), dtype=float))
    q = steps(m, sim.SolverVBD(m, iterations=8, contact_ke=1e4), m.state(), m.state(), 60, 1.0 / 60.0)
    assert q.particle_q.numpy()[:, 0].mean() < 0.05


@kc.kernel
def weighted_position_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def gradient_check(m, solver, count=6, dt=1.0 / 60.0, eps=1e-3, body=True):
    """Tape gradients of a weighted sum of the final positions w.r.t. the initial particle velocities (along
    a random direction) and the body's x velocity, against central differences: (analytic, fd) pairs."""
    rng = np.random.default_rng(3)
    w = kc.array(rng.normal(size=(m.particle_count, 3)).astype(np.float32), dtype=kc.vec3)
    v0 = m.particle_qd.numpy().astype(np.float64)
    bv0 = m.body_qd.numpy().astype(np.float64)

    def forward(v, bv, tape=None):
        states = [m.state() for _ in range(count + 1)]
        states[0].particle_qd.assign(kc.array(v.astype(np.float32), dtype=kc.vec3))
        if body:
            states[0].body_qd.assign(kc.array(bv.astype(np.float32), dtype=kc.spatial_vector))
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        with tape if tape is not None else contextlib.nullcontext():
            for k in range(count):
                solver.step(m, states[k], states[k + 1], None, dt)
            kc.launch(weighted_position_loss, dim=m.particle_count, inputs=[states[-1].particle_q, w, loss])
        return loss, states

    def value(v, bv):
        return float(forward(v, bv)[0].numpy()[0])

    tape = kc.Tape()
    loss, states = forward(v0, bv0, tape)
    tape.backward(loss=loss)
    d = rng.normal(size=v0.shape)
    out = [((states[0].particle_qd.grad.numpy() * d).sum(),
            (value(v0 + eps * d, bv0) - value(v0 - eps * d, bv0)) / (2 * eps))]
    if body:
        e = np.zeros_like(bv0)
        e[0, 0] = 1.0     # the body's x velocity
        out.append((states[0].body_qd.grad.numpy()[0, 0],
                    (value(v0, bv0 + eps * e) - value(v0, bv0 - eps * e)) / (2 * eps)))
    tape.zero()
    return out


def test_vbd_gradients_through_a_moving_body_and_an_attachment_match_finite_differences():
    # frictionless here: the attachment drags the cloth over the box (friction's stick/slip switch is not smooth)
    m = box_and_cloth(0.3, attach=True, requires_grad=True)
    m.material_mu.assign(kc.array(np.zeros(m.material_mu.shape[0], np.float32), dtype=float))
    for g, fd in gradient_check(m, sim.SolverVBD(m, iterations=4, contact_ke=1e3)):
        assert abs(g) > 1e-2
        assert g == pytest.approx(fd, rel=0.02, abs=1e-4)


def test_vbd_gradients_through_friction_on_a_moving_body_match_finite_differences():
    m = box_and_cloth(0.3, requires_grad=True)
    for g, fd in gradient_check(m, sim.SolverVBD(m, iterations=4, contact_ke=1e3, friction_eps=1e-3)):
        assert abs(g) > 5e-3
        # friction's smoothing window has a kink at |u_t| = friction_eps: a little looser
        assert g == pytest.approx(fd, rel=0.06, abs=1e-4)


def quat_mul(a, b):
    """Hamilton product of quaternions (x, y, z, w)."""
    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def two_patches(requires_grad=False):
    """Two 3 x 3 cloth patches, one 12 mm above the other and turned 20 degrees about the vertical (no edge of one
    parallel to an edge of the other: there the closest points of two edges jump), the lower one pinned at its
    corners."""
    b = sim.ModelBuilder()
    flat = (-np.sqrt(0.5), 0.0, 0.0, np.sqrt(0.5))
    turn = (0.0, np.sin(np.radians(10.0)), 0.0, np.cos(np.radians(10.0)))
    for k, y in enumerate((0.0, 0.012)):
        r = b.add_cloth_grid((-0.045, y, 0.045), quat_mul(turn, flat) if k else flat, (0, 0, 0), 3, 3, 0.03, 0.03,
                             0.002, tri_ke=200.0, tri_ka=200.0, tri_kd=0.1, edge_ke=0.01)
        if k == 0:
            for i in (r[0], r[3], r[12], r[15]):
                b.particle_mass[i] = 0.0
    return b.finalize(requires_grad=requires_grad)


def test_vbd_gradients_through_self_contact_match_finite_differences():
    m = two_patches(requires_grad=True)
    sc = sim.ClothSelfContact(m, thickness=0.01, ke=200.0, search_radius=0.03)
    solver = sim.SolverVBD(m, iterations=6, self_contact=sc)
    # the upper patch lands on the lower one within the steps: the contact is active
    s = steps(m, solver, m.state(), m.state(), 8, 1.0 / 120.0)
    gap = s.particle_q.numpy()[16:, 1].min() - s.particle_q.numpy()[:16, 1].max()
    assert gap < 0.01
    ((g, fd),) = gradient_check(m, solver, count=8, dt=1.0 / 120.0, body=False, eps=5e-4)
    assert abs(g) > 1e-2
    assert g == pytest.approx(fd, rel=0.04, abs=1e-4)


def test_vbd_self_contact_errors():
    m = flap_model(nx=2, ny=1)
    with pytest.raises(ValueError, match="self_contact cannot be combined with chebyshev_rho"):
        sim.SolverVBD(m, chebyshev_rho=0.5, self_contact=True)


def test_vbd_self_contact_on_a_tape_takes_the_same_steps():
    # the in-place sweeps (scratch array per colour) and the recorded out-of-place ones compute the same step
    m = two_patches(requires_grad=True)
    solver = sim.SolverVBD(m, iterations=4, self_contact=sim.ClothSelfContact(m, thickness=0.01, ke=200.0))
    plain = [m.state() for _ in range(7)]
    taped = [m.state() for _ in range(7)]
    tape = kc.Tape()
    for k in range(6):
        solver.step(m, plain[k], plain[k + 1], None, 1.0 / 120.0)
        with tape:
            solver.step(m, taped[k], taped[k + 1], None, 1.0 / 120.0)
    q = plain[-1].particle_q.numpy()
    assert q[16:, 1].min() - q[:16, 1].max() < 0.01     # in contact
    np.testing.assert_allclose(taped[-1].particle_q.numpy(), q, atol=1e-6)
