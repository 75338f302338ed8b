"""Adversarial combinations of today's compiler features (issues #14, #23): early exits inside
ternary-driven branches inside dynamic loops, short-circuit reads in while loops, element stores
with early exits under a Tape, nested tapes over ping-pong buffers, @kc.func returns from nested
loops with default args, svd3 in a loop with break, negative indices in the adjoint, kc.static
ranges with break. Forward values against plain Python, gradients against float64 central
finite differences."""
import math

import numpy as np
import pytest

import kernelcore as kc

F64 = kc.array(dtype=kc.float64)
N_THREADS = 4


def _x0():
    # values away from every branch threshold used below, so finite differences stay on one side
    return np.array([0.61, -0.37, 0.83, 0.27, -0.72, 0.45, 0.93, -0.18])


def _forward_and_gradcheck(kernel, n, x0=None):
    """Run ``kernel(x, n, out)``; gradcheck it in float64; return the forward values."""
    x0 = _x0() if x0 is None else x0
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(N_THREADS, dtype=kc.float64, requires_grad=True)
    kc.launch(kernel, dim=N_THREADS, inputs=[x, n], outputs=[out])
    values = out.numpy().copy()
    r = kc.autograd.gradcheck(kernel, dim=N_THREADS, inputs=[x, n], outputs=[out], eps=1e-6,
                              atol=1e-6, rtol=1e-5, raise_exception=False, show_summary=False)
    assert r, r.summary()
    return values


def _check(kernel, reference, n=6, x0=None):
    x0 = _x0() if x0 is None else x0
    values = _forward_and_gradcheck(kernel, n, x0)
    ref = [reference(x0, i, n) for i in range(N_THREADS)]
    np.testing.assert_allclose(values, ref, rtol=1e-12, atol=1e-12)


# ---- break inside a loop inside a ternary-driven if inside a dynamic loop

@kc.kernel
def break_in_ternary_if_in_dynamic(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.3)
    for k in range(n):
        v = x[(i + k) % 8]
        c = v if v > 0.0 else -v * 0.5
        if c > 0.4:
            for j in range(3):
                s = s + c * kc.float64(j + 1)
                if s > 2.0:
                    break
        else:
            s = s * (1.0 + c)
    out[i] = s * s


def ref_break_in_ternary_if_in_dynamic(x, i, n):
    s = 0.3
    for k in range(n):
        v = x[(i + k) % 8]
        c = v if v > 0.0 else -v * 0.5
        if c > 0.4:
            for j in range(3):
                s = s + c * (j + 1)
                if s > 2.0:
                    break
        else:
            s = s * (1.0 + c)
    return s * s


def test_break_in_ternary_if_in_dynamic():
    _check(break_in_ternary_if_in_dynamic, ref_break_in_ternary_if_in_dynamic)


# ---- short-circuit conditions on array reads inside a while loop with continue

@kc.kernel
def while_short_circuit_continue(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    k = int(0)
    while k < n and s < 3.0:
        k += 1
        j = (i + k) % 8
        if x[j] < 0.0 or (k > 2 and x[j] * x[j] > 0.5):
            continue
        s = s + kc.exp(x[j])
    out[i] = s


def ref_while_short_circuit_continue(x, i, n):
    s = 0.0
    k = 0
    while k < n and s < 3.0:
        k += 1
        j = (i + k) % 8
        if x[j] < 0.0 or (k > 2 and x[j] * x[j] > 0.5):
            continue
        s = s + math.exp(x[j])
    return s


def test_while_short_circuit_continue():
    _check(while_short_circuit_continue, ref_while_short_circuit_continue, n=12)


# ---- short-circuit guarding an out-of-range read (the right side must not be evaluated)

@kc.kernel
def short_circuit_guards_read(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        j = i + k
        if j < 8 and x[j] > 0.0:
            s = s + x[j] * x[j]
        t = x[j] if j < 8 else kc.float64(1.0)
        s = s + 0.1 * t
    out[i] = s


def ref_short_circuit_guards_read(x, i, n):
    s = 0.0
    for k in range(n):
        j = i + k
        if j < 8 and x[j] > 0.0:
            s = s + x[j] * x[j]
        t = x[j] if j < 8 else 1.0
        s = s + 0.1 * t
    return s


def test_short_circuit_guards_read():
    _check(short_circuit_guards_read, ref_short_circuit_guards_read, n=7)


# ---- return from inside nested loops in a @kc.func with default args, called from a dynamic loop

@kc.func
def first_big(x: F64, start: int, thresh: kc.float64 = kc.float64(0.5), scale: kc.float64 = kc.float64(2.0)):
    for a in range(3):
        for b in range(4):
            v = x[(start + a * 4 + b) % 8]
            if v * v > thresh:
                return v * scale
    return kc.float64(0.0)


@kc.kernel
def func_return_nested_defaults(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        s = s + first_big(x, i + k) + first_big(x, i + k, scale=kc.float64(-1.0), thresh=kc.float64(0.3))
    out[i] = s


def _ref_first_big(x, start, thresh=0.5, scale=2.0):
    for a in range(3):
        for b in range(4):
            v = x[(start + a * 4 + b) % 8]
            if v * v > thresh:
                return v * scale
    return 0.0


def ref_func_return_nested_defaults(x, i, n):
    s = 0.0
    for k in range(n):
        s = s + _ref_first_big(x, i + k) + _ref_first_big(x, i + k, scale=-1.0, thresh=0.3)
    return s


def test_func_return_nested_defaults():
    _check(func_return_nested_defaults, ref_func_return_nested_defaults)


# ---- kc.static range with break and continue

N_STATIC = 6

@kc.kernel
def static_range_break(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(1.0)
    for k in range(kc.static(N_STATIC)):
        if x[(i + k) % 8] < -0.5:
            continue
        s = s * (1.0 + 0.5 * x[(i + k) % 8])
        if s > 1.6:
            break
    out[i] = s


def ref_static_range_break(x, i, n):
    s = 1.0
    for k in range(6):
        if x[(i + k) % 8] < -0.5:
            continue
        s = s * (1.0 + 0.5 * x[(i + k) % 8])
        if s > 1.6:
            break
    return s


def test_static_range_break():
    _check(static_range_break, ref_static_range_break)


# ---- negative indices (Warp 1.19: a[-1] is the last element) in the adjoint

@kc.kernel
def negative_index_adjoint(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        s = s + x[-1 - ((i + k) % 8)] * x[i - 3]
    out[i] = s


def ref_negative_index_adjoint(x, i, n):
    s = 0.0
    for k in range(n):
        s = s + x[-1 - ((i + k) % 8)] * x[i - 3]
    return s


def test_negative_index_adjoint():
    _check(negative_index_adjoint, ref_negative_index_adjoint)


# ---- % and // on negative integers in a loop (Python floor vs C truncation)

@kc.kernel
def floor_mod_in_loop(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        m = (i - k - 2) % 8
        q = (i - k - 2) // 3
        s = s + x[m] * kc.float64(q)
    out[i] = s


def ref_floor_mod_in_loop(x, i, n):
    s = 0.0
    for k in range(n):
        m = (i - k - 2) % 8
        q = (i - k - 2) // 3
        s = s + x[m] * q
    return s


def test_floor_mod_in_loop():
    _check(floor_mod_in_loop, ref_floor_mod_in_loop)


# ---- an index that starts at a non-negative constant and is decremented in a loop must wrap

@kc.kernel
def decremented_index(x: F64, n: int, out: F64):
    i = kc.tid()
    j = 0
    s = kc.float64(0.0)
    for k in range(n):
        s = s + x[j] * kc.float64(k + 1)
        j = j - 1 - i % 2
    out[i] = s


def ref_decremented_index(x, i, n):
    j = 0
    s = 0.0
    for k in range(n):
        s = s + x[j] * (k + 1)
        j = j - 1 - i % 2
    return s


def test_decremented_index():
    _check(decremented_index, ref_decremented_index, n=4)


@kc.kernel
def decremented_index_while(x: F64, n: int, out: F64):
    i = kc.tid()
    j = i
    s = kc.float64(0.0)
    while j > -n:
        s = s + x[j] * x[j]
        j -= 1
    out[i] = s


def ref_decremented_index_while(x, i, n):
    j = i
    s = 0.0
    while j > -n:
        s = s + x[j] * x[j]
        j -= 1
    return s


def test_decremented_index_while():
    _check(decremented_index_while, ref_decremented_index_while)


# ---- counted loops whose counter goes negative

@kc.kernel
def negative_range_counter(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(2, -n, -1):
        s = s + x[k] * kc.float64(k)
    for k in range(-3, n - 4):
        s = s + x[k - i] * x[k]
    for k in range(-2, 2):
        s = s + 0.5 * x[k + i]
    out[i] = s


def ref_negative_range_counter(x, i, n):
    s = 0.0
    for k in range(2, -n, -1):
        s = s + x[k] * k
    for k in range(-3, n - 4):
        s = s + x[k - i] * x[k]
    for k in range(-2, 2):
        s = s + 0.5 * x[k + i]
    return s


def test_negative_range_counter():
    _check(negative_range_counter, ref_negative_range_counter)


@kc.kernel
def negative_divisor_index(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        s = s + x[(i + k) % (k - 8)] + x[(i + k + 1) // (-1 - k)]
    out[i] = s


def ref_negative_divisor_index(x, i, n):
    s = 0.0
    for k in range(n):
        # int % is the C remainder (sign of the dividend) as in Warp 1.19; // rounds down
        s = s + x[int(math.fmod(i + k, k - 8))] + x[(i + k + 1) // (-1 - k)]
    return s


def test_negative_divisor_index():
    _check(negative_divisor_index, ref_negative_divisor_index)


# ---- element stores in loop with early exit

@kc.struct
class P:
    pos: kc.vec3d
    vel: kc.vec3d


@kc.kernel
def elem_loop(x: F64, n: int, p: kc.array(dtype=P), loss: F64):
    i = kc.tid()
    p[i].pos = kc.vec3d(x[i], x[i + 4], kc.float64(0.0))
    for k in range(n):
        v = x[(i + k) % 8]
        if v < -0.5:
            break
        p[i].vel = kc.vec3d(v, v * v, kc.float64(1.0))
        p[i].pos.z += v * 2.0
        p[i].pos = p[i].pos + p[i].vel * 0.1
    kc.atomic_add(loss, 0, kc.dot(p[i].pos, p[i].pos) + p[i].vel[1])


def run_elem(x):
    p = kc.zeros(4, dtype=P, requires_grad=True); loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    kc.launch(elem_loop, 4, inputs=[x, 6, p, loss]); return loss


def ref_elem(x):
    L = 0
    for i in range(4):
        pos = np.array([x[i], x[i + 4], 0.0]); vel = np.zeros(3)
        for k in range(6):
            v = x[(i + k) % 8]
            if v < -0.5: break
            vel = np.array([v, v * v, 1.0]); pos[2] += 2 * v; pos = pos + vel * 0.1
        L += pos @ pos + vel[1]
    return L

# ---- svd3 in a loop with break

@kc.kernel
def svd_loop(x: F64, n: int, loss: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        a = x[(i + k) % 8]
        m = kc.mat33d(2.0 + a, 0.3 * a, kc.float64(0.1), kc.float64(0.2), 1.0 - a, a * a, kc.float64(0.5), kc.float64(-0.4), kc.float64(3.0))
        U, sig, V = kc.svd3(m)
        s = s + sig[0] + 0.5 * sig[2] + U[0, 0] * V[0, 0]
        if s > 7.0:
            break
    kc.atomic_add(loss, 0, s)


def run_svd(x):
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    kc.launch(svd_loop, 4, inputs=[x, 6, loss]); return loss


def ref_svd(x):
    L = 0
    for i in range(4):
        s = 0
        for k in range(6):
            a = x[(i + k) % 8]
            m = np.array([[2 + a, .3 * a, .1], [.2, 1 - a, a * a], [.5, -.4, 3.]])
            U, S, Vt = np.linalg.svd(m)
            # sign convention of U, V columns is ambiguous; U00*V00 is invariant to a joint column flip
            s += S[0] + 0.5 * S[2] + U[0, 0] * Vt[0, 0]
            if s > 7.0: break
        L += s
    return L

# ---- ternary / short-circuit guarding NaN in the untaken side

@kc.kernel
def guard_nan(x: F64, n: int, loss: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        v = x[(i + k) % 8]
        r = kc.sqrt(v) if v > 0.0 else -v
        if v > 0.0 and kc.log(v) > -0.5:
            r = r + kc.log(v)
        if v <= 0.0 or kc.sqrt(v) < 0.8:
            r = r * 2.0
        s = s + r
    kc.atomic_add(loss, 0, s)


def run_guard(x):
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    kc.launch(guard_nan, 4, inputs=[x, 6, loss]); return loss


def ref_guard(x):
    L = 0
    for i in range(4):
        for k in range(6):
            v = x[(i + k) % 8]
            r = math.sqrt(v) if v > 0 else -v
            if v > 0 and math.log(v) > -0.5: r += math.log(v)
            if v <= 0 or math.sqrt(v) < 0.8: r *= 2
            L += r
    return L


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _tape_and_fd_gradients(run, x0):
    """``run(x) -> loss`` (one-element array): loss, tape gradient and float64 central differences."""
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        loss = run(x)
    tape.backward(loss)
    fd = [(run(kc.array(x0 + e, dtype=kc.float64)).numpy()[0] - run(kc.array(x0 - e, dtype=kc.float64)).numpy()[0])
          / 2e-6 for e in np.eye(len(x0)) * 1e-6]
    return loss.numpy()[0], x.grad.numpy().copy(), np.array(fd)


@pytest.mark.parametrize("run, ref", [(run_elem, ref_elem), (run_svd, ref_svd), (run_guard, ref_guard)],
                         ids=["element_stores_with_break", "svd3_in_loop_with_break", "untaken_side_not_differentiated"])
def test_loop_exits_under_a_tape(run, ref):
    x0 = _x0()
    loss, grad, fd = _tape_and_fd_gradients(run, x0)
    assert loss == pytest.approx(ref(x0), rel=1e-12, abs=1e-12)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


# ---- nested tapes over ping-pong buffers, a dynamic loop with break in the step, backward twice

@kc.kernel
def ping_pong_step(a: F64, b: F64, c: kc.float64, n: int):
    i = kc.tid()
    m = a.shape[0]
    s = kc.float64(0.0)
    for k in range(n):
        if k > 2 + i % 2:
            break
        s = s + 0.1 * a[(i + k) % m]
    b[i] = c * a[i] + s

@kc.kernel
def weighted_sum(a: F64, loss: F64):
    i = kc.tid()
    kc.atomic_add(loss, 0, a[i] * kc.float64(i + 1))

def rollout(x0, c, tape_pair=None, steps=5):
    bufs = [kc.zeros(8, dtype=kc.float64, requires_grad=True) for _ in range(2)]
    loss = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    if tape_pair is None:
        kc.launch(ping_pong_step, 8, inputs=[x0, bufs[0], c, 6])
        for k in range(steps - 1):
            kc.launch(ping_pong_step, 8, inputs=[bufs[k % 2], bufs[(k + 1) % 2], c, 6])
        kc.launch(weighted_sum, 8, inputs=[bufs[(steps - 1) % 2], loss])
        return loss
    outer, inner = tape_pair
    with outer:
        kc.launch(ping_pong_step, 8, inputs=[x0, bufs[0], c, 6])
        with inner:
            for k in range(steps - 1):
                kc.launch(ping_pong_step, 8, inputs=[bufs[k % 2], bufs[(k + 1) % 2], c, 6])
        kc.launch(weighted_sum, 8, inputs=[bufs[(steps - 1) % 2], loss])
    return loss


def test_nested_tapes_ping_pong_with_break_backward_twice():
    x0 = _x0()
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    outer, inner = kc.Tape(), kc.Tape()
    loss = rollout(x, 0.9, (outer, inner))
    outer.backward(loss)
    grad = x.grad.numpy().copy()
    f = lambda xv: rollout(kc.array(xv, dtype=kc.float64), 0.9).numpy()[0]
    fd = np.array([(f(x0 + e) - f(x0 - e)) / 2e-6 for e in np.eye(8) * 1e-6])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)
    outer.backward(loss)       # a second backward adds the same gradient again (Warp 1.19)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * grad, rtol=1e-13, atol=1e-13)


# ---- Warp 1.19 also writes the decompositions with output arguments: wp.svd3(A, U, sigma, V),
# wp.eig3(A, Q, d), wp.qr3(A, Q, R) assign existing locals; here inside a dynamic loop with break
# (the outputs are loop-carried) and differentiated

M64 = kc.array(dtype=kc.mat33d)


@kc.kernel
def decompositions_out_arguments(A: M64, n: int, out: F64):
    i = kc.tid()
    U = kc.mat33d()
    sig = kc.vec3d()
    V = kc.mat33d()
    Q = kc.mat33d()
    d = kc.vec3d()
    R = kc.mat33d()
    acc = kc.float64(0.0)
    for k in range(n):
        B = A[i] * (kc.float64(1.0) + kc.float64(0.1) * kc.float64(k))
        kc.svd3(B, U, sig, V)
        kc.eig3(B + kc.transpose(B), Q, d)
        kc.qr3(B, Q, R)
        dmin = kc.min(kc.min(d[0], d[1]), d[2])   # (Warp's eig3 leaves d unsorted)
        acc = acc + sig[0] + 0.5 * sig[2] + 0.25 * dmin + 0.125 * R[1, 1]
        if acc > 40.0:
            break
    # the last values written by the calls stay in the locals after the loop
    out[i] = acc + U[0, 0] * V[1, 1] + d[2] + Q[0, 1] * R[0, 2]


def _out_arg_reference(A, n):
    acc = 0.0
    for k in range(n):
        B = A * (1.0 + 0.1 * k)
        s = np.linalg.svd(B, compute_uv=False)
        s = np.array([s[0], s[1], s[2] * np.sign(np.linalg.det(B))])
        dmin = np.linalg.eigvalsh(B + B.T).min()
        r = np.linalg.qr(B)[1]
        acc += s[0] + 0.5 * s[2] + 0.25 * dmin + 0.125 * abs(r[1, 1])
        if acc > 40.0:
            break
    return acc


def _well_conditioned(m):
    rng = np.random.default_rng(14)
    return np.stack([np.diag([3.0, 2.0, 1.0]) + 0.3 * rng.standard_normal((3, 3)) for _ in range(m)])


def test_decompositions_with_out_arguments_values_and_gradients():
    A0 = _well_conditioned(3)
    for n in (4, 0):
        A = kc.array(A0, dtype=kc.mat33d, requires_grad=True)
        out = kc.zeros(3, dtype=kc.float64, requires_grad=True)
        kc.launch(decompositions_out_arguments, 3, inputs=[A, n], outputs=[out])
        # same values as the tuple form (whose accumulated part is checked against numpy)
        np.testing.assert_allclose(out.numpy(), _tuple_form_values(A0, n), rtol=1e-13, atol=1e-13)
        r = kc.autograd.gradcheck(decompositions_out_arguments, dim=3, inputs=[A, n], outputs=[out], eps=1e-6,
                                  atol=1e-6, rtol=1e-5, raise_exception=False, show_summary=False)
        assert r, r.summary()


@kc.kernel
def decompositions_tuple_form(A: M64, n: int, out: F64, accs: F64):
    i = kc.tid()
    U = kc.mat33d()
    sig = kc.vec3d()
    V = kc.mat33d()
    Q = kc.mat33d()
    d = kc.vec3d()
    R = kc.mat33d()
    acc = kc.float64(0.0)
    for k in range(n):
        B = A[i] * (kc.float64(1.0) + kc.float64(0.1) * kc.float64(k))
        U, sig, V = kc.svd3(B)
        Q, d = kc.eig3(B + kc.transpose(B))
        Q, R = kc.qr3(B)
        dmin = kc.min(kc.min(d[0], d[1]), d[2])   # (Warp's eig3 leaves d unsorted)
        acc = acc + sig[0] + 0.5 * sig[2] + 0.25 * dmin + 0.125 * R[1, 1]
        if acc > 40.0:
            break
    out[i] = acc + U[0, 0] * V[1, 1] + d[2] + Q[0, 1] * R[0, 2]
    accs[i] = acc


def _tuple_form_values(A0, n):
    out, accs = kc.zeros(len(A0), dtype=kc.float64), kc.zeros(len(A0), dtype=kc.float64)
    kc.launch(decompositions_tuple_form, len(A0), inputs=[kc.array(A0, dtype=kc.mat33d), n], outputs=[out, accs])
    np.testing.assert_allclose(accs.numpy(), [_out_arg_reference(A0[i], n) for i in range(len(A0))], rtol=1e-10)
    return out.numpy()


def test_decompositions_with_out_arguments_same_as_warp():
    """Warp 1.19 runs the same out-argument program (float32: its svd3 is float32-accurate)."""
    wp = pytest.importorskip("warp", reason="warp-lang is the oracle")
    from _warp_lang14 import warp_decompositions_out_arguments

    A0 = _well_conditioned(3)
    out, accs = kc.zeros(3, dtype=kc.float64), kc.zeros(3, dtype=kc.float64)
    kc.launch(decompositions_tuple_form, 3, inputs=[kc.array(A0, dtype=kc.mat33d), 4], outputs=[out, accs])
    w_acc = warp_decompositions_out_arguments(wp, A0, 4)
    np.testing.assert_allclose(accs.numpy(), w_acc, rtol=1e-5)


def test_out_argument_errors_name_the_output(tmp_path):
    def build(src_body):
        ns = {"kc": kc, "M64": M64, "F64": F64}
        src = "@kc.kernel\ndef bad(A: M64, out: F64):\n    i = kc.tid()\n" + src_body
        path = str(tmp_path / f"out_args_{len(list(tmp_path.iterdir()))}.py")
        with open(path, "w") as f:
            f.write(src)
        exec(compile(src, path, "exec"), ns)
        return ns["bad"]

    k = build("    U = kc.mat33d()\n    V = kc.mat33d()\n    s = kc.vec3()\n    kc.svd3(A[i], U, s, V)\n    out[i] = s[0]\n")
    with pytest.raises(kc.KernelCompileError, match=r"output 'sigma' \('s'\) is a vec3; for this A it must be a vec3d"):
        kc.launch(k, 1, inputs=[kc.zeros(1, dtype=kc.mat33d), kc.zeros(1, dtype=kc.float64)])
    k = build("    Q = kc.mat33d()\n    kc.qr3(A[i], Q, R)\n    out[i] = Q[0, 0]\n")
    with pytest.raises(kc.KernelCompileError, match=r"output 'R' must be a local variable defined before the call"):
        kc.launch(k, 1, inputs=[kc.zeros(1, dtype=kc.mat33d), kc.zeros(1, dtype=kc.float64)])
    k = build("    Q = kc.mat33d()\n    d = kc.vec3d()\n    x = kc.eig3(A[i], Q, d)\n    out[i] = d[0]\n")
    with pytest.raises(kc.KernelCompileError, match=r"gives no value"):
        kc.launch(k, 1, inputs=[kc.zeros(1, dtype=kc.mat33d), kc.zeros(1, dtype=kc.float64)])


# ---- a loop counter bound before the loop keeps its last value after it (Python; Warp 1.19 gives
# [4, 3, 2, 1] below too). A dynamic loop used to drop it: k read -1, the value before the loop.

@kc.kernel
def counter_after_loop(x: F64, n: int, out: F64):
    i = kc.tid()
    k = int(-1)
    for k in range(n):
        if x[(i + k) % 8] < -0.5:
            break
    m = 0
    for m in range(n):
        m = m + 10
    c = int(-1)
    for c in range(3):                  # unrolled
        if x[(i + c) % 8] < -0.5:
            break
    out[i] = x[i] * kc.float64(k) + 100.0 * kc.float64(m) + 1000.0 * kc.float64(c)


def ref_counter_after_loop(x, i, n):
    k = -1
    for k in range(n):
        if x[(i + k) % 8] < -0.5:
            break
    m = 0
    for m in range(n):
        m = m + 10
    c = -1
    for c in range(3):
        if x[(i + c) % 8] < -0.5:
            break
    return x[i] * k + 100.0 * m + 1000.0 * c


@pytest.mark.parametrize("n", [6, 0])
def test_loop_counter_keeps_its_last_value_after_the_loop(n):
    _check(counter_after_loop, ref_counter_after_loop, n=n)


def test_unrolled_inner_counter_reuses_a_carried_name():
    @kc.kernel
    def reuse(x: F64, n: int, out: F64):
        i = kc.tid()
        j = int(0)
        s = kc.float64(0.0)
        for k in range(n):
            for j in range(2):
                s = s + x[(i + j + k) % 8]
        out[i] = s + kc.float64(j)

    def ref(x, i, n):
        j, s = 0, 0.0
        for k in range(n):
            for j in range(2):
                s = s + x[(i + j + k) % 8]
        return s + j

    _check(reuse, ref)
    _check(reuse, ref, n=0)     # the outer loop runs 0 times: j keeps its value from before


@kc.kernel
def reuse_carried_counter_with_break(x: F64, n: int, out: F64):
    i = kc.tid()
    j = int(0)
    s = kc.float64(0.0)
    for k in range(n):
        for j in range(3):              # unrolled; leaves j at the iteration that broke
            s = s + x[(i + j + k) % 8] * x[(i + k) % 8]
            if x[(i + j + k) % 8] < -0.5:
                break
    out[i] = s + kc.float64(j)


def ref_reuse_carried_counter_with_break(x, i, n):
    j, s = 0, 0.0
    for k in range(n):
        for j in range(3):
            s = s + x[(i + j + k) % 8] * x[(i + k) % 8]
            if x[(i + j + k) % 8] < -0.5:
                break
    return s + j


@pytest.mark.parametrize("n", [6, 0])
def test_unrolled_inner_counter_with_break_reuses_a_carried_name(n):
    _check(reuse_carried_counter_with_break, ref_reuse_carried_counter_with_break, n=n)


def test_unrolled_inner_counter_reuse_same_as_warp():
    wp = pytest.importorskip("warp", reason="warp-lang is the oracle")
    from _warp_lang14 import warp_reuse_carried_counter

    x0 = _x0()
    for n in (6, 0):
        out = kc.zeros(N_THREADS, dtype=kc.float64)
        kc.launch(reuse_carried_counter_with_break, N_THREADS, inputs=[kc.array(x0, dtype=kc.float64), n], outputs=[out])
        np.testing.assert_allclose(out.numpy(), warp_reuse_carried_counter(wp, x0, n, N_THREADS), rtol=1e-14)


# ---- side effects (atomics in @kc.func calls) happen only on the evaluated side of and/or/ternaries,
# in a while condition and under continue

@kc.func
def count_and_test(c: kc.array(dtype=kc.int32), v: kc.float64):
    kc.atomic_add(c, 0, 1)
    return v > 0.5


@kc.func
def count_and_double(c: kc.array(dtype=kc.int32), v: kc.float64):
    kc.atomic_add(c, 1, 1)
    return v * 2.0


@kc.kernel
def side_effects_in_short_circuits(x: F64, c: kc.array(dtype=kc.int32), out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    k = int(0)
    while k < 8 and (x[k] > -0.5 or count_and_test(c, x[k])):
        v = x[k]
        s = s + (count_and_double(c, v) if v > 0.0 else -v)
        if v < 0.0 or count_and_test(c, v):
            k += 1
            continue
        s = s + 1.0
        k += 1
    out[i] = s


def test_side_effects_only_on_the_evaluated_side():
    x0 = _x0()
    c = kc.zeros(2, dtype=kc.int32)
    out = kc.zeros(1, dtype=kc.float64)
    kc.launch(side_effects_in_short_circuits, 1, inputs=[kc.array(x0, dtype=kc.float64), c], outputs=[out])
    calls = [0, 0]

    def test(v):
        calls[0] += 1
        return v > 0.5

    def double(v):
        calls[1] += 1
        return v * 2.0

    s, k = 0.0, 0
    while k < 8 and (x0[k] > -0.5 or test(x0[k])):
        v = x0[k]
        s = s + (double(v) if v > 0.0 else -v)
        if v < 0.0 or test(v):
            k += 1
            continue
        s = s + 1.0
        k += 1
    assert out.numpy()[0] == pytest.approx(s, rel=1e-14)
    np.testing.assert_array_equal(c.numpy(), calls)


# ---- element stores through negative indices inside a loop with continue, under a tape

@kc.kernel
def negative_index_element_stores(x: F64, v: kc.array(dtype=kc.vec3d), n: int):
    i = kc.tid()
    for k in range(n):
        if x[k] < -0.5:
            continue
        v[-1 - i][-1] += x[k] * x[k]
        v[i - 4].x = x[k] * 3.0


def test_negative_index_element_stores_under_a_tape():
    x0 = _x0()
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    v = kc.zeros(4, dtype=kc.vec3d, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(negative_index_element_stores, 4, inputs=[x, v, 6])
    valid = [k for k in range(6) if x0[k] >= -0.5]
    expected = np.zeros((4, 3))
    expected[:, 2] = sum(x0[k] ** 2 for k in valid)
    expected[:, 0] = 3.0 * x0[valid[-1]]
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-14)
    seed = np.zeros((4, 3))
    seed[:, [0, 2]] = 1.0
    tape.backward(grads={v: kc.array(seed, dtype=kc.vec3d)})
    grad = np.zeros(8)
    for k in valid:
        grad[k] += 4 * 2.0 * x0[k]
    grad[valid[-1]] += 4 * 3.0     # only the last store of v[i].x survives
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-13, atol=1e-13)


# ---- quat_to_axis_angle, acos, atan2 under continue; polar and qr3 in a while loop with break

@kc.kernel
def qaa(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        a = x[(i + k) % 8]
        if a < -0.5:
            continue
        q = kc.quat_from_axis_angle(kc.normalize(kc.vec3d(a, kc.float64(1.0), a * a)), 1.0 + a)
        axis, ang = kc.quat_to_axis_angle(q)
        s = s + ang * axis[0] + kc.acos(kc.clamp(a, -1.0, 1.0)) + kc.atan2(a, 0.5 - a)
    out[i] = s


def r_qaa(x, i, n):
    s = 0.0
    for k in range(n):
        a = x[(i + k) % 8]
        if a < -0.5: continue
        ax = np.array([a, 1.0, a * a]); ax /= np.linalg.norm(ax)
        s += (1 + a) * ax[0] + math.acos(min(max(a, -1), 1)) + math.atan2(a, 0.5 - a)
    return s


def test_quat_to_axis_angle_acos_atan2_in_a_loop_with_continue():
    _check(qaa, r_qaa)



@kc.kernel
def polar_loop(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    k = int(0)
    while k < n:
        a = x[(i + k) % 8]
        k += 1
        m = kc.mat33d(2.0 + a, 0.3 * a, kc.float64(0.1), kc.float64(0.2), 1.0 - 0.5 * a, a * a, kc.float64(0.5), kc.float64(-0.4), kc.float64(3.0))
        R, S = kc.polar(m)
        Q, Rr = kc.qr3(m)
        s = s + R[0, 1] + S[1, 1] + kc.abs(Rr[2, 2])
        if s > 6.0:
            break
    out[i] = s


def r_polar(x, i, n):
    s = 0.0; k = 0
    while k < n:
        a = x[(i + k) % 8]; k += 1
        m = np.array([[2 + a, .3 * a, .1], [.2, 1 - .5 * a, a * a], [.5, -.4, 3.]])
        U, sv, Vt = np.linalg.svd(m)
        R = U @ Vt; S = Vt.T @ np.diag(sv) @ Vt
        Q, Rr = np.linalg.qr(m)
        s += R[0, 1] + S[1, 1] + abs(Rr[2, 2])
        if s > 6.0: break
    return s


def test_polar_and_qr3_in_a_while_loop_with_break():
    _check(polar_loop, r_polar)
