"""Exact gradients through nested dynamic loops and through loops longer than the checkpoint
buffer (kc.config.loop_checkpoints, binomial recomputation schedule in kc_loop.h).

Every nested case has the inner loop's result enter the outer state multiplicatively and
through a nonlinear function, so a wrong restored state changes the gradient (an inner
value that enters additively hides it). Forward values are compared with the same program
evaluated in Python (float64), gradients with float64 central finite differences of it.
"""
import math
import os
import subprocess

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import toolchain

X0 = np.array([0.4, 0.9, 0.3, 0.2])


# ------------------------------------------------------------------------------ the programs
# Each kernel has a Python twin with the same name plus "_py" (math on floats).

@kc.kernel
def dyn_in_dyn(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(n):
        s = t
        for b in range(m):
            s = s * x[1] + x[2]
        t = kc.sin(s) * (x[3] + t)
    out[0] = t


def dyn_in_dyn_py(x, n, m):
    t = x[0]
    for a in range(n):
        s = t
        for b in range(m):
            s = s * x[1] + x[2]
        t = math.sin(s) * (x[3] + t)
    return t


@kc.kernel
def three_levels(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(n):
        u = t
        for b in range(m):
            s = u * x[1]
            for c in range(n - a):
                s = kc.sin(s) * x[2] + x[3] * s
            u = u * kc.cos(s) + x[3]
        t = kc.exp(-u * u) * t + x[2]
    out[0] = t


def three_levels_py(x, n, m):
    t = x[0]
    for a in range(n):
        u = t
        for b in range(m):
            s = u * x[1]
            for c in range(n - a):
                s = math.sin(s) * x[2] + x[3] * s
            u = u * math.cos(s) + x[3]
        t = math.exp(-u * u) * t + x[2]
    return t


@kc.kernel
def while_in_for(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(n):
        s = t
        w = int(0)
        while w < m + a % 2:
            s = kc.sin(s * x[1]) + x[2] * s
            w += 1
        t = t * kc.cos(s) + x[3]
    out[0] = t


def while_in_for_py(x, n, m):
    t = x[0]
    for a in range(n):
        s = t
        w = 0
        while w < m + a % 2:
            s = math.sin(s * x[1]) + x[2] * s
            w += 1
        t = t * math.cos(s) + x[3]
    return t


@kc.kernel
def for_in_while(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    w = int(0)
    while w < n:
        s = t
        for b in range(m):
            s = s * x[1] + kc.sin(x[2] * s)
        t = kc.tanh(s) * t + x[3]
        w += 1
    out[0] = t


def for_in_while_py(x, n, m):
    t = x[0]
    w = 0
    while w < n:
        s = t
        for b in range(m):
            s = s * x[1] + math.sin(x[2] * s)
        t = math.tanh(s) * t + x[3]
        w += 1
    return t


@kc.kernel
def static_in_dyn(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    # range(20) is longer than kc.config.max_unroll: a loop (not unrolled) inside a dynamic one
    t = x[0]
    for a in range(n):
        s = t
        for b in range(20):
            s = s * x[1] + x[2] * kc.sin(s)
        t = kc.sin(s) * t + x[3] * kc.float64(m)
    out[0] = t


def static_in_dyn_py(x, n, m):
    t = x[0]
    for a in range(n):
        s = t
        for b in range(20):
            s = s * x[1] + x[2] * math.sin(s)
        t = math.sin(s) * t + x[3] * m
    return t


@kc.kernel
def dyn_in_static(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(18):
        s = t
        for b in range(m):
            s = s * x[1] + x[2]
        t = kc.sin(s) * t + x[3] * kc.float64(n)
    out[0] = t


def dyn_in_static_py(x, n, m):
    t = x[0]
    for a in range(18):
        s = t
        for b in range(m):
            s = s * x[1] + x[2]
        t = math.sin(s) * t + x[3] * n
    return t


@kc.kernel
def loop_in_if_in_loop(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(n):
        s = t
        if a % 3 != 1:
            for b in range(m + a % 2):
                s = s * x[1] + kc.sin(x[2] * s)
        else:
            s = kc.exp(-s * s) * x[3]
        if t > 0.25:
            w = int(0)
            while w < m:
                s = s * kc.cos(s * x[2])
                w += 1
        t = kc.sin(s) * t + x[3]
    out[0] = t


def loop_in_if_in_loop_py(x, n, m):
    t = x[0]
    for a in range(n):
        s = t
        if a % 3 != 1:
            for b in range(m + a % 2):
                s = s * x[1] + math.sin(x[2] * s)
        else:
            s = math.exp(-s * s) * x[3]
        if t > 0.25:
            w = 0
            while w < m:
                s = s * math.cos(s * x[2])
                w += 1
        t = math.sin(s) * t + x[3]
    return t


@kc.func
def inner_map(s: kc.float64, c: kc.float64, d: kc.float64, m: int):
    for b in range(m):
        s = s * c + kc.sin(d * s)
    return s


@kc.func
def outer_map(t: kc.float64, c: kc.float64, d: kc.float64, m: int):
    u = t
    for b in range(m):
        u = kc.cos(inner_map(u, c, d, m)) * u
    return u


@kc.kernel
def loops_in_funcs(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(n):
        t = t * kc.sin(inner_map(t, x[1], x[2], m)) + x[3] * outer_map(t, x[1], x[2], m)
    out[0] = t


def _inner_map_py(s, c, d, m):
    for b in range(m):
        s = s * c + math.sin(d * s)
    return s


def loops_in_funcs_py(x, n, m):
    t = x[0]
    for a in range(n):
        u = t
        for b in range(m):
            u = math.cos(_inner_map_py(u, x[1], x[2], m)) * u
        t = t * math.sin(_inner_map_py(t, x[1], x[2], m)) + x[3] * u
    return t


PROGRAMS = [dyn_in_dyn, three_levels, while_in_for, for_in_while, static_in_dyn, dyn_in_static,
            loop_in_if_in_loop, loops_in_funcs]

# (n, m, checkpoint slots): trip counts 0, small, and beyond the slots (recomputation)
COUNTS = [(2, 3, 64), (0, 3, 64), (3, 0, 64), (7, 9, 4), (11, 5, 2)]


def _run(kernel, x0, n, m):
    """Forward value and gradient of out[0] w.r.t. x (one thread, float64)."""
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(kernel, dim=1, inputs=[x, n, m], outputs=[out])
    tape.backward(loss=out)
    return out.numpy()[0], x.grad.numpy().copy()


def _central_differences(f, x0, eps=1e-6):
    g = np.zeros_like(x0)
    for j in range(len(x0)):
        e = np.zeros_like(x0)
        e[j] = eps
        g[j] = (f(x0 + e) - f(x0 - e)) / (2 * eps)
    return g


def _check(kernel, x0, n, m):
    ref = globals()[kernel.func.__name__ + "_py"]
    value, grad = _run(kernel, x0, n, m)
    np.testing.assert_allclose(value, ref(list(x0), n, m), rtol=1e-12, atol=1e-14)
    fd = _central_differences(lambda v: ref(list(v), n, m), x0)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8, err_msg=f"{kernel.func.__name__} n={n} m={m}")


@pytest.mark.parametrize("n, m, slots", COUNTS)
@pytest.mark.parametrize("kernel", PROGRAMS, ids=lambda k: k.func.__name__)
def test_nested_loops_exact_gradients(kernel, n, m, slots, monkeypatch):
    monkeypatch.setattr(kc.config, "loop_checkpoints", slots)
    _check(kernel, X0, n, m)


@pytest.mark.parametrize("n, m", [(3, 70), (70, 2), (66, 65)])
def test_nested_loops_beyond_default_checkpoints(n, m):
    _check(dyn_in_dyn, X0, n, m)
    _check(while_in_for, X0, n, m)


@kc.kernel
def issue_example(x: kc.array(dtype=kc.float64), n: int, m: int, out: kc.array(dtype=kc.float64)):
    t = x[0]
    for a in range(n):
        s = t
        for b in range(m):
            s = s * x[1] + x[2]
        t = kc.sin(s)
    out[0] = t


def issue_example_py(x, n, m):
    t = x[0]
    for a in range(n):
        s = t
        for b in range(m):
            s = s * x[1] + x[2]
        t = math.sin(s)
    return t


def test_nested_loop_example_from_issue():
    # the inner loop's records were not reset when it was entered again: its reverse sweep
    # restored the first outer iteration's states (x[1] gradient 0.256 here, not 0.383)
    _check(issue_example, X0, 2, 3)


# ------------------------------------------------------------------------------ long loops

@kc.kernel
def driven_chain(x: kc.array(dtype=kc.float64), n: int, c: kc.float64, out: kc.array(dtype=kc.float64)):
    # every iteration reads its own x[k]: x.grad[k] checks that iteration k was reversed from
    # the right state, once
    s = x[n]
    for k in range(n):
        s = kc.sin(s) * c + x[k]
    out[0] = s


def _driven_chain_reference(x, n, c):
    """out and d out / d x of driven_chain, float64 numpy (hand-written reverse sweep)."""
    s = np.empty(n + 1)
    s[0] = x[n]
    for k in range(n):
        s[k + 1] = math.sin(s[k]) * c + x[k]
    g = np.zeros(n + 1)
    adj = 1.0
    for k in range(n - 1, -1, -1):
        g[k] = adj
        adj = adj * math.cos(s[k]) * c
    g[n] = adj
    return s[n], g


@pytest.mark.parametrize("slots", [64, 5, 2])
@pytest.mark.parametrize("n", [0, 1, 3, 5, 63, 64, 65, 100, 1000, 4097, 70001])
def test_long_loops_exact_at_every_length(n, slots, monkeypatch):
    if slots != 64 and n > 5000:
        pytest.skip("small buffers at the longest lengths: covered by the schedule test")
    monkeypatch.setattr(kc.config, "loop_checkpoints", slots)
    rng = np.random.default_rng(n)
    x0 = rng.uniform(-1.0, 1.0, n + 1)
    x = kc.array(x0, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(driven_chain, dim=1, inputs=[x, n, 0.97], outputs=[out])
    tape.backward(loss=out)
    value, grad = _driven_chain_reference(x0, n, 0.97)
    np.testing.assert_allclose(out.numpy()[0], value, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-9, atol=1e-300)


def test_loop_checkpoints_must_be_at_least_two(monkeypatch):
    monkeypatch.setattr(kc.config, "loop_checkpoints", 1)
    with pytest.raises(ValueError, match="loop_checkpoints must be an integer >= 2, got 1"):
        driven_chain.module.generate([driven_chain], "cpu")


# ------------------------------------------------------------------------------ the schedule
SCHEDULE_TEST = r"""
#include "kc_loop.h"
#include <cstdio>
#include <cstdlib>
#include <vector>
// The state of the simulated loop is its iteration index, so every restore, advance and
// reverse can check that it starts from the right state.
template <int C> int run(long long n) {
    kc::loop_tape<long long, C> t;
    t.reset();
    long long state = 0;
    for (long long it = 0; it < n; ++it) {
        if (it == t.next) t.record(state);
        ++state;
    }
    t.count = n;
    if (t.n > C) return 1;
    std::vector<int> advanced(n, 0);
    long long expect = n - 1, total = 0;
    int bad = 0;
    kc::reverse_loop(t, [&](const long long& s) { state = s; }, [&]() { return state; },
                     [&](long long it) { bad |= state != it; ++advanced[it]; ++total; state = it + 1; },
                     [&](long long it) { bad |= (state != it) | (it != expect); --expect; });
    int most = 0;
    for (long long k = 0; k < n; ++k) most = advanced[k] > most ? advanced[k] : most;
    printf("%d %lld %lld %d %d %d %d %lld\n", C, n, total, most, bad, (int)(expect != -1), t.n, t.stride);
    return 0;
}
int main(int argc, char** argv) {
    const long long lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4097, 65536, 100003};
    int err = 0;
    for (long long n : lengths) {
        err |= run<2>(n < 5000 ? n : 0) | run<3>(n < 20000 ? n : 0) | run<4>(n) | run<5>(n) | run<8>(n) | run<64>(n);
    }
    return err;
}
"""


def test_binomial_schedule_reverses_each_iteration_once_from_the_right_state(tmp_path):
    src = tmp_path / "schedule.cpp"
    src.write_text(SCHEDULE_TEST)
    exe = tmp_path / "schedule"
    cxx = os.environ.get("KERNELCORE_CXX", kc.config.cxx)
    subprocess.run([cxx, "-O1", "-std=c++17", f"-I{toolchain.NATIVE_DIR}", str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    rows = [tuple(int(v) for v in line.split()) for line in lines if line.strip()]
    assert len(rows) == 22 * 6
    for slots, n, total, most, bad, unfinished, records, stride in rows:
        assert not bad and not unfinished, (slots, n)
        # records on a grid of `stride` covering the loop, within the buffer (half of it
        # once the stride has grown, the other half is the reverse sweep's)
        assert records <= (slots if stride == 1 else max(slots // 2, 2)), (slots, n, records)
        assert n == 0 or (records - 1) * stride < n <= (records + 1) * stride, (slots, n, records, stride)
        if n <= slots:
            assert total == 0, (slots, n, total)   # every iteration recorded: no recomputation
        # Griewank's bound: a segment of `stride` iterations with f free slots is reversed with
        # each iteration recomputed at most r times, the least r with C(f + r + 1, r) >= stride
        free = slots - records
        r = 0
        while free > 0 and math.comb(free + r + 1, r) < stride:
            r += 1
        if free > 0:
            assert most <= r, (slots, n, most, r)
        assert total <= most * n
    by_len = {(s, n): (total, most) for s, n, total, most, *_ in rows}
    assert by_len[(64, 100003)][1] <= 3 and by_len[(64, 100003)][0] <= 3 * 100003
    assert by_len[(64, 64)] == (0, 0) and by_len[(64, 65)][1] == 1


def test_nested_loop_adjoints_compile_for_cuda():
    from kernelcore import nvrtc

    if not nvrtc.is_available():
        pytest.skip("NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
    kernels = [three_levels, loop_in_if_in_loop]   # three levels; while and for inside ifs inside a loop
    src = kernels[0].module.generate(kernels, "cuda")
    assert "kc::reverse_loop(" in src and ".reset();" in src
    nvrtc.compile_ptx(src, "nested_loops.cu", arch="sm_90")
