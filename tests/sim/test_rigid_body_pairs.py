"""Contacts between bodies: broad phase against all pairs, conservation, stacking, swaps, gradients."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

from box_clip_reference import brute_box_pair  # tests/sim helper

pytest.importorskip("geometry")


def _two_spheres(toi, e=1.0, mu=0.0, offset=0.0, requires_grad=False, ke=1e4):
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=ke, restitution=e, mu=mu)
    a = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, 0, 1)), vel=(1, 0, 0))
    b.add_shape_sphere(radius=0.1, body=a)
    c = b.add_body(kc.transform(kc.vec3(0.5, offset, 0), kc.quat(0, 0, 0, 1)), vel=(-1, 0, 0))
    b.add_shape_sphere(radius=0.1, body=c)
    m = b.finalize(requires_grad=requires_grad)
    return m, sim.SolverSemiImplicit(m, toi=toi)


@pytest.mark.parametrize("toi", [True, False])
def test_equal_spheres_head_on_swap_velocities(toi):
    m, solver = _two_spheres(toi)
    s0, s1 = m.state(), m.state()
    dt = 1e-2 if toi else 1e-3
    for _ in range(int(round(0.5 / dt))):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
    qd = s0.body_qd.numpy()
    if toi:  # exact: they meet at t = 0.15 s and x = 0.25 +- 0.1, whatever the step
        np.testing.assert_allclose(qd[:, :3], [[-1, 0, 0], [1, 0, 0]], atol=1e-5)
        np.testing.assert_allclose(s0.body_q.numpy()[:, 0], [0.15 - 0.35, 0.35 + 0.35], atol=1e-5)
    else:
        np.testing.assert_allclose(qd[:, :3], [[-1, 0, 0], [1, 0, 0]], atol=1e-2)


def _random_scene(n=60, seed=3):
    rng = np.random.default_rng(seed)
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.4)
    for i in range(n):
        q = rng.normal(size=4)
        body = b.add_body(kc.transform(kc.vec3(*rng.uniform(0, 1.2, 3)), kc.quat(*(q / np.linalg.norm(q)))),
                          vel=rng.normal(size=3), ang_vel=rng.normal(size=3))
        kind = i % 3
        if kind == 0:
            b.add_shape_sphere(radius=rng.uniform(0.05, 0.12), body=body)
        elif kind == 1:
            b.add_shape_box(half_extents=rng.uniform(0.03, 0.1, 3), body=body)
        else:
            b.add_shape_capsule(radius=rng.uniform(0.03, 0.07), half_height=rng.uniform(0.03, 0.1), body=body)
    return b.finalize()


def test_hash_grid_broad_phase_finds_the_same_contacts_as_all_pairs():
    from sim.collide_body_pairs import BodyPairContacts

    m = _random_scene()
    state = m.state()
    wrenches = []
    for grid_dim in (None, 1):  # one cell: every shape is a candidate of every other (all pairs)
        w = kc.zeros(m.body_count, dtype=kc.spatial_vector)
        BodyPairContacts(m, grid_dim=grid_dim).eval(m, state, w, 1e-3)
        wrenches.append(w.numpy())
    touching = np.abs(wrenches[1]).max(axis=1) > 0
    assert touching.sum() > 10
    np.testing.assert_allclose(wrenches[0], wrenches[1], rtol=1e-5, atol=1e-4)


def test_body_contacts_conserve_momentum():
    m = _random_scene(n=30, seed=5)
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()

    def momenta(s):
        q, qd = s.body_q.numpy().astype(np.float64), s.body_qd.numpy().astype(np.float64)
        mass = m.body_mass.numpy().astype(np.float64)
        inertia = m.body_inertia.numpy().astype(np.float64)
        com = np.array([qi[:3] + quat_to_matrix(qi[3:]) @ c for qi, c in zip(q, m.body_com.numpy())])
        lin = (mass[:, None] * qd[:, :3]).sum(0)
        ang = sum(np.cross(x, mi * v) + quat_to_matrix(qi[3:]) @ ii @ quat_to_matrix(qi[3:]).T @ w
                  for x, mi, v, qi, ii, w in zip(com, mass, qd[:, :3], q, inertia, qd[:, 3:]))
        return lin, ang

    p0, l0 = momenta(s0)
    pushed = 0.0
    for _ in range(200):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
        pushed = max(pushed, float(np.abs(s1.body_f.numpy()).max()))
    p1, l1 = momenta(s0)
    # contacts acted during the run (at its end all pairs may have come apart; main's corner contacts
    # kept two boxes 1.6 cm into each other there)
    assert pushed > 1.0
    np.testing.assert_allclose(p1, p0, atol=1e-3 * np.abs(p0).max())
    np.testing.assert_allclose(l1, l0, atol=2e-3 * np.abs(l0).max())


def test_stacked_boxes_capsules_and_spheres_rest():
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e5, restitution=0.0, mu=0.6)
    b.set_ground_plane()
    # a pyramid of boxes (each one's corners rest on the face below; equal boxes would stand
    # corner on corner, and box edges against box edges are not collided)
    sizes = (0.1, 0.08, 0.06)
    heights = (0.1, 0.28, 0.42)
    boxes = []
    for h, y in zip(sizes, heights):
        body = b.add_body(kc.transform(kc.vec3(0, y, 0), kc.quat(0, 0, 0, 1)))
        b.add_shape_box(half_extents=(h, h, h), body=body)
        boxes.append(body)
    sphere_on_box = b.add_body(kc.transform(kc.vec3(0, 0.53, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=0.05, body=sphere_on_box)
    lying = (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))  # along x
    across = (np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4))  # along z
    lower = b.add_body(kc.transform(kc.vec3(1, 0.05, 0), kc.quat(*lying)))
    b.add_shape_capsule(radius=0.05, half_height=0.2, body=lower)
    upper = b.add_body(kc.transform(kc.vec3(1, 0.15, 0), kc.quat(*across)))
    b.add_shape_capsule(radius=0.05, half_height=0.2, body=upper)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(1500):
        solver.step(m, s0, s1, None, 5e-4)
        s0, s1 = s1, s0
    q, qd = s0.body_q.numpy(), s0.body_qd.numpy()
    expect = {boxes[0]: (0, 0.1, 0), boxes[1]: (0, 0.28, 0), boxes[2]: (0, 0.42, 0),
              sphere_on_box: (0, 0.53, 0), lower: (1, 0.05, 0), upper: (1, 0.15, 0)}
    for i, pos in expect.items():
        np.testing.assert_allclose(q[i, :3], pos, atol=2e-3, err_msg=m.body_name[i])
        assert np.linalg.norm(qd[i, :3]) < 1e-2, m.body_name[i]


@pytest.mark.parametrize("toi", [False, True])
def test_gradient_through_an_oblique_sphere_collision_matches_finite_differences(toi):
    m, solver = _two_spheres(toi, e=0.8, mu=0.3, offset=0.08, requires_grad=True, ke=2e4)
    steps, dt = 300, 1e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((2, 7), np.float32)
    w[0, :3] = (1.0, 0.5, 0.0)
    w[1, :3] = (0.3, -0.8, 0.0)
    w[1, 3:6] = (0.0, 0.0, 0.5)

    def run(v0):
        states[0].body_qd.numpy()[0, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    v0 = np.array([1.0, 0.0, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[0, :3].astype(np.float64)
    assert states[-1].body_qd.numpy()[1, 1] > 0.05  # the oblique hit pushed the second sphere sideways
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=3e-3)


def test_gradient_through_sphere_box_body_contact_matches_finite_differences():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=2e4, restitution=0.6, mu=0.3)
    ball = b.add_body(kc.transform(kc.vec3(-0.4, 0.05, 0.02), kc.quat(0, 0, 0, 1)), vel=(2.0, 0, 0))
    b.add_shape_sphere(radius=0.05, body=ball)
    box = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, np.sin(0.2), np.cos(0.2))))
    b.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=box)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt = 250, 1e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((2, 7), np.float32)
    w[0, :3] = (1.0, 0.5, 0.3)
    w[1, :6] = (0.4, -0.6, 0.2, 0.3, 0.1, 0.5)

    def run(v0):
        states[0].body_qd.numpy()[ball, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    v0 = np.array([2.0, 0.0, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[ball, :3].astype(np.float64)
    assert np.linalg.norm(states[-1].body_qd.numpy()[box, 3:]) > 0.1  # the off-centre hit spun the box
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=3e-3)


def test_fast_spheres_do_not_pass_through_each_other_with_toi():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=1.0, mu=0.0)
    for x, v in ((0.0, 100.0), (1.0, -100.0)):
        body = b.add_body(kc.transform(kc.vec3(x, 0, 0), kc.quat(0, 0, 0, 1)), vel=(v, 0, 0))
        b.add_shape_sphere(radius=0.01, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s0, s1 = m.state(), m.state()
    for _ in range(2):  # each moves 1 m per step; they meet after 0.49 m
        solver.step(m, s0, s1, None, 0.01)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.body_qd.numpy()[:, 0], [-100.0, 100.0], rtol=1e-5)
    np.testing.assert_allclose(s0.body_q.numpy()[:, 0], [0.49 - 1.51, 0.51 + 1.51], atol=1e-4)


def test_swept_sphere_still_hits_a_body_it_does_not_sweep():
    # with toi=True a lone sphere is swept, but a two-sphere dumbbell is not: their contact stays a penalty one
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.0)
    ball = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, 0, 1)), vel=(1.0, 0, 0))
    b.add_shape_sphere(radius=0.1, body=ball)
    dumbbell = b.add_body(kc.transform(kc.vec3(0.5, 0, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=0.1, body=dumbbell)
    b.add_shape_sphere(pos=(0.3, 0, 0), radius=0.1, body=dumbbell)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s0, s1 = m.state(), m.state()
    for _ in range(600):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    qd = s0.body_qd.numpy()
    assert qd[dumbbell, 0] > 0.3 and s0.body_q.numpy()[ball, 0] < 0.35  # pushed, not passed through


def _quat_rot(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _box_distance(x, pos, rot, h):
    """numpy twin of box_closest in world: (outward normal, signed distance)."""
    p = rot.T @ (x - pos)
    d = np.abs(p) - h
    if d.max() > 0:
        diff = p - np.clip(p, -h, h)
        dist = np.linalg.norm(diff)
        return rot @ (diff / dist), dist
    a = int(np.argmax(d))  # first of the largest, as the kernel's >= tests pick
    n = np.zeros(3)
    n[a] = 1.0 if p[a] >= 0 else -1.0
    return rot @ n, d.max()


def _brute_force_pair_contacts(m, state):
    """Every body-body contact of spheres and boxes by all pairs in numpy, except box-box edge contacts
    (box-box: the face manifold, tests/sim/box_clip_reference.py): {(shape_a, shape_b): [(point, normal,
    depth), ...]}."""
    q = state.body_q.numpy().astype(np.float64)
    body, kind = m.shape_body.numpy(), m.shape_type.numpy()
    spos, srot, scale = (m.shape_pos.numpy().astype(np.float64), m.shape_rot.numpy().astype(np.float64),
                         m.shape_scale.numpy().astype(np.float64))
    pos, rot = [], []
    for s in range(m.shape_count):
        r = _quat_rot(q[body[s], 3:])
        pos.append(q[body[s], :3] + r @ spos[s])
        rot.append(r @ srot[s])
    out = {}
    for a in range(m.shape_count):
        for b in range(m.shape_count):
            if a == b:
                continue
            found = []
            if kind[a] == sim.SHAPE_SPHERE and kind[b] == sim.SHAPE_SPHERE and a < b:
                sep = pos[a] - pos[b]
                n = sep / np.linalg.norm(sep)
                gap = np.linalg.norm(sep) - scale[a, 0] - scale[b, 0]
                if gap < 0:
                    found.append((pos[a] - n * scale[a, 0], n, -gap))
            elif kind[a] == sim.SHAPE_SPHERE and kind[b] == sim.SHAPE_BOX:
                n, d = _box_distance(pos[a], pos[b], rot[b], scale[b])
                if d - scale[a, 0] < 0:
                    found.append((pos[a] - n * scale[a, 0], n, scale[a, 0] - d))
            elif kind[a] == sim.SHAPE_BOX and kind[b] == sim.SHAPE_BOX and a < b:
                # the face manifold, by a clip of the two boxes' faces in numpy; the points lie on the
                # incident box, the normal points from the reference box to it
                ref = brute_box_pair(np.array([pos[a], pos[b]]), np.array([rot[a], rot[b]]),
                                     np.array([scale[a], scale[b]]))
                if ref is not None:
                    r, n, world, heights = ref
                    pair = (b, a) if r == 0 else (a, b)
                    out.setdefault(pair, []).extend((x, n, -h) for x, h in zip(world, heights) if h < 0)
            if found:
                out[(a, b)] = found
    return out


def test_generated_body_pair_contacts_match_brute_force():
    rng = np.random.default_rng(7)
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    for i in range(40):
        q = rng.normal(size=4)
        body = b.add_body(kc.transform(kc.vec3(*rng.uniform(0, 0.7, 3)), kc.quat(*(q / np.linalg.norm(q)))))
        if i % 2:
            b.add_shape_sphere(radius=rng.uniform(0.05, 0.1), body=body)
        else:
            b.add_shape_box(half_extents=rng.uniform(0.03, 0.09, 3), body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()  # at rest: a contact is generated exactly where the shapes overlap
    solver.step(m, s0, s1, None, 1e-4)
    c = solver.body_pair_contacts
    assert c is s1.body_pair_contacts
    got = c.numpy()
    kind = m.shape_type.numpy()
    expect = _brute_force_pair_contacts(m, s0)
    n_expect = sum(len(v) for v in expect.values())
    assert n_expect > 20
    assert sum(len(v) for (a, bb), v in expect.items() if kind[a] == kind[bb] == sim.SHAPE_BOX) >= 8  # faces
    edge = 0
    matched = 0
    for i in range(got["count"]):
        a, bb = int(got["shape_a"][i]), int(got["shape_b"][i])
        cands = expect.get((a, bb), [])
        dist = [np.linalg.norm(p - got["point"][i]) for p, _, _ in cands]
        if not cands or min(dist) > 1e-4:
            assert kind[a] == sim.SHAPE_BOX and kind[bb] == sim.SHAPE_BOX, (a, bb)  # an edge-edge contact
            edge += 1
            continue
        p, n, d = cands[int(np.argmin(dist))]
        np.testing.assert_allclose(got["normal"][i], n, atol=1e-4)
        np.testing.assert_allclose(got["depth"][i], d, atol=1e-5)
        matched += 1
    assert matched == n_expect  # every brute-force contact was generated, once
    assert got["count"] == matched + edge == int(c.active.numpy().sum())


def test_too_many_body_pair_contacts_for_the_slots_raise():
    from sim.collide_body_pairs import BodyPairContacts

    b = sim.ModelBuilder(gravity=(0, 0, 0))
    for x in (0.0, 0.05, -0.05, 0.0):  # the first sphere's one point touches three others
        body = b.add_body(kc.transform(kc.vec3(x, 0.05 if x == 0.0 and b.body_count else 0, 0),
                                       kc.quat(0, 0, 0, 1)))
        b.add_shape_sphere(radius=0.04, body=body)
    m = b.finalize()
    w = kc.zeros(m.body_count, dtype=kc.spatial_vector)
    with pytest.raises(RuntimeError, match="slots_per_thread=2"):
        BodyPairContacts(m, slots_per_thread=2).eval(m, m.state(), w, 1e-3)
    BodyPairContacts(m, slots_per_thread=3).eval(m, m.state(), w, 1e-3)
    # through the solver: the argument the error names is the solver's
    s0, s1 = m.state(), m.state()
    with pytest.raises(RuntimeError, match="body_pair_slots to SolverSemiImplicit"):
        sim.SolverSemiImplicit(m, body_pair_slots=2).step(m, s0, s1, None, 1e-3)
    sim.SolverSemiImplicit(m, body_pair_slots=3).step(m, s0, s1, None, 1e-3)


def test_gradient_through_box_box_body_contact_matches_finite_differences():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=2e4, restitution=0.6, mu=0.3)
    hammer = b.add_body(kc.transform(kc.vec3(-0.35, 0.04, 0.03), kc.quat(0.1, 0.2, 0.0, 0.97468)), vel=(2.0, 0, 0))
    b.add_shape_box(half_extents=(0.06, 0.05, 0.04), body=hammer)
    box = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, np.sin(0.2), np.cos(0.2))))
    b.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=box)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    steps, dt = 200, 1e-3
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((2, 7), np.float32)
    w[0, :3] = (1.0, 0.5, 0.3)
    w[1, :6] = (0.4, -0.6, 0.2, 0.3, 0.1, 0.5)
    seen = []

    def run(v0):
        states[0].body_qd.numpy()[hammer, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
            seen.append(int(solver.body_pair_contacts.count.numpy()[0]))
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    v0 = np.array([2.0, 0.0, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[hammer, :3].astype(np.float64)
    assert max(seen) > 0 and np.linalg.norm(states[-1].body_qd.numpy()[box, 3:]) > 0.1  # they hit
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    np.testing.assert_allclose(grad, fd, rtol=0.03, atol=3e-3)
