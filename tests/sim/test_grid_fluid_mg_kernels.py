"""The multigrid preconditioner's vectorised kernels (sim/grid_fluid_mg.py) against the plain ones."""
import numpy as np

import kernelcore as kc
from sim import grid_fluid_mg as M


def _level(seed):
    rng = np.random.default_rng(seed)
    solid = (rng.random((7, 6, 5)) < 0.2).astype(np.int32)
    lv = M._Level(kc.from_numpy(solid), kc.get_device(None))
    return rng, lv


def test_padded_jacobi_and_residual_match_plain_kernels_bitwise():
    rng, lv = _level(0)
    x = rng.standard_normal(lv.n) * (lv.flags.numpy() != 0)
    b = kc.from_numpy(rng.standard_normal(lv.n))
    w = kc.float64(6.0 / 7.0)
    plain = kc.zeros(lv.n, dtype=kc.float64)
    kc.launch(M.jacobi_kernel, dim=lv.n, inputs=[kc.from_numpy(x), b, lv.flags, lv.inv, lv.sy, lv.sx, w],
              outputs=[plain], record_tape=False)
    xp = kc.from_numpy(np.pad(x.reshape(lv.shape), 1))
    padded, last = kc.zeros(xp.shape, dtype=kc.float64), kc.zeros(lv.shape, dtype=kc.float64)
    b3 = b.reshape(lv.shape)
    kc.launch(M.jacobi_pad_kernel, dim=lv.shape, inputs=[xp, b3, lv.flags3, lv.inv3, w], outputs=[padded],
              record_tape=False)
    kc.launch(M.jacobi_pad_last_kernel, dim=lv.shape, inputs=[xp, b3, lv.flags3, lv.inv3, w], outputs=[last],
              record_tape=False)
    want = plain.numpy().reshape(lv.shape)
    assert np.array_equal(padded.numpy()[1:-1, 1:-1, 1:-1], want)
    assert np.array_equal(last.numpy(), want)
    assert not padded.numpy()[0].any() and not padded.numpy()[-1].any()   # the zero ring stays zero
    # residual b - A x against numpy's 7-point operator on the fluid cells
    kc.launch(M.residual_pad_kernel, dim=lv.shape, inputs=[xp, b3, lv.flags3], outputs=[lv.res3], record_tape=False)
    fluid = lv.flags3.numpy() != 0
    xg = np.pad(x.reshape(lv.shape), 1)
    fg = np.pad(fluid, 1)
    ax = np.zeros(lv.shape)
    c = xg[1:-1, 1:-1, 1:-1]
    for d in range(3):
        for s in (-1, 1):
            sl = [slice(1, -1)] * 3
            sl[d] = slice(1 + s, xg.shape[d] - 1 + s)
            ax += fg[tuple(sl)] * (c - xg[tuple(sl)])
    np.testing.assert_allclose(lv.res3.numpy(), fluid * (b3.numpy() - ax), rtol=0, atol=1e-12)


def test_coarse_sweeps_kernel_matches_one_launch_per_sweep():
    rng, lv = _level(1)
    b = kc.from_numpy(rng.standard_normal(lv.n))
    w = kc.float64(0.8)
    for count in (1, 2, 5, 16):
        x = kc.zeros(lv.n, dtype=kc.float64)
        kc.launch(M.jacobi_first_kernel, dim=lv.n, inputs=[b, lv.flags, lv.inv, w], outputs=[x], record_tape=False)
        for _ in range(count - 1):
            y = kc.zeros(lv.n, dtype=kc.float64)
            kc.launch(M.jacobi_kernel, dim=lv.n, inputs=[x, b, lv.flags, lv.inv, lv.sy, lv.sx, w], outputs=[y],
                      record_tape=False)
            x = y
        out, spare = kc.zeros(lv.n, dtype=kc.float64), kc.zeros(lv.n, dtype=kc.float64)
        kc.launch(M.coarse_sweeps_kernel, dim=1, inputs=[b, lv.flags, lv.inv, lv.sy, lv.sx, w, count],
                  outputs=[out, spare], record_tape=False)
        assert np.array_equal(out.numpy(), x.numpy()), count


def test_v_cycle_is_symmetric():
    """CG needs a symmetric preconditioner: <V a, b> = <a, V b>."""
    rng = np.random.default_rng(2)
    solid = np.zeros((16, 12, 10), np.int32)
    solid[5:8, 4:7, 3:6] = 1
    mg = M.MultigridPreconditioner(kc.from_numpy(solid))
    n = solid.size
    a, b = (kc.from_numpy(rng.standard_normal(n) * (solid.reshape(-1) == 0)) for _ in range(2))
    va, vb = kc.zeros(n, dtype=kc.float64), kc.zeros(n, dtype=kc.float64)
    mg.apply(a, va)
    mg.apply(b, vb)
    lhs, rhs = float(va.numpy() @ b.numpy()), float(a.numpy() @ vb.numpy())
    assert abs(lhs - rhs) <= 1e-10 * abs(lhs)
    assert float(va.numpy() @ a.numpy()) > 0.0
