"""Sweep benchmark: 16 points of the default scene, serially in one process vs as Ray tasks.

The sweep: ``kc:material:mu`` of the default scene's grains (400 DEM particles falling onto
a wedge, 16 substeps per frame) at ``--points`` values from 0.05 to 0.8, ``--frames`` frames
per point, metrics only (no USD written: the comparison is about simulation and
scheduling, not disk).  Cases, interleaved per repeat (serial-1, serial-default, ray, ...):

* ``serial_1thread``: ``scenes.sweep(serial=True)`` with ``KERNELCORE_NUM_THREADS=1``: the
  work of one core, the baseline of the parallel efficiency;
* ``serial_default``: the same with kernelcore's default threads (OpenMP over all cores
  inside each point);
* ``ray``: ``scenes.sweep`` on a local Ray cluster of ``--cpus`` CPUs, one CPU (and one
  kernelcore thread) per task.  The Ray start-up and a first (untimed) warm-up sweep,
  which starts the workers and loads the kernels in each, are reported separately;
* ``serial_1thread_batched`` / ``ray_batched``: the same with ``batch=--batch`` points packed
  into one model per task (scenes/sweep_batch.py); ``batch_speedup`` = serial_1thread /
  serial_1thread_batched, ``batched_max_rel_diff``: the largest relative difference of a
  metric between the batched and unbatched rows (float32 round-off at most).

Reported (medians): seconds per sweep, ``speedup`` = serial_1thread / ray, ``efficiency`` =
speedup / cpus (1.0: perfect scaling), ``speedup_vs_default_threads``, and the per-task
overhead of Ray: the median time of ``sim.parallel_map`` over ``--noop-tasks`` tasks that
do nothing, divided by the task count and multiplied by the CPUs (the cost one CPU pays
per task), and per point: (ray * cpus - serial_1thread) / points.

Results of a shared machine are noisy: read ratios from one run, not absolute times.

Run: python benchmarks/bench_sweep.py --points 16 --frames 30 --cpus 2 --out benchmarks/results/sweep.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import environment, load_average, ratio, write_json  # noqa: E402

PARAM = "/World/grains.kc:material:mu"


def _sweep(points, frames, serial, threads=None, batch=1):
    import numpy as np

    import scenes

    old = os.environ.get("KERNELCORE_NUM_THREADS")
    if threads is not None:
        os.environ["KERNELCORE_NUM_THREADS"] = str(threads)
    elif old is not None and serial:
        del os.environ["KERNELCORE_NUM_THREADS"]
    try:
        values = ",".join(f"{v:.6g}" for v in np.linspace(0.05, 0.8, points))
        t0 = time.perf_counter()
        table = scenes.sweep("default", [f"{PARAM}={values}"], frames=frames, serial=serial,
                             batch=batch)
        elapsed = time.perf_counter() - t0
    finally:
        if old is None:
            os.environ.pop("KERNELCORE_NUM_THREADS", None)
        else:
            os.environ["KERNELCORE_NUM_THREADS"] = old
    if table.failed:
        raise RuntimeError(f"bench_sweep: point {table.failed[0]['point']} failed: {table.failed[0]['error']}")
    return elapsed, table


def _max_rel_diff(plain, batched):
    worst = 0.0
    for a, b in zip(plain, batched):
        for k in ("p_com_x", "p_com_y", "p_com_z", "p_mean_speed", "p_kinetic_energy"):
            worst = max(worst, abs(a[k] - b[k]) / max(abs(a[k]), 1e-12))
    return worst


def _noop(x):
    return x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=16)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--noop-tasks", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8, help="points per task in the batched cases")
    ap.add_argument("--no-ray", action="store_true", help="serial cases only (no Ray needed)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import sim

    result = {"benchmark": "sweep", "points": args.points, "frames": args.frames, "cpus": args.cpus,
              "environment": environment(), "load_average_start": load_average()}
    use_ray = not args.no_ray and sim.parallel.ray_available()
    if not args.no_ray and not use_ray:
        result["ray"] = sim.parallel.serial_reason()
    # warm-up: kernels compiled (or loaded) in this process
    _sweep(1, 1, serial=True)
    if use_ray:
        import ray

        t0 = time.perf_counter()
        sim.parallel.ensure_ray(None, num_cpus=args.cpus)
        result["ray_start_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        _sweep(args.cpus, 1, serial=False)  # workers start and load the kernels
        result["ray_warmup_seconds"] = time.perf_counter() - t0
    samples = {"serial_1thread": [], "serial_1thread_batched": [], "serial_default": []}
    if use_ray:
        samples["ray"] = []
        samples["ray_batched"] = []
    tables = {}
    for _ in range(args.repeats):
        t, tables["serial_1thread"] = _sweep(args.points, args.frames, serial=True, threads=1)
        samples["serial_1thread"].append(t)
        t, tables["serial_1thread_batched"] = _sweep(args.points, args.frames, serial=True, threads=1,
                                                     batch=args.batch)
        samples["serial_1thread_batched"].append(t)
        t, tables["serial_default"] = _sweep(args.points, args.frames, serial=True)
        samples["serial_default"].append(t)
        if use_ray:
            t, tables["ray"] = _sweep(args.points, args.frames, serial=False)
            samples["ray"].append(t)
            t, tables["ray_batched"] = _sweep(args.points, args.frames, serial=False, batch=args.batch)
            samples["ray_batched"].append(t)
    med = {k: statistics.median(v) for k, v in samples.items()}
    result["seconds"] = {k: {"median": med[k], "samples": v} for k, v in samples.items()}
    result["batch"] = args.batch
    result["batch_speedup"] = ratio(med["serial_1thread"], med["serial_1thread_batched"])
    result["batched_max_rel_diff"] = _max_rel_diff(tables["serial_1thread"], tables["serial_1thread_batched"])
    result["batched_notices"] = tables["serial_1thread_batched"].notices
    if use_ray:
        # the same metrics, point by point (Ray runs each point with one thread, like serial_1thread)
        strip = [{k: v for k, v in r.items() if k != "seconds"} for r in tables["ray"]]
        result["ray_equals_serial_1thread"] = strip == [{k: v for k, v in r.items() if k != "seconds"}
                                                        for r in tables["serial_1thread"]]
        result["speedup"] = ratio(med["serial_1thread"], med["ray"])
        result["efficiency"] = ratio(med["serial_1thread"], med["ray"] * args.cpus)
        result["speedup_vs_default_threads"] = ratio(med["serial_default"], med["ray"])
        result["ray_batch_speedup"] = ratio(med["ray"], med["ray_batched"])
        result["overhead_per_point_seconds"] = (med["ray"] * args.cpus - med["serial_1thread"]) / args.points
        noop = []
        for _ in range(max(3, args.repeats)):
            t0 = time.perf_counter()
            sim.parallel_map(_noop, range(args.noop_tasks))
            noop.append(time.perf_counter() - t0)
        result["noop_tasks"] = args.noop_tasks
        result["overhead_per_task_seconds"] = statistics.median(noop) / args.noop_tasks * args.cpus
        ray.shutdown()
    result["load_average_end"] = load_average()
    write_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
