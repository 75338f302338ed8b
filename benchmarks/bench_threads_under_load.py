"""Launches on a machine whose cores are busy: a taped particle rollout with and without a
competing CPU-bound process, on one thread and on the default thread count.

Users run simulations beside test suites, parameter sweeps or Ray workers. OpenMP threads
that spin while they wait (libgomp's default) then hold a core the working thread needs,
and each launch waits for a descheduled thread (kernelcore/threads.py). This benchmark
measures, for each OpenMP wait policy, the forward (recorded on a tape) and backward time of
a rollout of ``--steps`` steps (two launches per step: forces, then semi-implicit Euler, over
``--n`` particles) with no competing process and with ``--busy`` processes running
``while True: pass`` (always stopped afterwards).

Policies, each in its own process (libgomp reads its settings once, when it loads):
``default`` (kernelcore's: passive waiting unless the user set one), ``libgomp`` (libgomp's
own default, the behaviour before: spin 300000 times, then sleep; ``GOMP_SPINCOUNT=300000``
keeps kernelcore from choosing), ``active`` (spin without end) and ``passive``. Reported per policy: medians and minimums
over ``--repeats``, ratios loaded/unloaded on the default thread count, and default
threads / one thread, loaded and unloaded.

Run: python benchmarks/bench_threads_under_load.py --out benchmarks/results/threads_under_load.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import environment, load_average, ratio, write_json  # noqa: E402

BUSY_LOOP = "while True: pass"


def _rollout_cases(n, steps):
    import numpy as np

    import kernelcore as kc

    @kc.kernel
    def forces(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), f: kc.array(dtype=kc.vec3), k: float):
        i = kc.tid()
        f[i] = -k * x[i] - 0.1 * v[i] + kc.vec3(0.0, -9.8, 0.0)

    @kc.kernel
    def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), f: kc.array(dtype=kc.vec3),
                  x_out: kc.array(dtype=kc.vec3), v_out: kc.array(dtype=kc.vec3), dt: float):
        i = kc.tid()
        vn = v[i] + f[i] * dt
        v_out[i] = vn
        x_out[i] = x[i] + vn * dt

    rng = np.random.default_rng(0)
    # two state buffers reused every step: exact here, the update is linear (docs/gradients.md)
    xs = [kc.array(rng.random((n, 3)).astype(np.float32), dtype=kc.vec3, requires_grad=True) for _ in range(2)]
    vs = [kc.zeros(n, dtype=kc.vec3, requires_grad=True) for _ in range(2)]
    f = kc.zeros(n, dtype=kc.vec3, requires_grad=True)
    seed = np.ones((n, 3), np.float32)

    def run(threads):
        os.environ["KERNELCORE_NUM_THREADS"] = str(threads)
        tape = kc.Tape()
        t0 = time.perf_counter()
        with tape:
            for s in range(steps):
                kc.launch(forces, n, inputs=[xs[s % 2], vs[s % 2], f, 10.0])
                kc.launch(integrate, n, inputs=[xs[s % 2], vs[s % 2], f, xs[(s + 1) % 2], vs[(s + 1) % 2], 0.001])
        t1 = time.perf_counter()
        tape.backward(grads={xs[steps % 2]: seed})
        t2 = time.perf_counter()
        tape.reset()
        return t1 - t0, t2 - t1

    return run


def _start_busy(count):
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]


def _stop(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def child(args):
    """Measure in this process (one wait policy); prints one JSON object."""
    default_threads = os.cpu_count() or 1
    run = _rollout_cases(args.n, args.steps)
    run(1)
    run(default_threads)  # compile, warm caches
    samples = {}
    for _ in range(args.repeats):
        for load in ("unloaded", "loaded"):
            busy = _start_busy(args.busy) if load == "loaded" else []
            try:
                if busy:
                    time.sleep(0.2)  # let the competing processes get going
                for threads in (default_threads, 1):
                    fwd, bwd = run(threads)
                    samples.setdefault(f"{load}_threads{threads}", []).append((fwd, bwd))
            finally:
                _stop(busy)
    out = {"omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
           "default_threads": default_threads}
    for name, s in samples.items():
        fw, bw = [a for a, _ in s], [b for _, b in s]
        out[name] = {"fwd_median": statistics.median(fw), "fwd_min": min(fw),
                     "bwd_median": statistics.median(bw), "bwd_min": min(bw), "fwd_samples": fw, "bwd_samples": bw}
    d, one = f"threads{default_threads}", "threads1"
    out["ratios"] = {
        "loaded_over_unloaded_fwd": ratio(out[f"loaded_{d}"]["fwd_median"], out[f"unloaded_{d}"]["fwd_median"]),
        "loaded_over_unloaded_bwd": ratio(out[f"loaded_{d}"]["bwd_median"], out[f"unloaded_{d}"]["bwd_median"]),
        "loaded_default_over_one_thread_fwd": ratio(out[f"loaded_{d}"]["fwd_median"], out[f"loaded_{one}"]["fwd_median"]),
        "loaded_default_over_one_thread_bwd": ratio(out[f"loaded_{d}"]["bwd_median"], out[f"loaded_{one}"]["bwd_median"]),
        "unloaded_default_over_one_thread_fwd": ratio(out[f"unloaded_{d}"]["fwd_median"], out[f"unloaded_{one}"]["fwd_median"]),
        "unloaded_default_over_one_thread_bwd": ratio(out[f"unloaded_{d}"]["bwd_median"], out[f"unloaded_{one}"]["bwd_median"]),
    }
    print(json.dumps(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8192, help="particles (>= config.parallel_grain to use threads)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--busy", type=int, default=1, help="competing CPU-bound processes while loaded")
    ap.add_argument("--policies", default="default,libgomp", help="comma list of default, libgomp, active, passive")
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    result = {"benchmark": "threads_under_load", "environment": environment(), "load_average_start": load_average(),
              "config": {"n": args.n, "steps": args.steps, "repeats": args.repeats, "busy": args.busy}, "results": {}}
    for policy in args.policies.split(","):
        env = dict(os.environ)
        env.pop("KERNELCORE_NUM_THREADS", None)
        for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
            env.pop(var, None)
        if policy == "libgomp":
            env["GOMP_SPINCOUNT"] = "300000"  # libgomp's default spin count, set so kernelcore leaves it
        elif policy != "default":
            env["OMP_WAIT_POLICY"] = policy.upper()
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--n", str(args.n), "--steps", str(args.steps),
               "--repeats", str(args.repeats), "--busy", str(args.busy)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"policy {policy}: the measuring process failed:\n{proc.stderr[-2000:]}")
        result["results"][policy] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load_average_end"] = load_average()
    write_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
