"""Language semantics that match Warp (docs/warp_compat.md): %, //, negative indices,
component indices, integer division by zero, launch sizes, default/keyword arguments."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernelcore as kc


# ---------------------------------------------------------------------------- % and //
@kc.kernel
def int_divmod(a: kc.array(dtype=int), b: kc.array(dtype=int), q: kc.array(dtype=int), r: kc.array(dtype=int),
               t: kc.array(dtype=int)):
    i = kc.tid()
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]
    t[i] = a[i] / b[i]


@kc.kernel
def float_divmod(a: kc.array(dtype=float), b: kc.array(dtype=float), q: kc.array(dtype=float), r: kc.array(dtype=float)):
    i = kc.tid()
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


@kc.kernel
def const_divmod(qi: kc.array(dtype=int), qf: kc.array(dtype=float)):
    qi[0] = -7 % 2
    qi[1] = -7 // 2
    qi[2] = 7 % -2
    qi[3] = 7 // -2
    qf[0] = -7.5 % 2.0
    qf[1] = -7.5 // 2.0


INT_A = np.array([-7, 7, -7, 7, 0, -2147483648, 13, -13], np.int32)
INT_B = np.array([2, -2, -2, 2, 3, 3, 5, 5], np.int32)
FLT_A = np.array([-7.5, 7.5, -7.5, 7.5, 0.25, -0.25], np.float32)
FLT_B = np.array([2.0, -2.0, -2.0, 2.0, 1.0, 1.0], np.float32)


def _run_int(a, b):
    q, r, t = (np.zeros(len(a), np.int32) for _ in range(3))
    kc.launch(int_divmod, dim=len(a), inputs=[a, b, q, r, t])
    return q, r, t


def test_integer_mod_truncates_and_floordiv_rounds_down():
    """As in Warp: % takes the sign of the dividend (C), // rounds toward -inf, / truncates."""
    q, r, t = _run_int(INT_A, INT_B)
    a, b = INT_A.astype(np.int64), INT_B.astype(np.int64)
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.fmod(a, b))
    np.testing.assert_array_equal(t, np.trunc(a / b).astype(np.int64))
    assert r[0] == -1 and q[0] == -4     # -7 % 2, -7 // 2


def test_float_mod_truncates_and_floordiv_rounds_down():
    q, r = np.zeros(len(FLT_A), np.float32), np.zeros(len(FLT_A), np.float32)
    kc.launch(float_divmod, dim=len(FLT_A), inputs=[FLT_A, FLT_B, q, r])
    np.testing.assert_array_equal(r, np.fmod(FLT_A, FLT_B))
    np.testing.assert_array_equal(q, np.floor(FLT_A / FLT_B))
    assert r[0] == -1.5 and q[0] == -4.0


def test_constant_folding_agrees_with_run_time():
    qi, qf = np.zeros(4, np.int32), np.zeros(2, np.float32)
    kc.launch(const_divmod, dim=1, inputs=[qi, qf])
    assert qi.tolist() == [-1, -4, 1, -4]
    assert qf.tolist() == [-1.5, -4.0]


def test_same_numbers_as_warp():
    """The oracle itself: the same kernels under warp-lang on its CPU device."""
    wp = pytest.importorskip("warp", reason="warp-lang is the oracle for these semantics")
    wp.config.quiet = True
    wp.init()
    from _warp_semantics import warp_divmod

    want = warp_divmod(wp, INT_A, INT_B, FLT_A, FLT_B)
    q, r, t = _run_int(INT_A, INT_B)
    fq, fr = np.zeros(len(FLT_A), np.float32), np.zeros(len(FLT_A), np.float32)
    kc.launch(float_divmod, dim=len(FLT_A), inputs=[FLT_A, FLT_B, fq, fr])
    for got, key in ((q, "iq"), (r, "ir"), (t, "it"), (fq, "fq"), (fr, "fr")):
        np.testing.assert_array_equal(got, want[key], err_msg=key)


# ---------------------------------------------------------------------------- integer / 0
@kc.kernel
def int_div_vec(a: kc.array(dtype=kc.vec3i), s: int, out: kc.array(dtype=kc.vec3i)):
    i = kc.tid()
    out[i] = a[i] / s


def test_integer_division_by_zero_is_defined_in_release_and_reported_in_debug():
    """Release mode: x / 0, x // 0 and x % 0 are 0 (no SIGFPE); INT_MIN // -1 wraps to INT_MIN.
    Debug mode: a KernelRuntimeError naming kernel, file:line and thread. Both run in a child
    process, so that a trap fails this test instead of killing pytest."""
    code = textwrap.dedent("""
        import sys, numpy as np
        sys.path.insert(0, %r)
        import kernelcore as kc
        from test_semantics import int_divmod, int_div_vec
        a = np.array([5, -5, 0, -2147483648, -2147483648], np.int32)
        b = np.array([0, 0, 0, -1, 0], np.int32)
        q, r, t = (np.zeros(5, np.int32) for _ in range(3))
        kc.launch(int_divmod, dim=5, inputs=[a, b, q, r, t])
        out = kc.zeros(2, dtype=kc.vec3i)
        kc.launch(int_div_vec, dim=2, inputs=[kc.array(np.ones((2, 3), np.int32), dtype=kc.vec3i), 0, out])
        print(q.tolist(), r.tolist(), t.tolist(), out.numpy().ravel().tolist())
        kc.config.mode = "debug"
        try:
            kc.launch(int_divmod, dim=3, inputs=[np.array([5, 6, 7], np.int32), np.array([1, 0, 1], np.int32), q[:3], r[:3], t[:3]])
        except kc.KernelRuntimeError as e:
            print(e)
        kc.launch(int_divmod, dim=3, inputs=[np.array([5, 6, 7], np.int32), np.ones(3, np.int32), q[:3], r[:3], t[:3]])
        print(q[:3].tolist())   # the error state was reset
    """) % os.path.dirname(__file__)
    env = dict(os.environ, KERNELCORE_MODE="release")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.strip().split("\n")
    imin = -2147483648
    assert lines[-3] == str([0, 0, 0, imin, 0]) + " " + str([0, 0, 0, 0, 0]) + " " + \
        str([0, 0, 0, imin, 0]) + " " + str([0] * 6)
    msg = lines[-2]
    assert "kernel 'int_divmod'" in msg and "division or modulo by zero" in msg and "(thread 1)" in msg
    assert f"{__file__}:{int_divmod.defn.firstline + 4}" in msg   # q[i] = a[i] // b[i]
    assert lines[-1] == "[5, 6, 7]"


def test_constant_integer_division_by_zero_is_a_compile_error(tmp_path):
    err, path = _compile_error(tmp_path, """
        @kc.kernel
        def k(x: kc.array(dtype=int)):
            x[0] = 7 // 0
    """)
    assert "division or modulo by zero" in str(err) and f"{path}:6" in str(err)


# ---------------------------------------------------------------------------- negative indices
@kc.kernel
def negative_array_indices(a: kc.array(dtype=float), m: kc.array2d(dtype=float), k: int, out: kc.array(dtype=float)):
    out[0] = a[-1]
    out[1] = a[k]
    out[2] = m[-1, 0]
    out[3] = m[0, -1]
    out[4] = m[k, k]
    row = m[-1]
    out[5] = row[-2]
    a[-2] = 9.0
    kc.atomic_add(a, -3, 100.0)


def test_negative_array_indices_count_from_the_end():
    """a[-1] is the last element (Warp, Python); constant and run-time indices alike."""
    a = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros(6, np.float32)
    kc.launch(negative_array_indices, dim=1, inputs=[a, m, -1, out])
    assert out.tolist() == [4.0, 4.0, 3.0, 2.0, 5.0, 4.0]
    assert a.tolist() == [1.0, 102.0, 9.0, 4.0]


def test_negative_array_indices_pass_debug_bounds_checks(monkeypatch):
    monkeypatch.setattr(kc.config, "mode", "debug")
    a = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros(6, np.float32)
    kc.launch(negative_array_indices, dim=1, inputs=[a, m, -1, out])
    assert out.tolist() == [4.0, 4.0, 3.0, 2.0, 5.0, 4.0]
    with pytest.raises(kc.KernelRuntimeError, match=r"index \(-5,\) out of bounds for array of shape \(4,\)"):
        kc.launch(negative_array_indices, dim=1, inputs=[a, m, -5, out])


@kc.kernel
def nonnegative_indices(a: kc.array2d(dtype=float), out: kc.array(dtype=float)):
    i, j = kc.tid()
    for k in range(len(out)):
        out[(i * 2 + k) % len(out)] = a[i, j // 2] + a[i, kc.max(j, 1)]


def test_indices_known_nonnegative_are_not_wrapped():
    """Thread indices, loop counters from 0 and what + * // % min max make of them cost no
    wrap (the accumulation analysis also needs the thread index itself)."""
    assert "wrap_array_index" not in nonnegative_indices.source
    assert "wrap_array_index" not in int_divmod.source
    assert negative_array_indices.source.count("kc::wrap_array_index(") >= 5


@kc.kernel
def component_indices(k: int, out: kc.array(dtype=float)):
    v = kc.vec3(1.0, 2.0, 3.0)
    m = kc.mat22(1.0, 2.0, 3.0, 4.0)
    q = kc.quat(0.1, 0.2, 0.3, 0.4)
    out[0] = v[-1]
    out[1] = v[k]
    out[2] = m[-1, 0]
    out[3] = m[k, k]
    out[4] = q[k]
    v[k] = 7.0
    out[5] = v[2]
    r = m[k]
    out[6] = r[0]


def test_component_indices_negative_wrap():
    out = np.zeros(7, np.float32)
    kc.launch(component_indices, dim=1, inputs=[-1, out])
    np.testing.assert_allclose(out, [3.0, 3.0, 3.0, 4.0, 0.4, 7.0, 3.0])
    kc.launch(component_indices, dim=1, inputs=[1, out])
    np.testing.assert_allclose(out, [3.0, 2.0, 3.0, 4.0, 0.2, 3.0, 3.0])


@pytest.mark.parametrize("k", [3, -4, 100])
def test_dynamic_component_index_out_of_range_is_a_debug_error(monkeypatch, k):
    monkeypatch.setattr(kc.config, "mode", "debug")
    with pytest.raises(kc.KernelRuntimeError) as info:
        kc.launch(component_indices, dim=1, inputs=[k, np.zeros(7, np.float32)])
    msg = str(info.value)
    assert f"component index {k} out of range for a value of 3 components" in msg
    assert f"{__file__}:{component_indices.defn.firstline + 6}" in msg and "(thread 0)" in msg


def _compile_error(tmp_path, body, name="bad_sem"):
    src = tmp_path / f"{name}.py"
    src.write_text("import kernelcore as kc\n\n" + textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = __import__(name)
        with pytest.raises(kc.KernelCompileError) as info:
            kc.launch(mod.k, dim=1, inputs=[kc.zeros(1, dtype=mod.k.arg_types[0].dtype)])
        return info.value, src
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


@pytest.mark.parametrize("expr,message", [
    ("kc.vec3(1.0, 2.0, 3.0)[3]", "index 3 out of range for a vec3 (3 components along it)"),
    ("kc.vec3(1.0, 2.0, 3.0)[-4]", "index -4 out of range for a vec3"),
    ("kc.mat22(1.0, 2.0, 3.0, 4.0)[5, 0]", "index 5 (dimension 0) out of range for a mat22"),
    ("kc.mat22(1.0, 2.0, 3.0, 4.0)[0, 2]", "index 2 (dimension 1) out of range for a mat22"),
    ("kc.quat(0.0, 0.0, 0.0, 1.0)[4]", "index 4 out of range for a quat"),
])
def test_constant_component_index_out_of_range_is_a_compile_error(tmp_path, expr, message):
    err, path = _compile_error(tmp_path, f"""
        @kc.kernel
        def k(x: kc.array(dtype=float)):
            x[0] = {expr}
    """)
    assert message in str(err) and f"{path}:6" in str(err)


def test_constant_component_store_out_of_range_is_a_compile_error(tmp_path):
    err, path = _compile_error(tmp_path, """
        @kc.kernel
        def k(x: kc.array(dtype=float)):
            v = kc.vec3()
            v[3] = 1.0
    """)
    assert "index 3 out of range for a vec3" in str(err) and f"{path}:7" in str(err)


# ---------------------------------------------------------------------------- launch sizes
@kc.kernel
def no_tid(out: kc.array(dtype=int)):
    kc.atomic_add(out, 0, 1)


@kc.kernel
def flat_tid(out: kc.array(dtype=int)):
    i = kc.tid()
    kc.atomic_max(out, 0, i)


@kc.kernel
def tid2(out: kc.array(dtype=int)):
    i, j = kc.tid()
    kc.atomic_max(out, 0, i)


@pytest.mark.parametrize("dim,which", [(2**32 + 3, 0), ((2**31 + 7,), 0), ((4, 2**31), 1), (2**31, 0)])
def test_launch_dimension_beyond_int32_raises(dim, which):
    """A dimension of 2**31 or more would wrap (2**32 + 3 ran 3 threads): named, not run."""
    out = kc.zeros(1, dtype=int)
    with pytest.raises(ValueError, match=f"launch dimension {which} is {2**31 + 0 if dim == 2**31 else ''}"):
        kc.launch(no_tid, dim=dim, inputs=[out])
    assert out.numpy()[0] == 0


def test_flat_tid_beyond_int32_raises():
    out = kc.zeros(1, dtype=int)
    with pytest.raises(ValueError, match="flat kc.tid"):
        kc.launch(flat_tid, dim=(2**16, 2**16), inputs=[out])
    kc.launch(flat_tid, dim=(3, 5), inputs=[out])   # small launches still run
    assert out.numpy()[0] == 14
    out.zero_()
    kc.launch(tid2, dim=(3, 5), inputs=[out])
    assert out.numpy()[0] == 2


def test_largest_int32_dimension_is_accepted_by_the_check():
    from kernelcore.launch import _bounds

    b, dims = _bounds(2**31 - 1, lambda: 2)
    assert b.shape[0] == 2**31 - 1 and b.size == 2**31 - 1 and dims == (2**31 - 1,)
    b, dims = _bounds((2**31 - 1, 3), lambda: 2)
    assert b.size == (2**31 - 1) * 3 and tuple(b.shape[:2]) == (2**31 - 1, 3)


# ---------------------------------------------------------------------------- return literals
@kc.func
def returns_int_literal() -> float:
    return 1


@kc.kernel
def call_returns_int_literal(out: kc.array(dtype=float)):
    out[0] = returns_int_literal() / 2.0


def test_int_literal_returned_from_a_float_function_is_a_float():
    """Warp rejects `return 1` in a float function; kernelcore converts the literal (1 -> 1.0),
    never an integer result (docs/warp_compat.md)."""
    out = np.zeros(1, np.float32)
    kc.launch(call_returns_int_literal, dim=1, inputs=[out])
    assert out[0] == 0.5
