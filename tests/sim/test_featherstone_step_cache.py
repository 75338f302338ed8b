"""SolverFeatherstone keeps each step's launch arguments per (states, control, model arrays): replacing
any of them between steps must be seen (a kept list would silently step with the old array)."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def _pendulum():
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.5, 0.0, 0.0))
    b.add_joint_revolute(-1, bob, axis=(0, 0, 1), q0=0.0)
    return b.finalize()


def _rate_after(model, solver, state, control):
    out = model.state()
    solver.step(model, state, out, control, 1e-2)
    return float(out.joint_qd.numpy()[0])


def test_replaced_arrays_and_values_are_used_by_the_next_step():
    model = _pendulum()
    solver = sim.SolverFeatherstone(model)
    s0, s1 = model.state(), model.state()
    control = model.control()
    solver.step(model, s0, s1, control, 1e-2)
    fall = float(s1.joint_qd.numpy()[0])
    assert fall < -0.15  # gravity turns the horizontal bob down (-g l dt / (l^2 + I) = -0.195 rad/s)
    solver.step(model, s0, s1, control, 1e-2)  # the kept arguments: same result
    assert float(s1.joint_qd.numpy()[0]) == fall
    control.joint_f = kc.array(np.array([10.0], np.float32), dtype=float)  # a new array, 10 N m
    solver.step(model, s0, s1, control, 1e-2)
    assert float(s1.joint_qd.numpy()[0]) == pytest.approx(fall + 10.0 * 1e-2 / 0.251, abs=1e-4)
    control.joint_f = None
    model.gravity = kc.vec3(0.0, 0.0, 0.0)
    solver.step(model, s0, s1, control, 1e-2)
    assert float(s1.joint_qd.numpy()[0]) == 0.0
    s0.joint_qd = kc.array(np.array([3.0], np.float32), dtype=float)
    solver.step(model, s0, s1, control, 1e-2)
    assert abs(float(s1.joint_qd.numpy()[0]) - 3.0) < 1e-5
