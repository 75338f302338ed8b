"""sim solvers name the solver, the step and the State quantity of a NaN/Inf (kc.config.verify_nan)."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from kernelcore.verify_nan import NonFiniteError


@pytest.fixture
def verify_nan(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_nan", True)


def _run(model, solver, steps, dt, control_at):
    s0, s1 = model.state(), model.state()
    for i in range(steps):
        solver.step(model, s0, s1, control_at(i), dt)
        s0, s1 = s1, s0
    return s0


def _body_model():
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_body(mass=2.0, inertia=np.eye(3) * 0.2)
    return b.finalize()


def _bad_body_control(model):
    c = model.control()
    f = np.zeros((2, 6), np.float32)
    f[1, 3] = np.nan  # a force on body 1
    c.body_f = kc.array(f, dtype=kc.spatial_vector)
    return c


def test_nan_body_force_names_body_q_body_qd_and_the_step(verify_nan):
    m = _body_model()
    good, bad = m.control(), _bad_body_control(m)
    with pytest.raises(NonFiniteError) as e:
        _run(m, sim.SolverSemiImplicit(m), 6, 0.01, lambda i: bad if i == 3 else good)
    msg = str(e.value)
    assert msg.startswith("SolverSemiImplicit.step: step 3 (dt=0.01) produced a NaN/Inf")
    assert "state_out.body_q (nan at index 1" in msg and "state_out.body_qd (nan at index 1" in msg
    assert "already non-finite on entry: control.body_f (nan at index 1, component 3)" in msg
    assert "first launch: verify_nan: kernel '" in msg   # the per-launch trap's first hit


def test_solver_option_checks_without_the_global_switch_and_off_is_silent():
    m = _body_model()
    bad = _bad_body_control(m)
    s = _run(m, sim.SolverSemiImplicit(m), 2, 0.01, lambda i: bad)   # both switches off: NaN propagates
    assert np.isnan(s.body_q.numpy()[1]).any() and np.isfinite(s.body_q.numpy()[0]).all()
    solver = sim.SolverSemiImplicit(m)
    solver.verify_nan = True
    with pytest.raises(NonFiniteError, match=r"step 0 .*state_out\.body_q \(nan at index 1.*set kc.config.verify_nan"):
        _run(m, solver, 2, 0.01, lambda i: bad)


def test_nan_particle_force_names_particle_qd_and_index(verify_nan):
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for k in range(4):
        b.add_particle((k, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    m = b.finalize()
    good, bad = m.control(), m.control()
    f = np.zeros((4, 3), np.float32)
    f[2, 1] = np.inf
    bad.particle_f_ext = kc.array(f, dtype=kc.vec3)
    solver = sim.SolverSemiImplicit(m)
    with pytest.raises(NonFiniteError) as e:
        _run(m, solver, 5, 1e-3, lambda i: bad if i == 2 else good)
    msg = str(e.value)
    assert "step 2 " in msg and "state_out.particle_qd (" in msg and "at index 2, component 1" in msg
    assert "state_out.particle_q (" in msg and "control.particle_f_ext (inf at index 2" in msg
    assert solver.step_count == 3


def test_featherstone_nan_joint_force_names_joint_q_joint_qd(verify_nan):
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    body = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-6, com=(0.0, -1.0, 0.0))
    b.add_joint_revolute(-1, body, axis=(0, 0, 1), q0=0.3)
    m = b.finalize()
    solver = sim.SolverFeatherstone(m, contacts=False)
    good, bad = m.control(), m.control()
    bad.joint_f = kc.array(np.array([np.nan], np.float32), dtype=float)
    with pytest.raises(NonFiniteError) as e:
        _run(m, solver, 4, 1e-3, lambda i: bad if i == 1 else good)
    msg = str(e.value)
    assert msg.startswith("SolverFeatherstone.step: step 1 ")
    assert "state_out.joint_qd (nan at index 0)" in msg and "state_out.joint_q (nan at index 0)" in msg
    assert "control.joint_f (nan at index 0)" in msg


def test_inside_checkpointed_names_the_loop_step(verify_nan):
    m = _body_model()
    good, bad = m.control(), _bad_body_control(m)
    solver = sim.SolverSemiImplicit(m)
    with pytest.raises(NonFiniteError, match=r"SolverSemiImplicit.step: step 4 .*state_out\.body_q.*"
                                             r"\[inside kc\.checkpointed, step 4 of 7\]"):
        kc.checkpointed(lambda i, a, o: solver.step(m, a, o, bad if i == 4 else good, 0.01), m.state(), 7,
                        make_state=m.state)


def test_mpm_nan_actuation_names_the_particle_quantities(verify_nan):
    b = sim.ModelBuilder()
    mat = b.add_material(model="fixed_corotated", youngs_modulus=1.0e4, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.4, 0.0), (0.0, 0.0, 0.0), 4, 4, 1, 0.01, density=1000.0, material=mat)
    m = b.finalize()
    solver = sim.SolverMPM(m, dx=0.02, bounds=((0, 0), (1, 1)), dim=2)
    good, bad = m.control(), m.control()
    act = np.zeros(m.particle_count, np.float32)
    act[5] = np.nan
    bad.particle_actuation = kc.array(act, dtype=float)
    with pytest.raises(NonFiniteError) as e:
        _run(m, solver, 3, 1e-4, lambda i: bad if i == 1 else good)
    msg = str(e.value)
    assert msg.startswith("SolverMPM.step: step 1 ") and "state_out.particle_q (nan at index " in msg
    assert "control.particle_actuation (nan at index 5)" in msg
