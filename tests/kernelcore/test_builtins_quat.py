"""Quaternion, transform and spatial-vector builtins against numpy (float16, float32 and float64).

Quaternions are (x, y, z, w).  References below are written from the textbook
definitions (Hamilton product, rotation matrix of a unit quaternion), independently of
the native code.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import kernelcore as kc
from _builtin_harness import kernel_source, load_module, reference_inputs, result_type, run, tolerance

FLOATS = (kc.float16, kc.float32, kc.float64)
N = 129


# ---- numpy references ---------------------------------------------------------------------
def qmul(a, b):
    ua, wa, ub, wb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([wa * ub + wb * ua + np.cross(ua, ub), wa * wb - np.sum(ua * ub, -1, keepdims=True)], -1)


def qconj(q):
    return q * np.array([-1, -1, -1, 1])


def qmat(q):
    """rotation matrix of unit quaternions (n, 4) -> (n, 3, 3)"""
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def qrot(q, v):
    # rotate through the Hamilton product q (v, 0) q*
    v4 = np.concatenate([v, np.zeros((len(v), 1))], -1)
    return qmul(qmul(q, v4), qconj(q))[:, :3]


def axis_angle(axis, angle):
    n = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    return np.concatenate([n * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], -1)


def rpy(r, p, y):
    ex, ey, ez = (np.tile(e, (len(r), 1)) for e in np.eye(3))
    return qmul(axis_angle(ez, y), qmul(axis_angle(ey, p), axis_angle(ex, r)))


def slerp(a, b, t):
    d = np.sum(a * b, -1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.abs(d)
    th = np.arccos(np.clip(d, -1, 1))
    s = np.sin(th)
    t = t[:, None]
    with np.errstate(all="ignore"):
        r = (np.sin((1 - t) * th) * a + np.sin(t * th) * b) / s
    lin = a + (b - a) * t
    lin = lin / np.linalg.norm(lin, axis=-1, keepdims=True)
    return np.where(d > 0.9995, lin, r)


def tf_split(x):
    return x[:, :3], x[:, 3:]


def tf_mul(a, b):
    pa, qa = tf_split(a)
    pb, qb = tf_split(b)
    return np.concatenate([pa + qrot(qa, pb), qmul(qa, qb)], -1)


def tf_inv(a):
    p, q = tf_split(a)
    qi = qconj(q)
    return np.concatenate([-qrot(qi, p), qi], -1)


def tf_matrix(a):
    p, q = tf_split(a)
    m = np.zeros((len(a), 4, 4))
    m[:, :3, :3] = qmat(q)
    m[:, :3, 3] = p
    m[:, 3, 3] = 1
    return m


# ---- samplers -----------------------------------------------------------------------------
def _np(t):
    return (t._dtype if hasattr(t, "_dtype") else t)._np


def normal(rng, n, t):
    return rng.normal(size=(n,) + tuple(getattr(t, "_shape", ()))).astype(_np(t))


def unit_quat(rng, n, t):
    q = rng.normal(size=(n, 4))
    specials = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0.7, 0.1, 0.0, 0.05], [0, -0.2, 0.9, 0.1]]
    if n > len(specials):  # half turns and near half turns exercise every branch of quat_from_matrix
        q[:len(specials)] = specials
    return (q / np.linalg.norm(q, axis=-1, keepdims=True)).astype(_np(t))


def unit_transform(rng, n, t):
    return np.concatenate([rng.normal(size=(n, 3)), unit_quat(rng, n, t)], -1).astype(_np(t))


def rotation_matrix(rng, n, t):
    return qmat(unit_quat(rng, n, t).astype(np.float64)).astype(_np(t))


def angle(rng, n, t):
    return rng.uniform(-3, 3, n).astype(_np(t))


def unit_interval(rng, n, t):
    return rng.uniform(0, 1, n).astype(_np(t))


def nonzero(rng, n, t):
    return rng.uniform(0.5, 2.0, n).astype(_np(t))


def slerp_pairs(rng, n, t):
    return unit_quat(rng, n, t)


def _cases():
    out = []

    def add(cid, types, expr, ref, samplers=None, out_type=None):
        out.append((cid, types, expr, ref, samplers or [normal] * len(types), out_type))

    for dt in FLOATS:
        s = dt._name
        q, v3, tf, m33, m44, v6 = (kc.quaternion(dt), kc.vector(3, dt), kc.transformation(dt), kc.matrix((3, 3), dt),
                                   kc.matrix((4, 4), dt), kc.vector(6, dt))
        U, UT = unit_quat, unit_transform
        # kc exports no float16 transform type name, so the two transform constructor cases skip float16
        QN, TN = {kc.float16: ("quath", None), kc.float32: ("quat", "transform"), kc.float64: ("quatd", "transformd")}[dt]
        add(f"q_add_{s}", [q, q], "{0} + {1}", np.add)
        add(f"q_sub_{s}", [q, q], "{0} - {1}", np.subtract)
        add(f"q_neg_{s}", [q], "-{0}", np.negative)
        add(f"q_scale_{s}", [q, dt], "{0} * {1}", lambda a, b: a * b[:, None])
        add(f"q_rscale_{s}", [dt, q], "{0} * {1}", lambda a, b: a[:, None] * b)
        add(f"q_div_{s}", [q, dt], "{0} / {1}", lambda a, b: a / b[:, None], [normal, nonzero])
        add(f"q_lit_{s}", [q], "{0} * 2.0", lambda a: 2 * a, out_type=q)
        add(f"q_mul_{s}", [q, q], "{0} * {1}", qmul)
        add(f"q_kcmul_{s}", [q, q], "kc.mul({0}, {1})", qmul)
        add(f"q_dot_{s}", [q, q], "kc.dot({0}, {1})", lambda a, b: np.sum(a * b, -1))
        add(f"q_length_{s}", [q], "kc.length({0})", lambda a: np.linalg.norm(a, axis=-1))
        add(f"q_length_sq_{s}", [q], "kc.length_sq({0})", lambda a: np.sum(a * a, -1))
        add(f"q_normalize_{s}", [q], "kc.normalize({0})", lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True))
        add(f"q_lerp_{s}", [q, q, dt], "kc.lerp({0}, {1}, {2})", lambda a, b, t: a + (b - a) * t[:, None])
        add(f"q_xyzw_{s}", [q], "{0}.x + 10.0 * {0}.y + 100.0 * {0}.z + 1000.0 * {0}[3]",
            lambda a: a @ np.array([1, 10, 100, 1000.0]), out_type=dt)
        add(f"q_ctor_{s}", [v3, dt], f"kc.{QN}({{0}}, {{1}})",
            lambda u, w: np.concatenate([u, w[:, None]], -1), out_type=q)
        add(f"q_inverse_{s}", [q], "kc.quat_inverse({0})", qconj)
        add(f"q_inverse_is_inverse_{s}", [q], "kc.mul({0}, kc.quat_inverse({0}))",
            lambda a: np.tile([0, 0, 0, 1.0], (len(a), 1)), [U], out_type=q)
        add(f"q_axis_angle_{s}", [v3, dt], "kc.quat_from_axis_angle({0}, {1})", axis_angle, [normal, angle])
        add(f"q_rpy_{s}", [dt, dt, dt], "kc.quat_rpy({0}, {1}, {2})", rpy, [angle] * 3)
        add(f"q_rotate_{s}", [q, v3], "kc.quat_rotate({0}, {1})", qrot, [U, normal])
        add(f"q_rotate_inv_{s}", [q, v3], "kc.quat_rotate_inv({0}, {1})", lambda a, v: qrot(qconj(a), v), [U, normal])
        add(f"q_rotate_matrix_{s}", [q, v3], "kc.quat_to_matrix({0}) * {1} - kc.quat_rotate({0}, {1})",
            lambda a, v: np.zeros_like(v), [normal, normal], out_type=v3)
        add(f"q_to_matrix_{s}", [q], "kc.quat_to_matrix({0})", qmat, [U])
        add(f"q_from_matrix_{s}", [m33], "kc.quat_to_matrix(kc.quat_from_matrix({0}))", lambda m: m, [rotation_matrix],
            out_type=m33)
        add(f"q_from_matrix_sign_{s}", [q], "kc.quat_from_matrix(kc.quat_to_matrix({0}))", lambda a: a, [U], out_type=q)
        add(f"q_slerp_{s}", [q, q, dt], "kc.quat_slerp({0}, {1}, {2})", slerp, [U, U, unit_interval])
        add(f"q_slerp_near_{s}", [q, dt], "kc.quat_slerp({0}, {0} * 1.0, {1})", lambda a, t: a, [U, unit_interval],
            out_type=q)
        add(f"q_identity_{s}", [q], f"kc.mul({{0}}, kc.{QN}(0.0, 0.0, 0.0, 1.0))",
            lambda a: a, out_type=q)
        add(f"q_eq_{s}", [q, q], f"kc.where({{0}} == {{0}}, kc.{s}(1.0), kc.{s}(0.0)) + kc.where({{0}} != {{1}}, kc.{s}(2.0), kc.{s}(0.0))",
            lambda a, b: np.full(len(a), 3.0), out_type=dt)
        # transforms
        if TN:
            add(f"t_ctor_{s}", [v3, q], f"kc.{TN}({{0}}, {{1}})",
                lambda p, r: np.concatenate([p, r], -1), out_type=tf)
        add(f"t_get_p_{s}", [tf], "kc.transform_get_translation({0})", lambda t: t[:, :3])
        add(f"t_get_q_{s}", [tf], "kc.transform_get_rotation({0})", lambda t: t[:, 3:])
        add(f"t_attr_p_{s}", [tf], "{0}.p", lambda t: t[:, :3], out_type=v3)
        add(f"t_attr_q_{s}", [tf], "{0}.q", lambda t: t[:, 3:], out_type=q)
        add(f"t_index_{s}", [tf], "{0}[1] + {0}[5]", lambda t: t[:, 1] + t[:, 5], out_type=dt)
        add(f"t_mul_{s}", [tf, tf], "{0} * {1}", tf_mul, [UT, UT])
        add(f"t_kcmul_{s}", [tf, tf], "kc.mul({0}, {1})", tf_mul, [UT, UT])
        add(f"t_multiply_{s}", [tf, tf], "kc.transform_multiply({0}, {1})", tf_mul, [UT, UT])
        add(f"t_inverse_{s}", [tf], "kc.transform_inverse({0})", tf_inv, [UT])
        add(f"t_inverse_compose_{s}", [tf], "kc.transform_inverse({0}) * {0}",
            lambda t: np.tile([0, 0, 0, 0, 0, 0, 1.0], (len(t), 1)), [UT], out_type=tf)
        add(f"t_point_{s}", [tf, v3], "kc.transform_point({0}, {1})", lambda t, x: t[:, :3] + qrot(t[:, 3:], x), [UT, normal])
        add(f"t_vector_{s}", [tf, v3], "kc.transform_vector({0}, {1})", lambda t, x: qrot(t[:, 3:], x), [UT, normal])
        add(f"t_to_matrix_{s}", [tf], "kc.transform_to_matrix({0})", tf_matrix, [UT])
        add(f"m44_point_{s}", [m44, v3], "kc.transform_point({0}, {1})",
            lambda m, x: np.einsum("nij,nj->ni", m[:, :3, :3], x) + m[:, :3, 3])
        add(f"m44_vector_{s}", [m44, v3], "kc.transform_vector({0}, {1})", lambda m, x: np.einsum("nij,nj->ni", m[:, :3, :3], x))
        add(f"t_add_{s}", [tf, tf], "{0} + {1}", np.add)
        add(f"t_sub_{s}", [tf, tf], "{0} - {1}", np.subtract)
        add(f"t_scale_{s}", [tf, dt], "{0} * {1}", lambda a, b: a * b[:, None])
        if TN:
            add(f"t_identity_{s}", [tf, v3], f"kc.transform_point(kc.{TN}(kc.vector(0.0, 0.0, 0.0, dtype=kc.{s}), kc.{QN}(0.0, 0.0, 0.0, 1.0)) * {{0}}, {{1}})",
                lambda t, x: t[:, :3] + qrot(t[:, 3:], x), [UT, normal], out_type=v3)
        # spatial vectors
        add(f"sp_top_{s}", [v6], "kc.spatial_top({0})", lambda a: a[:, :3])
        add(f"sp_bottom_{s}", [v6], "kc.spatial_bottom({0})", lambda a: a[:, 3:])
        add(f"sp_dot_{s}", [v6, v6], "kc.spatial_dot({0}, {1})", lambda a, b: np.sum(a * b, -1))
        add(f"sp_cross_{s}", [v6, v6], "kc.spatial_cross({0}, {1})",
            lambda a, b: np.concatenate([np.cross(a[:, :3], b[:, :3]), np.cross(a[:, :3], b[:, 3:]) + np.cross(a[:, 3:], b[:, :3])], -1))
        add(f"sp_cross_dual_{s}", [v6, v6], "kc.spatial_cross_dual({0}, {1})",
            lambda a, b: np.concatenate([np.cross(a[:, :3], b[:, :3]) + np.cross(a[:, 3:], b[:, 3:]), np.cross(a[:, :3], b[:, 3:])], -1))
    # float32 identity builtins (no arguments)
    add("q_identity_builtin", [kc.quat], "kc.mul(kc.quat_identity(), {0})", lambda a: a, out_type=kc.quat)
    add("t_identity_builtin", [kc.transform], "kc.mul(kc.transform_identity(), {0})", lambda a: a, [unit_transform],
        out_type=kc.transform)
    return out


CASES = _cases()


def _out(case):
    cid, types, expr, ref, samplers, out_type = case
    if out_type is not None:
        return out_type
    import ast
    e = ast.parse(expr.format(*[f"a{k}" for k in range(len(types))]), mode="eval").body
    ops = {"Add": "add", "Sub": "sub", "Mult": "mul", "Div": "div"}
    if isinstance(e, ast.BinOp):
        return result_type(ops[type(e.op).__name__], types)
    if isinstance(e, ast.UnaryOp):
        return result_type("neg", types)
    return result_type(e.func.attr, types)


OUT = {c[0]: _out(c) for c in CASES}


@pytest.fixture(scope="module")
def kernels():
    body = "".join(kernel_source("k_" + c[0], c[1], OUT[c[0]], c[2]) for c in CASES)
    return load_module("gen_quat", body)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_quat_builtin_matches_numpy(kernels, case):
    cid, types, expr, ref, samplers, _ = case
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    inputs = [s(rng, N, t) for s, t in zip(samplers, types)]
    got = run(getattr(kernels, "k_" + cid), types, OUT[cid], inputs)
    dt = getattr(OUT[cid], "_dtype", OUT[cid])
    if dt is kc.float16:  # compared with numpy in float32
        want = np.asarray(ref(*reference_inputs(inputs, dt)))
    else:
        want = np.asarray(ref(*[x.astype(np.float64) for x in inputs]))
    if cid.startswith("q_from_matrix_sign"):
        # q and -q are the same rotation: align signs before comparing
        want = want * np.sign(np.sum(want * got, -1, keepdims=True))
    rtol, atol = tolerance(dt)
    if dt in (kc.float16, kc.float32):
        rtol, atol = rtol * 5, atol * 5   # chains of several float32 (or float16) products
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_rotation_properties_float64():
    """quat_to_matrix gives orthonormal matrices; slerp keeps unit length and splits the angle."""
    rng = np.random.default_rng(5)
    q = unit_quat(rng, 64, kc.quatd).astype(np.float64)
    m = qmat(q)
    np.testing.assert_allclose(np.einsum("nij,nkj->nik", m, m), np.tile(np.eye(3), (64, 1, 1)), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-12)
    # slerp angle split (reference only: the kernel is compared to it above)
    a, b = unit_quat(rng, 64, kc.quatd), unit_quat(np.random.default_rng(6), 64, kc.quatd)
    t = rng.uniform(0, 1, 64)
    r = slerp(a, b, t)
    np.testing.assert_allclose(np.linalg.norm(r, axis=-1), 1.0, atol=1e-12)
    full = np.arccos(np.clip(np.abs(np.sum(a * b, -1)), -1, 1))
    part = np.arccos(np.clip(np.abs(np.sum(a * r, -1)), -1, 1))
    np.testing.assert_allclose(part, t * full, atol=1e-7)


@kc.kernel
def _tf_arg_kernel(t: kc.transformd, q: kc.quatd, x: kc.array(dtype=kc.vec3d), out: kc.array(dtype=kc.vec3d)):
    i = kc.tid()
    out[i] = kc.transform_point(t, x[i]) + kc.quat_rotate(q, x[i])


def test_transform_and_quat_as_launch_arguments():
    rng = np.random.default_rng(2)
    qv = unit_quat(rng, 1, kc.quatd)[0].astype(np.float64)
    p = np.array([1.0, -2.0, 0.5])
    t = kc.transformd(kc.vec3d(*p), kc.quatd(*qv))
    x = rng.normal(size=(8, 3))
    out = kc.zeros(8, dtype=kc.vec3d)
    kc.launch(_tf_arg_kernel, dim=8, inputs=[t, kc.quatd(*qv), kc.array(x, dtype=kc.vec3d), out])
    want = p + 2 * qrot(np.tile(qv, (8, 1)), x)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)


def test_quat_result_types():
    assert result_type("quat_rotate", [kc.quatd, kc.vec3d]) is kc.vec3d
    assert result_type("quat_to_matrix", [kc.quat]) is kc.mat33
    assert result_type("mul", [kc.transformd, kc.transformd]) is kc.transformd
    assert result_type("quat_identity", []) is kc.quat
    from kernelcore.builtins.registry import registry
    assert registry.resolve("quat_rotate", [kc.quat, kc.vec3d]) is None


@kc.kernel(enable_backward=False)
def _axis_angle_kernel(q: kc.array(dtype=kc.quatd), axes: kc.array(dtype=kc.vec3d), angles: kc.array(dtype=kc.float64)):
    i = kc.tid()
    axis = kc.vec3d(0.0, 0.0, 0.0)
    angle = kc.float64(0.0)
    kc.quat_to_axis_angle(q[i], axis, angle)
    axes[i] = axis
    angles[i] = angle


def test_quat_to_axis_angle_round_trip():
    q = unit_quat(np.random.default_rng(9), 64, kc.quatd).astype(np.float64)
    q[10] = [0, 0, 0, 1]                       # identity: axis x, angle 0
    axes, angles = kc.zeros(64, dtype=kc.vec3d), kc.zeros(64, dtype=kc.float64)
    kc.launch(_axis_angle_kernel, dim=64, inputs=[kc.array(q, dtype=kc.quatd), axes, angles])
    a, t = axes.numpy(), angles.numpy()
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-12)
    assert t.min() >= 0.0 and t.max() < 2 * np.pi
    np.testing.assert_allclose(axis_angle(a, t), q, atol=1e-12)
    np.testing.assert_allclose(a[10], [1, 0, 0])
    assert t[10] == 0.0
