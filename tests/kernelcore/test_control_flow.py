"""Control flow in kernels: early exits (break / continue / return) in every loop form,
short-circuit ``and`` / ``or`` and conditional expressions that evaluate (and differentiate)
only the taken side. Forward values against plain Python, gradients against float64
central finite differences."""
import math
import re

import numpy as np
import pytest

import kernelcore as kc

F64 = kc.array(dtype=kc.float64)
N_X = 8          # length of the input array
N_THREADS = 4    # each thread reads x from its own offset, so threads leave loops at different points
N_DYN = 6        # trip count passed at run time


def _x0():
    # no value near a branch threshold below (0.0, 1.0, 1.5, 2.0): finite differences stay on one side
    return np.array([0.61, -0.37, 0.83, 0.27, -0.72, 0.45, 0.93, -0.18])


def _run(kernel, extra=(), x0=None):
    """Forward values and a float64 gradcheck of ``kernel(x, n, *extra, out)``."""
    x0 = _x0() if x0 is None else x0
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(N_THREADS, dtype=kc.float64, requires_grad=True)
    kc.launch(kernel, dim=N_THREADS, inputs=[x, N_DYN, *extra], outputs=[out])
    values = out.numpy().copy()
    r = kc.autograd.gradcheck(kernel, dim=N_THREADS, inputs=[x, N_DYN, *extra], outputs=[out], eps=1e-6,
                              atol=1e-6, rtol=1e-5, raise_exception=False, show_summary=False)
    assert r, r.summary()
    return values


def _check(kernel, reference, extra=()):
    values = _run(kernel, extra)
    x0 = _x0()
    ref = [reference(lambda k, i=i: x0[(i + k) % N_X], N_DYN, *extra) for i in range(N_THREADS)]
    np.testing.assert_allclose(values, ref, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ early exits, static loops
# (a small constant range is unrolled: the loop counter is a compile-time literal per copy)

@kc.kernel
def static_break_constant(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(10):
        s = s + x[(i + k) % 8] * x[(i + k) % 8]
        if k > 7:
            break
    out[i] = s


def ref_static_break_constant(xi, n):
    s = 0.0
    for k in range(10):
        s = s + xi(k) * xi(k)
        if k > 7:
            break
    return s


@kc.kernel
def static_break_data(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.5)
    for k in range(7):
        if s > 1.5:
            break
        s = s * (1.0 + x[(i + k) % 8]) + kc.sin(x[(i + k) % 8])
    out[i] = s * s


def ref_static_break_data(xi, n):
    s = 0.5
    for k in range(7):
        if s > 1.5:
            break
        s = s * (1.0 + xi(k)) + math.sin(xi(k))
    return s * s


@kc.kernel
def static_continue(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(7):
        v = x[(i + k) % 8]
        if v < 0.0:
            continue
        s = s + v * kc.exp(v) + kc.float64(k)
    out[i] = s


def ref_static_continue(xi, n):
    s = 0.0
    for k in range(7):
        v = xi(k)
        if v < 0.0:
            continue
        s = s + v * math.exp(v) + k
    return s


@kc.kernel
def static_return_kernel(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(8):
        s = s + x[(i + k) % 8] * kc.float64(k + 1)
        if s > 1.0:
            out[i] = s * s
            return
    out[i] = -s


def ref_static_return_kernel(xi, n):
    s = 0.0
    for k in range(8):
        s = s + xi(k) * (k + 1)
        if s > 1.0:
            return s * s
    return -s


@kc.func
def first_large_static(x: F64, i: int, thr: kc.float64):
    s = kc.float64(0.0)
    for k in range(8):
        s = s + x[(i + k) % 8]
        if s > thr:
            return s * kc.float64(k + 1)
    return s - 10.0


@kc.kernel
def static_return_func(x: F64, n: int, out: F64):
    i = kc.tid()
    out[i] = first_large_static(x, i, kc.float64(1.0)) + first_large_static(x, i, kc.float64(100.0))


def ref_static_return_func(xi, n):
    def f(thr):
        s = 0.0
        for k in range(8):
            s = s + xi(k)
            if s > thr:
                return s * (k + 1)
        return s - 10.0
    return f(1.0) + f(100.0)


# ------------------------------------------------------------------ early exits, dynamic loops

@kc.kernel
def dynamic_break_continue(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.25)
    for k in range(n):
        v = x[(i + k) % 8]
        if v < -0.5:
            continue
        s = s + kc.sin(v) * s
        if s > 1.0:
            break
    out[i] = s


def ref_dynamic_break_continue(xi, n):
    s = 0.25
    for k in range(n):
        v = xi(k)
        if v < -0.5:
            continue
        s = s + math.sin(v) * s
        if s > 1.0:
            break
    return s


@kc.kernel
def dynamic_return_kernel(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        s = s + x[(i + k) % 8] * x[(i + k + 1) % 8]
        if s < -0.2:
            out[i] = kc.exp(s)
            return
    out[i] = s


def ref_dynamic_return_kernel(xi, n):
    s = 0.0
    for k in range(n):
        s = s + xi(k) * xi(k + 1)
        if s < -0.2:
            return math.exp(s)
    return s


@kc.func
def first_large_dynamic(x: F64, i: int, n: int, thr: kc.float64):
    s = kc.float64(0.0)
    for k in range(n):
        if x[(i + k) % 8] < 0.0:
            continue
        s = s + x[(i + k) % 8] * x[(i + k) % 8]
        if s > thr:
            return kc.sqrt(s)
    return -s


@kc.kernel
def dynamic_return_func(x: F64, n: int, out: F64):
    i = kc.tid()
    out[i] = first_large_dynamic(x, i, n, kc.float64(0.5)) * 2.0 + first_large_dynamic(x, i, n, kc.float64(100.0))


def ref_dynamic_return_func(xi, n):
    def f(thr):
        s = 0.0
        for k in range(n):
            if xi(k) < 0.0:
                continue
            s = s + xi(k) * xi(k)
            if s > thr:
                return math.sqrt(s)
        return -s
    return f(0.5) * 2.0 + f(100.0)


@kc.kernel
def while_break_continue(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.1)
    k = int(0)
    while k < 20:
        k += 1
        v = x[(i + k) % 8]
        if v > 0.8:
            continue
        s = s * 1.5 + v
        if s > 1.0:
            break
    out[i] = s + kc.float64(k)


def ref_while_break_continue(xi, n):
    s = 0.1
    k = 0
    while k < 20:
        k += 1
        v = xi(k)
        if v > 0.8:
            continue
        s = s * 1.5 + v
        if s > 1.0:
            break
    return s + k


@kc.func
def while_return(x: F64, i: int):
    s = kc.float64(0.0)
    k = int(0)
    while True:
        s = s + kc.cos(x[(i + k) % 8]) * x[(i + k) % 8]
        k += 1
        if s > 1.0:
            return s * s
        if k >= 12:
            return -s


@kc.kernel
def while_return_func(x: F64, n: int, out: F64):
    i = kc.tid()
    out[i] = while_return(x, i)


def ref_while_return_func(xi, n):
    s = 0.0
    k = 0
    while True:
        s = s + math.cos(xi(k)) * xi(k)
        k += 1
        if s > 1.0:
            return s * s
        if k >= 12:
            return -s


@kc.kernel
def while_return_kernel(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.3)
    k = int(0)
    while k < n + 4:
        k += 1
        v = x[(i + k) % 8]
        if v < -0.5:
            continue
        s = s * v + kc.cos(s)
        if s < 0.0:
            out[i] = s * kc.float64(k)
            return
    out[i] = s


def ref_while_return_kernel(xi, n):
    s = 0.3
    k = 0
    while k < n + 4:
        k += 1
        v = xi(k)
        if v < -0.5:
            continue
        s = s * v + math.cos(s)
        if s < 0.0:
            return s * k
    return s


@kc.func
def scatter_until(x: F64, i: int, n: int, out: F64):
    # no return value: a bare return leaves the function from inside the loop
    s = kc.float64(0.0)
    for k in range(n):
        v = x[(i + k) % 8]
        s = s + v * v
        if s > 0.6:
            out[i] = s
            return
    out[i] = s * 2.0


@kc.kernel
def void_func_return(x: F64, n: int, out: F64):
    i = kc.tid()
    scatter_until(x, i, n, out)


def ref_void_func_return(xi, n):
    s = 0.0
    for k in range(n):
        s = s + xi(k) * xi(k)
        if s > 0.6:
            return s
    return s * 2.0


# ------------------------------------------------------------------ nested loops

@kc.kernel
def nested_static_outer_dynamic_inner(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for a in range(3):
        t = kc.float64(0.0)
        for b in range(n):
            t = t + x[(i + a + b) % 8]
            if t > 0.9:
                break            # leaves the inner loop only
        if t < 0.0:
            continue
        s = s + t * kc.float64(a + 1)
        if s > 2.0:
            break
    out[i] = s


def ref_nested_static_outer_dynamic_inner(xi, n):
    s = 0.0
    for a in range(3):
        t = 0.0
        for b in range(n):
            t = t + xi(a + b)
            if t > 0.9:
                break
        if t < 0.0:
            continue
        s = s + t * (a + 1)
        if s > 2.0:
            break
    return s


@kc.kernel
def nested_dynamic_outer_static_inner(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for a in range(n):
        for b in range(4):
            v = x[(i + a * 3 + b) % 8]
            if v < 0.0:
                continue
            if b == 3:
                break
            s = s + v * v
        if s > 1.5:
            break
    out[i] = s


def ref_nested_dynamic_outer_static_inner(xi, n):
    s = 0.0
    for a in range(n):
        for b in range(4):
            v = xi(a * 3 + b)
            if v < 0.0:
                continue
            if b == 3:
                break
            s = s + v * v
        if s > 1.5:
            break
    return s


@kc.func
def nested_search(x: F64, i: int, n: int, thr: kc.float64):
    s = kc.float64(0.0)
    for a in range(n):
        k = int(0)
        while k < 3:
            s = s + x[(i + a + k) % 8] * kc.float64(k + 1)
            if s > thr:
                return s * kc.float64(a + 1)   # leaves both loops
            k += 1
        for b in range(2):
            s = s - 0.1 * x[(i + b) % 8]
    return s


@kc.kernel
def nested_return_func(x: F64, n: int, out: F64):
    i = kc.tid()
    out[i] = nested_search(x, i, n, kc.float64(1.2)) + nested_search(x, i, n, kc.float64(50.0))


def ref_nested_return_func(xi, n):
    def f(thr):
        s = 0.0
        for a in range(n):
            k = 0
            while k < 3:
                s = s + xi(a + k) * (k + 1)
                if s > thr:
                    return s * (a + 1)
                k += 1
            for b in range(2):
                s = s - 0.1 * xi(b)
        return s
    return f(1.2) + f(50.0)


EARLY_EXITS = [
    (static_break_constant, ref_static_break_constant),
    (static_break_data, ref_static_break_data),
    (static_continue, ref_static_continue),
    (static_return_kernel, ref_static_return_kernel),
    (static_return_func, ref_static_return_func),
    (dynamic_break_continue, ref_dynamic_break_continue),
    (dynamic_return_kernel, ref_dynamic_return_kernel),
    (dynamic_return_func, ref_dynamic_return_func),
    (while_break_continue, ref_while_break_continue),
    (while_return_func, ref_while_return_func),
    (while_return_kernel, ref_while_return_kernel),
    (void_func_return, ref_void_func_return),
    (nested_static_outer_dynamic_inner, ref_nested_static_outer_dynamic_inner),
    (nested_dynamic_outer_static_inner, ref_nested_dynamic_outer_static_inner),
    (nested_return_func, ref_nested_return_func),
]


@pytest.mark.parametrize("kernel, reference", EARLY_EXITS, ids=[k.key for k, _ in EARLY_EXITS])
def test_early_exits_values_and_gradients(kernel, reference):
    _check(kernel, reference)


@kc.kernel
def static_counter_after_break(n: int, out: kc.array(dtype=int)):
    i = kc.tid()
    k = int(-1)
    for k in range(10):
        if k > i + 2:
            break
    out[i] = k


def test_static_loop_counter_keeps_its_value_after_break():
    out = kc.zeros(N_THREADS, dtype=int)
    kc.launch(static_counter_after_break, dim=N_THREADS, inputs=[0], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [3, 4, 5, 6])


# ------------------------------------------------------------------ short-circuit and / or

@kc.kernel
def guarded_read(a: kc.array(dtype=float), n: int, out: kc.array(dtype=float)):
    i = kc.tid()
    if i < n and a[i] > 0.0:
        out[i] = 1.0
    if i >= n or a[i] < 0.0:
        out[i] = out[i] + 2.0


@pytest.fixture
def debug_mode(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")


def test_and_or_do_not_evaluate_the_right_side(debug_mode):
    # debug mode bounds-checks every read: a[i] for i >= n must not happen
    a = kc.array(np.array([1.0, -1.0, 2.0, 0.0], np.float32), dtype=float)
    out = kc.zeros(8, dtype=float)
    kc.launch(guarded_read, dim=8, inputs=[a, 4], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 1.0, 0.0, 2.0, 2.0, 2.0, 2.0])


@kc.kernel
def bool_values(x: F64, n: int, out: F64):
    i = kc.tid()
    v = x[i]
    w = x[(i + 1) % 8]
    # the right sides read past the end of x (index 8 + i) if evaluated
    c = v > 0.0 and w > 0.0
    d = v < 0.0 or x[(i + 2) % 8 + 8 * kc.int32(v < 0.0)] > 0.0
    e = v > -1.0 and (w < 0.0 or x[(i + 3) % 8 + 8 * kc.int32(w < 0.0)] > 0.0) and v < 2.0
    f = not (v > 0.0 and w > 0.0) or v * w > 100.0
    r = kc.float64(0.0)
    if c:
        r = r + 1.0
    if d:
        r = r + 10.0
    if e:
        r = r + 100.0
    if f:
        r = r + 1000.0
    out[i] = r + v * v


def ref_bool_values(xi, n):
    v, w = xi(0), xi(1)
    c = v > 0.0 and w > 0.0
    d = v < 0.0 or xi(2) > 0.0
    e = v > -1.0 and (w < 0.0 or xi(3) > 0.0) and v < 2.0
    f = not (v > 0.0 and w > 0.0)
    return (1.0 if c else 0.0) + (10.0 if d else 0.0) + (100.0 if e else 0.0) + (1000.0 if f else 0.0) + v * v


def test_and_or_values_chains_and_gradients(debug_mode):
    _check(bool_values, ref_bool_values)


@kc.kernel
def guarded_gradient(x: F64, n: int, out: F64):
    i = kc.tid()
    v = x[i]
    s = kc.float64(0.0)
    # the right side is NaN for v <= 0 (log of a non-positive number) and is not evaluated there
    if v > 0.0 and kc.log(v) > -1.0:
        s = kc.log(v) * v
    if v <= 0.0 or kc.sqrt(v) < 0.8:
        s = s + v * v * v
    out[i] = s


def ref_guarded_gradient(xi, n):
    v = xi(0)
    s = 0.0
    if v > 0.0 and math.log(v) > -1.0:
        s = math.log(v) * v
    if v <= 0.0 or math.sqrt(v) < 0.8:
        s = s + v * v * v
    return s


def test_and_or_gradients_are_finite():
    _check(guarded_gradient, ref_guarded_gradient)


# ------------------------------------------------------------------ conditional expressions

@kc.kernel
def penalty(d: F64, n: int, out: F64):
    i = kc.tid()
    g = d[i]
    # penalty contact: only the taken side is evaluated and differentiated
    out[i] = kc.sqrt(g) * g if g > 0.0 else kc.float64(0.0)


def test_ternary_untaken_side_has_no_gradient():
    d0 = np.array([-0.5, -1.0e-3, 0.3, 2.0])
    d = kc.array(d0, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(4, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(penalty, dim=4, inputs=[d, 0], outputs=[out])
    tape.backward(grads={out: np.ones(4)})
    np.testing.assert_allclose(out.numpy(), np.where(d0 > 0, np.abs(d0) ** 1.5, 0.0), rtol=1e-12)
    np.testing.assert_allclose(d.grad.numpy(), np.where(d0 > 0, 1.5 * np.sqrt(np.abs(d0)), 0.0), rtol=1e-12)


@kc.kernel
def ternaries(x: F64, n: int, out: F64):
    i = kc.tid()
    v = x[i]
    w = x[(i + 1) % 8]
    a = kc.log(v) * w if v > 0.0 else kc.log(-v) + w * w           # each side NaN on the other's domain
    b = kc.sqrt(w) if w > 0.0 else (kc.sqrt(-w) * 2.0 if w < -0.5 else w)  # nested
    c = x[i + 8 * kc.int32(v < 0.0)] if v >= 0.0 else 0.5           # untaken read is out of bounds
    e = kc.float64(1.0) if v > w else 0.0                            # a literal side takes the other's type
    m = 3 if v > 0.0 else 5                                          # literals only: int32
    out[i] = a + b * 3.0 + c * v + e + (v * 2.0 if kc.abs(w) < 0.5 else w * 3.0) + kc.float64(m)


def ref_ternaries(xi, n):
    v, w = xi(0), xi(1)
    a = math.log(v) * w if v > 0.0 else math.log(-v) + w * w
    b = math.sqrt(w) if w > 0.0 else (math.sqrt(-w) * 2.0 if w < -0.5 else w)
    c = v if v >= 0.0 else 0.5
    e = 1.0 if v > w else 0.0
    m = 3 if v > 0.0 else 5
    return a + b * 3.0 + c * v + e + (v * 2.0 if abs(w) < 0.5 else w * 3.0) + m


def test_ternary_values_and_gradients(debug_mode):
    _check(ternaries, ref_ternaries)


@kc.func
def soft_contact(g: kc.float64):
    return kc.sqrt(g) * g * 0.5 if g > 0.0 else kc.float64(0.0)


@kc.kernel
def ternary_in_loop(x: F64, n: int, out: F64):
    i = kc.tid()
    s = kc.float64(0.0)
    for k in range(n):
        g = x[(i + k) % 8]
        s = s + soft_contact(g) + (kc.log(g) if g > 0.0 else g)
    k = int(0)
    while k < 3:
        g = x[(i + 2 * k) % 8]
        s = s * 0.5 + (kc.sqrt(g) if g > 0.0 and g < 0.7 else g * g)
        k += 1
    out[i] = s


def ref_ternary_in_loop(xi, n):
    s = 0.0
    for k in range(n):
        g = xi(k)
        s = s + (math.sqrt(g) * g * 0.5 if g > 0.0 else 0.0) + (math.log(g) if g > 0.0 else g)
    for k in range(3):
        g = xi(2 * k)
        s = s * 0.5 + (math.sqrt(g) if 0.0 < g < 0.7 else g * g)
    return s


def test_ternary_in_loops_and_functions():
    _check(ternary_in_loop, ref_ternary_in_loop)


# ------------------------------------------------------------------ generated code

@kc.kernel
def cheap_conditions(x: F64, n: int, out: F64):
    i = kc.tid()
    v = x[i]
    c = v > 0.0 and (i < n or v < 1.0)
    out[i] = (kc.float64(1.0) if c else 0.0) + (v if i % 2 == 0 else -v)


def _fwd_thread(kernel):
    src = kernel.source
    start = src.index("_fwd_thread(", src.index(f"k_{kernel.key}_"))
    return "\n".join(l.strip() for l in src[start:src.index("\n}\n", start)].splitlines() if not l.startswith("#line"))


def test_cheap_conditions_stay_branch_free():
    # operands without loads, traps or adjoints are evaluated eagerly (nothing can tell), so
    # the C++ stays one straight block; a guarded load keeps its branch
    assert "if (" not in _fwd_thread(cheap_conditions)
    guarded = _fwd_thread(guarded_read)
    assert re.search(r"if \(v\d+\) \{\nv\d+ = kc::load", guarded), guarded
    x0 = _x0()
    x = kc.array(x0, dtype=kc.float64)
    out = kc.zeros(N_THREADS, dtype=kc.float64)
    kc.launch(cheap_conditions, dim=N_THREADS, inputs=[x, 2], outputs=[out])
    i = np.arange(N_THREADS)
    v = x0[:N_THREADS]
    c = (v > 0) & ((i < 2) | (v < 1.0))
    np.testing.assert_array_equal(out.numpy(), c * 1.0 + np.where(i % 2 == 0, v, -v))


def test_ternary_sides_of_different_types_name_the_line(tmp_path, monkeypatch):
    src = tmp_path / "bad_ternary.py"
    src.write_text("import kernelcore as kc\n\n\n@kc.kernel\ndef k(x: kc.array(dtype=float)):\n    i = kc.tid()\n"
                   "    v = kc.vec3(1.0, 2.0, 3.0) if x[i] > 0.0 else 1.0\n    x[i] = v[0]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import bad_ternary

    with pytest.raises(kc.KernelCompileError) as info:
        kc.launch(bad_ternary.k, dim=1, inputs=[kc.zeros(1, dtype=float)])
    text = str(info.value)
    assert "the two sides of 'a if c else b' have different types: vec3 and float literal" in text, text
    assert f"{src}:7" in text and "kc.vec3(1.0, 2.0, 3.0) if x[i] > 0.0 else 1.0" in text, text
