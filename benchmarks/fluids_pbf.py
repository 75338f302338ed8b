"""PBF part of benchmarks/bench_fluids.py: sim.SolverPBF against the same algorithm in Taichi (CPU).

Scene: a dam break, a block of ``side^3`` particles (40^3 = 64,000) at spacing s = 1/64 m in
a closed box of 80 x 60 x 40 spacings, h = 2 s, 4 Jacobi iterations, s_corr, XSPH,
vorticity confinement, walls counted as fluid in the density; dt = 2 ms.  The Taichi
version below is written from the same formulas (sim/pbf_kernels.py) and parameters: a
dense cell grid (cells 1.1 h wide, at most ``MAX_PER_CELL`` particles each) instead of the
hash grid, then the same neighbour lists, multipliers, updates, vorticity and XSPH.

Taichi compiles with fast math by default (reassociated sums, approximate reciprocals and
square roots, which lets LLVM vectorise the neighbour loops); kernelcore keeps IEEE
semantics by default and is also timed with ``SolverPBF(fast_math=True)`` (its pair-loop
kernels built with GCC's safe fast-math subset, ``kernelcore_fast_math_*``, interleaved with
the IEEE samples).  Taichi is therefore also timed with ``fast_math=False``
(``taichi_no_fast_math_*``), the like-for-like comparison.

Taichi runs in a subprocess (``python benchmarks/fluids_pbf.py --taichi-worker ...`` prints
JSON): ``ti.init`` sets flush-to-zero for the whole process, which would change the other
cases' numbers.  The runs are therefore not interleaved; kernelcore is measured before,
between and after the two Taichi runs and the median of all its samples is used.

``kernelcore_lanes_*`` is ``SolverPBF(lanes=True)``, whose particles are sorted by cell each step
(sim/pbf_sort.py); ``kernelcore_lanes_unsorted_*`` the same lanes with ``cell_sort=False`` (the
hash-grid search in the user's particle order), interleaved with it.

Both sides also report CPU seconds per step (``time.process_time``, all threads of the
process): on a shared machine a process gets a varying share of the cores, so wall times
swing by 2x between minutes while CPU times stay within a few percent; the ``*_cpu_*``
ratios are the steadier comparison of the work each side does (both include their thread
pools' spin-waiting, if any).  ``*_one_thread_*``: both on one thread (``KERNELCORE_NUM_THREADS=1``,
``ti.init(cpu_max_num_threads=1)``), the comparison least disturbed by other processes.
``kernelcore_lanes_general_volume_one_thread_cpu_step_s``: the same one-thread lanes step with
``solver.uniform_volume = False`` (the lane kernels that load each neighbour's volume, as before
session 17), interleaved with the default (uniform-volume) samples; ``uniform_volume_one_thread_cpu_speedup``
is their ratio (old / new of one run).

Same problem: ``same_problem`` runs both from the same block and compares them after 1 and 5
steps (mean y, mean and max position difference, compression, neighbours per particle): the
neighbour sets are identical (same 1.1 h search, no cap reached) and the positions agree to
float32 rounding (session 15, 64K particles: mean |dx| 2.5e-7 m, max 3e-6 m after 5 steps).
``kernelcore_mean_y`` and ``taichi_mean_y`` are after different step counts (``*_steps_run``).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

SPACING = 1.0 / 64
BOX = (80, 60, 40)            # domain in spacings
PARAMS = dict(iterations=4, relaxation=1.0e-2, scorr_k=1.0e-4, scorr_dq=0.2, xsph=0.01, vorticity_confinement=0.01)
DT = 2.0e-3
MAX_NEIGHBORS = 96
MAX_PER_CELL = 64


def initial_block(side, seed=5):
    """Positions (side^3, 3) [m] of the dam-break block (jittered lattice)."""
    s = SPACING
    g = (np.arange(side) + 0.5) * s
    z, y, x = np.meshgrid(g, g, g, indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    return (pos + np.random.default_rng(seed).uniform(-0.1 * s, 0.1 * s, pos.shape)).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# kernelcore
# ----------------------------------------------------------------------------------------------
class KcPBF:
    def __init__(self, side, **solver_kw):
        import sim

        b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        pos = initial_block(side)
        b.add_particles(pos, radius=0.5 * SPACING, volume=SPACING ** 3, density=1000.0)
        self.model = b.finalize()
        upper = tuple(n * SPACING for n in BOX)
        self.solver = sim.SolverPBF(self.model, smoothing_length=2 * SPACING, bounds=((0.0, 0.0, 0.0), upper),
                                    max_neighbors=MAX_NEIGHBORS, check_input=False, **PARAMS, **solver_kw)
        self.states = [self.model.state(), self.model.state()]

    def steps(self, n):
        for _ in range(n):
            self.solver.step(self.model, self.states[0], self.states[1], None, DT)
            self.states.reverse()

    def positions(self):
        return self.states[0].particle_q.numpy()


# ----------------------------------------------------------------------------------------------
# Taichi (same algorithm; run in a subprocess)
# ----------------------------------------------------------------------------------------------
def taichi_pbf(side, threads=None, fast_math=True):
    import taichi as ti

    kw = {} if threads is None else {"cpu_max_num_threads": threads}
    kw["fast_math"] = bool(fast_math)
    ti.init(arch=ti.cpu, default_fp=ti.f32, log_level=ti.ERROR, **kw)
    s = SPACING
    h = 2 * s
    cell = 1.1 * h
    r = 0.5 * s
    lower = ti.Vector([0.0, 0.0, 0.0])
    upper = ti.Vector([BOX[0] * s, BOX[1] * s, BOX[2] * s])
    dims = tuple(int(math.ceil(BOX[a] * s / cell)) for a in range(3))
    n = side ** 3
    iters = PARAMS["iterations"]
    eps = PARAMS["relaxation"] / (h * h)
    poly6_c = 315.0 / (64.0 * math.pi * h ** 9)
    spiky_c = -45.0 / (math.pi * h ** 6)
    scorr_k = PARAMS["scorr_k"] * h * h
    w_dq = poly6_c * (h * h * (1.0 - PARAMS["scorr_dq"] ** 2)) ** 3
    xsph, conf = PARAMS["xsph"], PARAMS["vorticity_confinement"]
    vol = s ** 3                     # m / rho0 (every particle has the lattice volume)
    g = ti.Vector([0.0, -9.81, 0.0])

    vec = ti.types.vector(3, ti.f32)
    x = ti.Vector.field(3, ti.f32, n)
    v = ti.Vector.field(3, ti.f32, n)
    p = ti.Vector.field(3, ti.f32, n)
    p2 = ti.Vector.field(3, ti.f32, n)
    v1 = ti.Vector.field(3, ti.f32, n)
    omega = ti.Vector.field(3, ti.f32, n)
    lam = ti.field(ti.f32, n)
    cell_count = ti.field(ti.i32, dims)
    cell_ids = ti.field(ti.i32, dims + (MAX_PER_CELL,))
    nb = ti.field(ti.i32, (n, MAX_NEIGHBORS))
    nb_count = ti.field(ti.i32, n)

    @ti.func
    def poly6(r2):
        w = 0.0
        if r2 < h * h:
            t = h * h - r2
            w = poly6_c * t * t * t
        return w

    @ti.func
    def spiky_grad(d):
        out = ti.Vector([0.0, 0.0, 0.0])
        r2 = d.dot(d)
        if r2 < h * h and r2 > 1.0e-12 * h * h:
            rr = ti.sqrt(r2)
            t = h - rr
            out = d * (spiky_c * t * t / rr)
        return out

    @ti.func
    def wall_volume(sd):
        phi, dphi = 0.0, 0.0
        if sd < h:
            u = ti.max(sd / h, 0.0)
            u2 = u * u
            f = u * (1.0 + u2 * (-4.0 / 3.0 + u2 * (6.0 / 5.0 + u2 * (-4.0 / 7.0 + u2 / 9.0))))
            a = 1.0 - u2
            if sd > 0.0:
                dphi = -(315.0 / 256.0) * a * a * a * a / h
            phi = (315.0 / 256.0) * (128.0 / 315.0 - f)
        return phi, dphi

    @ti.func
    def walls(q):
        phi = 0.0
        grad = ti.Vector([0.0, 0.0, 0.0])
        for a in ti.static(range(3)):
            p0, d0 = wall_volume(q[a] - lower[a])
            p1, d1 = wall_volume(upper[a] - q[a])
            phi += p0 + p1
            grad[a] += d0 - d1
        return phi, grad

    @ti.func
    def project(q):
        return ti.min(ti.max(q, lower + r), upper - r)

    @ti.kernel
    def init(xi: ti.types.ndarray()):
        for i in range(n):
            x[i] = ti.Vector([xi[i, 0], xi[i, 1], xi[i, 2]])
            v[i] = ti.Vector([0.0, 0.0, 0.0])

    @ti.kernel
    def predict():
        for i in range(n):
            p[i] = project(x[i] + (v[i] + g * DT) * DT)

    @ti.kernel
    def build_grid():
        for c in ti.grouped(cell_count):
            cell_count[c] = 0
        for i in range(n):
            c = ti.cast(ti.floor((p[i] - lower) / cell), ti.i32)
            c = ti.max(ti.min(c, ti.Vector(dims) - 1), 0)
            k = ti.atomic_add(cell_count[c], 1)
            if k < MAX_PER_CELL:
                cell_ids[c, k] = i

    @ti.kernel
    def find_neighbors():
        for i in range(n):
            c0 = ti.cast(ti.floor((p[i] - lower) / cell), ti.i32)
            cnt = 0
            for off in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                c = c0 + off
                if 0 <= c[0] < dims[0] and 0 <= c[1] < dims[1] and 0 <= c[2] < dims[2]:
                    for k in range(ti.min(cell_count[c], MAX_PER_CELL)):
                        j = cell_ids[c, k]
                        if j != i and (p[i] - p[j]).norm_sqr() < cell * cell and cnt < MAX_NEIGHBORS:
                            nb[i, cnt] = j
                            cnt += 1
            nb_count[i] = cnt

    @ti.kernel
    def compute_lambda(pp: ti.template()):
        for i in range(n):
            q = pp[i]
            ratio = vol * poly6(0.0)
            grad_i = ti.Vector([0.0, 0.0, 0.0])
            sum_sq = 0.0
            for k in range(nb_count[i]):
                j = nb[i, k]
                d = q - pp[j]
                ratio += vol * poly6(d.dot(d))
                gg = spiky_grad(d) * vol
                grad_i += gg
                sum_sq += gg.dot(gg)
            phi, gw = walls(q)
            ratio += phi
            grad_i += gw
            c = ti.max(ratio - 1.0, 0.0)
            lam[i] = -c / (sum_sq + grad_i.dot(grad_i) + eps)

    @ti.kernel
    def apply_delta(pp: ti.template(), out: ti.template()):
        for i in range(n):
            q = pp[i]
            li = lam[i]
            dp = ti.Vector([0.0, 0.0, 0.0])
            for k in range(nb_count[i]):
                j = nb[i, k]
                d = q - pp[j]
                sc = poly6(d.dot(d)) / w_dq
                sc2 = sc * sc
                dp += spiky_grad(d) * (vol * (li + lam[j] - scorr_k * sc2 * sc2))
            phi, gw = walls(q)
            dp += gw * li
            out[i] = project(q + dp)

    @ti.kernel
    def velocity(pp: ti.template()):
        for i in range(n):
            v1[i] = (pp[i] - x[i]) / DT

    @ti.kernel
    def vorticity(pp: ti.template()):
        for i in range(n):
            w = ti.Vector([0.0, 0.0, 0.0])
            for k in range(nb_count[i]):
                j = nb[i, k]
                w += spiky_grad(pp[i] - pp[j]).cross(v1[j] - v1[i]) * vol
            omega[i] = w

    @ti.kernel
    def finish(pp: ti.template()):
        for i in range(n):
            q = pp[i]
            vi = v1[i]
            smooth = ti.Vector([0.0, 0.0, 0.0])
            eta = ti.Vector([0.0, 0.0, 0.0])
            wi = omega[i].norm()
            for k in range(nb_count[i]):
                j = nb[i, k]
                d = q - pp[j]
                smooth += (v1[j] - vi) * (vol * poly6(d.dot(d)))
                eta += spiky_grad(d) * (vol * (omega[j].norm() - wi))
            acc = ti.Vector([0.0, 0.0, 0.0])
            el = eta.norm()
            if el > 1.0e-12:
                acc = (eta / el).cross(omega[i]) * conf
            v[i] = vi + smooth * xsph + acc * DT
            x[i] = q

    init(initial_block(side))
    bufs = [p, p2]

    def step():
        predict()
        build_grid()
        find_neighbors()
        for k in range(iters):
            compute_lambda(bufs[k % 2])
            apply_delta(bufs[k % 2], bufs[(k + 1) % 2])
        last = bufs[iters % 2]
        velocity(last)
        vorticity(last)
        finish(last)

    def steps(m):
        for _ in range(m):
            step()
        ti.sync()

    steps.neighbor_counts = nb_count.to_numpy   # (N,) ints of the last step's lists
    return steps, x, ti


def taichi_worker(side, steps, repeats, threads, fast_math=True):
    """Time ``steps`` Taichi PBF steps ``repeats`` times (after a warm-up); prints JSON."""
    run, x, ti = taichi_pbf(side, threads, fast_math)
    run(2)
    samples, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        run(steps)
        samples.append((time.perf_counter() - t0) / steps)
        cpu.append((time.process_time() - c0) / steps)
    pos = x.to_numpy()
    print(json.dumps({"taichi_version": ".".join(map(str, ti.__version__)), "samples": samples, "cpu_samples": cpu,
                      "finite": bool(np.all(np.isfinite(pos))), "mean_y": float(pos[:, 1].mean())}))


def taichi_dump(side, marks, path, fast_math=True):
    """Run Taichi's PBF from the initial block and save the positions after each step count in
    ``marks`` (and the neighbour counts of that step) to ``path`` (.npz): the same-problem check."""
    run, x, ti = taichi_pbf(side, None, fast_math)
    out, done = {}, 0
    for m in sorted(marks):
        run(m - done)
        done = m
        out[f"q{m}"] = x.to_numpy()
        out[f"count{m}"] = run.neighbor_counts()
    np.savez(path, **out)


def same_problem(side, marks=(1, 5), fast_math=True, **solver_kw):
    """Both solvers from the same block for max(marks) steps; per mark: mean y of each, mean and max
    |x_kc - x_ti| [m], the compression max(rho / rho0 - 1) of each (kernelcore's SPH density sum
    of the particles alone on both position sets: the walls' share is left out, so values near the
    walls are low, alike on both sides) and the neighbour-count statistics of each (the work per particle)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "taichi.npz")
        cmd = [sys.executable, os.path.abspath(__file__), "--taichi-dump", path, "--side", str(side), "--marks",
               ",".join(map(str, marks))] + ([] if fast_math else ["--no-fast-math"])
        subprocess.run(cmd, capture_output=True, text=True, check=True)
        ti_res = dict(np.load(path))
    kc_pbf = KcPBF(side, **solver_kw)
    res, done = {}, 0
    for m in sorted(marks):
        kc_pbf.steps(m - done)
        done = m
        q_kc, q_ti = kc_pbf.positions().astype(np.float64), ti_res[f"q{m}"].astype(np.float64)
        dist = np.linalg.norm(q_kc - q_ti, axis=1)
        state = kc_pbf.model.state()
        rho_kc = kc_pbf.solver.density(kc_pbf.states[0]) / kc_pbf.solver.rest_density
        state.particle_q.assign(q_ti.astype(np.float32))
        rho_ti = kc_pbf.solver.density(state) / kc_pbf.solver.rest_density
        c_kc = kc_pbf.states[0].pbf_buffers.neighbors.count.numpy()
        c_ti = ti_res[f"count{m}"]
        res[f"step_{m}"] = {
            "kernelcore_mean_y": float(q_kc[:, 1].mean()), "taichi_mean_y": float(q_ti[:, 1].mean()),
            "mean_position_difference_m": float(dist.mean()), "max_position_difference_m": float(dist.max()),
            "kernelcore_compression_max": float(np.max(rho_kc - 1.0)),
            "taichi_compression_max": float(np.max(rho_ti - 1.0)),
            "kernelcore_neighbors_mean_max": [float(c_kc.mean()), int(c_kc.max())],
            "taichi_neighbors_mean_max": [float(c_ti.mean()), int(c_ti.max())]}
    return res


def run_taichi(side, steps, repeats, threads=None, fast_math=True):
    """Taichi's per-step seconds from a subprocess, or None when taichi is not installed."""
    try:
        import importlib.util

        if importlib.util.find_spec("taichi") is None:
            return None
    except (ImportError, ValueError):
        return None
    cmd = [sys.executable, os.path.abspath(__file__), "--taichi-worker", "--side", str(side), "--steps", str(steps),
           "--repeats", str(repeats)]
    if threads:
        cmd += ["--threads", str(threads)]
    if not fast_math:
        cmd += ["--no-fast-math"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pbf_case(side=40, steps=5, repeats=3, taichi=True):
    """Steps per second of both at ``side^3`` particles; returns the result dict."""
    import statistics

    kc_pbf = KcPBF(side)
    kc_pbf.steps(2)

    kc_pbf.solver.fast_math = True
    kc_pbf.steps(1)   # builds the fast-math twins of the pair-loop kernels
    kc_pbf.solver.fast_math = False
    kc_pbf.solver.lanes = True
    kc_pbf.steps(1)   # builds the lanes (sim/pbf_lanes.py) of the capacity this block needs
    kc_pbf.solver.cell_sort = False
    kc_pbf.steps(1)   # and the hash-grid search the unsorted lanes use
    kc_pbf.solver.cell_sort = True
    uniform = kc_pbf.solver.uniform_volume
    kc_pbf.solver.uniform_volume = False
    kc_pbf.steps(1)   # and the lanes that load each neighbour's volume (the one-thread old / new comparison)
    kc_pbf.solver.uniform_volume = uniform
    kc_pbf.solver.lanes = False
    baseline = []   # the same solver without its pair cache (how the pair cache's speed-up is measured)
    kc_cpu = []     # CPU seconds per step with the pair cache (see the module docstring)
    fast, fast_cpu = [], []   # SolverPBF(fast_math=True), with the pair cache
    lanes, lanes_cpu = [], []   # SolverPBF(lanes=True) (IEEE; the pair cache for vorticity / XSPH)
    lanes_fast, lanes_fast_cpu = [], []   # SolverPBF(lanes=True, fast_math=True)
    unsorted, unsorted_cpu = [], []   # SolverPBF(lanes=True, cell_sort=False): the hash-grid search, user order

    def kc_samples():
        out = []
        for _ in range(repeats):
            for cache, fm, ln, srt in ((True, False, False, True), (True, True, False, True),
                                       (False, False, False, True), (True, False, True, True),
                                       (True, True, True, True), (True, False, True, False)):   # interleaved
                kc_pbf.solver.pair_cache, kc_pbf.solver.fast_math, kc_pbf.solver.lanes = cache, fm, ln
                kc_pbf.solver.cell_sort = srt
                t0, c0 = time.perf_counter(), time.process_time()
                kc_pbf.steps(steps)
                wall, cpu = (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps
                if not srt:
                    unsorted.append(wall)
                    unsorted_cpu.append(cpu)
                elif ln:
                    (lanes_fast if fm else lanes).append(wall)
                    (lanes_fast_cpu if fm else lanes_cpu).append(cpu)
                elif fm:
                    fast.append(wall)
                    fast_cpu.append(cpu)
                elif cache:
                    out.append(wall)
                    kc_cpu.append(cpu)
                else:
                    baseline.append(wall)
        kc_pbf.solver.pair_cache, kc_pbf.solver.fast_math, kc_pbf.solver.lanes = True, False, False
        kc_pbf.solver.cell_sort = True
        return out

    one_thread = []   # CPU seconds per step of SolverPBF(lanes=True) on one thread (KERNELCORE_NUM_THREADS=1)
    # the same with the lanes that load each neighbour's volume (uniform_volume=False: the kernels
    # before session 17's uniform-volume ones), interleaved: the old / new comparison of one run
    one_thread_general = []

    def kc_one_thread():
        old = os.environ.get("KERNELCORE_NUM_THREADS")
        os.environ["KERNELCORE_NUM_THREADS"] = "1"   # read by every launch (kernelcore.device.num_threads)
        kc_pbf.solver.lanes = True
        uniform = kc_pbf.solver.uniform_volume
        try:
            for _ in range(repeats):
                for general in (False, True):
                    kc_pbf.solver.uniform_volume = uniform and not general
                    c0 = time.process_time()
                    kc_pbf.steps(steps)
                    (one_thread_general if general else one_thread).append((time.process_time() - c0) / steps)
        finally:
            kc_pbf.solver.uniform_volume = uniform
            kc_pbf.solver.lanes = False
            if old is None:
                del os.environ["KERNELCORE_NUM_THREADS"]
            else:
                os.environ["KERNELCORE_NUM_THREADS"] = old

    kc_times = kc_samples()
    kc_one_thread()
    ti_res = run_taichi(side, steps, repeats) if taichi else None
    kc_times += kc_samples()
    ti_strict = run_taichi(side, steps, repeats, fast_math=False) if taichi else None
    kc_times += kc_samples()
    ti_one = run_taichi(side, steps, repeats, threads=1) if taichi else None
    kc_one_thread()
    res = {"particles": side ** 3, "steps_per_sample": steps, "dt_s": DT, "params": PARAMS,
           "kernelcore_step_s": statistics.median(kc_times), "kernelcore_samples": kc_times}
    res["kernelcore_steps_per_s"] = 1.0 / res["kernelcore_step_s"]
    res["kernelcore_cpu_step_s"] = statistics.median(kc_cpu)
    res["kernelcore_no_pair_cache_step_s"] = statistics.median(baseline)
    res["pair_cache_speedup"] = float(f"{res['kernelcore_no_pair_cache_step_s'] / res['kernelcore_step_s']:.4g}")
    res["kernelcore_fast_math_step_s"] = statistics.median(fast)
    res["kernelcore_fast_math_cpu_step_s"] = statistics.median(fast_cpu)
    res["fast_math_speedup"] = float(f"{res['kernelcore_step_s'] / res['kernelcore_fast_math_step_s']:.4g}")
    res["fast_math_cpu_speedup"] = float(f"{res['kernelcore_cpu_step_s'] / res['kernelcore_fast_math_cpu_step_s']:.4g}")
    for name, wall, cpu in (("lanes", lanes, lanes_cpu), ("lanes_fast_math", lanes_fast, lanes_fast_cpu),
                            ("lanes_unsorted", unsorted, unsorted_cpu)):
        res[f"kernelcore_{name}_step_s"] = statistics.median(wall)
        res[f"kernelcore_{name}_cpu_step_s"] = statistics.median(cpu)
        res[f"{name}_cpu_speedup"] = float(f"{res['kernelcore_cpu_step_s'] / res[f'kernelcore_{name}_cpu_step_s']:.4g}")
    res["kernelcore_lanes_one_thread_cpu_step_s"] = statistics.median(one_thread)
    res["kernelcore_lanes_general_volume_one_thread_cpu_step_s"] = statistics.median(one_thread_general)
    res["uniform_volume_one_thread_cpu_speedup"] = float(
        f"{res['kernelcore_lanes_general_volume_one_thread_cpu_step_s'] / res['kernelcore_lanes_one_thread_cpu_step_s']:.4g}")
    q = kc_pbf.positions()
    res["kernelcore_finite"] = bool(np.all(np.isfinite(q)))
    # the two runs' end states are after different step counts (kernelcore runs every variant on one
    # block): same_problem below compares them step for step
    res["kernelcore_mean_y"] = float(q[:, 1].mean())
    res["kernelcore_steps_run"] = 6 + steps * repeats * (6 * 3 + 2 * 2)
    if taichi:
        res["taichi_steps_run"] = 2 + steps * repeats
        res["same_problem"] = same_problem(side, (1, 5))
    if ti_one and ti_one.get("cpu_samples"):
        c = statistics.median(ti_one["cpu_samples"])
        res["taichi_one_thread_cpu_step_s"] = c
        res["taichi_one_thread_cpu_over_kernelcore_lanes_one_thread"] = float(
            f"{c / res['kernelcore_lanes_one_thread_cpu_step_s']:.4g}")
    if ti_res:
        t = statistics.median(ti_res["samples"])
        res.update(taichi_version=ti_res["taichi_version"], taichi_step_s=t, taichi_steps_per_s=1.0 / t,
                   taichi_samples=ti_res["samples"], taichi_finite=ti_res["finite"], taichi_mean_y=ti_res["mean_y"],
                   taichi_over_kernelcore=float(f"{t / res['kernelcore_step_s']:.4g}"))
        if ti_res.get("cpu_samples"):
            c = statistics.median(ti_res["cpu_samples"])
            for name in ("lanes", "lanes_fast_math", "lanes_unsorted"):
                res[f"taichi_cpu_over_kernelcore_{name}"] = float(f"{c / res[f'kernelcore_{name}_cpu_step_s']:.4g}")
            res.update(taichi_cpu_step_s=c, taichi_cpu_over_kernelcore=float(f"{c / res['kernelcore_cpu_step_s']:.4g}"),
                       taichi_cpu_over_kernelcore_fast_math=float(
                           f"{c / res['kernelcore_fast_math_cpu_step_s']:.4g}"))
        res["taichi_over_kernelcore_fast_math"] = float(f"{t / res['kernelcore_fast_math_step_s']:.4g}")
    if ti_strict:
        t = statistics.median(ti_strict["samples"])
        res.update(taichi_no_fast_math_step_s=t, taichi_no_fast_math_samples=ti_strict["samples"],
                   taichi_no_fast_math_over_kernelcore=float(f"{t / res['kernelcore_step_s']:.4g}"))
        if ti_strict.get("cpu_samples"):
            c = statistics.median(ti_strict["cpu_samples"])
            res["taichi_no_fast_math_cpu_over_kernelcore_lanes"] = float(
                f"{c / res['kernelcore_lanes_cpu_step_s']:.4g}")
            res.update(taichi_no_fast_math_cpu_step_s=c,
                       taichi_no_fast_math_cpu_over_kernelcore=float(f"{c / res['kernelcore_cpu_step_s']:.4g}"))
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--taichi-worker", action="store_true")
    ap.add_argument("--side", type=int, default=40)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-fast-math", action="store_true")
    ap.add_argument("--taichi-dump", default=None, help="same_problem's Taichi run: positions to this .npz")
    ap.add_argument("--marks", default="1,5")
    a = ap.parse_args()
    if a.taichi_dump:
        taichi_dump(a.side, [int(m) for m in a.marks.split(",")], a.taichi_dump, not a.no_fast_math)
    elif a.taichi_worker:
        taichi_worker(a.side, a.steps, a.repeats, a.threads, not a.no_fast_math)
    else:
        print(json.dumps(pbf_case(a.side, a.steps, a.repeats), indent=2))
