"""The hand-written adjoints of a taped 2-D SolverMPM step (sim/mpm_adjoint_2d.py).

Two independent references: the automatic adjoints of the same forward launches (the solver
with the hand-written path switched off: every gradient must agree to float32 round-off,
through wall contact with friction, a ground plane, actuation and every boundary rule), and
central finite differences of the float32 forward through 60 substeps.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

DT = 1.0e-3


@kc.kernel
def weighted_state_loss(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), F: kc.array(dtype=kc.mat33),
                        w: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, kc.dot(q[p], w[p]) + 0.01 * kc.dot(qd[p], w[p]) + 0.1 * F[p][0, 1] + 0.1 * F[p][1, 1])


def setup(material="neo_hookean", boundary="separate", friction=0.4, ground=False, v=(0.6, -1.5)):
    """A 6 x 6 block 4 cm above the floor, thrown down and sideways: it lands within ~30 steps."""
    b = sim.ModelBuilder(gravity=(0.0, -4.0, 0.0))
    if ground:
        b.set_ground_plane((0.0, 1.0, 0.0), 0.05)
    mat = b.add_material(model=material, youngs_modulus=3.0e3, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.09 if ground else 0.04, 0.0), (v[0], v[1], 0.0), 6, 6, 1, 1.0 / 48,
                        density=1000.0, material=mat, jitter=0.002, seed=4)
    model = b.finalize(requires_grad=True)
    solver = sim.SolverMPM(model, dx=1.0 / 24, bounds=((0.0, 0.0), (1.0, 1.0)), dim=2, boundary=boundary,
                           friction=friction)
    rng = np.random.default_rng(1)
    w = rng.normal(size=(model.particle_count, 3)).astype(np.float32)
    w[:, 2] = 0.0
    return model, solver, kc.array(w, dtype=kc.vec3)


def run(model, solver, w, steps, v0=None, act=None, tape=None):
    states = [model.state() for _ in range(steps + 1)]
    if v0 is not None:
        states[0].particle_qd.assign(v0)
    controls = []
    for k in range(steps):
        c = model.control()
        if act is not None:
            c.particle_actuation.assign(act[k])
        controls.append(c)
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def go():
        for k in range(steps):
            solver.step(model, states[k], states[k + 1], controls[k], DT)
        s = states[-1]
        kc.launch(weighted_state_loss, dim=model.particle_count,
                  inputs=[s.particle_q, s.particle_qd, s.particle_F, w, loss])

    if tape is None:
        go()
    else:
        with tape:
            go()
    return loss, states, controls


def host_loss(state, w):
    """weighted_state_loss reduced in float64 on the host (finite differences of a float32 sum are noise)."""
    q, qd, F = (a.numpy().astype(np.float64) for a in (state.particle_q, state.particle_qd, state.particle_F))
    wn = w.numpy().astype(np.float64)
    return float((q * wn).sum() + 0.01 * (qd * wn).sum() + 0.1 * (F[:, 0, 1] + F[:, 1, 1]).sum())


def gradients(model, solver, w, steps, act, hand):
    """Every input gradient of one taped run, with the hand-written (True) or automatic adjoints."""
    solver._hand_adjoints = hand
    tape = kc.Tape()
    loss, states, controls = run(model, solver, w, steps, act=act, tape=tape)
    tape.backward(loss=loss)
    s0 = states[0]
    out = {"q": s0.particle_q.grad, "qd": s0.particle_qd.grad, "C": s0.particle_C.grad, "F": s0.particle_F.grad,
           "mass": model.particle_mass.grad, "volume": model.particle_volume.grad,
           "E": model.material_youngs_modulus.grad, "nu": model.material_poisson_ratio.grad}
    out = {k: g.numpy().astype(np.float64).copy() for k, g in out.items()}
    out["actuation"] = np.stack([c.particle_actuation.grad.numpy().astype(np.float64) for c in controls])
    tape.zero()
    return out, states


@pytest.mark.parametrize("material,boundary,friction,ground", [
    ("neo_hookean", "separate", 0.4, False),
    ("neo_hookean", "slip", 0.0, False),
    ("neo_hookean", "sticky", 0.0, True),
    ("neo_hookean", "separate", 0.4, True),
    ("fixed_corotated", "separate", 0.4, False),   # hand-written G2P/grid/scatter, automatic stress adjoint
])
def test_hand_adjoints_match_automatic(material, boundary, friction, ground):
    model, solver, w = setup(material, boundary, friction, ground)
    assert solver._hand_adjoints
    steps = 40
    rng = np.random.default_rng(3)
    act = (300.0 * rng.normal(size=(steps, model.particle_count))).astype(np.float32)
    hand, states = gradients(model, solver, w, steps, act, True)
    # the block reached the floor (wall nodes at y <= 0, or the ground at y = 0.05) within the run
    floor = 0.05 if ground else 0.0
    assert states[-1].particle_q.numpy()[:, 1].min() < floor + 1.5 / 24
    auto, _ = gradients(model, solver, w, steps, act, False)
    for k in auto:
        scale = np.abs(auto[k]).max()
        assert scale > 0 or k in ("nu", "E") and material != "neo_hookean", k
        err = np.abs(hand[k] - auto[k]).max()
        assert err <= 2e-4 * scale + 1e-12, (k, err, scale)


def test_hand_adjoint_gradients_match_finite_differences():
    """60 substeps, a neo-Hookean block landing on the floor with friction, actuated: the
    gradient along random directions of the initial velocities, E and the actuation."""
    steps = 60
    model, solver, w = setup("neo_hookean", "separate", 0.4)
    assert solver._hand_adjoints
    n = model.particle_count
    rng = np.random.default_rng(7)
    v0 = model.particle_qd.numpy().astype(np.float64)
    act = 200.0 * rng.normal(size=(steps, n))
    d_v = rng.normal(size=v0.shape)
    d_v[:, 2] = 0.0
    d_act = 1.0 + 0.5 * rng.normal(size=act.shape)
    E0 = float(model.material_youngs_modulus.numpy()[1])

    tape = kc.Tape()
    loss, states, controls = run(model, solver, w, steps, v0=v0.astype(np.float32), act=act.astype(np.float32),
                                 tape=tape)
    tape.backward(loss=loss)
    g_v = float((states[0].particle_qd.grad.numpy() * d_v).sum())
    g_act = float(sum((c.particle_actuation.grad.numpy().astype(np.float64) * d_act[k]).sum()
                      for k, c in enumerate(controls)))
    g_E = float(model.material_youngs_modulus.grad.numpy()[1]) * E0
    assert states[-1].particle_q.numpy()[:, 1].min() < 1.5 / 24   # it did land

    def loss_at(v=v0, a=act, E=E0):
        Es = model.material_youngs_modulus.numpy().copy()
        Es[1] = E
        model.material_youngs_modulus.assign(Es)
        _, st, _ = run(model, solver, w, steps, v0=v.astype(np.float32), act=a.astype(np.float32))
        return host_loss(st[-1], w)

    checks = [(g_v, lambda e: loss_at(v=v0 + e * d_v), 1e-2),
              (g_act, lambda e: loss_at(a=act + e * d_act), 20.0),
              (g_E, lambda e: loss_at(E=E0 * (1 + e)), 2e-2)]
    for analytic, f, eps in checks:
        num = (f(eps) - f(-eps)) / (2 * eps)
        assert abs(num) > 1e-4
        assert abs(analytic - num) <= 0.05 * abs(num), (analytic, num)
    loss_at()


def test_checkpointed_run_replays_the_hand_adjoints():
    """kc.checkpointed re-runs segments under its own Tape in backward(): the recorded
    record_func steps must give the gradients of a plain taped run with the automatic adjoints."""
    model, solver, w = setup("neo_hookean", "separate", 0.4)
    steps = 30

    def grads(checkpoint, hand):
        solver._hand_adjoints = hand
        s0 = model.state()
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        tape = kc.Tape()
        with tape:
            if checkpoint:
                final = kc.checkpointed(lambda i, a, b: solver.step(model, a, b, None, DT), s0, steps,
                                        make_state=model.state, segment=5)
            else:
                st = [s0] + [model.state() for _ in range(steps)]
                for i in range(steps):
                    solver.step(model, st[i], st[i + 1], None, DT)
                final = st[-1]
            kc.launch(weighted_state_loss, dim=model.particle_count,
                      inputs=[final.particle_q, final.particle_qd, final.particle_F, w, loss])
        tape.backward(loss=loss)
        g = [s0.particle_qd.grad.numpy().copy(), model.material_youngs_modulus.grad.numpy().copy()]
        tape.zero()
        return g

    ref = grads(False, False)
    for a, b in zip(grads(True, True), ref):
        assert np.abs(b).max() > 0
        assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()


def test_backward_scratch_is_clean_between_passes_and_per_model():
    """A taped step's backward keeps the grid's adjoints in scratch arrays shared by every step and
    sums each particle's E / nu shares once per pass (mpm_adjoint_2d.material_shares): a second
    pass over a new tape, and one tape holding the runs of two models of the same size, must give
    the gradients of a single run (scratch left dirty, or shares mixed between models, would not)."""
    model, solver, w = setup()
    steps = 12
    ref, _ = gradients(model, solver, w, steps, None, True)
    again, _ = gradients(model, solver, w, steps, None, True)
    for k in ref:
        np.testing.assert_array_equal(again[k], ref[k], err_msg=k)
    model2, solver2, _ = setup()
    tape = kc.Tape()
    loss, states, _ = run(model, solver, w, steps, tape=tape)
    loss2, states2, _ = run(model2, solver2, w, steps, tape=tape)
    tape.backward(grads={loss: np.ones(1, np.float32), loss2: np.ones(1, np.float32)})
    for m, s in ((model, states), (model2, states2)):
        for key, g in (("E", m.material_youngs_modulus.grad), ("nu", m.material_poisson_ratio.grad),
                       ("qd", s[0].particle_qd.grad)):
            assert np.abs(ref[key]).max() > 0, key
            np.testing.assert_allclose(g.numpy().astype(np.float64), ref[key], rtol=1e-6, atol=0, err_msg=key)
    tape.zero()
