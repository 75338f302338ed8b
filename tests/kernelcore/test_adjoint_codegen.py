"""How adjoints are emitted (emit_cpp.emit_adjoint_body, kc::adj_zero) and that the
reordering keeps gradients exact: replay values sunk to their first use in the reverse
sweep, values that must stay in place (dynamic loops, random states), and adjoint
accumulators that start at -0.0 without ever leaving -0.0 in a gradient."""
import re

import numpy as np

import kernelcore as kc


@kc.kernel
def stencil(x: kc.array(dtype=kc.float64), w: kc.array(dtype=kc.float64, ndim=2), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    c = x[i] * 2.0
    for k in range(3):          # static: unrolled, one replay segment per iteration (as in MPM's P2G)
        g = w[i, k]
        out[i] += kc.sin(c * g) * g * c


def _bwd_thread(source, name):
    start = source.index("_bwd_thread(", source.index(f"{name}_"))
    return source[start:source.index("\n}\n", start)]


def test_unrolled_iterations_replay_next_to_their_reverse():
    body = _bwd_thread(stencil.source, "k_stencil")
    lines = [l.strip() for l in body.splitlines() if not l.startswith("#line")]
    first_adjoint = next(k for k, l in enumerate(lines) if l.startswith("kc::adj_"))
    # the w[i, k] reads of the three iterations: all but the last come after reverse statements
    loads = [k for k, l in enumerate(lines) if re.search(r"= kc::load\(v\d+, v\d+, v\d+\);", l)]
    assert len(loads) == 3
    assert sum(k > first_adjoint for k in loads) >= 2


def test_unrolled_iterations_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    x = kc.array(rng.uniform(-1, 1, 5), dtype=kc.float64, requires_grad=True)
    w = kc.array(rng.uniform(-1, 1, (5, 3)), dtype=kc.float64, requires_grad=True)
    out = kc.zeros(5, dtype=kc.float64, requires_grad=True)
    r = kc.autograd.gradcheck(stencil, dim=5, inputs=[x, w], outputs=[out], eps=1e-6, atol=1e-7, rtol=1e-6,
                              raise_exception=False, show_summary=False)
    assert r, r.summary()


@kc.kernel
def outer_value_in_dynamic_loop(x: kc.array(dtype=kc.float64), n: int, out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    a = kc.exp(x[i])            # read by the loop body (a lambda in the adjoint) and by the reverse sweep
    b = a * x[i]
    p = kc.float64(1.0)
    for k in range(n):
        p = p * a + kc.float64(k) * 0.1
    out[i] = p + b * b


def test_values_read_inside_dynamic_loops_stay_in_place():
    x = kc.array(np.array([0.1, -0.3, 0.25]), dtype=kc.float64, requires_grad=True)
    out = kc.zeros(3, dtype=kc.float64, requires_grad=True)
    r = kc.autograd.gradcheck(outer_value_in_dynamic_loop, dim=3, inputs=[x, 4], outputs=[out], eps=1e-6,
                              atol=1e-7, rtol=1e-6, raise_exception=False, show_summary=False)
    assert r, r.summary()


@kc.kernel
def noisy_scale(x: kc.array(dtype=float), seed: int, y: kc.array(dtype=float)):
    i = kc.tid()
    state = kc.rand_init(seed, i)
    r1 = kc.randf(state)        # each draw updates the state: never moved
    r2 = kc.randf(state)
    y[i] = x[i] * r1 + x[i] * x[i] * r2


def test_random_draws_are_not_reordered_in_the_adjoint():
    n = 64
    x0 = np.linspace(0.5, 1.5, n).astype(np.float32)
    x = kc.array(x0, dtype=float, requires_grad=True)
    y = kc.zeros(n, dtype=float, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(noisy_scale, dim=n, inputs=[x, 42], outputs=[y])
    tape.backward(grads={y: np.ones(n, np.float32)})
    # recover the two draws of each thread from two extra forward runs with x = 1 and x = 2
    y1, y2 = kc.zeros(n, dtype=float), kc.zeros(n, dtype=float)
    kc.launch(noisy_scale, dim=n, inputs=[kc.array(np.ones(n, np.float32), dtype=float), 42], outputs=[y1])
    kc.launch(noisy_scale, dim=n, inputs=[kc.array(np.full(n, 2, np.float32), dtype=float), 42], outputs=[y2])
    r2 = (y2.numpy() - 2 * y1.numpy()) / 2.0          # y(1) = r1 + r2, y(2) = 2 r1 + 4 r2
    r1 = y1.numpy() - r2
    assert np.all(r1 != r2)
    np.testing.assert_allclose(x.grad.numpy(), r1 + 2 * x0 * r2, rtol=1e-5, atol=1e-6)


@kc.kernel
def ignores_input(x: kc.array(dtype=float), m: kc.array(dtype=kc.mat22), y: kc.array(dtype=float)):
    i = kc.tid()
    unused = x[i] * 3.0         # its adjoint never receives a contribution: stays kc::adj_zero (-0.0)
    k = m[i]
    y[i] = 1.0 + unused * 0.0 * k[0, 0]


def test_untouched_adjoints_leave_positive_zero_gradients():
    n = 8
    x = kc.array(np.linspace(-1, 1, n).astype(np.float32), dtype=float, requires_grad=True)
    m = kc.zeros(n, dtype=kc.mat22, requires_grad=True)
    y = kc.zeros(n, dtype=float, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(ignores_input, dim=n, inputs=[x, m], outputs=[y])
    tape.backward(grads={y: np.ones(n, np.float32)})
    for g in (x.grad.numpy(), m.grad.numpy()):
        assert np.all(g == 0.0)
        assert not np.any(np.signbit(g)), "a -0.0 adjoint start value leaked into a gradient"


def test_adjoint_accumulators_start_at_negative_zero():
    body = _bwd_thread(stencil.source, "k_stencil")
    assert "kc::adj_zero<kc::float64>()" in body
    assert "KC_ADJOINT_FUNC" in stencil.source


@kc.kernel
def weighted_gather(g: kc.array(dtype=kc.vec2d), w: kc.array(dtype=kc.float64), dt: kc.float64,
                    v_out: kc.array(dtype=kc.vec2d), x_out: kc.array(dtype=kc.vec2d)):
    i = kc.tid()
    s = kc.vec2d(0.0, 0.0)
    for k in range(3):          # a running sum, as in MPM's G2P
        s += g[i * 3 + k] * w[i * 3 + k]
    v_out[i] = s
    x_out[i] = s * dt           # dt's adjoint goes nowhere: s is not needed for it


def test_running_sum_is_not_replayed_for_the_adjoint():
    """The adjoints of add, store and of a product with a kernel value argument read no values
    (registry adj_ignores / adj_bilinear): the replay drops the running sum and each g read
    comes right before its own reverse statements."""
    body = _bwd_thread(weighted_gather.source, "k_weighted_gather")
    lines = [l.strip() for l in body.splitlines() if not l.startswith("#line")]
    first_adjoint = next(k for k, l in enumerate(lines) if l.startswith("kc::adj_"))
    replayed = "\n".join(lines[:first_adjoint])
    assert "kc::add(" not in replayed and "kc::load(" not in replayed
    assert "kc::adj_store(v" in body and "kc::vec_t<2,kc::float64>{}" in body


def test_running_sum_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    g = kc.array(rng.normal(size=(12, 2)), dtype=kc.vec2d, requires_grad=True)
    w = kc.array(rng.normal(size=12), dtype=kc.float64, requires_grad=True)
    v_out = kc.zeros(4, dtype=kc.vec2d, requires_grad=True)
    x_out = kc.zeros(4, dtype=kc.vec2d, requires_grad=True)
    r = kc.autograd.gradcheck(weighted_gather, dim=4, inputs=[g, w, 0.3], outputs=[v_out, x_out], eps=1e-6,
                              atol=1e-7, rtol=1e-6, raise_exception=False, show_summary=False)
    assert r, r.summary()
