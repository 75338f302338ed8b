"""``kcsim sweep``: the command line of scenes/sweep.py (kept apart from cli.py's run/info/list).

    kcsim sweep SCENE --param "/World/grains.kc:material:mu=0.1:0.9:9" [--param ...]
                --out DIR [--frames N] [--substeps K] [--address auto|ray://HOST:PORT]
                [--serial] [--no-progress] [--strict] [--batch K]

Every combination of the parameters is one Ray task (a local Ray cluster unless
``--address`` names one); without Ray installed the points run one after another here,
and kcsim says so.  Writes DIR/points/point_NNNN.usd, DIR/summary.csv (and .parquet with
pyarrow), DIR/summary.png and DIR/sweep.json.  Exit status 3 when some points failed.
``--batch K`` packs K points into one model per task when they share topology
(scenes/sweep_batch.py says when; off by default).
"""
from __future__ import annotations

import os
import sys

EXIT_POINTS_FAILED = 3


def add_sweep_parser(sub):
    s = sub.add_parser("sweep", help="simulate a scene for every combination of parameter values (on Ray)")
    s.add_argument("scene", help="USD scene file or library name")
    s.add_argument("--param", action="append", required=True, metavar="PRIM.ATTR=VALUES",
                   help="a swept attribute: PRIM.ATTR=lo:hi:n (n values), =a,b,c or =x; repeat for a grid")
    s.add_argument("--out", required=True, help="output directory (created)")
    s.add_argument("--frames", type=int, default=None, help="frames per point (default: the scene's kc:frames)")
    s.add_argument("--substeps", type=int, default=None, help="solver steps per frame (default: the scene's)")
    s.add_argument("--address", default=None,
                   help="Ray cluster to run on: 'auto' (the cluster of this machine) or ray://HOST:PORT "
                        "(default: start a local Ray cluster)")
    s.add_argument("--serial", action="store_true", help="run the points here, one after another, without Ray")
    s.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    s.add_argument("--strict", action="store_true", help="treat unsupported scene features as errors")
    s.add_argument("--batch", type=int, default=1, metavar="K",
                   help="points per task, packed into one model when they share topology (default 1: off)")
    return s


def _say(text):
    print(f"kcsim: {text}", file=sys.stderr, flush=True)


def run_sweep(args) -> int:
    """Run ``kcsim sweep``; returns the exit status (bad input raises SceneError/ValueError for cli.main)."""
    from sim.parallel import serial_reason

    from . import resolve
    from .progress import progress_bar
    from .sweep import _as_params, check_params, points_of, sweep

    if args.frames is not None and args.frames < 0:
        raise ValueError(f"--frames must be >= 0, got {args.frames}")
    if args.batch < 1:
        raise ValueError(f"--batch must be >= 1, got {args.batch}")
    if args.substeps is not None and args.substeps < 1:
        raise ValueError(f"--substeps must be >= 1, got {args.substeps}")
    path = os.path.abspath(resolve(args.scene))
    params = _as_params(args.param)
    check_params(path, params)  # a bad parameter fails here, before Ray starts
    n = len(points_of(params))
    try:
        os.makedirs(os.path.join(args.out, "points"), exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {args.out}: {e.strerror}") from None
    serial = args.serial
    reason = serial_reason()
    if not serial and reason is not None:
        if args.address:
            raise ValueError(f"--address {args.address}: {reason}")
        _say(f"{reason}: running the {n} points serially in this process")
        serial = True
    if not serial:
        from sim.parallel import ensure_ray

        try:
            ensure_ray(args.address)  # an unreachable cluster fails here, before the progress bar
        except RuntimeError as e:
            raise ValueError(str(e)) from None
    where = "in this process" if serial else f"on Ray ({args.address or 'a local cluster'})"
    print(f"sweep: {n} point(s) of {path} {where}")
    bar = progress_bar(n, desc="points", enabled=not args.no_progress, unit="point")
    last = [0]

    def progress(done, total):
        bar.update(done - last[0])
        last[0] = done

    try:
        try:
            table = sweep(path, params, frames=args.frames, substeps=args.substeps, address=args.address,
                          out=args.out, serial=serial, progress=progress, strict=args.strict,
                          batch=args.batch)
        finally:
            bar.close()
    except KeyboardInterrupt:
        _say("sweep interrupted: no summary was written (finished points are not saved)")
        return 130
    except RuntimeError as e:  # Ray could not start or reach the cluster
        raise ValueError(str(e)) from None
    for w in table.warnings:
        _say(f"warning: {w}")
    for note in table.notices:
        _say(f"note: {note}")
    failed = table.failed
    print(f"{n - len(failed)} of {n} point(s) finished; summary: {os.path.join(args.out, 'summary.csv')}")
    for r in failed:
        values = ", ".join(f"{k}={r[k]:g}" for k in table.param_names)
        _say(f"point {r['point']} ({values}) failed: {r['error']}")
    return EXIT_POINTS_FAILED if failed else 0
