"""Grid-fluid (smoke) step time: sim.SolverGridFluid against NumPy and Warp's stable-fluids example.

The smoke part of the fluids benchmark (issue #19; the particle part is separate).  Cases,
timed interleaved in one process (ratios > 1 mean kernelcore is faster):

(a) ``2d``: a hot plume on a ``--res2d``^2 grid (default 128), semi-Lagrangian advection,
    buoyancy, vorticity confinement off, pressure by PCG to relative residual 1e-7
    (discrete divergence after the step < 1e-5 of the velocity scale).  kernelcore runs
    twice: with its default multigrid preconditioner and with Jacobi, the latter being the
    same algorithm as the NumPy peer (benchmarks/smoke_numpy.py, Jacobi-PCG, cold start).
(b) ``3d``: the same on a ``--res3d``^3 grid (default 64).
(c) ``warp``: Warp's own stable-fluids example (warp/examples/core/example_fluid.py, its
    kernels run on warp's CPU device, fixed 256 x 128 collocated grid, 100 Jacobi pressure
    iterations per substep, which leave divergence) against kernelcore on the same grid.
    Different algorithms: the figures compare the cost of one step each library ships, not
    of the same arithmetic.
(d) ``warp_like_for_like``: Warp's example against SolverGridFluid on Warp's own scene
    (KernelcoreWarpScene: its grid, dt, inflow and gravity), every row with the divergence it
    leaves relative to max|u| (same norm for both): Warp as shipped, kc to 1e-7, kc at equal
    accuracy (the fewest fixed PCG iterations reaching Warp's divergence), kc at about equal
    work (fixed PCG iterations ~ 100 Jacobi sweeps of stencil passes), and Warp with 1000 and
    10000 Jacobi iterations (``--warp-jacobi``) to see whether more sweeps reach kc's
    divergence.  See warp_like_for_like.

Taichi: the NumPy peer's algorithm (Jacobi-PCG, cold start) written for Taichi's CPU
backend (benchmarks/smoke_taichi.py), run in a subprocess because ``ti.init`` sets
flush-to-zero process-wide; its samples are therefore not interleaved with the others.

Run: python benchmarks/bench_smoke.py --out benchmarks/results/smoke.json
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernelcore as kc  # noqa: E402
import sim  # noqa: E402
import smoke_numpy  # noqa: E402
from common import environment, interleaved, load_average, ratio, write_json  # noqa: E402

HEAT = 4.0
DT = 0.01


def plume(res):
    """Initial temperature/density: a hot block in the lower middle of the box."""
    blob = np.zeros(res, np.float32)
    sl = (slice(res[0] // 2 - res[0] // 8, res[0] // 2 + res[0] // 8), slice(res[1] // 8, res[1] // 4))
    sl += tuple(slice(n // 2 - n // 8, n // 2 + n // 8) for n in res[2:])
    blob[sl] = 1.0
    return blob


class KernelcoreSmoke:
    def __init__(self, res, warm_steps=3, preconditioner="multigrid"):
        # the Jacobi variant also starts CG from zero: the NumPy peer's algorithm exactly
        self.solver = sim.SolverGridFluid(res, dx=1.0 / res[0], heat_lift=HEAT, preconditioner=preconditioner,
                                          warm_start=preconditioner == "multigrid")
        self.states = [self.solver.state(), self.solver.state()]
        blob = plume(res)
        self.states[0].density.assign(kc.from_numpy(blob))
        self.states[0].temperature.assign(kc.from_numpy(blob))
        self.k = 0
        for _ in range(warm_steps):
            self.step()

    def step(self):
        a, b = self.states[self.k % 2], self.states[(self.k + 1) % 2]
        self.solver.step(a, b, DT)
        self.k += 1

    def relative_divergence(self):
        st = self.states[self.k % 2]
        div = self.solver.divergence(st).numpy()
        speed = max(float(np.abs(getattr(st, n).numpy()).max()) for n in ("u", "v", "w") if getattr(st, n) is not None)
        return float(np.abs(div).max() * self.solver.dx / max(speed, 1e-30))


class NumpySmoke:
    def __init__(self, res, warm_steps=3):
        self.dim = len(res)
        three = tuple(res) if self.dim == 3 else tuple(res) + (1,)
        nx, ny, nz = three
        self.dx = 1.0 / res[0]
        self.u = np.zeros((nx + 1, ny, nz), np.float32)
        self.v = np.zeros((nx, ny + 1, nz), np.float32)
        self.w = np.zeros((nx, ny, nz + 1 if self.dim == 3 else 2), np.float32)
        blob = plume(res).reshape(three)
        self.rho, self.temp = blob.copy(), blob.copy()
        self.iterations = 0
        for _ in range(warm_steps):
            self.step()

    def step(self):
        self.u, self.v, self.w, self.rho, self.temp, self.iterations = smoke_numpy.step(
            self.u, self.v, self.w, self.rho, self.temp, DT, self.dx, heat_lift=HEAT, dim=self.dim)


class WarpExampleFluid:
    """Warp's stable-fluids example driven on warp's CPU device (its kernels, its step order)."""

    def __init__(self, iterations=100):
        import importlib.util
        import math

        import warp as wp

        wp.config.quiet = True
        wp.init()
        path = os.path.join(os.path.dirname(wp.__file__), "examples", "core", "example_fluid.py")
        spec = importlib.util.spec_from_file_location("warp_example_fluid", path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        self.wp, self.m, self.math = wp, m, math
        self.shape = (int(m.grid_width), int(m.grid_height))
        self.iterations, self.substeps, self.dt = int(iterations), 2, 1.0 / 120.0
        self.probe = False      # True: keep the velocity right after the next step's last projection
        self.projected = None
        z = lambda dt=float: wp.zeros(self.shape, dtype=dt, device="cpu")  # noqa: E731
        self.u0, self.u1 = z(wp.vec2), z(wp.vec2)
        self.rho0, self.rho1, self.p0, self.p1, self.div = z(), z(), z(), z(), z()
        self.t = 0.0
        self.step()

    def step(self):
        wp, m, shape = self.wp, self.m, self.shape
        for _ in range(self.substeps):
            angle = self.math.sin(self.t * 4.0) * 1.5
            vel = wp.vec2(self.math.cos(angle) * 400.0, self.math.sin(angle) * 400.0)
            wp.launch(m.init, dim=shape, inputs=[self.rho0, self.u0, 5, vel], device="cpu")
            wp.launch(m.integrate, dim=shape, inputs=[self.u0, self.rho0, self.dt], device="cpu")
            wp.launch(m.divergence, dim=shape, inputs=[self.u0, self.div], device="cpu")
            self.p0.zero_()
            self.p1.zero_()
            for _ in range(self.iterations):
                wp.launch(m.pressure_solve, dim=shape, inputs=[self.p0, self.p1, self.div], device="cpu")
                self.p0, self.p1 = self.p1, self.p0
            wp.launch(m.pressure_apply, dim=shape, inputs=[self.p0, self.u0], device="cpu")
            if self.probe:
                self.projected = self.u0.numpy().copy()
            wp.launch(m.advect, dim=shape, inputs=[self.u0, self.u1, self.rho0, self.rho1, self.dt], device="cpu")
            self.u0, self.u1 = self.u1, self.u0
            self.rho0, self.rho1 = self.rho1, self.rho0
            self.t += self.dt
        wp.synchronize_device("cpu")

    def relative_divergence(self, steps=3):
        """Divergence Warp's projection leaves, relative to its velocity scale, as (forward, central):
        max over cells of |net outflow| / max|u| in cell units (dx = 1), the norm of
        KernelcoreSmoke.relative_divergence.  "forward": (u[i+1] - u[i]) + (v[j+1] - v[j]), the
        operator its ``divergence`` kernel uses (times 1/2) and its Jacobi solve targets; "central":
        (u[i+1] - u[i-1]) / 2 + (v[j+1] - v[j-1]) / 2, the one matching its central pressure
        gradient.  Median over ``steps`` steps (measured after the projection, before advection)."""
        fwd, cen, rms = [], [], []
        for _ in range(steps):
            self.probe = True
            self.step()
            self.probe = False
            u = self.projected.astype(np.float64)
            scale = max(float(np.abs(u).max()), 1e-30)
            d_f = (u[1:, :-1, 0] - u[:-1, :-1, 0]) + (u[:-1, 1:, 1] - u[:-1, :-1, 1])
            d_c = 0.5 * (u[2:, 1:-1, 0] - u[:-2, 1:-1, 0]) + 0.5 * (u[1:-1, 2:, 1] - u[1:-1, :-2, 1])
            fwd.append(float(np.abs(d_f).max()) / scale)
            cen.append(float(np.abs(d_c).max()) / scale)
            rms.append(float(np.sqrt(np.mean(d_f ** 2))) / scale)
        self.last_rms = float(np.median(rms))   # the forward measure's root mean square over the cells
        return float(np.median(fwd)), float(np.median(cen))


F2 = kc.array(dtype=float, ndim=2)


@kc.kernel
def warp_scene_emitter_kernel(cx: int, cy: int, radius: float, u_in: float, v_in: float, u: F2, v: F2, rho: F2):
    """Warp's ``init`` on the MAC grid: cells whose index lies within ``radius`` of (cx, cy) get
    density 1, and the faces of those cells the inflow velocity (u_in, v_in) [cells/s]."""
    x, y = kc.tid()
    nx = rho.shape[0]
    ny = rho.shape[1]
    inside = kc.length(kc.vec2(float(x - cx), float(y - cy))) < radius
    inside_left = kc.length(kc.vec2(float(x - 1 - cx), float(y - cy))) < radius
    inside_below = kc.length(kc.vec2(float(x - cx), float(y - 1 - cy))) < radius
    if x < nx and y < ny and inside:
        rho[x, y] = 1.0
    if y < ny and (inside or inside_left):
        u[x, y] = u_in
    if x < nx and (inside or inside_below):
        v[x, y] = v_in


class KernelcoreWarpScene:
    """Warp's stable-fluids scene on SolverGridFluid, as close as the two methods allow.

    Warp's grid is 256 x 128 cells of size 1 with gravity -90.8 rho along its long axis x; here
    the grid is 128 x 256 (x and y swapped: a mirror image, the same flow) with smoke_weight 90.8
    along -y, dx = 1 (so velocities are cells/s in both), dt = 1/120 s per step (Warp's substep),
    and Warp's inflow: a disc of radius 5 cells at the centre set to density 1 and speed 400
    cells/s in a direction swinging as sin(4 t) * 1.5 rad about the long axis.  Differences that
    remain: staggered faces instead of collocated cells, closed free-slip walls instead of Warp's
    clamped lookups, midpoint instead of single-step back-trace, and no density fade (Warp: 1 - 0.1 dt
    per substep, a multiply per cell).  ``max_iter`` with ``tol=0`` gives a fixed PCG iteration count.
    """

    def __init__(self, tol=1e-7, max_iter=None, warm_steps=3):
        self.solver = sim.SolverGridFluid((128, 256), dx=1.0, smoke_weight=90.8, cfl=8.0, tol=tol, max_iter=max_iter)
        self.states = [self.solver.state(), self.solver.state()]
        self.dt, self.t, self.k = 1.0 / 120.0, 0.0, 0
        for _ in range(warm_steps):
            self.step()

    def step(self):
        import math
        import warnings

        a, b = self.states[self.k % 2], self.states[(self.k + 1) % 2]
        angle = math.sin(self.t * 4.0) * 1.5
        vel = (math.sin(angle) * 400.0, math.cos(angle) * 400.0)   # Warp's (cos, sin) with x and y swapped
        kc.launch(warp_scene_emitter_kernel, dim=(129, 257), inputs=[64, 128, 5.0, vel[0], vel[1]],
                  outputs=[a.u, a.v, a.density], record_tape=False)
        with warnings.catch_warnings():   # a fixed iteration count "reaches max_iter" on purpose
            warnings.simplefilter("ignore")
            self.solver.step(a, b, self.dt)
        self.k += 1
        self.t += self.dt

    relative_divergence = KernelcoreSmoke.relative_divergence

    def divergence_over(self, steps=3):
        """Median relative divergence after ``steps`` further steps (see KernelcoreSmoke.relative_divergence);
        ``last_rms``: the same with the root mean square over the cells instead of the max."""
        out, rms = [], []
        for _ in range(steps):
            self.step()
            out.append(self.relative_divergence())
            st = self.states[self.k % 2]
            speed = max(float(np.abs(st.u.numpy()).max()), float(np.abs(st.v.numpy()).max()), 1e-30)
            rms.append(float(np.sqrt(np.mean(self.solver.divergence(st).numpy() ** 2))) * self.solver.dx / speed)
        self.last_rms = float(np.median(rms))
        return float(np.median(out))


def warp_like_for_like(repeats, jacobi_iterations=(1000, 10000), fixed_iterations=(1, 2, 3, 4, 6, 8), equal_work=9):
    """Warp's stable-fluids example against SolverGridFluid on Warp's scene (KernelcoreWarpScene), each
    row with the divergence it leaves (relative to max|u|, see WarpExampleFluid.relative_divergence):

    * ``warp_100``: the example as shipped (100 Jacobi iterations from zero per substep);
    * ``kc_default``: multigrid PCG to relative residual 1e-7 (warm-started);
    * ``kc_equal_accuracy``: the fewest fixed PCG iterations (of ``fixed_iterations``) whose
      divergence is at most warp_100's (forward-difference measure, the one its solve targets);
    * ``kc_equal_work``: ``equal_work`` fixed PCG iterations, about the stencil passes of 100 Jacobi
      sweeps (an iteration: 3 + 3 smoothing sweeps, a residual and the CG's A p on the fine grid,
      about a third more on the coarser levels, ~11 fine-grid passes);
    * ``warp_<N>``: the example with N Jacobi iterations per substep, to see whether more sweeps get
      it to kc's divergence (a collocated projection cannot reach zero in either measure).

    Times are per kc step = per Warp substep (dt = 1/120 s), medians of interleaved samples.
    """
    rows = {}
    w100 = WarpExampleFluid()
    warp_fwd, warp_cen = w100.relative_divergence()
    warp_rms = w100.last_rms
    kd = KernelcoreWarpScene()
    kd_div = kd.divergence_over()
    kd_rms = kd.last_rms
    chosen = None
    sweep = {}
    for n in fixed_iterations:
        k = KernelcoreWarpScene(tol=1e-30, max_iter=n)
        sweep[n] = k.divergence_over()
        sweep_rms = k.last_rms
        if sweep[n] <= warp_fwd:
            chosen = (n, k)
            break
    ke = KernelcoreWarpScene(tol=1e-30, max_iter=equal_work)
    ke_div = ke.divergence_over()
    ke_rms = ke.last_rms
    warps = {N: WarpExampleFluid(iterations=N) for N in jacobi_iterations}
    cases = {"kc_default": kd.step, "warp_100": w100.step, "kc_equal_work": ke.step}
    if chosen is not None:
        cases["kc_equal_accuracy"] = chosen[1].step
    for N, w in warps.items():
        cases[f"warp_{N}"] = w.step
    t = interleaved(cases, repeats=repeats, warmup=0)
    per = {name: (2 if name.startswith("warp") else 1) for name in cases}   # Warp's step() is two substeps

    def row(name, **extra):
        r = {"step_s": t[name]["median"] / per[name], "cpu_step_s": t[name]["cpu_median"] / per[name]}
        r.update(extra)
        return r

    rows["warp_100"] = row("warp_100", pressure="100 Jacobi iterations from zero, collocated grid",
                           relative_divergence_forward=warp_fwd, relative_divergence_central=warp_cen,
                           relative_divergence_rms=warp_rms)
    rows["kc_default"] = row("kc_default", pressure="multigrid PCG to relative residual 1e-7",
                             cg_iterations=kd.solver.last_cg_iterations, relative_divergence=kd_div,
                             relative_divergence_rms=kd_rms)
    if chosen is not None:
        rows["kc_equal_accuracy"] = row("kc_equal_accuracy", pressure=f"multigrid PCG, {chosen[0]} iterations fixed",
                                        cg_iterations=chosen[0], relative_divergence=sweep[chosen[0]],
                                        relative_divergence_rms=sweep_rms)
    else:
        rows["kc_equal_accuracy"] = {"skipped": f"no fixed count of {fixed_iterations} reached {warp_fwd:.3g}"}
    rows["kc_equal_accuracy_sweep"] = {str(n): d for n, d in sweep.items()}
    rows["kc_equal_work"] = row("kc_equal_work", pressure=f"multigrid PCG, {equal_work} iterations fixed",
                                cg_iterations=equal_work, relative_divergence=ke_div,
                                relative_divergence_rms=ke_rms)
    for N, w in warps.items():
        f, c = w.relative_divergence()
        rows[f"warp_{N}"] = row(f"warp_{N}", pressure=f"{N} Jacobi iterations from zero, collocated grid",
                                relative_divergence_forward=f, relative_divergence_central=c,
                                relative_divergence_rms=w.last_rms)
    base = rows["warp_100"]["step_s"]
    for name, r in rows.items():
        if "step_s" in r:
            r["warp_100_over_this"] = ratio(base, r["step_s"])
    return {"grid": [256, 128], "warp_version": w100.wp.config.version, "rows": rows}


def taichi_step(grid, repeats):
    """Median step time [s] of benchmarks/smoke_taichi.py on ``grid`` (a subprocess), or a reason it did not run."""
    import json
    import subprocess

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smoke_taichi.py")
    try:
        p = subprocess.run([sys.executable, script, *map(str, grid), "--repeats", str(repeats)], capture_output=True,
                           text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return {"skipped": "timed out"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"skipped": f"exit {p.returncode}: {tail[0][:300]}"}
    return json.loads(lines[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--res2d", type=int, default=128)
    parser.add_argument("--res3d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-warp", action="store_true")
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--no-grids", action="store_true", help="skip the 2d/3d cases (only the Warp ones)")
    parser.add_argument("--warp-jacobi", type=int, nargs="*", default=[1000, 10000],
                        help="Jacobi iteration counts of the extra Warp rows of the like-for-like case")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    res = {"benchmark": "smoke", "environment": environment(), "load_average_before": load_average(), "cases": {}}
    for name, grid in () if args.no_grids else (("2d", (args.res2d,) * 2), ("3d", (args.res3d,) * 3)):
        k, kj, n = KernelcoreSmoke(grid), KernelcoreSmoke(grid, preconditioner="jacobi"), NumpySmoke(grid)
        t = interleaved({"kernelcore": k.step, "kernelcore_jacobi": kj.step, "numpy": n.step}, repeats=args.repeats,
                        warmup=0)
        res["cases"][name] = {
            "grid": list(grid),
            "kernelcore_step_s": t["kernelcore"]["median"], "numpy_step_s": t["numpy"]["median"],
            "kernelcore_jacobi_step_s": t["kernelcore_jacobi"]["median"],
            "numpy_over_kernelcore": ratio(t["numpy"]["median"], t["kernelcore"]["median"]),
            "numpy_over_kernelcore_same_algorithm": ratio(t["numpy"]["median"], t["kernelcore_jacobi"]["median"]),
            "kernelcore_cg_iterations": k.solver.last_cg_iterations,
            "kernelcore_jacobi_cg_iterations": kj.solver.last_cg_iterations, "numpy_cg_iterations": n.iterations,
            "kernelcore_relative_divergence": k.relative_divergence(),
            "kernelcore_cpu_step_s": t["kernelcore"]["cpu_median"], "numpy_cpu_step_s": t["numpy"]["cpu_median"],
        }
        if not args.no_taichi:
            tr = taichi_step(grid, args.repeats)
            c = res["cases"][name]
            if "step_s" in tr:
                c.update({"taichi_step_s": tr["step_s"], "taichi_cg_iterations": tr["iterations"],
                          "taichi_version": tr["taichi_version"],
                          "taichi_over_kernelcore": ratio(tr["step_s"], c["kernelcore_step_s"]),
                          "taichi_over_kernelcore_same_algorithm": ratio(tr["step_s"], c["kernelcore_jacobi_step_s"])})
            else:
                c["taichi"] = tr
        print(name, res["cases"][name], flush=True)
    if not args.no_warp:
        try:
            wf = WarpExampleFluid()
        except Exception as e:  # noqa: BLE001  (warp missing or its example moved: report, do not fail)
            res["cases"]["warp"] = {"skipped": f"{type(e).__name__}: {e}"}
        else:
            k = KernelcoreSmoke(wf.shape)
            t = interleaved({"kernelcore": k.step, "warp": wf.step}, repeats=args.repeats, warmup=0)
            res["cases"]["warp"] = {
                "grid": list(wf.shape), "warp_version": wf.wp.config.version,
                "warp_step_s_per_substep": t["warp"]["median"] / wf.substeps, "kernelcore_step_s": t["kernelcore"]["median"],
                "warp_over_kernelcore": ratio(t["warp"]["median"] / wf.substeps, t["kernelcore"]["median"]),
                "warp_cpu_step_s_per_substep": t["warp"]["cpu_median"] / wf.substeps,
                "kernelcore_cpu_step_s": t["kernelcore"]["cpu_median"],
                "warp_pressure": "100 Jacobi iterations, collocated grid",
                "kernelcore_pressure": f"multigrid-PCG to 1e-7 ({k.solver.last_cg_iterations} iterations last step)",
            }
            print("warp", res["cases"]["warp"], flush=True)
            res["cases"]["warp_like_for_like"] = warp_like_for_like(args.repeats, tuple(args.warp_jacobi))
            for name, row in res["cases"]["warp_like_for_like"]["rows"].items():
                print("warp_like_for_like", name, row, flush=True)
    res["load_average_after"] = load_average()
    write_json(res, args.out)
    return res


if __name__ == "__main__":
    main()
