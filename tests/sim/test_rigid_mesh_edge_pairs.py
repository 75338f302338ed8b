"""Edge contacts that vertex contacts miss: a capsule body across a static mesh ridge
(sim/collide_mesh_edges.py), a box body across the ridge of a mesh body, and a mesh bar lying
across a mesh block, where only edges cross edges (sim/collide_mesh_edge_pairs.py).  Each rests
with the edge contacts and sinks without them (so the tests can fail)."""
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
BLOCK = np.array([0.4, 0.2, 0.4])   # full extents of the block and the bar
BAR = np.array([1.0, 0.1, 0.1])
Q_X_ALONG_Y = (0.0, 0.0, -np.sqrt(0.5), np.sqrt(0.5))  # turns a capsule's axis (local y) to world x


def _prism(half_width=0.6, height=RIDGE_Y, half_length=1.0):
    """A triangular prism on its side, ridge up along z at y = height, triangles facing outwards."""
    section = [(-half_width, 0.0), (half_width, 0.0), (0.0, height)]
    pts = np.array([(x, y, z) for z in (-half_length, half_length) for x, y in section])
    tris = [(0, 2, 1), (3, 4, 5), (0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4), (2, 0, 3), (2, 3, 5)]
    return pts, np.asarray(tris)


def _world(q, p):
    q = np.asarray(q, np.float64)
    return q[:3] + np.asarray(p, np.float64) @ quat_to_matrix(q[3:]).T


def _box_penetration(q, half, a, b):
    """How deep [m] the segment a-b reaches into a box of half extents ``half`` at pose q (float64)."""
    x = a + np.linspace(0.0, 1.0, 4001)[:, None] * (b - a)
    p = (x - q[:3].astype(np.float64)) @ quat_to_matrix(q[3:].astype(np.float64))
    d = np.abs(p) - half
    dist = np.linalg.norm(np.maximum(d, 0.0), axis=1) + np.minimum(d.max(axis=1), 0.0)
    return max(0.0, -dist.min())


def _segment_distance(a0, a1, b0, b1, n=2001):
    """Distance [m] between two segments, by sampling one and projecting on the other (float64)."""
    x = a0 + np.linspace(0.0, 1.0, n)[:, None] * (a1 - a0)
    d = b1 - b0
    t = np.clip((x - b0) @ d / (d @ d), 0.0, 1.0)
    return np.linalg.norm(x - (b0 + t[:, None] * d), axis=1).min()


def _run(b, steps, dt, switch_off, depth_of):
    """Final body_q of every body and the largest ``depth_of(body_q)`` seen (every 50 steps)."""
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    if switch_off is not None:
        switch_off(solver.body_mesh_contacts)
    s0, s1 = m.state(), m.state()
    deepest = 0.0
    for k in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if k % 50 == 49:
            deepest = max(deepest, depth_of(s0.body_q.numpy()))
    return s0.body_q.numpy(), deepest


def _capsule_on_ridge(b, y=RIDGE_Y + 0.05, radius=0.05, half_height=0.3, density=200.0, ang_vel=(0.0, 0.0, 0.0),
                      vel=(0.0, 0.0, 0.0)):
    b.add_shape_mesh(*_prism())
    body = b.add_body(kc.transform(kc.vec3(0.0, y, 0.0), kc.quat(*Q_X_ALONG_Y)), vel=vel, ang_vel=ang_vel)
    b.add_shape_capsule(radius=radius, half_height=half_height, body=body, density=density)


def _capsules_off(meshes):
    meshes.edges.capsule_count = 0


def _pairs_off(meshes):
    meshes.edge_pairs = None


@pytest.mark.parametrize("edges", [True, False])
def test_capsule_rests_across_the_ridge_of_a_static_mesh_prism(edges):
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    _capsule_on_ridge(b)  # its end spheres are 5 cm above the slopes: only the ridge holds it
    ridge = np.array([0.0, RIDGE_Y, -1.0]), np.array([0.0, RIDGE_Y, 1.0])

    def depth(q):
        core = _world(q[0], [[0.0, -0.3, 0.0], [0.0, 0.3, 0.0]])
        return max(0.0, 0.05 - _segment_distance(core[0], core[1], *ridge))

    q, deepest = _run(b, 2000, 1e-3, None if edges else _capsules_off, depth)   # 2 s
    core = _world(q[0], [[0.0, -0.3, 0.0], [0.0, 0.3, 0.0]])
    if edges:
        assert deepest < 2e-3
        assert _segment_distance(core[0], core[1], *ridge) < 0.05 + 1e-3   # still lying on the ridge
    else:  # its end spheres alone: the ridge cuts into it until they reach the slopes
        assert deepest > 2e-2


def _prism_body_and_box(b):
    b.set_ground_plane()
    prism = b.add_body(kc.transform(kc.vec3(0.0, 0.0, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(*_prism(), body=prism, density=200.0)
    body = b.add_body(kc.transform(kc.vec3(0.0, RIDGE_Y + 0.05, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.3, 0.05, 0.1), body=body, density=200.0)  # corners 5 cm above the slopes


@pytest.mark.parametrize("edges", [True, False])
def test_box_body_rests_across_the_ridge_of_a_mesh_body(edges):
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.0, mu=0.8)
    _prism_body_and_box(b)
    half = np.array([0.3, 0.05, 0.1])

    def depth(q):
        ridge = _world(q[0], [[0.0, RIDGE_Y, -1.0], [0.0, RIDGE_Y, 1.0]])
        return _box_penetration(q[1], half, *ridge)

    q, deepest = _run(b, 2000, 1e-3, None if edges else _pairs_off, depth)
    if edges:
        assert deepest < 2e-3
        assert depth(q) > 0.0 and q[1, 1] > q[0, 1] + RIDGE_Y   # still lying on the ridge
    else:
        assert deepest > 2e-2


def _bar_across_block(b, bar_y=BLOCK[1] + BAR[1] / 2, bar_rot=(0.0, 0.0, 0.0, 1.0)):
    """A mesh block on the ground and a mesh bar across it: the bar's long bottom edges cross the block's
    top edges along z, and no vertex of either is over the other's faces."""
    b.set_ground_plane()
    block = b.add_body(kc.transform(kc.vec3(0.0, BLOCK[1] / 2, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=tuple(BLOCK), body=block, density=200.0)
    bar = b.add_body(kc.transform(kc.vec3(0.0, bar_y, 0.0), kc.quat(*bar_rot)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=tuple(BAR), body=bar, density=200.0)


def _block_top_edges(q_block):
    """The block's two top edges along z (world), the ones the bar crosses."""
    x, y, z = BLOCK / 2
    return [_world(q_block, [[sx * x, y, -z], [sx * x, y, z]]) for sx in (-1, 1)]


@pytest.mark.parametrize("edges", [True, False])
def test_mesh_bar_rests_across_a_mesh_block_on_crossed_edges(edges):
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.0, mu=0.8)
    _bar_across_block(b)

    def depth(q):
        return max(_box_penetration(q[1], BAR / 2, *e) for e in _block_top_edges(q[0]))

    q, deepest = _run(b, 2000, 1e-3, None if edges else _pairs_off, depth)
    if edges:
        assert deepest < 2e-3
        assert abs(q[1, 1] - (BLOCK[1] + BAR[1] / 2)) < 2e-3   # on the block, where it was put
    else:  # no vertex touches a face: the bar sinks into the block
        assert deepest > 2e-2


def test_edge_edge_contact_arrays_match_a_brute_force():
    # the bar tilted a little and pressed 2 mm into the block: four crossings of different depth
    axis = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    angle = 0.004
    rot = tuple(np.append(axis * np.sin(angle / 2), np.cos(angle / 2)))
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    _bar_across_block(b, bar_y=BLOCK[1] + BAR[1] / 2 - 2e-3, bar_rot=rot)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    solver.step(m, s0, s1, None, 1e-3)
    got = s1.body_pair_contacts.numpy()
    q = s0.body_q.numpy().astype(np.float64)
    # brute force: for each of the block's top edges and the bar's bottom edges along x, the closest points
    # of the two segments by dense sampling, refined; the depth is how far the bar's edge is below the block's
    x, y, z = BAR / 2
    bar_edges = [_world(q[1], [[-x, -y, sz * z], [x, -y, sz * z]]) for sz in (-1, 1)]
    expected = []
    for ea in _block_top_edges(q[0]):
        for eb in bar_edges:
            s = np.linspace(0.0, 1.0, 20001)
            pa = ea[0] + s[:, None] * (ea[1] - ea[0])
            d = eb[1] - eb[0]
            t = np.clip((pa - eb[0]) @ d / (d @ d), 0.0, 1.0)
            pb = eb[0] + t[:, None] * d
            k = np.argmin(np.linalg.norm(pa - pb, axis=1))
            gap = np.linalg.norm(pa[k] - pb[k]) * np.sign(pb[k][1] - pa[k][1])  # bar edge above: apart
            expected.append((pa[k], -gap))
    assert got["count"] == 4
    assert set(got["shape_a"]) == {0} and set(got["shape_b"]) == {1}   # the block's edges, the bar pushed off
    for point, depth in expected:
        k = np.argmin(np.linalg.norm(got["point"] - point, axis=1))
        np.testing.assert_allclose(got["point"][k], point, atol=2e-4)
        np.testing.assert_allclose(got["depth"][k], depth, atol=2e-5)
        np.testing.assert_allclose(got["normal"][k], [0.0, -1.0, 0.0], atol=0.02)  # out of the bar, down
    assert 1e-3 < max(d for _, d in expected) < 4e-3 and max(d for _, d in expected) - min(d for _, d in expected) > 5e-4


def test_gradient_through_a_capsule_edge_contact_matches_finite_differences():
    # a capsule dropped across the ridge, spinning a little: only the ridge's edge contact holds it
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.5, mu=0.4)
    _capsule_on_ridge(b, y=RIDGE_Y + 0.07)
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


def test_edge_edge_contact_arrays_have_the_gradient_of_finite_differences():
    from sim.contacts import Contacts

    axis = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    rot = tuple(np.append(axis * np.sin(0.002), np.cos(0.002)))
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    _bar_across_block(b, bar_y=BLOCK[1] + BAR[1] / 2 - 2e-3, bar_rot=rot)
    m = b.finalize(requires_grad=True)
    meshes = sim.SolverSemiImplicit(m).body_mesh_contacts
    state = m.state()
    contacts = Contacts(meshes.pair_capacity(), m.device, True)
    rng = np.random.default_rng(2)
    wd, wp, wn = (rng.normal(size=s).astype(np.float32) for s in
                  (contacts.capacity, (contacts.capacity, 3), (contacts.capacity, 3)))

    def loss():
        contacts.count.zero_()
        meshes.generate_pairs(m, state, contacts, 0, 1e-3)
        on = contacts.active.numpy()[:contacts.capacity] != 0
        return float((contacts.depth.numpy()[on] * wd[on]).sum() + (contacts.point.numpy()[on] * wp[on]).sum()
                     + (contacts.normal.numpy()[on] * wn[on]).sum()), on

    tape = kc.Tape()
    with tape:
        _, on = loss()
    assert on.sum() == 4
    tape.backward(grads={contacts.depth: np.where(on, wd, 0).astype(np.float32),
                         contacts.point: np.where(on[:, None], wp, 0).astype(np.float32),
                         contacts.normal: np.where(on[:, None], wn, 0).astype(np.float32)})
    grad = state.body_q.grad.numpy().astype(np.float64)
    q0 = state.body_q.numpy().copy()
    checked = 0
    for body in range(2):
        for i in range(7):
            e = np.zeros((2, 7), np.float32)
            e[body, i] = 1e-3
            state.body_q.numpy()[:] = q0 + e
            plus, on_plus = loss()
            state.body_q.numpy()[:] = q0 - e
            minus, on_minus = loss()
            state.body_q.numpy()[:] = q0
            if (on_plus == on).all() and (on_minus == on).all():  # the same contacts on both sides
                np.testing.assert_allclose(grad[body, i], (plus - minus) / 2e-3, rtol=0.02, atol=2e-3)
                checked += 1
    assert checked >= 10
