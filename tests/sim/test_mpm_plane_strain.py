"""The 2-D solver's plane-strain neo-Hookean update (mpm_constitutive.update_neo_hookean_plane, on
2 x 2 blocks) gives the 3 x 3 update's F and Kirchhoff stress, and the same gradients, on
plane-strain states F = [[F2, 0], [0, 1]], C = [[C2, 0], [0, 0]] (with actuation along an axis
that has a z component)."""
import numpy as np

import kernelcore as kc
from sim.mpm_constitutive import update_neo_hookean, update_neo_hookean_plane


def make_kernel(update):
    def apply_update(F: kc.array(dtype=kc.mat33), C: kc.array(dtype=kc.mat33), act: kc.array(dtype=float),
                     W: kc.array(dtype=kc.mat33), axis: kc.vec3, F_out: kc.array(dtype=kc.mat33),
                     tau_out: kc.array(dtype=kc.mat33), loss: kc.array(dtype=float)):
        p = kc.tid()
        Fn, Jn, tau = update(1, F[p], C[p], 1.0, 2.0e-3, 400.0, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, act[p], axis)
        F_out[p] = Fn
        tau_out[p] = tau
        w = W[p]
        s = float(0.0)
        for i in range(3):
            for j in range(3):
                s += (tau[i, j] * 1.0e-2 + Fn[i, j]) * w[i, j]
        kc.atomic_add(loss, 0, s)

    apply_update.__qualname__ = f"apply_update_{update.key if hasattr(update, 'key') else id(update)}"
    return kc.kernel(apply_update)


plane_kernel = make_kernel(update_neo_hookean_plane)
full_kernel = make_kernel(update_neo_hookean)


def run(kernel, F0, C0, act0, W0, axis):
    F = kc.array(F0, dtype=kc.mat33, requires_grad=True)
    C = kc.array(C0, dtype=kc.mat33, requires_grad=True)
    act = kc.array(act0, dtype=float, requires_grad=True)
    n = F0.shape[0]
    F_out, tau = kc.zeros(n, dtype=kc.mat33, requires_grad=True), kc.zeros(n, dtype=kc.mat33, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, dim=n, inputs=[F, C, act, kc.array(W0, dtype=kc.mat33), axis], outputs=[F_out, tau, loss])
    tape.backward(loss=loss)
    return F_out.numpy(), tau.numpy(), F.grad.numpy(), C.grad.numpy(), act.grad.numpy()


def test_plane_update_matches_the_3x3_update():
    rng = np.random.default_rng(11)
    n = 200
    F0 = np.tile(np.eye(3, dtype=np.float32), (n, 1, 1))
    F0[:, :2, :2] += rng.normal(0.0, 0.15, (n, 2, 2)).astype(np.float32)
    C0 = np.zeros((n, 3, 3), np.float32)
    C0[:, :2, :2] = rng.normal(0.0, 5.0, (n, 2, 2)).astype(np.float32)
    act0 = rng.normal(0.0, 30.0, n).astype(np.float32)
    W0 = rng.normal(0.0, 1.0, (n, 3, 3)).astype(np.float32)
    axis = kc.vec3(0.6, 0.0, 0.8)
    plane, full = run(plane_kernel, F0, C0, act0, W0, axis), run(full_kernel, F0, C0, act0, W0, axis)
    for a, b in zip(plane[:2], full[:2]):   # F and tau, every entry
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)
    # gradients w.r.t. the plane-strain blocks of F and C, and the actuation
    np.testing.assert_allclose(plane[2][:, :2, :2], full[2][:, :2, :2], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(plane[3][:, :2, :2], full[3][:, :2, :2], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(plane[4], full[4], rtol=1e-4, atol=1e-6)
    assert np.abs(full[2][:, :2, :2]).max() > 1e-2 and np.abs(full[1]).max() > 10.0   # (not trivially zero)
