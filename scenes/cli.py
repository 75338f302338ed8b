"""``kcsim``: run and inspect USD simulation scenes from the command line.

    kcsim run [SCENE] [--frames N] [--substeps K] [--device cpu] [--out result.usd] [--viewer]
    kcsim info SCENE
    kcsim list

SCENE is a .usda/.usd file or the name of a scene in scenes/library; without it
``run`` uses the built-in default scene.
"""
from __future__ import annotations

import argparse
import sys

from . import DEFAULT_SCENE, SceneError, SimulationError, library_scenes, load, resolve
from .runner import run


def _parser():
    p = argparse.ArgumentParser(prog="kcsim", description="Run kernelcore simulation scenes (USD).")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a scene and write the result")
    r.add_argument("scene", nargs="?", default=None,
                   help=f"scene file or library name (default: the built-in '{DEFAULT_SCENE}' scene)")
    r.add_argument("--frames", type=int, default=None, help="frames to simulate (default: the scene's kc:frames)")
    r.add_argument("--substeps", type=int, default=None, help="solver steps per frame (default: the scene's)")
    r.add_argument("--device", default="cpu", help="device to simulate on (default cpu)")
    r.add_argument("--out", default=None, help="write the animation to this USD file (.usd/.usda/.usdc)")
    r.add_argument("--viewer", action="store_true", help="show the simulation in an OpenGL window")
    r.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    i = sub.add_parser("info", help="print what a scene contains")
    i.add_argument("scene", help="scene file or library name")
    sub.add_parser("list", help="list the library scenes")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for name in library_scenes():
                print(f"{name}{' (default)' if name == DEFAULT_SCENE else ''}: {resolve(name)}")
            return 0
        scene = load(args.scene)
        if args.command == "info":
            print(scene.describe())
            return 0
        if args.frames is not None and args.frames < 0:
            raise SystemExit("kcsim run: --frames must be >= 0")
        if args.substeps is not None and args.substeps < 1:
            raise SystemExit("kcsim run: --substeps must be >= 1")
        print(scene.describe().splitlines()[0])
        result = run(scene, frames=args.frames, substeps=args.substeps, device=args.device, out=args.out,
                     viewer=args.viewer, progress=not args.no_progress)
        rate = result.frames / result.elapsed if result.elapsed > 0 else float("inf")
        print(f"simulated {result.frames} frames of {result.model.particle_count} particles in "
              f"{result.elapsed:.2f} s ({rate:.1f} frames/s)")
        if result.out:
            print(f"wrote {result.out}")
        return 0
    except (SceneError, SimulationError) as e:
        print(f"kcsim: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
