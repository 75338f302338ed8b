"""``kcsim``: run and inspect USD simulation scenes from the command line.

    kcsim run [SCENE] [--frames N] [--substeps K] [--device cpu] [--out result.usd]
              [--viewer] [--record out.mp4|out.gif|frames/] [--strict]
    kcsim info SCENE [--strict]
    kcsim list
    kcsim sweep SCENE --param PRIM.ATTR=lo:hi:n [--param ...] --out DIR [--frames N]
                [--substeps K] [--address auto|ray://HOST:PORT] [--serial]

SCENE is a .usda/.usd file, a robot description (.urdf, or MJCF .xml; simulated on a
ground plane) or the name of a scene in scenes/library; without it ``run`` uses the
built-in default scene.

Exit status: 0 success, 2 bad input (scene file, option, output path, device, display:
one line on stderr, never a traceback), 130 interrupted by Ctrl-C (frames simulated so
far are saved), 1 an internal error (a bug: one line; ``KCSIM_TRACEBACK=1`` shows the
traceback).  ``sweep`` exits 3 when some points failed (each is listed with its parameters;
the others are in DIR/summary.csv).  Warnings about scene features kcsim does not support yet go to stderr;
``--strict`` makes them errors.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import DEFAULT_SCENE, SceneError, SimulationError, library_scenes, load, resolve
from .runner import RunSetupError, SimulationInterrupted, run
from .sweep_cli import EXIT_POINTS_FAILED, add_sweep_parser, run_sweep  # noqa: F401

EXIT_ERROR = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: same one-line form, exit 2
        self.print_usage(sys.stderr)
        print(f"kcsim: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def _parser():
    p = _Parser(prog="kcsim", description="Run kernelcore simulation scenes (USD).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="simulate a scene and write the result")
    r.add_argument("scene", nargs="?", default=None,
                   help=f"scene file (.usda/.usd, .urdf, MJCF .xml) or library name (default: the built-in "
                        f"'{DEFAULT_SCENE}' scene)")
    r.add_argument("--frames", type=int, default=None, help="frames to simulate (default: the scene's kc:frames)")
    r.add_argument("--substeps", type=int, default=None, help="solver steps per frame (default: the scene's)")
    r.add_argument("--device", default="cpu", help="device to simulate on (default cpu)")
    r.add_argument("--out", default=None, help="write the animation to this USD file (.usd/.usda/.usdc)")
    r.add_argument("--viewer", action="store_true", help="show the simulation in an OpenGL window")
    r.add_argument("--record", default=None, metavar="PATH",
                   help="render frames headless to PATH: .mp4 (needs imageio-ffmpeg), .gif, or a folder of PNGs")
    r.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    r.add_argument("--strict", action="store_true", help="treat unsupported scene features as errors")
    i = sub.add_parser("info", help="print what a scene contains")
    i.add_argument("scene", help="scene file or library name")
    i.add_argument("--strict", action="store_true", help="treat unsupported scene features as errors")
    sub.add_parser("list", help="list the library scenes")
    add_sweep_parser(sub)
    return p


def _error(message) -> int:
    print(f"kcsim: error: {' '.join(str(message).split())}", file=sys.stderr)
    return EXIT_ERROR


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for name in library_scenes():
                print(f"{name}{' (default)' if name == DEFAULT_SCENE else ''}: {resolve(name)}")
            return 0
        if args.command == "sweep":
            try:
                return run_sweep(args)
            except ValueError as e:  # a bad parameter, scene or option (SceneError included)
                return _error(e)
        if args.command == "run":
            if args.frames is not None and args.frames < 0:
                return _error(f"--frames must be >= 0, got {args.frames}")
            if args.substeps is not None and args.substeps < 1:
                return _error(f"--substeps must be >= 1, got {args.substeps}")
        scene = load(args.scene, strict=args.strict)
        if args.command == "info":
            print(scene.describe())
            return 0
        for w in scene.warnings:
            print(f"kcsim: warning: {w}", file=sys.stderr)
        print(scene.describe().splitlines()[0])
        status = None if args.no_progress else (lambda text: print(text, file=sys.stderr, flush=True))
        result = run(scene, frames=args.frames, substeps=args.substeps, device=args.device, out=args.out,
                     viewer=args.viewer, progress=not args.no_progress, record=args.record, status=status)
        rate = result.frames / result.elapsed if result.elapsed > 0 else float("inf")
        if hasattr(result, "model"):
            what = (f"{result.model.particle_count} particles" if result.model.particle_count or not result.model.body_count
                    else f"{result.model.body_count} bodies")
        else:
            what = result.what
        print(f"simulated {result.frames} frames of {what} in "
              f"{result.elapsed:.2f} s ({rate:.1f} frames/s; kernels ready in {result.compile_seconds:.1f} s "
              f"before that)")
        if result.out:
            print(f"wrote {result.out}")
        for kind, path in result.recorded.items():
            if path:
                print(f"recorded {path if kind != 'png' else args.record} ({kind})")
        return 0
    except SimulationInterrupted as e:
        print(f"kcsim: {e}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:  # while loading, before any frame
        print("kcsim: interrupted (nothing simulated yet)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (SceneError, SimulationError, RunSetupError) as e:
        return _error(e)
    except MemoryError:
        return _error("out of memory (the scene is too large for this machine)")
    except Exception as e:  # noqa: BLE001 - a bug of ours: one line, the traceback on request
        if os.environ.get("KCSIM_TRACEBACK"):
            raise
        print(f"kcsim: internal error: {type(e).__name__}: {' '.join(str(e).split())[:500]} "
              f"(set KCSIM_TRACEBACK=1 to see the traceback, and please report it)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
