"""Edge contacts (sim/collide_mesh_edges.py): a box body lying across the ridge of a static mesh
prism, and a mesh body lying across the edge of a static box, rest on the edge instead of
sinking until a vertex or corner meets a face; switched off, they sink (the tests can fail)."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

CUBE_POINTS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64) - 0.5
CUBE_TRIS = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
RIDGE_Y = 0.1


def _prism(half_width=0.6, height=RIDGE_Y, half_length=1.0):
    """A triangular prism on its side, ridge up along z at y = height, triangles facing outwards."""
    section = [(-half_width, 0.0), (half_width, 0.0), (0.0, height)]
    pts = np.array([(x, y, z) for z in (-half_length, half_length) for x, y in section])
    tris = [(0, 2, 1), (3, 4, 5),                      # end caps (-z, +z)
            (0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4), (2, 0, 3), (2, 3, 5)]
    return pts, np.asarray(tris)


def _box_distance(x, pos, rot, half):
    p = (x - pos) @ rot          # (n, 3) in the box frame
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


def _penetration(q, half, a, b):
    """How deep [m] the segment a-b reaches into a box of half extents ``half`` at pose q (float64)."""
    x = a + np.linspace(0.0, 1.0, 4001)[:, None] * (b - a)
    d = _box_distance(x, q[:3].astype(np.float64), quat_to_matrix(q[3:].astype(np.float64)), half)
    return max(0.0, -d.min())


def _run(b, steps, dt, edges, depth_of):
    """Final body_q, body_qd of body 0 and the largest ``depth_of(body_q)`` seen (every 50 steps)."""
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    if not edges:
        solver.body_mesh_contacts.edges = None
    s0, s1 = m.state(), m.state()
    deepest = 0.0
    for k in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if k % 50 == 49:
            deepest = max(deepest, depth_of(s0.body_q.numpy()[0]))
    return s0.body_q.numpy()[0], s0.body_qd.numpy()[0], deepest


@pytest.mark.parametrize("edges", [True, False])
def test_box_rests_across_the_ridge_of_a_static_mesh_prism(edges):
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    b.add_shape_mesh(*_prism())
    half = np.array([0.3, 0.05, 0.1])  # across the ridge: its corners are 5 cm above the slopes
    body = b.add_body(kc.transform(kc.vec3(0.0, RIDGE_Y + 0.05, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=tuple(half), body=body, density=200.0)
    ridge = np.array([0.0, RIDGE_Y, -1.0]), np.array([0.0, RIDGE_Y, 1.0])
    q, qd, deepest = _run(b, 2000, 1e-3, edges, lambda q: _penetration(q, half, *ridge))   # 2 s
    if edges:
        assert deepest < 2e-3
        assert _penetration(q, half, *ridge) > 0.0                # still lying on the ridge
        assert np.abs(qd).max() < 1e-2
    else:  # corners alone: the ridge cuts into the box until its corners reach the slopes
        assert deepest > 2e-2


@pytest.mark.parametrize("edges", [True, False])
def test_mesh_body_rests_across_the_edge_of_a_static_box(edges):
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    # a static box turned 80 degrees about z: a ridge along z at its top, faces sloping at 10 and 80 degrees
    angle = np.radians(80.0)
    half_c = np.array([0.3, 0.3, 0.6])
    rot_c = (0.0, 0.0, np.sin(angle / 2), np.cos(angle / 2))
    b.add_shape_box((0.0, 0.0, 0.0), rot=rot_c, half_extents=tuple(half_c))
    rc = quat_to_matrix(np.asarray(rot_c))
    corners = np.array([[sx, sy, 0.0] for sx in (-1, 1) for sy in (-1, 1)]) * half_c @ rc.T
    top = corners[np.argmax(corners[:, 1])]
    body = b.add_body(kc.transform(kc.vec3(top[0], top[1] + 0.05, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.6, 0.1, 0.2), body=body, density=200.0)
    ridge = top + np.array([0, 0, -0.6]), top + np.array([0, 0, 0.6])
    half = np.array([0.3, 0.05, 0.1])
    q, qd, deepest = _run(b, 2000, 1e-3, edges, lambda q: _penetration(q, half, *ridge))
    if edges:
        assert deepest < 2e-3
        assert _penetration(q, half, *ridge) > 0.0                # still lying on the edge
        assert np.abs(qd).max() < 1e-2
    else:  # its vertices alone: the edge cuts into it (or it falls off)
        assert deepest > 2e-2 or q[1] < top[1] - 0.1


def test_gradient_through_an_edge_contact_matches_finite_differences():
    # a box dropped across the prism's ridge, spinning a little: only edge contacts hold it
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.5, mu=0.4)
    b.add_shape_mesh(*_prism())
    body = b.add_body(kc.transform(kc.vec3(0.0, RIDGE_Y + 0.08, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.3, 0.05, 0.1), body=body, density=200.0)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt, eps = 100, 1e-3, 2e-4
    states = [m.state() for _ in range(steps + 1)]
    w = np.array([[1.0, 0.6, -0.5, 0.2, 0.3, 0.1, 0.0]])
    qd0 = np.array([0.2, -0.8, 0.1, 0.3, 0.2, -0.4])

    def run(v):
        states[0].body_qd.numpy()[0] = v
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    tape = kc.Tape()
    with tape:
        run(qd0)
    edge_contacts = sum(int(s.contacts.count.numpy()[0]) for s in states[1:])
    tape.backward(grads={states[-1].body_q: w.astype(np.float32)})
    grad = states[0].body_qd.grad.numpy()[0].astype(np.float64)
    fd = np.array([(run(qd0 + e) - run(qd0 - e)) / (2 * eps) for e in np.eye(6) * eps])
    assert edge_contacts > 20                                  # it hit the ridge
    assert states[-1].body_qd.numpy()[0, 1] > -0.5            # and was stopped by it
    assert np.abs(fd).max() > 0.02
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=1e-3)


def test_edge_contact_arrays_have_the_gradient_of_finite_differences():
    from sim.contacts import Contacts

    b = sim.ModelBuilder()
    b.add_shape_mesh(*_prism())
    axis = np.array([0.9, 0.1, 0.42]) / np.linalg.norm([0.9, 0.1, 0.42])
    body = b.add_body(kc.transform(kc.vec3(0.01, RIDGE_Y + 0.048, 0.02), kc.quat(*np.append(axis * np.sin(0.015),
                                                                                               np.cos(0.015)))))
    b.add_shape_box(half_extents=(0.3, 0.05, 0.1), body=body, density=200.0)
    m = b.finalize(requires_grad=True)
    meshes = sim.SolverSemiImplicit(m).body_mesh_contacts
    state = m.state()
    contacts = Contacts(meshes.static_capacity(), m.device, True)
    rng = np.random.default_rng(1)
    wd, wp, wn = (rng.normal(size=s).astype(np.float32) for s in
                  (contacts.capacity, (contacts.capacity, 3), (contacts.capacity, 3)))

    def loss():
        contacts.count.zero_()
        meshes.generate_static(m, state, contacts, 0, 1e-3)
        on = contacts.active.numpy()[:contacts.capacity] != 0
        return float((contacts.depth.numpy()[on] * wd[on]).sum() + (contacts.point.numpy()[on] * wp[on]).sum()
                     + (contacts.normal.numpy()[on] * wn[on]).sum()), on

    tape = kc.Tape()
    with tape:
        _, on = loss()
    assert on.sum() >= 1
    tape.backward(grads={contacts.depth: np.where(on, wd, 0).astype(np.float32),
                         contacts.point: np.where(on[:, None], wp, 0).astype(np.float32),
                         contacts.normal: np.where(on[:, None], wn, 0).astype(np.float32)})
    grad = state.body_q.grad.numpy()[0].astype(np.float64)
    q0 = state.body_q.numpy()[0].copy()
    checked = 0
    for i in range(7):
        e = np.zeros(7, np.float32)
        e[i] = 1e-3
        state.body_q.numpy()[0] = q0 + e
        plus, on_plus = loss()
        state.body_q.numpy()[0] = q0 - e
        minus, on_minus = loss()
        state.body_q.numpy()[0] = q0
        if (on_plus == on).all() and (on_minus == on).all():  # the same contacts on both sides
            np.testing.assert_allclose(grad[i], (plus - minus) / 2e-3, rtol=0.02, atol=2e-3)
            checked += 1
    assert checked >= 5
