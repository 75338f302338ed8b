"""The 2-D MPM hand-written adjoints that must run as SIMD lanes (sim/mpm_adjoint_2d.py): GCC
has to really vectorise them (-fopt-info-vec), which it does only for float-row arrays
(``float_rows``), no log and no accumulating atomics in the loop; and ``float_rows`` must be a
view of the array's own storage (the kernels write gradients through it)."""
import inspect
import os
import shutil
import subprocess

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import config, toolchain
from sim import mpm_adjoint_2d


def _vectorised_loops(kernel, tmp_path):
    cxx = config.cxx
    if shutil.which(cxx) is None or "clang" in os.path.basename(cxx):
        pytest.skip("needs g++ (GCC's -fopt-info)")
    src = tmp_path / "m.cpp"
    src.write_text(kernel.module.generate([kernel], "cpu"))
    flags = [f for f in toolchain.cpu_flags(cxx) + toolchain.SIMD_FLAGS if f != "-shared"]
    flags += toolchain.MODULE_FLAGS.get(kernel.module.name, [])
    proc = subprocess.run([cxx, *flags, f"-I{toolchain.NATIVE_DIR}", "-c", str(src), "-o", str(tmp_path / "m.o"),
                           "-fopt-info-vec-optimized"], capture_output=True, text=True, check=True)
    # the entry point's loop is reported at the kernel's last #line plus its distance from it in
    # the C++ (past the body's end for a long kernel); the kc.funcs it calls come before it
    _, first = inspect.getsourcelines(kernel.func)
    return [m for m in proc.stderr.splitlines()
            if "loop vectorized" in m and "mpm_adjoint_2d.py:" in m and int(m.split("mpm_adjoint_2d.py:")[1].split(":")[0]) >= first]


@pytest.mark.parametrize("name", ["p2g_neo_hookean_2d_adjoint_kernel", "scatter_2d_adjoint_kernel"])
def test_particle_adjoints_are_vectorised(name, tmp_path):
    assert _vectorised_loops(getattr(mpm_adjoint_2d, name), tmp_path)


def test_float_rows_share_storage():
    F = kc.array(np.arange(18, dtype=np.float32).reshape(2, 3, 3), dtype=kc.mat33)
    rows = mpm_adjoint_2d.float_rows(F)
    assert rows.shape == (2, 9) and rows.dtype == kc.float32
    assert mpm_adjoint_2d.float_rows(F) is rows   # made once per array
    rows.numpy()[1, 4] = -7.0
    assert F.numpy()[1, 1, 1] == -7.0
    g = kc.zeros((3, 4), dtype=kc.vec2)
    assert mpm_adjoint_2d.float_rows(g).shape == (3, 4, 2)


def test_taped_lane_forward_matches_the_generic_step():
    """A taped neo-Hookean 2-D step runs its stress and scatter as one lane kernel
    (p2g_neo_hookean_2d_kernel over float rows); the states must equal those of the generic split P2G (the solver with the
    hand-written path off) after 30 actuated steps that reach the floor."""
    import sim

    def run(hand):
        b = sim.ModelBuilder(gravity=(0.0, -4.0, 0.0))
        mat = b.add_material(model="neo_hookean", youngs_modulus=3.0e3, poisson_ratio=0.3)
        b.add_particle_grid((0.4, 0.04, 0.0), (0.6, -1.5, 0.0), 6, 6, 1, 1.0 / 48, density=1000.0, material=mat,
                            jitter=0.002, seed=4)
        model = b.finalize(requires_grad=True)
        solver = sim.SolverMPM(model, dx=1.0 / 24, bounds=((0.0, 0.0), (1.0, 1.0)), dim=2)
        solver._hand_adjoints = hand
        states = [model.state() for _ in range(31)]
        rng = np.random.default_rng(2)
        with kc.Tape():
            for k in range(30):
                c = model.control()
                c.particle_actuation.assign((300.0 * rng.normal(size=model.particle_count)).astype(np.float32))
                solver.step(model, states[k], states[k + 1], c, 1.0e-3)
        s = states[-1]
        return [a.numpy().copy() for a in (s.particle_q, s.particle_qd, s.particle_C, s.particle_F, s.particle_Jp)]

    hand, generic = run(True), run(False)
    assert hand[0][:, 1].min() < 1.5 / 24   # it reached the floor
    for a, b in zip(hand, generic):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())


def test_fused_p2g_equals_the_split_kernels_bit_for_bit(monkeypatch):
    """p2g_neo_hookean_2d_kernel (stress, log J and scatter in one lane kernel) must give exactly
    the F, Jp and grid mass and momentum of the generic split P2G (mpm_transfer's stress kernel,
    then the scatter) on one thread: the same operations, the grid adds in the same order.  An
    actuated step of a jittered block whose stencils overlap."""
    import sim

    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "1")

    def step(hand):
        b = sim.ModelBuilder(gravity=(0.0, -4.0, 0.0))
        mat = b.add_material(model="neo_hookean", youngs_modulus=3.0e3, poisson_ratio=0.3)
        b.add_particle_grid((0.4, 0.3, 0.0), (0.6, -1.5, 0.0), 12, 12, 1, 1.0 / 96, density=1000.0, material=mat,
                            jitter=0.003, seed=5)
        model = b.finalize(requires_grad=True)
        solver = sim.SolverMPM(model, dx=1.0 / 24, bounds=((0.0, 0.0), (1.0, 1.0)), dim=2)
        solver._hand_adjoints = hand
        s0, s1, s2 = model.state(), model.state(), model.state()
        c = model.control()
        c.particle_actuation.assign((300.0 * np.random.default_rng(3).normal(size=model.particle_count))
                                    .astype(np.float32))
        with kc.Tape():
            solver.step(model, s0, s1, c, 1.0e-3)   # (a first step gives C and F away from I)
            solver.step(model, s1, s2, c, 1.0e-3)
        grid = solver.grid_for(s2)
        return [a.numpy().copy() for a in (s2.particle_F, s2.particle_Jp, grid.mv, grid.m, s2.particle_q)]

    hand, split = step(True), step(False)
    assert np.abs(hand[0][:, :2, :2] - np.eye(2)).max() > 1e-4   # F moved away from I
    for a, b in zip(hand, split):
        np.testing.assert_array_equal(a, b)
