"""Every construct of the kernel language, checked against numpy / Python."""
from typing import Any

import numpy as np
import pytest

import kernelcore as kc

SCALE = kc.constant(3.0)
COUNT = 4


@kc.kernel
def branches(x: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    v = x[i]
    r = float(0.0)
    if v < -1.0:
        r = -1.0
    elif v < 1.0:
        r = v * v
    else:
        r = 1.0 + v
    out[i] = r if v != 0.5 else 100.0


def test_if_elif_else_and_ternary():
    x = np.linspace(-3, 3, 25).astype(np.float32)
    x[3] = 0.5
    out = np.zeros_like(x)
    kc.launch(branches, dim=len(x), inputs=[x, out])
    ref = np.where(x < -1, -1.0, np.where(x < 1, x * x, 1.0 + x))
    ref[x == 0.5] = 100.0
    np.testing.assert_allclose(out, ref, rtol=1e-6)


@kc.kernel
def loops(n: int, out: kc.array(dtype=int)):
    i = kc.tid()
    s = int(0)
    for k in range(COUNT):         # static: unrolled
        s += k
    for k in range(n):             # dynamic
        s += k * i
    for k in range(10, 0, -3):     # static with a negative step
        s += k
    for k in range(n, 0, -2):      # dynamic with a negative step
        s += 1
    j = int(0)
    while j < 5:
        j += 1
        if j == 2:
            continue
        if j == 4:
            break
        s += 1000
    out[i] = s


def test_static_dynamic_while_break_continue():
    out = np.zeros(6, np.int32)
    n = 7
    kc.launch(loops, dim=6, inputs=[n, out])
    ref = [sum(range(COUNT)) + sum(k * i for k in range(n)) + sum(range(10, 0, -3)) + len(range(n, 0, -2)) + 2000 for i in range(6)]
    assert out.tolist() == ref


@kc.func
def divmod_f(a: int, b: int):
    return a // b, a % b


@kc.func
def first_positive(x: kc.array(dtype=float)):
    for i in range(len(x)):
        if x[i] > 0.0:
            return i
    return -1


@kc.kernel
def tuples_and_returns(x: kc.array(dtype=float), out: kc.array(dtype=int)):
    q, r = divmod_f(-7, 2)
    out[0] = q
    out[1] = r
    out[2] = first_positive(x)


def test_tuple_returns_and_early_return():
    x = np.array([-1.0, -2.0, 3.0, 4.0], np.float32)
    out = np.zeros(3, np.int32)
    kc.launch(tuples_and_returns, dim=1, inputs=[x, out])
    assert out.tolist() == [-7 // 2, -1, 2]   # % truncates as in Warp (the sign of the dividend)
    x[:] = -1
    kc.launch(tuples_and_returns, dim=1, inputs=[x, out])
    assert out[2] == -1


@kc.func
def describe(x: float):
    return x * 2.0


@kc.func
def describe(x: int):  # noqa: F811  (an overload by argument type)
    return x * 3


@kc.func
def twice(x: Any):
    return x + x


@kc.kernel
def overloads(outf: kc.array(dtype=float), outi: kc.array(dtype=int), outv: kc.array(dtype=kc.vec3)):
    outf[0] = describe(1.5)
    outi[0] = describe(5)
    outf[1] = twice(2.5)
    outi[1] = twice(21)
    outv[0] = twice(kc.vec3(1.0, 2.0, 3.0))


def test_overloading_and_generic_any():
    f = np.zeros(2, np.float32)
    i = np.zeros(2, np.int32)
    v = kc.zeros(1, dtype=kc.vec3)
    kc.launch(overloads, dim=1, inputs=[f, i, v])
    assert f.tolist() == [3.0, 5.0] and i.tolist() == [15, 42]
    assert v.numpy()[0].tolist() == [2.0, 4.0, 6.0]


@kc.kernel
def atomics(counts: kc.array(dtype=int), lo: kc.array(dtype=float), hi: kc.array(dtype=float), old: kc.array(dtype=int)):
    i = kc.tid()
    old[i] = kc.atomic_add(counts, i % 3, 1)
    kc.atomic_min(lo, 0, float(i) - 50.0)
    kc.atomic_max(hi, 0, float(i) * 2.0)
    counts[3] += 2
    counts[4] -= 1


def test_atomics_under_threads():
    n = 20000
    counts = np.zeros(5, np.int32)
    lo = np.full(1, 1e9, np.float32)
    hi = np.full(1, -1e9, np.float32)
    old = np.zeros(n, np.int32)
    kc.launch(atomics, dim=n, inputs=[counts, lo, hi, old])
    assert counts.tolist() == [len(range(0, n, 3)), len(range(1, n, 3)), len(range(2, n, 3)), 2 * n, -n]
    assert lo[0] == -50.0 and hi[0] == 2.0 * (n - 1)
    # the old values of each slot are a permutation of 0..count-1
    for s in range(3):
        assert sorted(old[s::3].tolist()) == list(range(len(old[s::3])))


@kc.struct
class Material:
    stiffness: float
    color: kc.vec3


@kc.struct
class Body:
    mass: float
    mat: Material
    values: kc.array(dtype=float)


@kc.kernel
def use_structs(b: Body, out: kc.array(dtype=float), mats: kc.array(dtype=Material)):
    i = kc.tid()
    m = mats[i]
    local = Body()
    local.mass = b.mass * 2.0
    out[i] = local.mass + b.mat.stiffness + b.values[i] + m.stiffness + m.color[1]


def test_structs_nested_with_array_members():
    vals = kc.array(np.array([10.0, 20.0], np.float32))
    b = Body(mass=1.5, mat=Material(stiffness=0.25, color=kc.vec3(0.0, 0.0, 0.0)), values=vals)
    mats = kc.array([Material(stiffness=1.0, color=kc.vec3(0, 5, 0)), Material(stiffness=2.0, color=kc.vec3(0, 7, 0))], dtype=Material)
    out = kc.zeros(2, dtype=float)
    kc.launch(use_structs, dim=2, inputs=[b, out, mats])
    np.testing.assert_allclose(out.numpy(), [3.0 + 0.25 + 10 + 1 + 5, 3.0 + 0.25 + 20 + 2 + 7])


@kc.kernel
def grid2d(out: kc.array2d(dtype=int)):
    i, j = kc.tid()
    out[i, j] = i * 100 + j


@kc.kernel
def grid3d(out: kc.array3d(dtype=float)):
    i, j, k = kc.tid()
    out[i, j, k] = float(i) + 10.0 * float(j) + 100.0 * float(k) + SCALE


def test_multidimensional_tid_and_arrays():
    out = kc.zeros((3, 4), dtype=int)
    kc.launch(grid2d, dim=(3, 4), inputs=[out])
    assert out.numpy().tolist() == [[i * 100 + j for j in range(4)] for i in range(3)]
    out3 = kc.zeros((2, 3, 4), dtype=float)
    kc.launch(grid3d, dim=(2, 3, 4), inputs=[out3])
    i, j, k = np.meshgrid(range(2), range(3), range(4), indexing="ij")
    np.testing.assert_allclose(out3.numpy(), i + 10 * j + 100 * k + 3.0)
    with pytest.raises(ValueError, match="unpacks kc.tid"):
        kc.launch(grid2d, dim=12, inputs=[out])


@kc.kernel
def views_and_shape(a: kc.array2d(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    row = a[i]
    s = float(0.0)
    for j in range(a.shape[1]):
        s += row[j]
    out[i] = s + float(len(a))


def test_views_inside_kernels_and_strided_inputs():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros(3, np.float32)
    kc.launch(views_and_shape, dim=3, inputs=[a, out])
    np.testing.assert_allclose(out, a.sum(1) + 3)
    big = kc.array(np.arange(24, dtype=np.float32).reshape(6, 4))
    sl = big[::2]  # a strided view made in Python scope
    out2 = kc.zeros(3, dtype=float)
    kc.launch(views_and_shape, dim=3, inputs=[sl, out2])
    np.testing.assert_allclose(out2.numpy(), big.numpy()[::2].sum(1) + 3)


@kc.kernel
def casts_and_types(x: kc.array(dtype=kc.float64), y: kc.array(dtype=kc.int64), h: kc.array(dtype=kc.float16), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    a = x[i] * 2.0                      # literal adapts to float64
    b = kc.float64(y[i]) + 0.5
    c = kc.float64(float(h[i]))
    d = int(a) + 7 // 2 - (-7) // 2       # Python floor division semantics
    e = kc.float64(kc.uint8(300 % 256))
    out[i] = a + b + c + kc.float64(d) + e
    h[i] = kc.float16(float(h[i]) * 2.0)


def test_casts_literals_and_small_types():
    x = np.array([1.25, -2.5], np.float64)
    y = np.array([3, -4], np.int64)
    h = np.array([0.5, 1.5], np.float16)
    out = np.zeros(2, np.float64)
    kc.launch(casts_and_types, dim=2, inputs=[x, y, h, out])
    a = x * 2.0
    ref = a + (y + 0.5) + np.array([0.5, 1.5]) + (np.trunc(a) + 3 + 4) + 44
    np.testing.assert_allclose(out, ref)
    np.testing.assert_array_equal(h, np.array([1.0, 3.0], np.float16))


@kc.kernel
def vec_ops(a: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat33), out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    v = a[i]
    v[0] = v[0] + 1.0
    v.y = v.y * 2.0
    w = m[i] * v + kc.cross(v, kc.vec3(0.0, 0.0, 1.0)) * kc.dot(v, v)
    M = m[i]
    M[0, 0] = 5.0
    M[1] = kc.vec3(1.0, 1.0, 1.0)
    out[i] = w + M[0] + kc.transpose(M)[1] + kc.vec3(kc.determinant(M))


def test_vector_matrix_arithmetic_and_component_updates():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3)).astype(np.float32)
    m = rng.normal(size=(4, 3, 3)).astype(np.float32)
    out = kc.zeros(4, dtype=kc.vec3)
    kc.launch(vec_ops, dim=4, inputs=[kc.array(a, dtype=kc.vec3), kc.array(m, dtype=kc.mat33), out])
    ref = []
    for i in range(4):
        v = a[i].astype(np.float64).copy()
        v[0] += 1
        v[1] *= 2
        w = m[i] @ v + np.cross(v, [0, 0, 1]) * v.dot(v)
        M = m[i].astype(np.float64).copy()
        M[0, 0] = 5
        M[1] = 1
        ref.append(w + M[0] + M.T[1] + np.linalg.det(M))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


@kc.kernel
def printing(x: kc.array(dtype=float)):
    i = kc.tid()
    print("value", x[i], kc.vec2(1.0, 2.0), i)
    kc.printf("fmt %d %.2f\n", i, x[i])


def test_print_and_printf(capfd):
    kc.launch(printing, dim=1, inputs=[np.array([2.5], np.float32)])
    out = capfd.readouterr().out
    assert "value 2.5 [1 2] 0" in out
    assert "fmt 0 2.50" in out


def make_scaler(factor):
    @kc.kernel
    def scale(x: kc.array(dtype=float)):
        i = kc.tid()
        x[i] = x[i] * factor

    return scale


def test_closures_over_constants():
    x = np.ones(3, np.float32)
    kc.launch(make_scaler(2.0), dim=3, inputs=[x])
    kc.launch(make_scaler(5.0), dim=3, inputs=[x])
    np.testing.assert_allclose(x, 10.0)


@kc.kernel
def rand_kernel(seed: int, out: kc.array(dtype=float)):
    i = kc.tid()
    state = kc.rand_init(seed, i)
    a = kc.randf(state)
    b = kc.randf(state)
    out[i] = a + 10.0 * b


def test_random_state_advances():
    out = np.zeros(1000, np.float32)
    kc.launch(rand_kernel, dim=1000, inputs=[42, out])
    a = out % 10.0
    assert np.all(out >= 0) and np.all(out < 11)
    assert abs(np.mean(out) - 5.5) < 0.3
    out2 = np.zeros(1000, np.float32)
    kc.launch(rand_kernel, dim=1000, inputs=[42, out2])
    np.testing.assert_array_equal(out, out2)
    assert len(np.unique(a)) > 900


def test_launch_argument_errors():
    x = kc.zeros(3, dtype=float)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        kc.launch(branches, dim=3, inputs=[x])
    with pytest.raises(TypeError, match="argument 'x'.*vec3"):
        kc.launch(branches, dim=3, inputs=[kc.zeros(3, dtype=kc.vec3), x])
    with pytest.raises(ValueError, match="argument 'x'.*2-d"):
        kc.launch(branches, dim=3, inputs=[kc.zeros((3, 3), dtype=float), x])
    with pytest.raises(TypeError, match="argument 'n'.*int32"):
        kc.launch(loops, dim=3, inputs=[1.5, kc.zeros(3, dtype=int)])
    with pytest.raises(TypeError, match="argument 'x'.*dtype float64"):
        kc.launch(branches, dim=3, inputs=[np.zeros(3), x])
    with pytest.raises(ValueError, match="argument 'outv'.*vec3"):
        kc.launch(overloads, dim=1, inputs=[np.zeros(2, np.float32), np.zeros(2, np.int32), np.zeros((1, 4), np.float32)])
    with pytest.raises(ValueError, match="argument 'gravity'.*3 components"):
        from examples.integrate_particles import integrate
        kc.launch(integrate, dim=1, inputs=[kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=kc.vec3), (0.0, 1.0), 0.1])
