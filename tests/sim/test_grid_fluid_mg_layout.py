"""The multigrid preconditioner on a 2-D grid runs its levels as (1, nx, ny) rows (sim/grid_fluid_mg.py)."""
import numpy as np

import kernelcore as kc
from sim import grid_fluid_mg as M


def test_2d_levels_are_rows_along_y_and_the_v_cycle_stays_a_symmetric_positive_map():
    rng = np.random.default_rng(3)
    solid = (rng.random((13, 10, 1)) < 0.15).astype(np.int32)
    mg = M.MultigridPreconditioner(kc.from_numpy(solid))
    assert mg.dim == 2 and mg.scale == 1.0   # 4 / 2^d of a 2-D grid, not 3-D's 1/2
    assert mg.levels[0].shape == (1, 13, 10) and all(lv.shape[0] == 1 for lv in mg.levels)
    fluid = solid.reshape(-1) == 0
    n = solid.size

    def v(r):
        z = kc.zeros(n, dtype=kc.float64)
        mg.apply(kc.from_numpy(r * fluid), z)
        return z.numpy()

    r1, r2 = rng.standard_normal(n), rng.standard_normal(n)
    z1, z2 = v(r1), v(r2)
    assert not z1[~fluid].any()
    np.testing.assert_allclose(z1 @ (r2 * fluid), (r1 * fluid) @ z2, rtol=1e-10)
    assert z1 @ (r1 * fluid) > 0 and z2 @ (r2 * fluid) > 0
