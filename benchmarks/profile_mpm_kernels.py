"""Per-kernel forward and adjoint times of the MLS-MPM benchmark's kernels (microseconds).

Each kernel is launched back to back (median of 5 blocks of 200 launches), forward and then
``launch(adjoint=True)``; KERNELCORE_NUM_THREADS=1 gives the one-thread figures.

``--solver``: the same for sim.SolverMPM's 2-D kernels (sim/mpm_transfer.py) on bench_mpm.py's
2-D case (6.4K particles, 128^2 cells), including the grid clear, on the box of nodes the
particles touch as the solver does on the CPU (``--whole-grid``: every node).  Then the
launches of the hand-written adjoints (sim/mpm_adjoint_2d.py) that a taped 2-D step runs in
place of the automatic ones ("hand adjoint" rows, each a forward launch).

With one thread the figures are process CPU time, not wall time: on a machine shared with
other jobs the wall time of a launch includes the time it waited for a core.

Run: KERNELCORE_NUM_THREADS=1 python benchmarks/profile_mpm_kernels.py [--solver [--whole-grid]]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelcore as kc  # noqa: E402
import bench_autodiff as B  # noqa: E402


def median_us(fn, n=200):
    clock = time.process_time if os.environ.get("KERNELCORE_NUM_THREADS") == "1" else time.perf_counter
    fn()
    blocks = []
    for _ in range(5):
        t0 = clock()
        for _ in range(n):
            fn()
        blocks.append((clock() - t0) / n)
    return sorted(blocks)[2] * 1e6


def solver_kernels():
    """(kernel, dim, inputs, outputs) of one sim.SolverMPM 2-D step, as SolverMPM.step launches them."""
    import bench_mpm as M
    from sim import mpm_transfer as T

    k = M.KcMpm(2, 80, 128, steps=1, requires_grad=True)
    model, solver = k.model, k.solver
    s0, s1 = k.states[0], k.states[1]
    grid = solver.grid_for(s1)
    solver.step(model, s0, s1, None, M.DT)
    launches = []
    real_launch = kc.launch

    def spy(kernel, dim=None, inputs=(), outputs=(), **kw):
        launches.append((kernel, dim, list(inputs) + list(outputs)))
        return real_launch(kernel, dim=dim, inputs=inputs, outputs=outputs, **kw)

    kc.launch = spy
    try:
        box = T.active_box(s0.particle_q.numpy(), grid) if "--whole-grid" not in sys.argv else None
        T.zero_grid(grid, model.device, box)
        T.particle_to_grid(model, s0, solver._zero_actuation, solver.actuation_axis, grid, M.DT, s1, solver.model_code)
        T.update_grid(model, grid, solver.min_node_mass, solver.gravity, solver.boundary, solver.friction, M.DT,
                      (solver.mesh_reach, model.body_q, model.body_qd, grid.body_contact_mass, solver._no_body_f),
                      None, box)
        T.grid_to_particle(model, s0, grid, M.DT, s1)
    finally:
        kc.launch = real_launch
    return launches


def hand_adjoint_launches():
    """(kernel, dim, inputs, keywords) of the backward a taped sim.SolverMPM 2-D step records."""
    import bench_mpm as M

    k = M.KcMpm(2, 80, 128, steps=1, requires_grad=True)
    s0, s1 = k.states[0], k.states[1]
    tape = kc.Tape()
    with tape:
        k.solver.step(k.model, s0, s1, None, M.DT)
    launches = []
    real_launch = kc.launch

    def spy(kernel, dim=None, inputs=(), outputs=(), **kw):
        launches.append((kernel, dim, list(inputs) + list(outputs), kw))
        return real_launch(kernel, dim=dim, inputs=inputs, outputs=outputs, **kw)

    kc.launch = spy
    try:
        tape.launches[-1].backward()
    finally:
        kc.launch = real_launch
    return launches


def main():
    if "--solver" in sys.argv:
        print(f"threads: {os.environ.get('KERNELCORE_NUM_THREADS') or os.cpu_count()}")
        for kernel, dim, args in solver_kernels():
            fwd = median_us(lambda: kc.launch(kernel, dim=dim, inputs=args, record_tape=False), n=50)
            bwd = median_us(lambda: kc.launch(kernel, dim=dim, inputs=args, adjoint=True, record_tape=False), n=50)
            print(f"{kernel.key:24s} forward {fwd:8.1f} us   adjoint {bwd:8.1f} us   ratio {bwd / fwd:.2f}")
        for kernel, dim, args, kw in hand_adjoint_launches():
            t = median_us(lambda: kc.launch(kernel, dim=dim, inputs=args, **kw), n=50)
            print(f"{kernel.key:36s} hand adjoint {t:8.1f} us")
        return
    sim = B.KcMpm()
    c, P, G = sim.c, sim.np_, B.MPM_GRID

    def arr(value=None, shape=P, dtype=kc.vec2):
        return kc.array(value, dtype=dtype, requires_grad=True) if value is not None else \
            kc.zeros(shape, dtype=dtype, requires_grad=True)

    x, v = arr(sim.x0.numpy()), arr(sim.v0.numpy())
    C, F = arr(dtype=kc.mat22), arr(np.tile(np.eye(2, dtype=np.float32), (P, 1, 1)), dtype=kc.mat22)
    F1, gv, gm = arr(dtype=kc.mat22), arr(shape=(G, G)), arr(shape=(G, G), dtype=float)
    gv1, x1, v1, C1 = arr(shape=(G, G)), arr(), arr(), arr(dtype=kc.mat22)
    launches = [
        (B.kc_p2g, P, [x, v, C, F, B.MPM_DT, c["inv_dx"], c["p_mass"], c["p_vol"], c["mu"], c["la"], F1, gv, gm]),
        (B.kc_grid_update, (G, G), [gv, gm, B.MPM_GRAVITY, B.MPM_DT, G, gv1]),
        (B.kc_g2p, P, [x, gv1, B.MPM_DT, c["inv_dx"], x1, v1, C1]),
    ]
    print(f"threads: {os.environ.get('KERNELCORE_NUM_THREADS') or os.cpu_count()}")
    for kernel, dim, args in launches:
        fwd = median_us(lambda: kc.launch(kernel, dim=dim, inputs=args, record_tape=False))
        bwd = median_us(lambda: kc.launch(kernel, dim=dim, inputs=args, adjoint=True, record_tape=False))
        print(f"{kernel.key:16s} forward {fwd:7.1f} us   adjoint {bwd:7.1f} us   ratio {bwd / fwd:.2f}")


if __name__ == "__main__":
    main()
