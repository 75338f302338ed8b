"""SolverMPM gradients through many substeps (kc.Tape) against central finite differences.

The simulation is float32; the finite differences evaluate the same forward runs with the
loss reduced in float64 on the host and a step large enough to dwarf float32 round-off,
so they check the adjoint's value, not the last digits.  Losses are directional: a random
direction delta, dL/deps of L(p + eps delta) against grad . delta.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

STEPS = 60
DT = 1.0e-3


@kc.kernel
def weighted_position_loss(q: kc.array(dtype=kc.vec3), w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]))


def setup(material="fixed_corotated", dim=2, E=3.0e3, nu=0.3, sphere=False):
    b = sim.ModelBuilder(gravity=(0.0, -4.0, 0.0))
    mat = b.add_material(model=material, youngs_modulus=E, poisson_ratio=nu)
    if sphere:   # the block's lower right corner hits it within the run
        b.add_shape_sphere((0.55, 0.02, 0.0), radius=0.08)
    n = 6 if dim == 2 else 3
    sp = 1.0 / 48
    b.add_particle_grid((0.4, 0.12, 0.4 if dim == 3 else 0.0), (0.3, -0.5, 0.1 if dim == 3 else 0.0), n, n,
                        n if dim == 3 else 1, sp, density=1000.0, material=mat, jitter=0.002, seed=4)
    model = b.finalize(requires_grad=True)
    solver = sim.SolverMPM(model, dx=1.0 / 24, bounds=((0.0,) * dim, (1.0,) * dim), dim=dim, boundary="separate")
    rng = np.random.default_rng(1)
    w = rng.normal(size=(model.particle_count, 3)).astype(np.float32)
    if dim == 2:
        w[:, 2] = 0.0
    return model, solver, kc.array(w, dtype=kc.vec3)


def simulate(model, solver, w, v0=None, actuation=None, tape=None):
    """Run STEPS steps from the model's initial state; returns (loss array, first state, controls)."""
    states = [model.state() for _ in range(STEPS + 1)]
    if v0 is not None:
        states[0].particle_qd.assign(v0)
    controls = []
    for k in range(STEPS):
        c = model.control()
        if actuation is not None:
            c.particle_actuation.assign(actuation[k])
        controls.append(c)
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def go():
        for k in range(STEPS):
            solver.step(model, states[k], states[k + 1], controls[k], DT)
        kc.launch(weighted_position_loss, dim=model.particle_count, inputs=[states[-1].particle_q, w, loss])

    if tape is not None:
        with tape:
            go()
    else:
        go()
    return loss, states, controls


def random_velocities(model, scale=0.5, seed=9):
    rng = np.random.default_rng(seed)
    v = model.particle_qd.numpy() + scale * rng.normal(size=(model.particle_count, 3))
    v[:, 2] = 0.0
    return v.astype(np.float32)


def host_loss(states, w):
    return float((states[-1].particle_q.numpy().astype(np.float64) * w.numpy()).sum())


def fd(f, eps):
    return (f(eps) - f(-eps)) / (2 * eps)


@pytest.mark.parametrize("material,dim,sphere", [("fixed_corotated", 2, False), ("neo_hookean", 2, False),
                                                 ("fixed_corotated", 3, False), ("neo_hookean", 2, True)])
def test_gradient_initial_velocity(material, dim, sphere):
    """sphere: a static collider deflects part of the block (the grid update's collider loop)."""
    model, solver, w = setup(material, dim, sphere=sphere)
    v0 = model.particle_qd.numpy().astype(np.float64)
    rng = np.random.default_rng(2)
    delta = rng.normal(size=v0.shape)
    if dim == 2:
        delta[:, 2] = 0.0
    tape = kc.Tape()
    loss, states, _ = simulate(model, solver, w, v0=v0.astype(np.float32), tape=tape)
    tape.backward(loss=loss)
    g = states[0].particle_qd.grad.numpy().astype(np.float64)
    assert np.all(np.isfinite(g))
    analytic = float((g * delta).sum())

    def f(e):
        _, st, _ = simulate(model, solver, w, v0=(v0 + e * delta).astype(np.float32))
        return host_loss(st, w)

    num = fd(f, 1e-2)
    assert abs(analytic - num) <= 0.03 * abs(num) + 1e-4, (analytic, num)
    assert abs(num) > 1e-2  # the direction matters, so a zero gradient would fail


def test_gradient_youngs_modulus():
    model, solver, w = setup("fixed_corotated", 2)
    E0 = float(model.material_youngs_modulus.numpy()[1])
    v0 = random_velocities(model)   # a shear/stretch field, so that stresses matter
    tape = kc.Tape()
    loss, _, _ = simulate(model, solver, w, v0=v0, tape=tape)
    tape.backward(loss=loss)
    analytic = float(model.material_youngs_modulus.grad.numpy()[1])

    def f(e):
        E = model.material_youngs_modulus.numpy().copy()
        E[1] = E0 * (1 + e)
        model.material_youngs_modulus.assign(E)
        _, st, _ = simulate(model, solver, w, v0=v0)
        return host_loss(st, w)

    num = fd(f, 2e-2) / E0
    f(0.0)
    assert abs(analytic - num) <= 0.05 * abs(num) + 1e-9, (analytic, num)
    assert abs(num) > 1e-7


def test_gradient_actuation():
    """Per-step, per-particle actuation [Pa] (Control.particle_actuation), as diffmpm's muscles."""
    model, solver, w = setup("fixed_corotated", 2)
    n = model.particle_count
    rng = np.random.default_rng(5)
    act = (200.0 * rng.normal(size=(STEPS, n))).astype(np.float32)
    delta = 1.0 + 0.5 * rng.normal(size=(STEPS, n))   # mostly a uniform pull, so that it adds up
    tape = kc.Tape()
    loss, _, controls = simulate(model, solver, w, actuation=act, tape=tape)
    tape.backward(loss=loss)
    g = np.stack([c.particle_actuation.grad.numpy().astype(np.float64) for c in controls])
    analytic = float((g * delta).sum())

    def f(e):
        _, st, _ = simulate(model, solver, w, actuation=(act + e * delta).astype(np.float32))
        return host_loss(st, w)

    num = fd(f, 20.0)
    assert abs(analytic - num) <= 0.05 * abs(num) + 1e-6, (analytic, num)
    assert abs(num) > 1e-5


def test_diffmpm_example_walks_further(tmp_path):
    """examples/mpm_diffmpm.py: a few controller updates move the robot further (the loss falls) and plot it."""
    from examples import mpm_diffmpm

    out = tmp_path / "loss.png"
    res = mpm_diffmpm.main(["--iterations", "5", "--steps", "200", "--out", str(out)])
    losses = res["losses"]
    assert min(losses[1:]) < losses[0] - 1e-3, losses
    assert out.stat().st_size > 1000


def test_gradient_initial_position():
    model, solver, w = setup("neo_hookean", 2)
    v0 = random_velocities(model)
    x0 = model.particle_q.numpy().astype(np.float64)
    rng = np.random.default_rng(11)
    delta = rng.normal(size=x0.shape)
    delta[:, 2] = 0.0
    tape = kc.Tape()
    loss, states, _ = simulate(model, solver, w, v0=v0, tape=tape)
    tape.backward(loss=loss)
    analytic = float((states[0].particle_q.grad.numpy().astype(np.float64) * delta).sum())

    def f(e):
        st = [model.state()]
        st[0].particle_q.assign((x0 + e * delta).astype(np.float32))
        s0 = st[0]
        s0.particle_qd.assign(v0)
        s1 = model.state()
        for _ in range(STEPS):
            solver.step(model, s0, s1, None, DT)
            s0, s1 = s1, s0
        return float((s0.particle_q.numpy().astype(np.float64) * w.numpy()).sum())

    num = fd(f, 1e-3)
    assert abs(analytic - num) <= 0.05 * abs(num) + 1e-3, (analytic, num)
    assert abs(num) > 1e-2


@pytest.mark.parametrize("material", ["snow", "sand", "fluid"])
def test_gradient_through_plastic_and_fluid_models(material):
    """Through the return mappings (svd3 adjoints, clamps, the cone projection) and the fluid's J."""
    model, solver, w = setup(material, 2, E=2.0e3, nu=0.3)
    v0 = random_velocities(model, scale=0.3)
    rng = np.random.default_rng(2)
    delta = rng.normal(size=v0.shape)
    delta[:, 2] = 0.0
    tape = kc.Tape()
    loss, states, _ = simulate(model, solver, w, v0=v0, tape=tape)
    tape.backward(loss=loss)
    g = states[0].particle_qd.grad.numpy().astype(np.float64)
    assert np.all(np.isfinite(g))
    analytic = float((g * delta).sum())

    def f(e):
        _, st, _ = simulate(model, solver, w, v0=(v0 + e * delta).astype(np.float32))
        return host_loss(st, w)

    num = fd(f, 2e-3)
    assert abs(analytic - num) <= 0.05 * abs(num) + 1e-3, (analytic, num)
