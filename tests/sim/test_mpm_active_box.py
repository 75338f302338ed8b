"""SolverMPM clears and updates only the grid nodes its particles touch (mpm_transfer.active_box) on
the CPU: the same run over the whole grid gives the same particles, also when two states (and their
grids) are reused back and forth while the material moves across the domain, and gradients too."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.mpm_transfer import active_box


def model_and_solver(dim, requires_grad=False):
    b = sim.ModelBuilder(gravity=(0.0, -9.8, 0.0))
    mat = b.add_material(model="neo_hookean", youngs_modulus=2.0e3, poisson_ratio=0.3)
    n = 6 if dim == 2 else 4
    b.add_particle_grid((0.15, 0.5, 0.15 if dim == 3 else 0.0), (3.0, -1.0, 1.0 if dim == 3 else 0.0), n, n,
                        n if dim == 3 else 1, 1.0 / 48, density=1000.0, material=mat, jitter=0.003, seed=2)
    model = b.finalize(requires_grad=requires_grad)
    solver = sim.SolverMPM(model, dx=1.0 / 24, bounds=((0.0,) * dim, (1.0,) * dim), dim=dim, boundary="separate")
    return model, solver


def run_ping_pong(dim, whole_grid, steps=120, dt=2.0e-3):
    model, solver = model_and_solver(dim)
    if whole_grid:
        solver._cpu = False   # the GPU path: every node, every step
    s0, s1 = model.state(), model.state()
    boxes = set()
    for _ in range(steps):
        boxes.add(active_box(s0.particle_q.numpy(), solver.grid_for(s1)))
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0.particle_q.numpy(), s0.particle_qd.numpy(), boxes, solver.grid_shape


@pytest.mark.parametrize("dim", [2, 3])
def test_active_box_gives_the_whole_grid_result(dim):
    q_box, v_box, boxes, shape = run_ping_pong(dim, whole_grid=False)
    q_all, v_all, _, _ = run_ping_pong(dim, whole_grid=True)
    # the block travels across the domain and hits the floor: the box moved and stayed smaller than the grid
    assert len(boxes) > 5
    assert all(np.prod(b[1]) < np.prod(shape) for b in boxes)
    np.testing.assert_allclose(q_box, q_all, rtol=0, atol=1e-6)
    np.testing.assert_allclose(v_box, v_all, rtol=0, atol=1e-5)


def test_active_box_contains_every_stencil():
    model, solver = model_and_solver(2)
    grid = solver.grid_for(model.state())
    rng = np.random.default_rng(0)
    q = rng.uniform(-0.2, 1.2, (500, 3)).astype(np.float32)   # some outside the domain: clamped stencils
    lo, shape = active_box(q, grid)
    g = (q[:, :2] - np.array([grid.lower[0], grid.lower[1]], np.float32)) / np.float32(grid.dx)
    base = np.clip((g - 0.5).astype(np.int32), 0, np.array(grid.shape) - 3)
    assert np.all(base >= lo) and np.all(base + 2 < np.array(lo) + shape)
    assert np.all(np.array(lo) + shape <= np.array(grid.shape))


def test_active_box_gradients_match_the_whole_grid():
    grads = []
    for whole in (False, True):
        model, solver = model_and_solver(2, requires_grad=True)
        if whole:
            solver._cpu = False
        states = [model.state() for _ in range(31)]
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        tape = kc.Tape()
        with tape:
            for k in range(30):
                solver.step(model, states[k], states[k + 1], None, 2.0e-3)
            kc.launch(sum_x_kernel, dim=model.particle_count, inputs=[states[-1].particle_q, loss])
        tape.backward(loss=loss)
        grads.append(states[0].particle_qd.grad.numpy().copy())
    assert np.abs(grads[1]).max() > 0.03   # d x_end / d v0 ~ 30 dt = 0.06
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=1e-5 * np.abs(grads[1]).max())


@kc.kernel
def sum_x_kernel(q: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    kc.atomic_add(loss, 0, q[kc.tid()][0])
