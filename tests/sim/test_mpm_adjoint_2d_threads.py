"""Thread counts of a 2-D SolverMPM step (sim/mpm_transfer.SERIAL_2D_GRAIN).

Every launch of a small 2-D step, forward and backward (clear, P2G or its stress + scatter,
grid update, G2P, the hand adjoints or the automatic stress adjoint) must run on one thread
below the grain; a 2-D run above it must give its particle kernels both threads, with the
gradients of a one-thread run (to float32 round-off: the scatters' per-thread copies sum in
another order).  The thread count is read where kernelcore/launch.py decides it: it asks
``num_threads()`` only for a launch at or above the kernel's ``parallel_grain``.
"""
import importlib

import numpy as np
import pytest

import kernelcore as kc
import sim
from sim import mpm_adjoint_2d as A
from sim import mpm_transfer as T

from test_mpm_adjoint_2d import run, weighted_state_loss  # noqa: E402 (tests/sim on sys.path: pytest rootdir import)

launch_mod = importlib.import_module("kernelcore.launch")


def block(side, material="neo_hookean", requires_grad=True):
    """A side x side particle block (spacing 1/512 m) thrown down and sideways in a 128^2-cell box."""
    b = sim.ModelBuilder(gravity=(0.0, -4.0, 0.0))
    mat = b.add_material(model=material, youngs_modulus=3.0e3, poisson_ratio=0.3)
    b.add_particle_grid((0.3, 0.2, 0.0), (0.5, -0.8, 0.0), side, side, 1, 1.0 / 512, density=1000.0, material=mat,
                        jitter=0.0005, seed=2)
    model = b.finalize(requires_grad=requires_grad)
    solver = sim.SolverMPM(model, dx=1.0 / 128, bounds=((0.0, 0.0), (1.0, 1.0)), dim=2, boundary="separate")
    n = model.particle_count
    assert n == side * side
    w = kc.array(np.tile(np.float32([1.0, 0.5, 0.0]), (n, 1)), dtype=kc.vec3)
    return model, solver, w


def watch_threads(monkeypatch):
    """{kernel key: grain} of every launch, and the keys of launches that went multi-threaded."""
    grains, multi, current = {}, set(), [None]
    real_grain, real_threads = launch_mod.parallel_grain, launch_mod.num_threads

    def grain(kernel):
        current[0] = kernel.key
        g = grains[kernel.key] = real_grain(kernel)
        return g

    def threads():   # asked only for a launch of at least the grain (the backward's too)
        n = real_threads()
        if n > 1:
            multi.add(current[0])
        return n

    monkeypatch.setattr(launch_mod, "parallel_grain", grain)
    monkeypatch.setattr(launch_mod, "num_threads", threads)
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "2")
    # the test's own loss keeps the solver's grain, so that "no launch" means every launch
    monkeypatch.setattr(weighted_state_loss, "parallel_grain", T.SERIAL_2D_GRAIN, raising=False)
    return grains, multi


def taped_gradient(model, solver, w, steps):
    tape = kc.Tape()
    loss, states, _ = run(model, solver, w, steps, tape=tape)
    tape.backward(loss=loss)
    g = states[0].particle_qd.grad.numpy().astype(np.float64).copy()
    tape.zero()
    return g


@pytest.mark.parametrize("material", ["neo_hookean", "fixed_corotated"])
def test_small_2d_step_runs_every_launch_on_one_thread(monkeypatch, material):
    """4096 particles (past kernelcore's default 4096-thread grain), 135^2 nodes: not one launch of
    the taped fwd+bwd nor of an untaped forward asks for a second thread."""
    grains, multi = watch_threads(monkeypatch)
    model, solver, w = block(64, material)
    g = taped_gradient(model, solver, w, 3)
    assert np.abs(g).max() > 0
    plain = block(64, material, requires_grad=False)
    run(*plain, 2)   # without gradients: the fused P2G kernel
    keys = set(grains)
    step_kernels = {T.zero_grid_2d_kernel, T.grid_update_2d_walls_kernel, T.g2p_2d_kernel, A.g2p_2d_adjoint_kernel,
                    A.grid_update_2d_adjoint_kernel}
    if material == "neo_hookean":
        step_kernels |= {A.p2g_neo_hookean_2d_kernel, A.p2g_neo_hookean_2d_adjoint_kernel}
    else:
        step_kernels |= {T.p2g_stress_kernel(solver.model_code, 2), T.p2g_scatter_2d_kernel,
                         A.scatter_2d_adjoint_kernel}
    step_kernels.add(T.p2g_kernel(2, solver.model_code))
    assert {k.key for k in step_kernels} <= keys   # every one was launched (and watched)
    assert multi == set()
    assert all(grains[k.key] == T.SERIAL_2D_GRAIN for k in step_kernels)


def test_large_2d_step_uses_both_threads_with_the_same_gradients(monkeypatch):
    """200^2 = 40,000 particles (above SERIAL_2D_GRAIN): the particle kernels, forward and adjoint,
    go to two threads, and the gradients equal a one-thread run's to float32 round-off."""
    grains, multi = watch_threads(monkeypatch)
    model, solver, w = block(200)
    assert model.particle_count >= T.SERIAL_2D_GRAIN
    g2 = taped_gradient(model, solver, w, 2)
    for k in (A.p2g_neo_hookean_2d_kernel, T.g2p_2d_kernel, A.g2p_2d_adjoint_kernel,
              A.p2g_neo_hookean_2d_adjoint_kernel):
        assert k.key in multi, k.key
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "1")
    g1 = taped_gradient(model, solver, w, 2)
    scale = np.abs(g1).max()
    assert scale > 0
    np.testing.assert_allclose(g2, g1, rtol=0, atol=1e-4 * scale)
