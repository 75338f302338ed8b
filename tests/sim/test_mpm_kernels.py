"""SolverMPM's specialised kernels (one material model, no shapes) give the numbers of the general ones."""
import numpy as np
import pytest

import sim
from sim import mpm_transfer


def run(material, general, steps=40, dim=2):
    b = sim.ModelBuilder(gravity=(0.0, -9.8, 0.0))
    mat = b.add_material(model=material, youngs_modulus=1.0e3, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.08, 0.0), (0.5, -2.0, 0.0), 6, 6, 1, 1.0 / 48, density=1000.0, material=mat,
                        jitter=0.003, seed=1)
    model = b.finalize()
    solver = sim.SolverMPM(model, dx=1.0 / 24, bounds=((0.0,) * dim, (1.0,) * dim), dim=dim, boundary="slip")
    assert solver.model_code is not None
    if general:
        solver.model_code = None   # the kernel that dispatches per particle
    s0, s1 = model.state(), model.state()
    for _ in range(steps):   # the block lands on the floor: walls and plasticity are exercised
        solver.step(model, s0, s1, None, 1.0e-3)
        s0, s1 = s1, s0
    return [a.numpy() for a in (s0.particle_q, s0.particle_qd, s0.particle_F, s0.particle_Jp)]


@pytest.mark.parametrize("material", ["neo_hookean", "fixed_corotated", "snow", "sand", "fluid"])
def test_single_model_p2g_kernel_matches_the_general_one(material):
    for a, b in zip(run(material, general=False), run(material, general=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_kernels_are_picked_by_model_code_and_shapes():
    assert mpm_transfer.p2g_kernel(2, None) is mpm_transfer.p2g_2d_kernel
    assert mpm_transfer.p2g_kernel(3, 1) is not mpm_transfer.p2g_3d_kernel
    assert mpm_transfer.p2g_kernel(3, 1) is mpm_transfer.p2g_kernel(3, 1)
