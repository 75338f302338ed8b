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
    of the same arithmetic; the JSON records both divergences.

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

    def __init__(self):
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
        self.iterations, self.substeps, self.dt = 100, 2, 1.0 / 120.0
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
            wp.launch(m.advect, dim=shape, inputs=[self.u0, self.u1, self.rho0, self.rho1, self.dt], device="cpu")
            self.u0, self.u1 = self.u1, self.u0
            self.rho0, self.rho1 = self.rho1, self.rho0
            self.t += self.dt
        wp.synchronize_device("cpu")


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
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    res = {"benchmark": "smoke", "environment": environment(), "load_average_before": load_average(), "cases": {}}
    for name, grid in (("2d", (args.res2d,) * 2), ("3d", (args.res3d,) * 3)):
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
                "warp_pressure": "100 Jacobi iterations, collocated grid",
                "kernelcore_pressure": f"multigrid-PCG to 1e-7 ({k.solver.last_cg_iterations} iterations last step)",
            }
            print("warp", res["cases"]["warp"], flush=True)
    res["load_average_after"] = load_average()
    write_json(res, args.out)
    return res


if __name__ == "__main__":
    main()
