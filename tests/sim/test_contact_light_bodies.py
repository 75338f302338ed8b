"""Penalty contacts of light rigid bodies (sim/contact.py ``stable_spring_dashpot``): a 2 cm box, a 1 cm
sphere and a light capsule rest on the ground at dt = 1e-3 in both solvers (they hopped or flew off with
the uncapped law); a light box rests on a heavy one; heavy bodies keep the uncapped law."""
import numpy as np
import pytest

import kernelcore as kc
import sim
import sim.contact as C
from sim.contact import mixed_body_contact_force, mixed_contact_force

DT = 1.0e-3
STEPS = 2000  # 2 s


def _rest(shape, solver_name, toi=False, size=0.01, density=1000.0, steps=STEPS, restitution=None):
    """Drop a body 2 mm with a 0.05 rad tilt; return (final height [m], max speed [m/s] and max |w|
    [rad/s] over the last 100 steps, mass [kg])."""
    b = sim.ModelBuilder()
    if restitution is not None:
        b.set_material(0, restitution=restitution)
    b.set_ground_plane()
    tilt = kc.quat_from_axis_angle(kc.vec3(0.0, 0.0, 1.0), 0.05)
    body = b.add_body(xform=kc.transform((0.0, size + 0.002, 0.0), tilt))
    if shape == "box":
        b.add_shape_box(body=body, half_extents=(size, size, size), density=density)
    elif shape == "sphere":
        b.add_shape_sphere(body=body, radius=size, density=density)
    else:  # a capsule lying along x
        b.add_shape_capsule(body=body, radius=size, half_height=2.0 * size, density=density,
                            rot=kc.quat_from_axis_angle(kc.vec3(0.0, 0.0, 1.0), 0.5 * np.pi))
    if solver_name == "featherstone":
        b.add_joint_free(body)
    m = b.finalize()
    if solver_name == "featherstone":
        solver = sim.SolverFeatherstone(m, toi=toi)
    else:
        solver = sim.SolverSemiImplicit(m, toi=toi)
    s0, s1, c = m.state(), m.state(), m.control()
    v_max = w_max = 0.0
    for k in range(steps):
        solver.step(m, s0, s1, c, DT)
        s0, s1 = s1, s0
        if k >= steps - 100:
            qd = s0.body_qd.numpy()[0]
            v_max = max(v_max, float(np.linalg.norm(qd[:3])))
            w_max = max(w_max, float(np.linalg.norm(qd[3:])))
    return float(s0.body_q.numpy()[0][1]), v_max, w_max, float(m.body_mass.numpy()[0])


@pytest.mark.parametrize("solver_name,toi", [("semi_implicit", False), ("semi_implicit", True),
                                             ("featherstone", False), ("featherstone", True)])
def test_light_box_rests(solver_name, toi):
    """8 g: sqrt(ke w) dt ~ 2 at a corner, past the explicit step's limit without the cap."""
    y, v, w, mass = _rest("box", solver_name, toi)
    assert abs(mass - 0.008) < 1e-6
    assert abs(y - 0.01) < 2e-3, y
    assert v < 1e-2, v
    # TOI's impulses at the manifold centroid leave a small rocking (SolverFeatherstone, 0.58 rad/s on main)
    assert w < (1.0 if toi else 1e-2), w


@pytest.mark.parametrize("solver_name", ["semi_implicit", "featherstone"])
def test_light_box_without_restitution_rests(solver_name):
    """Restitution 0 (damping ratio 2): the damping alone takes a capped corner to ``a + 2 b ~ 3.8``, where
    the four corners together rock (1.4 rad/s with the second cap at 3.8 for every point)."""
    y, v, w, _ = _rest("box", solver_name, restitution=0.0)
    assert abs(y - 0.01) < 2e-3, y
    assert v < 1e-2, v
    assert w < 1e-2, w


@pytest.mark.parametrize("solver_name", ["semi_implicit", "featherstone"])
@pytest.mark.parametrize("shape", ["sphere", "capsule"])
def test_light_sphere_and_capsule_rest(shape, solver_name):
    """A 1 cm sphere (0.5 g) and a capsule of radius 5 mm (2 g) on the ground, penalty contacts."""
    y, v, w, mass = _rest(shape, solver_name, size=0.005)
    assert mass < 3e-3
    assert abs(y - 0.005) < 2e-3, y
    assert v < 1e-2, v
    assert w < 1e-1, w


def test_light_box_rests_on_heavy_box():
    """An 8 g box on a 1 kg box on the ground (body-pair contacts, sim/collide_body_pairs.py)."""
    b = sim.ModelBuilder()
    b.set_ground_plane()
    heavy = b.add_body(xform=kc.transform((0.0, 0.05, 0.0), kc.quat_identity()))
    b.add_shape_box(body=heavy, half_extents=(0.05, 0.05, 0.05), density=1000.0)
    light = b.add_body(xform=kc.transform((0.0, 0.112, 0.0),
                                          kc.quat_from_axis_angle(kc.vec3(0.0, 0.0, 1.0), 0.05)))
    b.add_shape_box(body=light, half_extents=(0.01, 0.01, 0.01), density=1000.0)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1, c = m.state(), m.state(), m.control()
    v_max = w_max = 0.0
    for k in range(STEPS):
        solver.step(m, s0, s1, c, DT)
        s0, s1 = s1, s0
        if k >= STEPS - 100:
            qd = s0.body_qd.numpy()[light]
            v_max = max(v_max, float(np.linalg.norm(qd[:3])))
            w_max = max(w_max, float(np.linalg.norm(qd[3:])))
    q = s0.body_q.numpy()
    assert abs(q[light][1] - 0.11) < 2e-3, q[light]
    assert abs(q[light][0]) < 5e-3, q[light]  # still on top
    assert v_max < 1e-2 and w_max < 1e-1, (v_max, w_max)


@kc.kernel
def _law_kernel(w: kc.array(dtype=float), vn: kc.array(dtype=float), gap: float, material_ke: kc.array(dtype=float),
                material_damping_ratio: kc.array(dtype=float), material_mu: kc.array(dtype=float),
                material_cohesion: kc.array(dtype=float), material_cohesion_distance: kc.array(dtype=float),
                dt: float, f_body: kc.array(dtype=float), f_particle: kc.array(dtype=float)):
    i = kc.tid()
    n = kc.vec3(0.0, 1.0, 0.0)
    v = kc.vec3(0.0, vn[i], 0.0)
    f_body[i] = mixed_body_contact_force(n, gap, v, w[i], 0, 0, material_ke, material_damping_ratio, material_mu,
                                         material_cohesion, material_cohesion_distance, dt)[1]
    f_particle[i] = mixed_contact_force(n, gap, v, w[i], 0, 0, material_ke, material_damping_ratio, material_mu,
                                        material_cohesion, material_cohesion_distance, dt)[1]


def _law(w, vn, gap=-1e-4, ke=1e4, zeta=0.25, dt=DT):
    arr = lambda x: kc.array(np.asarray(x, np.float32), dtype=float)  # noqa: E731
    fb, fp = kc.zeros(len(w), dtype=float), kc.zeros(len(w), dtype=float)
    kc.launch(_law_kernel, dim=len(w), inputs=[arr(w), arr(vn), gap, arr([ke]), arr([zeta]), arr([0.5]), arr([0.0]),
                                              arr([0.0]), dt], outputs=[fb, fp])
    return fb.numpy().astype(float), fp.numpy().astype(float)


def _soft_min(x, knee, limit):
    span = limit - knee
    return np.where(x > knee, knee + span * np.tanh((np.maximum(x, knee) - knee) / span), x)


def _reference(w, vn, gap=-1e-4, ke=1e4, zeta=0.25, dt=DT):
    """The capped law of sim/contact.py in float64 (numpy), deep in contact (no onset smoothing): ``ke w dt^2``
    bent below STIFFNESS_LIMIT, then ``ke w dt^2 + 2 kd w dt`` below a limit that moves from STABILITY_LIMIT
    to LIGHT_LIMIT as the first cap softens the point (by lowering ke further)."""
    a = ke * w * dt * dt
    x = _soft_min(a, C.STIFFNESS_KNEE, C.STIFFNESS_LIMIT)
    r = 1.0 - x / a
    knee = C.STABILITY_KNEE - (C.STABILITY_KNEE - C.LIGHT_KNEE) * r
    limit = C.STABILITY_LIMIT - (C.STABILITY_LIMIT - C.LIGHT_LIMIT) * r
    s = x + 4.0 * zeta * np.sqrt(x)
    span = limit - knee
    s_capped = np.where(s > knee, knee + span * np.tanh(np.maximum(s - knee, 0.0) / span), s)
    x = np.where(s > knee, (s_capped / (np.sqrt(4.0 * zeta * zeta + s_capped) + 2.0 * zeta)) ** 2, x)
    k = x / (w * dt * dt)
    kd = 2.0 * zeta * np.sqrt(k / w)
    return np.maximum(-k * gap - kd * vn, 0.0)


@pytest.mark.parametrize("zeta", [0.25, 2.0])
def test_law_matches_reference_and_keeps_heavy_bodies(zeta):
    w = np.array([0.5, 1.0, 4.0, 20.0, 40.0, 100.0, 500.0, 4000.0, 1e5])  # 1/kg: 2 kg ... 10 mg
    vn = np.full(w.shape, -0.01)
    fb, fp = _law(w, vn, zeta=zeta)
    np.testing.assert_allclose(fb, _reference(w, vn, zeta=zeta), rtol=1e-5)
    # heavy points (below both knees): the uncapped law, bit for bit
    a = 1e4 * w * DT * DT
    heavy = (a <= C.STIFFNESS_KNEE) & (a + 4.0 * zeta * np.sqrt(a) <= C.STABILITY_KNEE)
    assert heavy.sum() >= (3 if zeta == 2.0 else 5)
    np.testing.assert_array_equal(fb[heavy], fp[heavy])
    # light points: the effective stiffness k w dt^2 stays below its limit, the stability measure below 4
    light = w >= 500.0
    assert np.all(fb[light] < fp[light])
    f0, _ = _law(w, np.zeros_like(w), zeta=zeta)
    k, kd = f0 / 1e-4, (fb - f0) / 0.01
    assert np.all(k * w * DT * DT < C.STIFFNESS_LIMIT * 1.001)
    assert np.all(k * w * DT * DT + 2.0 * kd * w * DT < C.STABILITY_LIMIT * 1.001)
    assert np.all(k[light] * w[light] * DT * DT + 2.0 * kd[light] * w[light] * DT < 2.5)


@pytest.mark.parametrize("zeta", [0.25, 2.0])
def test_law_is_smooth_across_the_cap(zeta):
    """The force is continuous and its slope in w (float64 finite differences of the reference) has no
    jump through the knees of the cap, where the float32 law follows the reference."""
    w = np.geomspace(5.0, 2000.0, 600)  # ke w dt^2 from 0.05 to 20
    f_ref = _reference(w, np.zeros_like(w), zeta=zeta)
    fb, _ = _law(w, np.zeros_like(w), zeta=zeta)
    np.testing.assert_allclose(fb, f_ref, rtol=1e-5)
    slope = np.diff(np.log(f_ref)) / np.diff(np.log(w))
    assert np.all(np.abs(np.diff(slope)) < 0.05)  # no kink (a kink: a jump of up to 1)
    assert slope[0] > -1e-3 and slope[-1] < -0.95  # from ke to ~const / (w dt^2)


#: body_q of the 10 cm, 1 kg box below every 50 steps, from main's uncapped law (session 16)
_HEAVY_MAIN = {
    "semi_implicit": [[0.0021538, 0.0498218, -0.0011997], [0.002188, 0.0497444, 9.83e-05],
                      [0.0021922, 0.0497559, 8.4e-06], [0.002193, 0.0497547, 3e-07],
                      [0.0021931, 0.0497548, 0.0], [0.0021931, 0.0497548, 0.0]],
    "featherstone": [[0.0021449, 0.0498321, -0.0011326], [0.0021965, 0.0497433, 5.26e-05],
                     [0.002198, 0.0497559, 3.9e-06], [0.0021983, 0.0497547, 2e-07],
                     [0.0021984, 0.0497548, 0.0], [0.0021984, 0.0497548, 0.0]],
}


@pytest.mark.parametrize("solver_name", ["semi_implicit", "featherstone"])
def test_heavy_box_trajectory_unchanged(solver_name):
    """A 1 kg box (ke w dt^2 = 0.04 at a corner) lands and settles exactly as with the uncapped law."""
    b = sim.ModelBuilder()
    b.set_ground_plane()
    body = b.add_body(xform=kc.transform((0.0, 0.052, 0.0), kc.quat_from_axis_angle(kc.vec3(0.0, 0.0, 1.0), 0.05)))
    b.add_shape_box(body=body, half_extents=(0.05, 0.05, 0.05), density=1000.0)
    if solver_name == "featherstone":
        b.add_joint_free(body)
    m = b.finalize()
    solver = sim.SolverFeatherstone(m) if solver_name == "featherstone" else sim.SolverSemiImplicit(m)
    s0, s1, c = m.state(), m.state(), m.control()
    got = []
    for k in range(300):
        solver.step(m, s0, s1, c, DT)
        s0, s1 = s1, s0
        if (k + 1) % 50 == 0:
            q = s0.body_q.numpy()[0]
            got.append([q[0], q[1], q[5]])
    np.testing.assert_allclose(np.array(got), np.array(_HEAVY_MAIN[solver_name]), atol=2e-6)


def _one_box(half, solver_name):
    b = sim.ModelBuilder()
    b.set_ground_plane()
    body = b.add_body(xform=kc.transform((0.0, half + 0.002, 0.0), kc.quat_identity()))
    b.add_shape_box(body=body, half_extents=(half, half, half), density=1000.0)
    if solver_name == "featherstone":
        b.add_joint_free(body)
    m = b.finalize()
    solver = sim.SolverFeatherstone(m) if solver_name == "featherstone" else sim.SolverSemiImplicit(m)
    return m, solver


@pytest.mark.parametrize("solver_name", ["semi_implicit", "featherstone"])
def test_solvers_warn_once_when_the_cap_may_act(solver_name):
    """The 8 g box: one warning naming the solver, the mass, dt and the cap, at the first step of a dt only;
    a 1 kg box (a corner's ke w dt^2 <= 0.055 by the model's bound): none."""
    import warnings

    m, solver = _one_box(0.01, solver_name)
    s0, s1 = m.state(), m.state()
    with pytest.warns(UserWarning, match=r"Solver\w+: contact stiffness may be capped for 1 light body at dt=0.001 s "
                                         r"\(lightest: body 0, mass 0.008 kg"):
        solver.step(m, s0, s1, None, DT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solver.step(m, s1, s0, None, DT)  # the same dt: checked already
        heavy, heavy_solver = _one_box(0.05, solver_name)
        heavy_solver.step(heavy, heavy.state(), heavy.state(), None, DT)
