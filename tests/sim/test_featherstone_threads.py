"""SolverFeatherstone's step runs a batch of a few hundred articulations on every core
(sim/solvers/featherstone.py STEP_PARALLEL_GRAIN): the numbers may not depend on the thread
count, with and without contacts."""
import importlib

import numpy as np
import pytest

import sim
from sim.solvers.featherstone import STEP_PARALLEL_GRAIN

launch_mod = importlib.import_module("kernelcore.launch")  # the module (kc.launch is the function)


def _cartpoles(n, contacts):
    env = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    cart = env.add_body(mass=1.0, inertia=np.eye(3) * 0.01)
    pole = env.add_body(mass=0.3, inertia=np.diag([0.01, 0.01, 0.001]), com=(0, 0, 0.4))
    if contacts:
        env.add_shape_sphere(pos=(0.0, 0.0, 0.8), radius=0.1, body=pole)
    env.add_joint_prismatic(-1, cart, axis=(1, 0, 0), q0=0.0)
    env.add_joint_revolute(cart, pole, axis=(0, 1, 0), q0=0.3)
    b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    for i in range(n):
        b.add_builder(env, xform=(0.0, 2.0 * i, 0.0, 0, 0, 0, 1))
    if contacts:
        b.set_ground_plane(normal=(0.0, 0.0, 1.0), offset=-0.3)  # poles past ~1.9 rad hit it
    model = b.finalize()
    q = model.joint_q.numpy()
    q[1::2] = np.linspace(0.2, 2.5, n)  # every pole at another angle: some swing into the ground
    return model


def _run(model, contacts, steps=20):
    solver = sim.SolverFeatherstone(model, contacts=contacts)
    s0, s1 = model.state(), model.state()
    control = model.control()
    for _ in range(steps):
        solver.step(model, s0, s1, control, 1.0e-3)
        s0, s1 = s1, s0
    return s0.joint_q.numpy().copy(), s0.joint_qd.numpy().copy(), s0.body_q.numpy().copy()


@pytest.mark.parametrize("contacts", [False, True])
def test_step_on_two_threads_equals_one_thread(monkeypatch, contacts):
    model = _cartpoles(STEP_PARALLEL_GRAIN, contacts)  # at the step's grain, far below config.parallel_grain
    calls = []
    monkeypatch.setattr(launch_mod, "num_threads", lambda: calls.append(1) or 1)
    one = _run(model, contacts)
    assert len(calls) >= 20  # the step asked for every core each time
    monkeypatch.setattr(launch_mod, "num_threads", lambda: 2)
    two = _run(model, contacts)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(one[0]))
    assert np.ptp(one[0][1::2]) > 1.0  # the batch is not one case repeated
