"""kc.checkpointed: gradients bitwise equal to a plain Tape, Control/parameter gradients,
O(sqrt N) peak memory, gradcheck_tape over the loop."""
import math
import tracemalloc

import numpy as np
import pytest

import kernelcore as kc
import sim


# -- a pure-kernel loop: x_{i+1} = x_i + dt * (w * sin(x_i) + c) -------------------------------
@kc.kernel
def _sin_step(x: kc.array(dtype=float), w: kc.array(dtype=float), c: kc.array(dtype=float), dt: float,
              y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] + dt * (w[i] * kc.sin(x[i]) + c[0])


@kc.kernel
def _sum_squares(x: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i] * x[i])


def _kernel_problem(n=5):
    rng = np.random.default_rng(1)
    x0 = kc.array(rng.uniform(-1, 1, n).astype(np.float32), dtype=float, requires_grad=True)
    w = kc.array(rng.uniform(0.5, 1.5, n).astype(np.float32), dtype=float, requires_grad=True)
    c = kc.array(np.array([0.3], np.float32), dtype=float, requires_grad=True)

    def step(i, a, b):
        kc.launch(_sin_step, n, inputs=[a, w, c, 0.05], outputs=[b])

    return x0, w, c, step


def _kernel_grads(num_steps, segment, **schedule):
    x0, w, c, step = _kernel_problem()
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        if segment is None and not schedule:
            cur = x0
            for i in range(num_steps):
                nxt = kc.zeros(x0.shape, dtype=float, requires_grad=True)
                step(i, cur, nxt)
                cur = nxt
        else:
            cur = kc.checkpointed(step, x0, num_steps, segment=segment, **schedule)
        kc.launch(_sum_squares, x0.shape[0], inputs=[cur], outputs=[loss])
    tape.backward(loss)
    return loss.numpy().copy(), x0.grad.numpy().copy(), w.grad.numpy().copy(), c.grad.numpy().copy()


@pytest.mark.parametrize("segment", [1, 3, 7, 20, 100])
def test_kernel_loop_bitwise_equal_to_plain_tape(segment):
    n = 20  # 3 and 7 do not divide it; 100 > n means one segment
    ref = _kernel_grads(n, None)
    got = _kernel_grads(n, segment)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(g, r)
    assert np.all(ref[2] != 0) and ref[3][0] != 0  # gradients reach the arrays outside the loop


def test_kernel_loop_matches_finite_differences():
    n = 12
    _, gx, _, gc = _kernel_grads(n, 5)
    x0, w, c, step = _kernel_problem()

    def loss_of(x0v, cv):  # float64 reference of the same loop
        x = x0v.astype(np.float64)
        for _ in range(n):
            x = x + 0.05 * (w.numpy().astype(np.float64) * np.sin(x) + cv)
        return np.sum(x * x)

    x0v, cv = x0.numpy().astype(np.float64), 0.3
    eps = 1e-6
    fd_c = (loss_of(x0v, cv + eps) - loss_of(x0v, cv - eps)) / (2 * eps)
    np.testing.assert_allclose(gc[0], fd_c, rtol=1e-4)
    e0 = np.zeros_like(x0v)
    e0[2] = eps
    fd_x = (loss_of(x0v + e0, cv) - loss_of(x0v - e0, cv)) / (2 * eps)
    np.testing.assert_allclose(gx[2], fd_x, rtol=1e-4)


# -- a mass-spring rollout with SolverSemiImplicit -----------------------------------------
@kc.kernel
def _weighted_positions(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    i = kc.tid()
    p = q[i]
    v = qd[i]
    kc.atomic_add(loss, 0, p[0] * float(i + 1) + p[1] * p[1] + 0.1 * v[2])


def _chain_model():
    b = sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), mass=0.0)
    for k in range(1, 5):
        b.add_particle((0.3 * k, 1.0 - 0.05 * k, 0.02 * k), mass=0.5 + 0.1 * k)
        b.add_spring(k - 1, k, 200.0 + 10 * k, 0.5)
    return b.finalize(requires_grad=True)


def _spring_grads(num_steps, segment, **schedule):
    m = _chain_model()
    solver = sim.SolverSemiImplicit(m)
    ctrl = m.control(requires_grad=True)
    ctrl.particle_f_ext.assign(kc.array(np.tile([0.5, 0.0, -0.2], (m.particle_count, 1)).astype(np.float32),
                                        dtype=kc.vec3))
    s0 = m.state()
    dt = 2e-3

    def step(i, a, b):
        solver.step(m, a, b, ctrl, dt)

    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        if segment is None and not schedule:
            cur = s0
            for i in range(num_steps):
                nxt = m.state()
                step(i, cur, nxt)
                cur = nxt
        else:
            cur = kc.checkpointed(step, s0, num_steps, make_state=m.state, segment=segment, **schedule)
        kc.launch(_weighted_positions, m.particle_count, inputs=[cur.particle_q, cur.particle_qd], outputs=[loss])
    tape.backward(loss)
    out = [loss, s0.particle_q.grad, s0.particle_qd.grad, ctrl.particle_f_ext.grad]
    out += [a.grad for a in (m.spring_stiffness, m.particle_inv_mass) if a.grad is not None]
    return [a.numpy().copy() for a in out], tape


@pytest.mark.parametrize("segment", [1, 3, 7, 23])
def test_mass_spring_bitwise_equal_to_plain_tape(segment):
    n = 23
    ref, _ = _spring_grads(n, None)
    got, _ = _spring_grads(n, segment)
    assert len(ref) == len(got) >= 5
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(g, r)
    assert np.abs(ref[3]).max() > 0  # the Control input received a gradient


def test_mass_spring_control_gradient_matches_finite_differences():
    n = 23
    got, _ = _spring_grads(n, 7)
    m = _chain_model()
    solver = sim.SolverSemiImplicit(m)

    def loss_of(fx):
        ctrl = m.control()
        f = np.tile([0.5, 0.0, -0.2], (m.particle_count, 1)).astype(np.float32)
        f[2, 0] = fx
        ctrl.particle_f_ext.assign(kc.array(f, dtype=kc.vec3))
        a, b = m.state(requires_grad=False), m.state(requires_grad=False)
        for _ in range(n):
            solver.step(m, a, b, ctrl, 2e-3)
            a, b = b, a
        q, qd = a.particle_q.numpy().astype(np.float64), a.particle_qd.numpy().astype(np.float64)
        return sum(q[i, 0] * (i + 1) + q[i, 1] ** 2 + 0.1 * qd[i, 2] for i in range(m.particle_count))

    eps = 0.05  # float32 forward: a large step, the loss is nearly linear in the force
    fd = (loss_of(0.5 + eps) - loss_of(0.5 - eps)) / (2 * eps)
    np.testing.assert_allclose(got[3][2, 0], fd, rtol=2e-2)


def test_gradcheck_tape_over_checkpointed_loop(monkeypatch):
    x0, w, c, step = _kernel_problem()
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        out = kc.checkpointed(step, x0, 6, segment=4)
        kc.launch(_sum_squares, x0.shape[0], inputs=[out], outputs=[loss])
    checked = []
    real = kc.autograd.gradcheck
    monkeypatch.setattr(kc.autograd, "gradcheck", lambda k, *a, **kw: checked.append(k.key) or real(k, *a, **kw))
    assert kc.autograd.gradcheck_tape(tape, eps=1e-3, atol=1e-2, rtol=1e-2, show_summary=False)
    assert checked.count(_sin_step.key) == 6 and checked.count(_sum_squares.key) == 1  # every step of the loop


def test_outside_tape_runs_and_keeps_initial_state():
    x0, w, c, step = _kernel_problem()
    before = x0.numpy().copy()
    out = kc.checkpointed(step, x0, 9)
    np.testing.assert_array_equal(x0.numpy(), before)
    ref = x0
    for i in range(9):
        nxt = kc.zeros(ref.shape, dtype=float)
        step(i, ref, nxt)
        ref = nxt
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_steps=0), "num_steps"),
    (dict(num_steps=5, segment=0), "segment"),
    (dict(num_steps=2.5), "num_steps"),
])
def test_bad_arguments(kwargs, match):
    x0, w, c, step = _kernel_problem()
    with pytest.raises(ValueError, match=match):
        kc.checkpointed(step, x0, **kwargs)


def test_object_state_needs_make_state():
    m = _chain_model()
    with pytest.raises(TypeError, match="make_state"):
        kc.checkpointed(lambda i, a, b: None, object(), 3)


# -- peak memory (tracemalloc: CPU kc arrays are numpy buffers, which tracemalloc sees) ------
def _peak_bytes(num_steps, segment, size, **schedule):
    x0 = kc.array(np.linspace(-1, 1, size).astype(np.float32), dtype=float, requires_grad=True)
    w = kc.array(np.ones(size, np.float32), dtype=float, requires_grad=True)
    c = kc.array(np.array([0.1], np.float32), dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    def step(i, a, b):
        kc.launch(_sin_step, size, inputs=[a, w, c, 0.01], outputs=[b])

    kc.launch(_sin_step, size, inputs=[x0, w, c, 0.01], outputs=[kc.zeros(size, dtype=float)])  # build first
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        tape = kc.Tape()
        with tape:
            if segment is None and not schedule:
                cur = x0
                for i in range(num_steps):
                    nxt = kc.zeros(size, dtype=float, requires_grad=True)
                    step(i, cur, nxt)
                    cur = nxt
            else:
                cur = kc.checkpointed(step, x0, num_steps, segment=segment, **schedule)
            kc.launch(_sum_squares, size, inputs=[cur], outputs=[loss])
        tape.backward(loss)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, x0.grad.numpy().copy()


def test_peak_memory_is_about_two_sqrt_n_states():
    n, size = 64, 50_000
    state_bytes = 2 * 4 * size  # value + gradient, float32
    peak_ckpt, g_ckpt = _peak_bytes(n, math.isqrt(n), size)
    peak_plain, g_plain = _peak_bytes(n, None, size)
    np.testing.assert_array_equal(g_ckpt, g_plain)
    assert peak_plain >= n * state_bytes  # the plain tape keeps every state
    assert peak_ckpt <= (2 * math.sqrt(n) + 2) * state_bytes, (peak_ckpt / state_bytes, peak_plain / state_bytes)


# -- binomial (revolve) schedule --------------------------------------------------------------
@pytest.mark.parametrize("n, snapshots", [(20, 0), (20, 1), (23, 2), (23, 3), (20, None), (5, 10), (1, 2)])
def test_revolve_bitwise_equal_to_plain_tape(n, snapshots):
    want = _kernel_grads(n, None)
    got = _kernel_grads(n, None, schedule="revolve", snapshots=snapshots)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_revolve_mass_spring_bitwise_equal_to_plain_tape():
    want, _ = _spring_grads(23, None)
    got, tape = _spring_grads(23, None, schedule="revolve", snapshots=2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("n, s", [(60, 2), (60, 4), (100, 3)])
def test_revolve_keeps_at_most_s_plus_three_states_and_recomputes_per_binomial_bound(n, s):
    from math import comb

    from kernelcore.checkpoint_revolve import revolve_split

    x0, w, c, step = _kernel_problem()
    calls = []
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        cur = kc.checkpointed(lambda i, a, b: (calls.append(i), step(i, a, b)), x0, n, schedule="revolve",
                              snapshots=s)
        kc.launch(_sum_squares, x0.shape[0], inputs=[cur], outputs=[loss])
    loop = tape.launches[-2].loop
    forward_calls = len(calls)
    tape.backward(loss)
    assert loop.allocated <= s + 3
    r = next(r for r in range(1, n) if comb(s + r, s) >= n)
    backward_calls = len(calls) - forward_calls
    assert backward_calls == loop.steps_run
    assert backward_calls <= r * n + n  # each step re-run at most r times, plus its recorded run
    assert 1 <= revolve_split(n, s) < n


def test_revolve_bad_arguments():
    x0, w, c, step = _kernel_problem()
    with pytest.raises(ValueError, match="snapshots must be an integer >= 0"):
        kc.checkpointed(step, x0, 5, schedule="revolve", snapshots=-1)
    with pytest.raises(ValueError, match="schedule must be"):
        kc.checkpointed(step, x0, 5, schedule="binomial")
    with pytest.raises(ValueError, match="segment= is for schedule='sqrt'"):
        kc.checkpointed(step, x0, 5, schedule="revolve", segment=2)


def test_revolve_peak_memory_is_about_s_states():
    n, size, s = 64, 50_000, 3
    state_bytes = 2 * 4 * size  # value + gradient, float32
    peak, g = _peak_bytes(n, None, size, schedule="revolve", snapshots=s)
    np.testing.assert_array_equal(g, _peak_bytes(n, None, size)[1])
    # the final state, s snapshots, 2 work states (measured: s + 2 allocated), some slack
    assert peak <= (s + 4) * state_bytes, peak / state_bytes


def test_revolve_on_state_grad_sees_the_same_gradients_as_the_sqrt_schedule():
    def norms(**kw):
        x0, w, c, step = _kernel_problem()
        seen = []
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        tape = kc.Tape()
        with tape:
            cur = kc.checkpointed(step, x0, 13, on_state_grad=lambda i, s: seen.append((i, s.grad.numpy().copy())),
                                  **kw)
            kc.launch(_sum_squares, x0.shape[0], inputs=[cur], outputs=[loss])
        tape.backward(loss)
        return seen

    want, got = norms(segment=4), norms(schedule="revolve", snapshots=2)
    assert [i for i, _ in got] == list(range(13, -1, -1)) == [i for i, _ in want]
    for (_, g), (_, w) in zip(got, want):
        np.testing.assert_array_equal(g, w)
