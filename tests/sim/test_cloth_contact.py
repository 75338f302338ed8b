"""Cloth contact: on a sphere, on itself (no edge ever crosses a triangle), gradients through self-contact."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.solvers.xpbd import mesh_edges


def edge_triangle_crossings(q, tris, edges):
    """Number of (edge, triangle) pairs without a common vertex where the segment meets the triangle (float64)."""
    q = q.astype(np.float64)
    A, B, C = (q[tris[:, k]][None] for k in range(3))
    P = q[edges[:, 0]][:, None]
    D = (q[edges[:, 1]] - q[edges[:, 0]])[:, None]
    e1, e2 = B - A, C - A
    h = np.cross(D, e2)
    det = (e1 * h).sum(-1)
    ok = np.abs(det) > 1e-18
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = P - A
    u = (s * h).sum(-1) * inv
    qv = np.cross(s, e1)
    v = (D * qv).sum(-1) * inv
    t = (e2 * qv).sum(-1) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)
    share = (tris[None, :, :, None] == edges[:, None, None, :]).any(-1).any(-1)
    return int((hit & ~share).sum())


def test_crossing_counter_sees_a_crossing():
    q = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, -1], [0.2, 0.2, 1]], float)
    assert edge_triangle_crossings(q, np.array([[0, 1, 2]]), np.array([[3, 4]])) == 1
    q[4, 2] = -0.5
    assert edge_triangle_crossings(q, np.array([[0, 1, 2]]), np.array([[3, 4]])) == 0


def flap_model(omega=15.0, nx=16, ny=4, h=0.02):
    """A strip on the ground whose right half is flung over its left half (rigid rotation about the middle)."""
    b = sim.ModelBuilder(particle_damping=0.5)
    # stiffnesses resolved by the 2 ms step: ground ke / m = 1e5 /s^2, (2 ms)^2 1e5 = 0.4
    b.set_material(0, ke=200.0, restitution=0.0, mu=0.3)
    b.set_ground_plane()
    r = b.add_cloth_grid((0, 0.005, 0), (-np.sqrt(0.5), 0, 0, np.sqrt(0.5)), (0, 0, 0), nx, ny, h, h, 0.002,
                         tri_ke=50.0, tri_ka=50.0, tri_kd=0.05, edge_ke=1e-4, particle_radius=0.005)
    mid = nx * h / 2
    for i in r:
        x = b.particle_q[i]
        if x[0] > mid:
            b.particle_qd[i] = (-omega * (x[1] - 0.005), omega * (x[0] - mid), 0.0)
    return b.finalize()


@pytest.mark.parametrize("self_contact", [True, False])
def test_folded_drop_never_crosses_itself(self_contact):
    m = flap_model()
    tris = m.tri_indices.numpy()
    edges = mesh_edges(tris)
    sc = sim.ClothSelfContact(m, thickness=0.006, ke=200.0, kd=0.05) if self_contact else None
    solver = sim.SolverSemiImplicit(m, self_contact=sc)
    s0, s1 = m.state(), m.state()
    worst = 0
    for k in range(250):
        solver.step(m, s0, s1, None, 2e-3)
        s0, s1 = s1, s0
        if k % 5 == 4:
            worst = max(worst, edge_triangle_crossings(s0.particle_q.numpy(), tris, edges))
    q = s0.particle_q.numpy()
    if self_contact:
        assert np.all(np.isfinite(q))
        assert worst == 0
        assert q[:, 0].max() < 0.25              # it did fold (the strip was 0.32 m long)
        assert q[:, 1].max() > 0.008             # two layers, one on the other
    else:
        assert worst > 0                         # the counter would catch it: without self-contact it crosses


def test_cloth_dropped_on_a_sphere_stays_outside_and_finite():
    R, thickness = 0.1, 0.005
    b = sim.ModelBuilder(particle_damping=0.2)
    b.set_material(0, ke=300.0, restitution=0.0, mu=0.3)
    b.add_shape_sphere((0.0, 0.0, 0.0), R)
    b.set_ground_plane(offset=-0.12)
    b.add_cloth_grid((-0.15, 0.13, 0.15), (-np.sqrt(0.5), 0, 0, np.sqrt(0.5)), (0, -0.5, 0), 10, 10, 0.03, 0.03,
                     0.001, tri_ke=50.0, tri_ka=50.0, tri_kd=0.05, edge_ke=1e-4, particle_radius=thickness)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, self_contact=sim.ClothSelfContact(m, thickness=thickness, ke=200.0, kd=0.05))
    s0, s1 = m.state(), m.state()
    deepest = np.inf
    for _ in range(200):
        solver.step(m, s0, s1, None, 2e-3)
        s0, s1 = s1, s0
        q = s0.particle_q.numpy()
        assert np.all(np.isfinite(q))
        deepest = min(deepest, (np.linalg.norm(q, axis=1) - R).min())
    assert deepest > -thickness
    top = np.linalg.norm(q[:, [0, 2]], axis=1) < 0.03
    assert q[top, 1].min() > R                  # the middle rests on top of the sphere
    assert q[:, 1].min() < 0.0                  # and the rest drapes down its sides


@kc.kernel
def weighted_position_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def patch_on_patch():
    """A small tilted cloth patch falling onto a fixed one below it (both one model's cloth: self-contact)."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    lower = b.add_cloth_grid((-0.1, 0.0, 0.1), (-np.sqrt(0.5), 0, 0, np.sqrt(0.5)), (0, 0, 0), 2, 2, 0.1, 0.1, 1.0,
                             edge_ke=0.0)
    for i in lower:
        b.particle_mass[i] = 0.0
    b.add_cloth_grid((-0.04, 0.03, 0.05), (-0.68, 0.05, 0.08, 0.73), (0.1, -1.0, 0.0), 1, 1, 0.07, 0.07, 0.01,
                     tri_ke=20.0, tri_ka=10.0, tri_kd=0.05, edge_ke=0.0)
    return b.finalize(requires_grad=True)


@pytest.mark.parametrize("kd", [0.0, 0.05])
def test_gradient_through_self_contact_matches_finite_differences(kd):
    # the patch touches down with the step bound active on several steps: the gradient includes the bound's
    m = patch_on_patch()
    steps, dt = 90, 2e-3
    sc = sim.ClothSelfContact(m, thickness=0.01, ke=50.0, kd=kd)
    solver = sim.SolverSemiImplicit(m, self_contact=sc)
    rng = np.random.default_rng(5)
    w = rng.normal(size=(m.particle_count, 3)).astype(np.float32)
    v0 = m.particle_qd.numpy().copy()
    moving = m.particle_inv_mass.numpy() > 0

    def forward(v, tape=None):
        states = [m.state() for _ in range(steps + 1)]
        states[0].particle_qd.assign(kc.array(v.astype(np.float32), dtype=kc.vec3))
        if tape is None:
            for k in range(steps):
                solver.step(m, states[k], states[k + 1], None, dt)
        else:
            with tape:
                for k in range(steps):
                    solver.step(m, states[k], states[k + 1], None, dt)
        return states

    tape = kc.Tape()
    states = forward(v0, tape)
    q = states[-1].particle_q.numpy()
    assert np.all(np.isfinite(q))
    assert q[moving, 1].min() > 0.0                   # held up by the lower patch ...
    assert q[moving, 1].min() < 0.012                 # ... after touching it
    tape.backward(grads={states[-1].particle_q: kc.array(w, dtype=kc.vec3)})
    g = states[0].particle_qd.grad.numpy().astype(np.float64)
    tape.zero()

    def host(v):
        return float((forward(v)[-1].particle_q.numpy().astype(np.float64) * w).sum())

    d = np.where(moving[:, None], rng.normal(size=v0.shape), 0.0)
    eps = 1e-3
    fd = (host(v0 + eps * d) - host(v0 - eps * d)) / (2 * eps)
    assert fd == pytest.approx((g * d).sum(), rel=0.03, abs=1e-3)


def test_cloth_lands_on_a_static_mesh_and_on_a_rigid_body():
    # the cloth's particles use the existing particle contacts: a static triangle mesh and a box on a body
    b = sim.ModelBuilder(particle_damping=0.5)
    b.set_material(0, ke=300.0, restitution=0.0, mu=0.5)
    b.set_ground_plane()
    b.add_shape_mesh([(-1, 0.1, -1), (1, 0.1, -1), (1, 0.1, 1), (-1, 0.1, 1)], [0, 2, 1, 0, 3, 2])
    body = b.add_body(xform=kc.transform(kc.vec3(0.0, 0.25, 0.0), kc.quat(0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box(half_extents=(0.05, 0.05, 0.05), body=body, density=50.0)
    s = np.sqrt(0.5)
    b.add_cloth_grid((-0.2, 0.35, 0.2), (-s, 0, 0, s), (0, 0, 0), 8, 8, 0.05, 0.05, 0.002, tri_ke=50.0, tri_ka=50.0,
                     tri_kd=0.05, edge_ke=1e-4, particle_radius=0.005)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    pushed = 0.0
    for _ in range(300):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        pushed = min(pushed, float(s0.body_f.numpy()[0][1]))
    q = s0.particle_q.numpy()
    assert np.all(np.isfinite(q))
    assert q[:, 1].min() > 0.1 - 0.005          # held by the mesh (not through it to the ground at 0)
    assert pushed < 0.0                          # the cloth pressed down on the body's box
    near = np.linalg.norm(q[:, [0, 2]] - s0.body_q.numpy()[0][[0, 2]], axis=1) < 0.03
    assert q[near, 1].min() > s0.body_q.numpy()[0][1] + 0.05 - 0.005   # and lies on top of it
