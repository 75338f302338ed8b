"""Builtins without an adjoint never give a silent zero gradient (issue #23 item 6).

* ``axis, angle = kc.quat_to_axis_angle(q)`` has an adjoint (checked here and by the generated
  finite-difference test); the out-argument form has none, and a Tape backward through it
  raises naming the builtin and the kernel's file:line.
* Every differentiable row of the table is checked by test_builtin_gradients.py (audited there).
* A @kc.func_grad may call its own forward function.
"""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.adjoint_check import MissingAdjointError, missing_adjoints
from kernelcore.builtins.registry import registry


def unit_quats(n, seed=0):
    q = np.random.default_rng(seed).normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 3] < 0] *= -1.0
    return q


@kc.kernel
def axis_angle_tuple(q: kc.array(dtype=kc.quatd), w: kc.array(dtype=kc.vec3d), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    axis, angle = kc.quat_to_axis_angle(q[i])
    out[i] = kc.dot(axis, w[i]) + angle * angle


@kc.kernel
def axis_angle_out_args(q: kc.array(dtype=kc.quatd), w: kc.array(dtype=kc.vec3d), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    axis = kc.vec3d(0.0, 0.0, 0.0)
    angle = kc.float64(0.0)
    kc.quat_to_axis_angle(q[i], axis, angle)
    out[i] = kc.dot(axis, w[i]) + angle * angle


@kc.kernel
def axis_angle_out_args_unused(q: kc.array(dtype=kc.quatd), out: kc.array(dtype=kc.float64), flags: kc.array(dtype=kc.int32)):
    i = kc.tid()
    axis = kc.vec3d(0.0, 0.0, 0.0)
    angle = kc.float64(0.0)
    kc.quat_to_axis_angle(q[i], axis, angle)
    if angle > 1.0:          # only compared: no gradient is needed through it
        flags[i] = 1
    out[i] = q[i].w * 2.0


def reference(q, w):
    v, s = q[:, :3], np.linalg.norm(q[:, :3], axis=1)
    angle = 2 * np.arctan2(s, q[:, 3])
    return np.sum(v / s[:, None] * w, axis=1) + angle ** 2


def test_tuple_form_forward_and_gradient():
    n, eps = 6, 1e-6
    q, w = unit_quats(n), np.random.default_rng(1).normal(size=(n, 3))
    qa = kc.array(q, dtype=kc.quatd, requires_grad=True)
    out = kc.zeros(n, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(axis_angle_tuple, dim=n, inputs=[qa, kc.array(w, dtype=kc.vec3d), out])
    np.testing.assert_allclose(out.numpy(), reference(q, w), rtol=1e-12)
    tape.backward(grads={out: np.ones(n)})
    fd = np.zeros((n, 4))
    for c in range(4):
        d = np.zeros(4)
        d[c] = eps
        fd[:, c] = (reference(q + d, w) - reference(q - d, w)) / (2 * eps)
    np.testing.assert_allclose(qa.grad.numpy(), fd, rtol=1e-6, atol=1e-7)


def test_tuple_form_adjoint_is_zero_and_finite_at_identity():
    qa = kc.array(np.array([[0.0, 0.0, 0.0, 1.0]]), dtype=kc.quatd, requires_grad=True)
    out = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(axis_angle_tuple, dim=1, inputs=[qa, kc.array(np.ones((1, 3)), dtype=kc.vec3d), out])
    tape.backward(grads={out: np.ones(1)})
    np.testing.assert_array_equal(qa.grad.numpy(), 0.0)


def test_out_argument_form_raises_when_its_gradient_is_needed():
    n = 4
    q = kc.array(unit_quats(n), dtype=kc.quatd, requires_grad=True)
    out = kc.zeros(n, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(axis_angle_out_args, dim=n, inputs=[q, kc.zeros(n, dtype=kc.vec3d), out])
    with pytest.raises(MissingAdjointError, match=r"kc\.quat_to_axis_angle\(\) has no adjoint.*gradient of q") as e:
        tape.backward(grads={out: np.ones(n)})
    assert "test_builtin_adjoint_audit.py:" in str(e.value) and "kc.quat_to_axis_angle(q[i], axis, angle)" in str(e.value)
    assert "axis, angle = kc.quat_to_axis_angle(q)" in str(e.value)
    # the explicit adjoint launch raises too
    with pytest.raises(MissingAdjointError):
        kc.launch(axis_angle_out_args, dim=n, inputs=[q, kc.zeros(n, dtype=kc.vec3d), out], adjoint=True)


def test_out_argument_form_is_fine_without_a_gradient():
    n = 4
    q = kc.array(unit_quats(n), dtype=kc.quatd)                # no gradient wanted for q
    w = kc.array(np.ones((n, 3)), dtype=kc.vec3d, requires_grad=True)
    out = kc.zeros(n, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(axis_angle_out_args, dim=n, inputs=[q, w, out])
    tape.backward(grads={out: np.ones(n)})
    q_np = q.numpy()
    np.testing.assert_allclose(w.grad.numpy(), q_np[:, :3] / np.linalg.norm(q_np[:, :3], axis=1, keepdims=True))
    # a result only compared (not differentiated) needs no adjoint
    assert missing_adjoints(axis_angle_out_args_unused, axis_angle_out_args_unused.ir()) == []
    assert [m.name for m in missing_adjoints(axis_angle_out_args, axis_angle_out_args.ir())] == ["quat_to_axis_angle"]


@kc.func
def axis_angle_in_func(q: kc.quatd):
    axis = kc.vec3d(0.0, 0.0, 0.0)
    angle = kc.float64(0.0)
    kc.quat_to_axis_angle(q, axis, angle)
    return angle


@kc.kernel
def axis_angle_through_func(q: kc.array(dtype=kc.quatd), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    out[i] = axis_angle_in_func(q[i]) * 2.0


def test_missing_adjoint_inside_a_function_is_found():
    found = missing_adjoints(axis_angle_through_func, axis_angle_through_func.ir())
    assert [(m.name, m.sources) for m in found] == [("quat_to_axis_angle", frozenset({"q"}))]
    assert found[0].file.endswith("test_builtin_adjoint_audit.py")


def test_no_float_row_lacks_an_adjoint_silently():
    """Audit of the table: rows without an adjoint that take and give float values are known here."""
    from kernelcore import types as T
    from kernelcore.builtins.registry import _resolve

    lacking = set()
    for name, rows in registry.rows.items():
        for row in rows:
            if row.differentiable or not row.module.startswith("kernelcore."):
                continue
            b = {"F": T.float64, "S": T.float64, "T": T.float64, "N": 3, "R": 3, "C": 3, "K": 3}
            try:
                types = [_resolve(p, b) for p in row.parsed]
            except (KeyError, ValueError):
                continue
            res = registry.resolve(name, types)
            if res is None:
                continue
            results = [res[1]] + [types[k] for k in row.mutates]
            if any(t is not None and T.is_differentiable_type(t) for t in results) and \
                    any(T.is_differentiable_type(t) for t in types):
                lacking.add(name)
    # each of these raises MissingAdjointError when a gradient would flow through it (randf: its
    # bounds); a new row in this set must either get an adjoint or be added here knowingly
    assert lacking == {"quat_to_axis_angle", "randf"}


# ---- a custom gradient that calls its own forward function ------------------------------------------
@kc.func
def softplus(x: kc.float64):
    return kc.log(1.0 + kc.exp(x))


@kc.func_grad(softplus)
def adj_softplus(x: kc.float64, adj_ret: kc.float64):
    kc.adjoint[x] += (1.0 - kc.exp(-softplus(x))) * adj_ret   # d softplus = 1 - exp(-softplus)


@kc.kernel
def softplus_kernel(a: kc.array(dtype=kc.float64), out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    out[i] = softplus(a[i])


def test_func_grad_may_call_its_forward_function():
    x = np.array([-2.0, 0.3, 1.5])
    a = kc.array(x, dtype=kc.float64, requires_grad=True)
    out = kc.zeros(3, dtype=kc.float64, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(softplus_kernel, dim=3, inputs=[a, out])
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(a.grad.numpy(), 1.0 / (1.0 + np.exp(-x)), rtol=1e-12)
