"""Builtins and operators on host values mean what they mean in kernels.

Each host expression is compared with the same expression evaluated inside a kernel (the host
call runs the builtin's compiled native function, so the results are bit-identical).
"""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc

V1, V2 = kc.vec3(0.3, -1.2, 2.0), kc.vec3(1.5, 0.25, -0.75)
A = kc.mat33(1.0, 2.0, -1.0, 0.5, 3.0, 2.0, -2.0, 1.0, 4.0)
B = kc.mat33(0.0, 1.0, 2.0, -1.0, 0.5, 0.0, 3.0, 1.0, -2.0)
M23 = kc.matrix((2, 3), kc.float32)(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
AXIS, ANGLE = kc.vec3(1.0, 2.0, -0.5), 0.7
Q2 = kc.quat(0.1, -0.3, 0.2, 0.9)
P = kc.vec3(1.0, -2.0, 0.5)
AD = kc.mat33d(2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0)


@kc.kernel
def in_kernel(v1: kc.vec3, v2: kc.vec3, a: kc.mat33, b: kc.mat33, m23: kc.matrix((2, 3), kc.float32), axis: kc.vec3,
              angle: float, q2: kc.quat, p: kc.vec3, ad: kc.mat33d,
              f: kc.array(dtype=float), v: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat33),
              q: kc.array(dtype=kc.quat), t: kc.array(dtype=kc.transform), md: kc.array(dtype=kc.mat33d),
              vd: kc.array(dtype=kc.vec3d), w2: kc.array(dtype=kc.vec2)):
    f[0] = kc.length(v1)
    f[1] = kc.dot(v1, v2)
    f[2] = kc.determinant(a)
    v[0] = kc.normalize(v1)
    v[1] = kc.cross(v1, v2)
    v[2] = a @ v1
    v[3] = v1 @ a
    w2[0] = m23 @ v1
    m[0] = a @ b
    m[1] = a * b
    m[2] = kc.outer(v1, v2)
    m[3] = kc.inverse(a)
    qa = kc.quat_from_axis_angle(axis, angle)
    q[0] = qa
    q[1] = kc.quat_identity()
    q[2] = qa * q2
    v[5] = kc.quat_rotate(qa, v2)
    x = kc.transform(p, qa)
    y = kc.transform(v2, kc.normalize(q2))
    v[6] = kc.transform_point(x, v1)
    v[7] = kc.transform_vector(x, v1)
    t[0] = x * y
    t[1] = kc.transform_inverse(x)
    v[8] = x.p
    q[3] = x.q
    u, s, w = kc.svd3(ad)
    md[0] = u
    md[1] = w
    vd[0] = s


@pytest.fixture(scope="module")
def kernel_values():
    outs = dict(f=kc.zeros(3, dtype=float), v=kc.zeros(9, dtype=kc.vec3), m=kc.zeros(4, dtype=kc.mat33),
                q=kc.zeros(4, dtype=kc.quat), t=kc.zeros(2, dtype=kc.transform), md=kc.zeros(2, dtype=kc.mat33d),
                vd=kc.zeros(1, dtype=kc.vec3d), w2=kc.zeros(1, dtype=kc.vec2))
    kc.launch(in_kernel, dim=1, inputs=[V1, V2, A, B, M23, AXIS, ANGLE, Q2, P, AD] + list(outs.values()))
    return {k: a.numpy() for k, a in outs.items()}


def test_host_builtins_equal_kernel_results(kernel_values):
    k = kernel_values
    qa = kc.quat_from_axis_angle(AXIS, ANGLE)
    x = kc.transform(P, qa)
    y = kc.transform(V2, kc.normalize(Q2))
    checks = [
        (kc.length(V1), k["f"][0]), (kc.dot(V1, V2), k["f"][1]), (kc.determinant(A), k["f"][2]),
        (kc.normalize(V1), k["v"][0]), (kc.cross(V1, V2), k["v"][1]),
        (kc.outer(V1, V2), k["m"][2]), (kc.inverse(A), k["m"][3]),
        (qa, k["q"][0]), (kc.quat_identity(), k["q"][1]), (kc.quat_rotate(qa, V2), k["v"][5]),
        (kc.transform_point(x, V1), k["v"][6]), (kc.transform_vector(x, V1), k["v"][7]),
        (kc.transform_inverse(x), k["t"][1]),
    ]
    for n, (host, kern) in enumerate(checks):
        np.testing.assert_array_equal(np.asarray(host), kern, err_msg=f"check {n}")
    assert isinstance(kc.length(V1), float) and type(kc.normalize(V1)) is kc.vec3 and type(qa) is kc.quat
    u, s, w = kc.svd3(AD)
    assert type(s) is kc.vec3d
    np.testing.assert_array_equal(np.asarray(u), k["md"][0])
    np.testing.assert_array_equal(np.asarray(w), k["md"][1])
    np.testing.assert_array_equal(np.asarray(s), k["vd"][0])


def test_host_operators_equal_kernel_results(kernel_values):
    k = kernel_values
    qa = kc.quat_from_axis_angle(AXIS, ANGLE)
    x = kc.transform(P, qa)
    y = kc.transform(V2, kc.normalize(Q2))
    np.testing.assert_array_equal(np.asarray(A @ V1), k["v"][2])
    np.testing.assert_array_equal(np.asarray(V1 @ A), k["v"][3])
    np.testing.assert_array_equal(np.asarray(M23 @ V1), k["w2"][0])
    np.testing.assert_array_equal(np.asarray(A @ B), k["m"][0])
    np.testing.assert_array_equal(np.asarray(A * B), k["m"][1])     # * on matrices is the matrix product
    np.testing.assert_array_equal(np.asarray(qa * Q2), k["q"][2])   # Hamilton product
    np.testing.assert_array_equal(np.asarray(x * y), k["t"][0])     # composition
    np.testing.assert_array_equal(np.asarray(x.p), k["v"][8])
    np.testing.assert_array_equal(np.asarray(x.q), k["q"][3])
    assert type(x.p) is kc.vec3 and type(x.q) is kc.quat
    # the numbers agree with numpy's matrix product too (not component-wise)
    np.testing.assert_allclose(np.asarray(A * B), np.asarray(A) @ np.asarray(B), rtol=1e-6)
    # scalar and component-wise operations are unchanged
    np.testing.assert_array_equal(np.asarray(A * 2.0), 2.0 * np.asarray(A))
    np.testing.assert_array_equal(np.asarray(V1 + V2), np.asarray(V1) + np.asarray(V2))


def test_host_calls_reject_what_kernels_reject():
    with pytest.raises(TypeError, match=r"kc.length\(\): argument 0 is a list"):
        kc.length([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"kc.cross\(\) has no overload"):
        kc.cross(kc.vec3(1.0, 0.0, 0.0), kc.vec3d(0.0, 1.0, 0.0))
    with pytest.raises(TypeError, match=r"kc.mul\(\) has no overload"):
        A @ kc.vec2(1.0, 2.0)
    with pytest.raises(RuntimeError, match=r"kc.randf\(\) updates its arguments"):
        kc.randf(kc.uint32(1))
    with pytest.raises(TypeError, match="keyword"):
        kc.length(v=V1)


def test_weak_python_numbers_adapt_like_literals():
    assert kc.max(2, 3) == 3 and isinstance(kc.max(2, 3), int)
    assert kc.sin(0.5) == pytest.approx(np.sin(0.5), rel=1e-7)
    assert kc.clamp(kc.float64(5.0), 0.0, 1.0) == 1.0
