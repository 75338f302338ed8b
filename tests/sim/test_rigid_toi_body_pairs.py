"""Time-of-impact contacts between swept bodies other than two spheres (sim/toi_body_pairs.py):
no tunnelling, the 1-D impact law, momentum and energy, gradients against finite differences."""
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import add_free_body, impact_builder, momentum_energy, run_steps
from sim.toi_body_pairs import pair_impulse, warn_unswept_bodies

pytest.importorskip("geometry")


def _add(b, kind, pos, vel=(0, 0, 0), rot=(0, 0, 0, 1), ang_vel=(0, 0, 0), size=0.05, density=1000.0):
    body = add_free_body(b, pos, vel, rot, ang_vel)
    if kind == "sphere":
        b.add_shape_sphere(radius=size, body=body, density=density)
    elif kind == "box":
        b.add_shape_box(half_extents=(size, 0.8 * size, 0.9 * size), body=body, density=density)
    else:
        b.add_shape_capsule(radius=0.6 * size, half_height=size, body=body, density=density)
    return body


def test_fast_small_box_does_not_tunnel_through_a_thin_free_box():
    # a 1 cm box at 100 m/s (1 m per step) against a free box 1 cm thick: it bounces back, and the
    # pair follows the 1-D impact law (Newton's restitution between the two masses).  Both restitutions
    # in one model (one step loop): two such pairs 1 m apart in z, one material each
    b = impact_builder()
    pairs = []
    for k, e in enumerate((1.0, 0.5)):
        mat = b.add_material(restitution=e, mu=0.0)
        small = b.add_body(kc.transform(kc.vec3(-0.5, 0, k), kc.quat(0, 0, 0, 1)), vel=(100, 0, 0))
        b.add_shape_box(half_extents=(0.005, 0.005, 0.005), body=small, material=mat)
        wall = b.add_body(kc.transform(kc.vec3(0, 0, k), kc.quat(0, 0, 0, 1)))
        b.add_shape_box(half_extents=(0.005, 0.1, 0.1), body=wall, material=mat)
        pairs.append((e, small, wall))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s_start = m.state()
    p0, L0, ke0 = momentum_energy(m, s_start)
    s = run_steps(m, solver, 3, 0.01)
    p1, L1, ke1 = momentum_energy(m, s)
    np.testing.assert_allclose(p1, p0, rtol=1e-3, atol=1e-3 * np.linalg.norm(p0))
    assert ke1 <= ke0 * (1 + 1e-4)
    x = s.body_q.numpy()[:, 0]
    v = s.body_qd.numpy()[:, 0]
    mass = m.body_mass.numpy()
    for e, small, wall in pairs:
        assert x[small] < x[wall] - 0.01                       # still on its side of the wall
        ma, mb = mass[small], mass[wall]
        np.testing.assert_allclose(v[[small, wall]], [(ma - e * mb) / (ma + mb) * 100, (1 + e) * ma / (ma + mb) * 100],
                                   rtol=1e-4)
        # the hit is at t = 0.0049 s (fronts 0.49 m apart); after it the small box moves back
        np.testing.assert_allclose(x[small], -0.5 + 0.49 + v[small] * (0.03 - 0.0049), atol=1e-4)


PAIRS = [("sphere", "box"), ("box", "sphere"), ("sphere", "capsule"), ("capsule", "capsule"), ("capsule", "box"),
         ("box", "box")]


@pytest.mark.parametrize("ka,kb", PAIRS)
def test_fast_head_on_pairs_bounce_without_passing_through(ka, kb):
    # each moves 0.5 m per step toward the other; e = 1, no friction: velocities swap for equal masses
    # on the line of centres, momentum and energy are kept
    b = impact_builder()
    a = _add(b, ka, (-0.6, 0, 0), vel=(50, 0, 0))
    c = _add(b, kb, (0.6, 0, 0), vel=(-50, 0, 0))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    p0, L0, ke0 = momentum_energy(m, m.state())
    s = run_steps(m, solver, 3, 0.01)
    p1, L1, ke1 = momentum_energy(m, s)
    x = s.body_q.numpy()[:, 0]
    assert x[a] < -0.5 and x[c] - x[a] > 1.0               # bounced back, not through
    scale = m.body_mass.numpy().max() * 50
    np.testing.assert_allclose(p1, p0, atol=1e-3 * scale)
    np.testing.assert_allclose(L1, L0, atol=1e-3 * scale)
    np.testing.assert_allclose(ke1, ke0, rtol=1e-3)
    ma, mc = m.body_mass.numpy()
    v = s.body_qd.numpy()[:, 0]
    np.testing.assert_allclose(v, [(ma - mc) / (ma + mc) * 50 - 2 * mc / (ma + mc) * 50,
                                   2 * ma / (ma + mc) * 50 - (mc - ma) / (ma + mc) * 50], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_tumbling_oblique_impacts_keep_momentum_and_gain_no_energy(seed):
    # random kinds, orientations and spins, restitution <= 1 and friction: linear and angular
    # momentum are kept by the impact, kinetic energy never grows.  The penalty stiffness is ~0 so
    # that only the time-of-impact impulses act: a penalty contact's onset push on two spinning
    # bodies keeps linear momentum but, integrated in the turning body frame over the step
    # (sim/body_integrate.py), not exactly the angular momentum
    rng = np.random.default_rng(seed)
    kinds = ("sphere", "box", "capsule")
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e-6, restitution=float(rng.uniform(0.2, 1.0)), mu=float(rng.uniform(0.1, 0.8)))
    for side in (-1, 1):
        q = rng.normal(size=4)
        _add(b, kinds[rng.integers(3)], (0.25 * side, rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02)),
             vel=(-side * 20.0, rng.uniform(-2, 2), rng.uniform(-2, 2)), rot=q / np.linalg.norm(q),
             ang_vel=rng.normal(size=3) * 20, size=float(rng.uniform(0.04, 0.07)))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    p0, L0, ke0 = momentum_energy(m, m.state())
    s = run_steps(m, solver, 3, 0.01)
    p1, L1, ke1 = momentum_energy(m, s)
    rel0 = np.diff(m.state().body_qd.numpy()[:, :3], axis=0)
    rel1 = np.diff(s.body_qd.numpy()[:, :3], axis=0)
    assert np.linalg.norm(rel1 - rel0) > 1.0               # they met
    scale = m.body_mass.numpy().max() * 20
    np.testing.assert_allclose(p1, p0, atol=1e-3 * scale)
    np.testing.assert_allclose(L1, L0, atol=1e-3 * scale)
    assert ke1 <= ke0 * (1 + 1e-3)


def _gradient_case(ka, kb, rot_b, steps=30, dt=5e-3):
    b = impact_builder(e=0.6, mu=0.3)  # one clean impact, no resting contact after it
    # generic orientations: one corner or end leads by more than the 1 mm manifold tolerance, so the
    # contact point does not jump between manifolds within the finite-difference step
    axis = np.array([0.3, 0.8, 0.52]) / np.linalg.norm([0.3, 0.8, 0.52])
    a = _add(b, ka, (-0.3, 0.03, 0.01), vel=(3.0, 0.0, 0.0), rot=(*(axis * np.sin(0.25)), np.cos(0.25)))
    c = _add(b, kb, (0.0, 0.0, 0.0), rot=rot_b, size=0.07)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m, toi=True)
    states = [m.state() for _ in range(steps + 1)]
    w = np.zeros((2, 7), np.float32)
    w[a, :3] = (1.0, 0.5, 0.3)
    w[c, :6] = (0.4, -0.6, 0.2, 0.3, 0.1, 0.5)

    def run(v0):
        states[0].body_qd.numpy()[a, :3] = v0
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    return m, states, w, run, a, c


@pytest.mark.parametrize("ka,kb", [("sphere", "box"), ("box", "box"), ("capsule", "box"), ("capsule", "capsule")])
def test_gradients_through_body_pair_toi_match_finite_differences(ka, kb):
    rot_b = (np.sin(0.1) * 0.6, np.sin(0.1) * 0.8, 0.0, np.cos(0.1))
    m, states, w, run, a, c = _gradient_case(ka, kb, rot_b)
    v0 = np.array([3.0, 0.0, 0.0])
    tape = kc.Tape()
    with tape:
        run(v0)
    tape.backward(grads={states[-1].body_q: w})
    grad = states[0].body_qd.grad.numpy()[a, :3].astype(np.float64)
    assert np.linalg.norm(states[-1].body_qd.numpy()[c, :3]) > 0.3  # the hit moved the second body
    eps = 1e-3
    fd = np.array([(run(v0 + e) - run(v0 - e)) / (2 * eps) for e in np.eye(3) * eps])
    # (box-box: |fd| max 0.0104 since the pair's friction stops the sliding (toi.contact_impulse); the Tape
    # is within 1% of it)
    assert np.abs(fd).max() > 5e-3
    np.testing.assert_allclose(grad, fd, rtol=0.02, atol=2e-2 * np.abs(fd).max())


def test_resting_pyramid_of_swept_bodies_stays_put():
    # resting contacts between swept bodies are the penalty contacts (the sweep takes impacts only)
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e5, restitution=0.0, mu=0.6)
    b.set_ground_plane()
    expect = []
    for h, y in zip((0.1, 0.08, 0.06), (0.1, 0.28, 0.42)):
        body = b.add_body(kc.transform(kc.vec3(0, y, 0), kc.quat(0, 0, 0, 1)))
        b.add_shape_box(half_extents=(h, h, h), body=body)
        expect.append((0, y, 0))
    lying = (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))
    across = (np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4))
    for y, rot in ((0.05, lying), (0.15, across)):
        body = b.add_body(kc.transform(kc.vec3(1, y, 0), kc.quat(*rot)))
        b.add_shape_capsule(radius=0.05, half_height=0.2, body=body)
        expect.append((1, y, 0))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    assert solver.body_pair_toi_shape is not None
    s = run_steps(m, solver, 1000, 5e-4)
    np.testing.assert_allclose(s.body_q.numpy()[:, :3], expect, atol=2e-3)
    assert np.abs(s.body_qd.numpy()[:, :3]).max() < 1e-2


def test_toi_sweeps_every_body_kind_without_a_warning():
    # a dumbbell (several spheres) is swept (sim/toi_shapes.py); a body with a mesh shape too, against
    # static shapes (sim/toi_mesh_body.py) and against other bodies (sim/toi_mesh_pairs.py): nothing is
    # left to penalty contacts alone, so nothing to warn about
    b = sim.ModelBuilder()
    b.set_ground_plane()
    dumbbell = b.add_body(kc.transform(kc.vec3(0, 1, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=0.1, body=dumbbell)
    b.add_shape_sphere(pos=(0.3, 0, 0), radius=0.1, body=dumbbell)
    ball = b.add_body(kc.transform(kc.vec3(2, 1, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=0.1, body=ball)
    hull = b.add_body(kc.transform(kc.vec3(4, 1, 0), kc.quat(0, 0, 0, 1)))
    cube = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)])
    b.add_shape_mesh(cube, is_convex=True, body=hull)
    m = b.finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solver = sim.SolverSemiImplicit(m, toi=True)
    assert solver.body_pair_toi_shape is not None
    assert warn_unswept_bodies(m) == []


@pytest.mark.parametrize("call, match", [
    (lambda b: b.add_shape_box(body=0, density=-5.0), r"add_shape_box: density must be finite and > 0, got -5.0"),
    (lambda b: b.add_body(mass=float("nan")), r"add_body: mass must be finite and > 0, got nan"),
    (lambda b: b.add_shape_sphere(radius=0.1, body=-3), r"add_shape_sphere: body -3 does not exist"),
])
def test_builder_names_the_call_and_value_of_bad_body_input(call, match):
    # the bad-input cases beside those of test_rigid_bodies.py: negative density, a
    # non-finite mass, a negative body index other than -1
    b = sim.ModelBuilder()
    b.add_body(mass=1.0, inertia=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match=match):
        call(b)


def test_fast_box_bounces_off_a_plate_resting_on_the_ground():
    # a 2 cm box at 60 m/s onto a 2 cm plate on the ground (dt = 10 ms: 60 cm per step): the sweep
    # bounces it with e, the plate's reaction goes into the ground sweep, and neither the resting
    # penalty contact nor its onset window pushes the box as it leaves
    e = 0.5
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e4, restitution=e, mu=0.5)
    b.set_ground_plane()
    plate = b.add_body(kc.transform(kc.vec3(0, 0.01, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.2, 0.01, 0.2), body=plate)
    box = b.add_body(kc.transform(kc.vec3(0.02, 0.6, 0.01), kc.quat(0, 0, 0, 1)), vel=(0, -60, 0))
    b.add_shape_box(half_extents=(0.01, 0.01, 0.01), body=box)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s0, s1 = m.state(), m.state()
    ma, mb = m.body_mass.numpy()[[box, plate]]
    tau = 0.57 / (60.0 + 9.81 * 0.01)                 # the step's path (semi-implicit) reaches the plate
    v_up = (ma - e * mb) / (ma + mb) * (-60.0 - 9.81 * tau)  # Newton's restitution with the free plate
    for k in range(8):
        solver.step(m, s0, s1, None, 0.01)
        s0, s1 = s1, s0
        q, qd = s0.body_q.numpy(), s0.body_qd.numpy()
        assert q[plate, 1] > 0.0095 and q[box, 1] > q[plate, 1] + 0.0195   # nothing passes through
    # (1 %: within the pair's step the plate falls with gravity too, ~0.1 m/s at the hit; the
    # ground's support comes after, in the plate's own sweep)
    np.testing.assert_allclose(qd[box, 1], v_up - 9.81 * (0.08 - tau), rtol=1e-2)


@kc.kernel
def _pair_impulse_kernel(n: kc.array(dtype=kc.vec3), u: kc.array(dtype=kc.vec3), ra: kc.array(dtype=kc.vec3),
                         rb: kc.array(dtype=kc.vec3), ma: kc.array(dtype=float), ia: kc.array(dtype=kc.mat33),
                         mb: kc.array(dtype=float), ib: kc.array(dtype=kc.mat33), e: float, mu: float,
                         j: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    j[i] = pair_impulse(n[i], u[i], ra[i], rb[i], ma[i], ia[i], mb[i], ib[i], e, mu)


def _contact_mass(arm, m_inv, i_inv):
    sk = np.zeros(arm.shape[:-1] + (3, 3))
    sk[..., 0, 1], sk[..., 0, 2], sk[..., 1, 2] = -arm[..., 2], arm[..., 1], -arm[..., 0]
    sk -= np.swapaxes(sk, -1, -2)
    return m_inv[:, None, None] * np.eye(3) - sk @ i_inv @ sk


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("mu", [0.3, 2.0])
def test_pair_impulse_never_gains_energy_and_stops_sliding_where_it_sticks(e, mu):
    """pair_impulse on random contacts (masses, world inverse inertias, arms, normals, velocities, many
    nearly head-on): the kinetic energy change of the two bodies, dE = j.u + j.K j / 2 (K the pair's
    contact mass, float64 numpy), is never positive for e <= 1, the normal velocity after the normal
    impulse is -e u_n, and where friction sticks (inside the cone) no tangential velocity is left."""
    rng = np.random.default_rng(7)
    N = 4000
    n = rng.normal(size=(N, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    u = rng.normal(size=(N, 3))
    u -= n * (np.abs(np.sum(u * n, 1)) + 0.1)[:, None]  # approaching
    u[: N // 2] = n[: N // 2] * np.sum(u[: N // 2] * n[: N // 2], 1)[:, None] + 1e-2 * rng.normal(size=(N // 2, 3))
    arms = rng.normal(size=(2, N, 3)) * 0.1
    m_inv = rng.uniform(0.2, 5.0, size=(2, N))
    rot = np.linalg.qr(rng.normal(size=(2, N, 3, 3)))[0]
    i_inv = rot @ (rng.uniform(1.0, 100.0, size=(2, N, 3))[..., None] * np.eye(3)) @ np.swapaxes(rot, -1, -2)
    f32 = lambda a: a.astype(np.float32)
    n, u, arms, m_inv, i_inv = f32(n), f32(u), f32(arms), f32(m_inv), f32(i_inv)
    j = kc.zeros(N, dtype=kc.vec3)
    kc.launch(_pair_impulse_kernel, dim=N,
              inputs=[kc.array(n, dtype=kc.vec3), kc.array(u, dtype=kc.vec3), kc.array(arms[0], dtype=kc.vec3),
                      kc.array(arms[1], dtype=kc.vec3), kc.array(m_inv[0], dtype=float),
                      kc.array(i_inv[0], dtype=kc.mat33), kc.array(m_inv[1], dtype=float),
                      kc.array(i_inv[1], dtype=kc.mat33), e, mu], outputs=[j])
    j = j.numpy().astype(np.float64)
    n, u = n.astype(np.float64), u.astype(np.float64)
    k = sum(_contact_mass(arms[s].astype(np.float64), m_inv[s].astype(np.float64), i_inv[s].astype(np.float64))
            for s in range(2))
    un = np.sum(n * u, 1)
    e_before = 0.5 * np.einsum("ni,ni->n", u, np.linalg.solve(k, u[..., None])[..., 0])
    dE = np.sum(j * u, 1) + 0.5 * np.einsum("ni,nij,nj->n", j, k, j)
    assert np.all(dE <= 1e-5 * e_before), (dE.max(), np.argmax(dE / e_before))
    jn = np.sum(j * n, 1)
    w_n = np.einsum("ni,nij,nj->n", n, k, n)
    np.testing.assert_allclose(jn, -(1.0 + e) * un / w_n, rtol=1e-4)
    jt = j - n * jn[:, None]
    stick = np.linalg.norm(jt, axis=1) < (1.0 - 1e-4) * mu * jn
    assert stick.sum() > N // 4 and (~stick).sum() > N // 20
    u_after = u + np.einsum("nij,nj->ni", k, j)
    ut_after = u_after - n * np.sum(u_after * n, 1)[:, None]
    assert np.abs(ut_after[stick]).max() < 1e-4 * np.abs(u).max()
