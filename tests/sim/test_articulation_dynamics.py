"""SolverFeatherstone against analytic solutions, conservation laws and MuJoCo."""
import math

import numpy as np
import pytest

import kernelcore as kc
import sim


def _run(model, solver, steps, dt, control=None, record=None):
    s0, s1 = model.state(), model.state()
    out = []
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
        if record is not None:
            out.append(record(s0))
    return s0, out


def _pendulum(q0, length=1.0, mass=1.0, **joint):
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    body = b.add_body(mass=mass, inertia=np.eye(3) * 1e-6, com=(0.0, -length, 0.0))
    b.add_joint_revolute(-1, body, axis=(0, 0, 1), q0=q0, **joint)
    return b


def _elliptic_k(m):
    """Complete elliptic integral of the first kind K(m) by the arithmetic-geometric mean."""
    a, g = 1.0, math.sqrt(1.0 - m)
    for _ in range(30):
        a, g = (a + g) / 2, math.sqrt(a * g)
    return math.pi / (2 * a)


def test_mass_matrix_gives_the_kinetic_energy_of_the_bodies():
    """0.5 qd^T H qd == sum of the bodies' kinetic energies from FK velocities, for random trees and qd."""
    rng = np.random.default_rng(0)  # a tree with two d6 joints, a ball and a free base
    from test_articulation_kinematics import _random_tree  # same random trees as the FK tests

    b, _ = _random_tree(rng, 6)
    m = b.finalize()
    solver = sim.SolverFeatherstone(m, contacts=False)
    state = m.state()
    H = solver.mass_matrix(state)[0].astype(np.float64)
    np.testing.assert_allclose(H, H.T, atol=1e-5)
    mass = m.body_mass.numpy().astype(np.float64)
    inertia = m.body_inertia.numpy().astype(np.float64)
    for trial in range(3):
        qd = rng.normal(size=m.joint_dof_count)
        state.joint_qd.assign(qd.astype(np.float32))
        sim.eval_fk(m, state.joint_q, state.joint_qd, state)
        x, v = state.body_q.numpy().astype(np.float64), state.body_qd.numpy().astype(np.float64)
        ke = 0.0
        for i in range(m.body_count):
            from test_articulation_kinematics import _qmat

            r = _qmat(x[i, 3:])
            ke += 0.5 * mass[i] * v[i, :3] @ v[i, :3] + 0.5 * v[i, 3:] @ (r @ inertia[i] @ r.T) @ v[i, 3:]
        np.testing.assert_allclose(0.5 * qd @ H @ qd, ke, rtol=2e-4)


def test_pendulum_large_amplitude_period_matches_elliptic_integral():
    amp, length, dt = 2.0, 1.0, 1e-3
    model = _pendulum(amp, length).finalize()
    solver = sim.SolverFeatherstone(model, contacts=False)
    _, q = _run(model, solver, 2200, dt, record=lambda s: float(s.joint_q.numpy()[0]))
    q = np.asarray([amp] + q)
    t = np.arange(len(q)) * dt
    down = [t[i] + dt * q[i] / (q[i] - q[i + 1]) for i in range(len(q) - 1) if q[i] > 0 >= q[i + 1]]
    up = [t[i] + dt * q[i] / (q[i] - q[i + 1]) for i in range(len(q) - 1) if q[i] < 0 <= q[i + 1]]
    period = 2.0 * (up[0] - down[0])
    inertia = length ** 2 + 1e-6
    exact = 4.0 * math.sqrt(inertia / (9.81 * length)) * _elliptic_k(math.sin(amp / 2) ** 2)
    assert abs(period - exact) / exact < 5e-3, (period, exact)
    print("period", period, "exact", exact)


def test_pd_drive_reaches_its_equilibrium_under_gravity():
    ke, kd, target, length = 200.0, 20.0, 1.0, 0.5
    model = _pendulum(0.0, length, target_ke=ke, target_kd=kd, target_pos=target).finalize()
    solver = sim.SolverFeatherstone(model, contacts=False)
    state, _ = _run(model, solver, 3000, 1e-3)
    q = float(state.joint_q.numpy()[0])
    # equilibrium: ke (target - q) = m g L sin(q), solved by bisection
    lo, hi = 0.0, target
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ke * (target - mid) > 9.81 * length * math.sin(mid) else (lo, mid)
    assert abs(q - lo) < 1e-3, (q, lo)
    assert abs(float(state.joint_qd.numpy()[0])) < 1e-3


def test_pd_drive_follows_control_targets():
    model = _pendulum(0.0, 0.5, target_ke=500.0, target_kd=50.0).finalize()
    solver = sim.SolverFeatherstone(model, contacts=False)
    control = model.control()
    control.joint_target_pos.assign(np.array([-0.5], np.float32))
    model.gravity = kc.vec3(0.0, 0.0, 0.0)
    state, _ = _run(model, solver, 2000, 1e-3, control=control)
    assert abs(float(state.joint_q.numpy()[0]) + 0.5) < 1e-3


def test_joint_limit_holds():
    # starts horizontal and swings down through q = 0 towards -pi/2 ... but the limit stops it at -0.3
    model = _pendulum(math.pi / 2, 1.0, limit_lower=-0.3, limit_upper=2.0).finalize()
    solver = sim.SolverFeatherstone(model, contacts=False)
    _, q = _run(model, solver, 2000, 1e-3, record=lambda s: float(s.joint_q.numpy()[0]))
    q = np.asarray(q)
    assert q.min() > -0.3 - 0.05, q.min()    # the swing is caught within a few hundredths of a radian
    assert q.max() <= 2.0 + 1e-3
    # and rests against it in the end? no: gravity pulls towards 0, inside the range; it must still oscillate
    # between the limit and the far side
    assert q[-500:].max() > 0.1
    # free swing reaches -pi/2: the limit really acted
    free = _pendulum(math.pi / 2, 1.0).finalize()
    _, qf = _run(free, sim.SolverFeatherstone(free, contacts=False), 1200, 1e-3,
                 record=lambda s: float(s.joint_q.numpy()[0]))
    assert min(qf) < -1.5


def test_limit_rests_against_gravity():
    length, lke = 1.0, 1e4
    model = _pendulum(0.0, length, limit_lower=-1.0, limit_upper=0.3, limit_ke=lke, limit_kd=50.0).finalize()
    model.gravity = kc.vec3(9.81, 0.0, 0.0)  # pulls the bob towards +x: q grows
    solver = sim.SolverFeatherstone(model, contacts=False)
    state, _ = _run(model, solver, 3000, 1e-3)
    q = float(state.joint_q.numpy()[0])
    # static balance: lke (q - 0.3) = m g L cos(q)
    expected = 0.3 + 9.81 * length * math.cos(0.3) / lke
    assert abs(q - expected) < 2e-4, (q, expected)


def _momenta(model, state):
    x = state.body_q.numpy().astype(np.float64)
    v = state.body_qd.numpy().astype(np.float64)
    mass = model.body_mass.numpy().astype(np.float64)
    inertia = model.body_inertia.numpy().astype(np.float64)
    com = model.body_com.numpy().astype(np.float64)
    from test_articulation_kinematics import _qmat

    p = np.zeros(3)
    ang = np.zeros(3)
    energy = 0.0
    for i in range(model.body_count):
        r = _qmat(x[i, 3:])
        c = x[i, :3] + r @ com[i]
        iw = r @ inertia[i] @ r.T
        p += mass[i] * v[i, :3]
        ang += iw @ v[i, 3:] + mass[i] * np.cross(c, v[i, :3])
        energy += 0.5 * mass[i] * v[i, :3] @ v[i, :3] + 0.5 * v[i, 3:] @ iw @ v[i, 3:]
    return p, ang, energy


def test_free_floating_articulation_conserves_momentum():
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    base = b.add_body(xform=(0.1, 0.2, 0.3, 0, 0, 0, 1), mass=2.0, inertia=np.diag([0.1, 0.2, 0.3]),
                      vel=(0.3, -0.2, 0.1), ang_vel=(0.5, -1.0, 0.7))
    b.add_joint_free(base)
    arm = b.add_body(mass=0.5, inertia=np.diag([0.01, 0.02, 0.02]), com=(0.2, 0, 0))
    b.add_joint_revolute(base, arm, parent_xform=(0.3, 0, 0, 0, 0, 0, 1), axis=(0, 1, 1), qd0=2.0)
    tip = b.add_body(mass=0.3, inertia=np.diag([0.01, 0.01, 0.01]), com=(0.1, 0, 0))
    b.add_joint_ball(arm, tip, parent_xform=(0.4, 0, 0, 0, 0, 0, 1), qd0=(0.5, 1.0, -1.0))
    slider = b.add_body(mass=0.2, inertia=np.diag([0.01, 0.02, 0.015]), com=(0, 0.05, 0))
    b.add_joint_d6(base, slider, linear_axes=[(0, 0, 1)], angular_axes=[(1, 0, 0), (0, 1, 0)],
                   parent_xform=(0, 0.2, 0, 0, 0, 0, 1), qd0=(0.3, 1.0, -0.7))
    model = b.finalize()
    solver = sim.SolverFeatherstone(model, contacts=False)
    p0, l0, e0 = _momenta(model, model.state())
    state, _ = _run(model, solver, 1000, 5e-4)
    p1, l1, e1 = _momenta(model, state)
    np.testing.assert_allclose(p1, p0, atol=2e-3 * np.linalg.norm(p0))
    np.testing.assert_allclose(l1, l0, atol=5e-3 * np.linalg.norm(l0))
    assert abs(e1 - e0) < 1e-2 * e0
    # the base really moved and the arm really turned
    assert np.linalg.norm(state.body_q.numpy()[0, :3] - np.array([0.1, 0.2, 0.3])) > 0.1


MJCF_CHAIN = """
<mujoco>
  <option timestep="{dt}" integrator="Euler" gravity="0 0 -9.81">
    <flag contact="disable"/>
  </option>
  <worldbody>
    <body name="l1" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <inertial pos="0.1 0 -0.2" mass="1.0" diaginertia="0.02 0.03 0.01"/>
      <body name="l2" pos="0.1 0 -0.4">
        <joint name="j2" type="hinge" axis="1 0 0"/>
        <inertial pos="0 0.05 -0.2" mass="0.7" diaginertia="0.01 0.015 0.005"/>
        <body name="l3" pos="0 0 -0.4">
          <joint name="j3" type="hinge" axis="0 1 1"/>
          <inertial pos="0 0 -0.15" mass="0.4" diaginertia="0.004 0.005 0.003"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_three_link_chain_matches_mujoco():
    mujoco = pytest.importorskip("mujoco", reason="the mujoco package is the reference engine")
    dt, steps = 1e-3, 500
    q0 = np.array([0.5, -0.3, 0.8])
    mj = mujoco.MjModel.from_xml_string(MJCF_CHAIN.format(dt=dt))
    data = mujoco.MjData(mj)
    data.qpos[:] = q0
    ref = []
    for _ in range(steps):
        mujoco.mj_step(mj, data)
        ref.append(data.qpos.copy())
    # the same chain by hand, Z up
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    l1 = b.add_body(mass=1.0, inertia=np.diag([0.02, 0.03, 0.01]), com=(0.1, 0, -0.2))
    l2 = b.add_body(mass=0.7, inertia=np.diag([0.01, 0.015, 0.005]), com=(0, 0.05, -0.2))
    l3 = b.add_body(mass=0.4, inertia=np.diag([0.004, 0.005, 0.003]), com=(0, 0, -0.15))
    b.add_joint_revolute(-1, l1, parent_xform=(0, 0, 1, 0, 0, 0, 1), axis=(0, 1, 0), q0=q0[0])
    b.add_joint_revolute(l1, l2, parent_xform=(0.1, 0, -0.4, 0, 0, 0, 1), axis=(1, 0, 0), q0=q0[1])
    b.add_joint_revolute(l2, l3, parent_xform=(0, 0, -0.4, 0, 0, 0, 1), axis=(0, 1, 1), q0=q0[2])
    model = b.finalize()
    solver = sim.SolverFeatherstone(model, contacts=False)
    _, got = _run(model, solver, steps, dt, record=lambda s: s.joint_q.numpy().astype(np.float64).copy())
    err = np.abs(np.asarray(got) - np.asarray(ref)).max()
    assert err < 1e-2, err
    assert np.abs(np.asarray(ref)[-1] - q0).max() > 0.3  # it really moved


def _cartpole_builder(with_ground_box=False):
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    cart = b.add_body(mass=1.0, inertia=np.eye(3) * 0.01)
    pole = b.add_body(mass=0.3, inertia=np.diag([0.01, 0.001, 0.01]), com=(0, 0.4, 0))
    b.add_joint_prismatic(-1, cart, parent_xform=(0, 0.5, 0, 0, 0, 0, 1), axis=(1, 0, 0), q0=0.1, damping=0.1)
    b.add_joint_revolute(cart, pole, axis=(0, 0, 1), q0=0.4, target_ke=1.0, target_kd=0.1)
    if with_ground_box:
        b.add_shape_sphere(pos=(0, 0.8, 0), radius=0.08, body=pole, density=100.0)
    return b


def test_replicated_environments_match_a_single_run():
    env = _cartpole_builder(with_ground_box=True)
    env.add_shape_box(pos=(0.6, 0.3, 0), half_extents=(0.2, 0.05, 0.5))  # a ledge the pole's tip hits
    single = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    single.set_ground_plane()
    single.add_builder(env)
    m1 = single.finalize()
    batch = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    batch.set_ground_plane()
    for i in range(8):
        batch.add_builder(env, xform=(0.0, 0.0, 1.5 * i, 0, 0, 0, 1))
    m8 = batch.finalize()
    s1, _ = _run(m1, sim.SolverFeatherstone(m1), 600, 1e-3)
    s8, _ = _run(m8, sim.SolverFeatherstone(m8), 600, 1e-3)
    q1 = s1.joint_q.numpy()
    q8 = s8.joint_q.numpy().reshape(8, -1)
    for i in range(8):
        np.testing.assert_allclose(q8[i], q1, atol=1e-5)
    assert np.abs(q1 - np.array([0.1, 0.4])).max() > 0.1


def test_sphere_on_a_pendulum_rests_on_the_ground():
    """Contact wrenches reach the dofs: a pendulum whose bob meets the ground comes to rest on it."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_ground_plane()
    bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.5, 0, 0))
    b.add_shape_sphere(pos=(0.5, 0, 0), radius=0.1, body=bob, density=1.0)
    b.add_joint_revolute(-1, bob, parent_xform=(0, 0.3, 0, 0, 0, 0, 1), axis=(0, 0, 1), damping=0.5)
    b.set_material(0, ke=2e4, mu=0.0)
    model = b.finalize()
    state, _ = _run(model, sim.SolverFeatherstone(model), 3000, 5e-4)
    # rest: the sphere (radius 0.1) touches y = 0 with its centre at height 0.1: sin(q) = -0.2 / 0.5
    q = float(state.joint_q.numpy()[0])
    assert abs(math.sin(q) + 0.4) < 0.02, q


def test_bad_solver_input():
    b = sim.ModelBuilder()
    loose = b.add_body(mass=1.0, inertia=np.eye(3))
    with pytest.raises(ValueError, match="the model has no joints"):
        sim.SolverFeatherstone(b.finalize())
    other = b.add_body(mass=1.0, inertia=np.eye(3))
    b.add_joint_revolute(-1, other)
    model = b.finalize()
    with pytest.raises(ValueError, match=r"body 0 \('body_0'\) is the child of no joint.*add_joint_free\(0\)"):
        sim.SolverFeatherstone(model)
    b.add_joint_free(loose)
    model = b.finalize()
    solver = sim.SolverFeatherstone(model)
    s = model.state()
    with pytest.raises(ValueError, match="dt must be finite and > 0"):
        solver.step(model, s, model.state(), None, 0.0)
    c = model.control()
    c.joint_f = kc.zeros(3, dtype=float)
    with pytest.raises(ValueError, match="control.joint_f has 3 entries but the model has 7 joint dofs"):
        solver.step(model, s, model.state(), c, 1e-3)


def test_effort_limit_caps_the_drive():
    """A stiff drive far from its target in zero gravity pushes with exactly its effort limit:
    q(t) = q0 + 0.5 (effort / I) t^2."""
    inertia, effort, t = 0.5, 0.2, 0.3
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    body = b.add_body(mass=1.0, inertia=np.eye(3) * inertia)
    b.add_joint_revolute(-1, body, axis=(0, 0, 1), target_ke=1e4, target_kd=10.0, target_pos=5.0, effort_limit=effort)
    model = b.finalize()
    dt = 1e-3
    state, _ = _run(model, sim.SolverFeatherstone(model, contacts=False), int(round(t / dt)), dt)
    q = float(state.joint_q.numpy()[0])
    exact = 0.5 * effort / inertia * t * t
    assert abs(q - exact) < 0.01 * exact + 1e-4, (q, exact)


def test_semi_implicit_solver_holds_joints_without_warning():
    """SolverSemiImplicit holds joints with penalty forces (tests/sim/test_articulation_semi_implicit.py)."""
    import warnings

    model = _pendulum(0.3).finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.SolverSemiImplicit(model)
