"""svd3, eig3, qr3, polar and matrix_from_rows/cols: forward against numpy.linalg, adjoints
against float64 central differences, including repeated and nearly repeated singular values.

The generic finite-difference test (test_builtin_gradients.py) checks every output of the
float64 rows on random matrices; here the losses are the ones that stay differentiable at
repeated singular/eigen values (U V^T, the polar factors, symmetric functions of sigma and d),
evaluated exactly at and next to such points, and the adjoint must be finite there.
"""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc


def rot(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def special_matrices():
    """Named 3x3 test matrices: random, rotations, reflections, repeated/near-repeated/zero singular values."""
    rng = np.random.default_rng(7)
    R1, R2 = rot([1, 2, 3], 0.7), rot([-2, 1, 0.5], 2.1)
    m = {
        "random": rng.normal(size=(3, 3)),
        "random_negdet": np.diag([1.0, 1.0, -1.0]) @ rng.normal(size=(3, 3)),
        "identity": np.eye(3),
        "rotation": R1,
        "reflection": R1 @ np.diag([1.0, -1.0, 1.0]),
        "repeated_221": R1 @ np.diag([2.0, 2.0, 1.0]) @ R2.T,
        "repeated_122": R1 @ np.diag([1.0, 2.0, 2.0]) @ R2.T,
        "repeated_neg": R1 @ np.diag([2.0, 2.0, -0.5]) @ R2.T,
        "near_repeated": R1 @ np.diag([1.5, 1.5 + 1e-5, 0.7]) @ R2.T,
        "scaled_rotation": 3.0 * R2,
        "rank2": R1 @ np.diag([2.0, 1.0, 0.0]) @ R2.T,
        "rank1": np.outer([1.0, 2.0, -1.0], [0.5, -1.0, 2.0]),
        "zero": np.zeros((3, 3)),
    }
    return m


MATS = special_matrices()
NAMES = list(MATS)
FULL_RANK = [n for n in NAMES if n not in ("rank2", "rank1", "zero")]


@kc.kernel
def decompose64(A: kc.array(dtype=kc.mat33d), U: kc.array(dtype=kc.mat33d), s: kc.array(dtype=kc.vec3d),
                V: kc.array(dtype=kc.mat33d), Q: kc.array(dtype=kc.mat33d), d: kc.array(dtype=kc.vec3d),
                QQ: kc.array(dtype=kc.mat33d), RR: kc.array(dtype=kc.mat33d), PR: kc.array(dtype=kc.mat33d),
                PS: kc.array(dtype=kc.mat33d)):
    i = kc.tid()
    u, sigma, v = kc.svd3(A[i])
    U[i] = u
    s[i] = sigma
    V[i] = v
    q, e = kc.eig3(A[i])
    Q[i] = q
    d[i] = e
    qq, rr = kc.qr3(A[i])
    QQ[i] = qq
    RR[i] = rr
    r, p = kc.polar(A[i])
    PR[i] = r
    PS[i] = p


@kc.kernel
def decompose32(A: kc.array(dtype=kc.mat33), U: kc.array(dtype=kc.mat33), s: kc.array(dtype=kc.vec3),
                V: kc.array(dtype=kc.mat33), Q: kc.array(dtype=kc.mat33), d: kc.array(dtype=kc.vec3),
                QQ: kc.array(dtype=kc.mat33), RR: kc.array(dtype=kc.mat33), PR: kc.array(dtype=kc.mat33),
                PS: kc.array(dtype=kc.mat33)):
    i = kc.tid()
    u, sigma, v = kc.svd3(A[i])
    U[i] = u
    s[i] = sigma
    V[i] = v
    q, e = kc.eig3(A[i])
    Q[i] = q
    d[i] = e
    qq, rr = kc.qr3(A[i])
    QQ[i] = qq
    RR[i] = rr
    r, p = kc.polar(A[i])
    PR[i] = r
    PS[i] = p


def decompose(As, dtype):
    m, v = (kc.mat33d, kc.vec3d) if dtype == np.float64 else (kc.mat33, kc.vec3)
    n = len(As)
    outs = [kc.zeros(n, dtype=t) for t in (m, v, m, m, v, m, m, m, m)]
    kc.launch(decompose64 if dtype == np.float64 else decompose32, dim=n,
              inputs=[kc.array(As.astype(dtype), dtype=m)] + outs)
    return [o.numpy().astype(np.float64) for o in outs]


def assert_rotation(R, tol):
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=tol)
    assert abs(np.linalg.det(R) - 1.0) < tol


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 3e-6)], ids=["float64", "float32"])
def test_decompositions_match_numpy(dtype, tol):
    As = np.stack([MATS[n] for n in NAMES])
    U, s, V, Q, d, QQ, RR, PR, PS = decompose(As, dtype)
    for k, name in enumerate(NAMES):
        A = As[k].astype(dtype).astype(np.float64)
        scale = max(1.0, np.abs(A).max())
        what = f"{name} ({np.dtype(dtype).name})"
        # svd3: rotations, A = U diag(s) V^T, |s| = numpy's singular values, sign(s2) = sign(det A)
        assert_rotation(U[k], tol * 10), what
        assert_rotation(V[k], tol * 10), what
        np.testing.assert_allclose(U[k] @ np.diag(s[k]) @ V[k].T, A, atol=tol * 10 * scale, err_msg=what)
        np.testing.assert_allclose(np.abs(s[k]), np.linalg.svd(A, compute_uv=False), atol=tol * 10 * scale, err_msg=what)
        assert s[k][0] >= s[k][1] >= 0.0, what
        if abs(np.linalg.det(A)) > 1e-3:
            assert np.sign(s[k][2]) == np.sign(np.linalg.det(A)), what
        # eig3 of the symmetric part: ascending eigenvalues as numpy.linalg.eigh, right-handed basis
        Sym = 0.5 * (A + A.T)
        np.testing.assert_allclose(d[k], np.linalg.eigh(Sym)[0], atol=tol * 10 * scale, err_msg=what)
        assert_rotation(Q[k], tol * 10)
        np.testing.assert_allclose(Q[k] @ np.diag(d[k]) @ Q[k].T, Sym, atol=tol * 10 * scale, err_msg=what)
        # qr3: A = Q R, Q a rotation, R upper triangular, |diag R| as numpy
        assert_rotation(QQ[k], tol * 10)
        np.testing.assert_allclose(np.tril(RR[k], -1), 0.0, atol=0, err_msg=what)
        np.testing.assert_allclose(QQ[k] @ RR[k], A, atol=tol * 10 * scale, err_msg=what)
        np.testing.assert_allclose(np.abs(np.diag(RR[k])), np.abs(np.diag(np.linalg.qr(A)[1])),
                                   atol=tol * 10 * scale, err_msg=what)
        # polar: A = R S, R the closest rotation, S symmetric
        assert_rotation(PR[k], tol * 10)
        np.testing.assert_allclose(PS[k], PS[k].T, atol=tol * 10 * scale, err_msg=what)
        np.testing.assert_allclose(PR[k] @ PS[k], A, atol=tol * 10 * scale, err_msg=what)
        if name in FULL_RANK and np.linalg.det(A) > 0:
            u, _, vt = np.linalg.svd(A)
            np.testing.assert_allclose(PR[k], u @ vt, atol=tol * 100, err_msg=what)


def test_repeated_singular_values_give_a_rotation_basis():
    """At sigma = (1, 1, 1) (rotations) any orthonormal U works; U V^T must still be the rotation."""
    As = np.stack([MATS["rotation"], 2.0 * MATS["identity"], MATS["scaled_rotation"]])
    U, s, V, *_ = decompose(As, np.float64)
    for k in range(3):
        np.testing.assert_allclose(U[k] @ V[k].T, As[k] / np.abs(s[k][0]), atol=1e-12)
        np.testing.assert_allclose(s[k], np.full(3, s[k][0]), atol=1e-12)


# ---- adjoints: losses smooth at repeated singular/eigen values ------------------------------------
@kc.kernel
def smooth_losses(A: kc.array(dtype=kc.mat33d), W1: kc.array(dtype=kc.mat33d), W2: kc.array(dtype=kc.mat33d),
                  w: kc.array(dtype=kc.vec3d), out: kc.array(dtype=kc.float64, ndim=2)):
    i = kc.tid()
    u, sigma, v = kc.svd3(A[i])
    out[i, 0] = kc.ddot(W1[i], u @ kc.transpose(v))              # closest rotation
    out[i, 1] = sigma[0] + sigma[1] + sigma[2] + kc.dot(sigma, sigma) * w[i][0]
    r, p = kc.polar(A[i])
    out[i, 2] = kc.ddot(W1[i], r) + kc.ddot(W2[i], p)
    q, d = kc.eig3(A[i])
    out[i, 3] = kc.dot(d, d) + (d[0] + d[1] + d[2]) * w[i][1]
    qq, rr = kc.qr3(A[i])
    out[i, 4] = kc.ddot(W1[i], qq) + kc.ddot(W2[i], rr)


NLOSS = 5
LOSS_NAMES = ["U V^T", "sigma sums", "polar R, S", "eigenvalue sums", "qr Q, R"]


def loss_values(As, W1, W2, w):
    n = len(As)
    out = kc.zeros((n, NLOSS), dtype=kc.float64)
    kc.launch(smooth_losses, dim=n, inputs=[kc.array(As, dtype=kc.mat33d), kc.array(W1, dtype=kc.mat33d),
                                            kc.array(W2, dtype=kc.mat33d), kc.array(w, dtype=kc.vec3d), out])
    return out.numpy()


def loss_adjoint(As, W1, W2, w, which):
    n = len(As)
    A = kc.array(As, dtype=kc.mat33d, requires_grad=True)
    out = kc.zeros((n, NLOSS), dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(smooth_losses, dim=n, inputs=[A, kc.array(W1, dtype=kc.mat33d), kc.array(W2, dtype=kc.mat33d),
                                                kc.array(w, dtype=kc.vec3d), out])
    seed = np.zeros((n, NLOSS))
    seed[:, which] = 1.0
    tape.backward(grads={out: kc.array(seed, dtype=kc.float64)})
    return A.grad.numpy()


def finite_differences(As, W1, W2, w, eps=1e-6):
    """(n, NLOSS, 3, 3) central differences of every loss, all in one launch."""
    n = len(As)
    batch = []
    for k in range(n):
        for c in range(9):
            for sgn in (1.0, -1.0):
                B = As[k].copy()
                B.reshape(-1)[c] += sgn * eps
                batch.append((B, k))
    Ab = np.stack([b for b, _ in batch])
    idx = [k for _, k in batch]
    f = loss_values(Ab, W1[idx], W2[idx], w[idx]).reshape(n, 9, 2, NLOSS)
    return np.moveaxis((f[:, :, 0] - f[:, :, 1]) / (2 * eps), 1, 2).reshape(n, NLOSS, 3, 3)


# (loss, matrices where that loss is smooth): sigma sums and eigenvalue sums are smooth everywhere
# away from sigma_i + sigma_j = 0; QR needs full rank; U V^T and polar need sigma_i + sigma_j != 0.
SMOOTH_AT = {
    0: [n for n in FULL_RANK if n not in ("reflection", "random_negdet")],
    1: [n for n in FULL_RANK if n not in ("reflection",)],
    2: [n for n in FULL_RANK if n not in ("reflection",)],
    3: NAMES,
    4: FULL_RANK,
}


@pytest.mark.parametrize("which", range(NLOSS), ids=LOSS_NAMES)
def test_adjoints_match_finite_differences_at_repeated_values(which):
    names = SMOOTH_AT[which]
    rng = np.random.default_rng(100 + which)
    As = np.stack([MATS[n] for n in names])
    n = len(As)
    W1, W2, w = rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3))
    adj = loss_adjoint(As, W1, W2, w, which)
    fd = finite_differences(As, W1, W2, w)[:, which]
    assert np.all(np.isfinite(adj)), f"{LOSS_NAMES[which]}: non-finite adjoint"
    for k, name in enumerate(names):
        np.testing.assert_allclose(adj[k], fd[k], rtol=1e-5, atol=2e-6 * max(1.0, np.abs(fd[k]).max()),
                                   err_msg=f"{LOSS_NAMES[which]} at {name}")


@pytest.mark.parametrize("which", range(NLOSS), ids=LOSS_NAMES)
def test_adjoints_are_finite_everywhere(which):
    """Rank-deficient, zero, reflected and repeated matrices: every adjoint is a finite number."""
    rng = np.random.default_rng(200 + which)
    As = np.stack([MATS[n] for n in NAMES])
    n = len(As)
    adj = loss_adjoint(As, rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3)), which)
    assert np.all(np.isfinite(adj)), [NAMES[k] for k in range(n) if not np.all(np.isfinite(adj[k]))]


@kc.kernel
def singular_vector_loss(A: kc.array(dtype=kc.mat33d), W: kc.array(dtype=kc.mat33d), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    u, sigma, v = kc.svd3(A[i])
    q, d = kc.eig3(A[i])
    out[i] = kc.ddot(W[i], u) + kc.ddot(W[i], v) + kc.ddot(W[i], q) + kc.dot(sigma, kc.get_diag(W[i]))


def test_singular_vector_adjoint_is_finite_at_exactly_repeated_values():
    """Individual singular vectors have no derivative at repeated values; the regularised adjoint stays finite."""
    names = ["identity", "rotation", "repeated_221", "repeated_122", "repeated_neg", "zero", "rank1"]
    As = np.stack([MATS[n] for n in names])
    A = kc.array(As, dtype=kc.mat33d, requires_grad=True)
    W = kc.array(np.random.default_rng(3).normal(size=(len(names), 3, 3)), dtype=kc.mat33d)
    out = kc.zeros(len(names), dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(singular_vector_loss, dim=len(names), inputs=[A, W, out])
    tape.backward(grads={out: kc.array(np.ones(len(names)), dtype=kc.float64)})
    g = A.grad.numpy()
    assert np.all(np.isfinite(g)), [names[k] for k in range(len(names)) if not np.all(np.isfinite(g[k]))]


@kc.kernel
def smooth_losses32(A: kc.array(dtype=kc.mat33), W1: kc.array(dtype=kc.mat33), W2: kc.array(dtype=kc.mat33),
                    w: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.float32, ndim=2)):
    i = kc.tid()
    u, sigma, v = kc.svd3(A[i])
    out[i, 0] = kc.ddot(W1[i], u @ kc.transpose(v))
    out[i, 1] = sigma[0] + sigma[1] + sigma[2] + kc.dot(sigma, sigma) * w[i][0]
    r, p = kc.polar(A[i])
    out[i, 2] = kc.ddot(W1[i], r) + kc.ddot(W2[i], p)
    q, d = kc.eig3(A[i])
    out[i, 3] = kc.dot(d, d) + (d[0] + d[1] + d[2]) * w[i][1]
    qq, rr = kc.qr3(A[i])
    out[i, 4] = kc.ddot(W1[i], qq) + kc.ddot(W2[i], rr)


@pytest.mark.parametrize("which", range(NLOSS), ids=LOSS_NAMES)
def test_float32_adjoint_matches_float64(which):
    """The float32 rows (not in the generated test) against the float64 adjoint, same losses and points."""
    names = SMOOTH_AT[which]
    As = np.stack([MATS[n] for n in names]).astype(np.float32).astype(np.float64)
    n = len(As)
    rng = np.random.default_rng(300 + which)
    W1, W2, w = rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3))
    A = kc.array(As.astype(np.float32), dtype=kc.mat33, requires_grad=True)
    out = kc.zeros((n, NLOSS), dtype=kc.float32, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(smooth_losses32, dim=n, inputs=[A] + [kc.array(x.astype(np.float32), dtype=t) for x, t in
                                                        ((W1, kc.mat33), (W2, kc.mat33), (w, kc.vec3))] + [out])
    seed = np.zeros((n, NLOSS), np.float32)
    seed[:, which] = 1.0
    tape.backward(grads={out: kc.array(seed, dtype=kc.float32)})
    ref = loss_adjoint(As, W1, W2, w, which)
    for k, name in enumerate(names):
        np.testing.assert_allclose(A.grad.numpy()[k], ref[k], atol=2e-3 * max(1.0, np.abs(ref[k]).max()),
                                   err_msg=f"{LOSS_NAMES[which]} at {name} (float32)")


# ---- matrix_from_rows / matrix_from_cols ------------------------------------------------------------
@kc.kernel
def from_vectors(a: kc.array(dtype=kc.vec3d), b: kc.array(dtype=kc.vec3d), c: kc.array(dtype=kc.vec3d),
                 d: kc.array(dtype=kc.vec3d), r2: kc.array(dtype=kc.matrix((2, 3), kc.float64)),
                 r4: kc.array(dtype=kc.matrix((4, 3), kc.float64)), c3: kc.array(dtype=kc.mat33d),
                 c4: kc.array(dtype=kc.matrix((3, 4), kc.float64))):
    i = kc.tid()
    r2[i] = kc.matrix_from_rows(a[i], b[i])
    r4[i] = kc.matrix_from_rows(a[i], b[i], c[i], d[i])
    c3[i] = kc.matrix_from_cols(a[i], b[i], c[i])
    c4[i] = kc.matrix_from_cols(a[i], b[i], c[i], d[i])


def test_matrix_from_rows_and_cols():
    rng = np.random.default_rng(11)
    vs = [rng.normal(size=(4, 3)) for _ in range(4)]
    outs = [kc.zeros(4, dtype=t) for t in (kc.matrix((2, 3), kc.float64), kc.matrix((4, 3), kc.float64), kc.mat33d,
                                           kc.matrix((3, 4), kc.float64))]
    kc.launch(from_vectors, dim=4, inputs=[kc.array(v, dtype=kc.vec3d) for v in vs] + outs)
    np.testing.assert_array_equal(outs[0].numpy(), np.stack(vs[:2], axis=1))
    np.testing.assert_array_equal(outs[1].numpy(), np.stack(vs, axis=1))
    np.testing.assert_array_equal(outs[2].numpy(), np.stack(vs[:3], axis=2))
    np.testing.assert_array_equal(outs[3].numpy(), np.stack(vs, axis=2))
