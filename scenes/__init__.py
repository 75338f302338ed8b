"""scenes: USD scene files, their loader, a runner and the ``kcsim`` command line.

``scenes.load(path_or_name)`` reads a .usda/.usd file (or a scene of ``scenes/library``
by name, e.g. ``"dem_column"``) into a :class:`Scene` (a sim.ModelBuilder plus solver
settings).  ``scenes.run(scene, frames=...)`` simulates it and writes a USD animation.
pxr is imported only when a scene is read (scenes/usd_loader.py) or written (render/).
"""
from __future__ import annotations

import os

from .usd_loader import Scene, SceneError, load_usd
from .runner import SimulationError, run
from .sweep import sweep

LIBRARY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "library")
DEFAULT_SCENE = "default"

__all__ = ["load", "run", "sweep", "Scene", "SceneError", "SimulationError", "library_scenes", "resolve", "LIBRARY_DIR",
           "DEFAULT_SCENE"]


def library_scenes() -> list:
    """Names of the scenes in scenes/library (without extension), sorted."""
    return sorted(os.path.splitext(f)[0] for f in os.listdir(LIBRARY_DIR) if f.endswith((".usda", ".usd", ".usdc")))


def resolve(path_or_name=None) -> str:
    """File path of a scene: an existing path, or the name of a library scene (None: the default)."""
    if path_or_name is None:
        path_or_name = DEFAULT_SCENE
    p = os.fspath(path_or_name)
    if os.path.exists(p) or os.sep in p or p.endswith((".usda", ".usd", ".usdc")):
        return p
    for ext in (".usda", ".usd", ".usdc"):
        cand = os.path.join(LIBRARY_DIR, p + ext)
        if os.path.exists(cand):
            return cand
    return p  # the loader reports it as missing


def load(path_or_name=None, strict: bool = False) -> Scene:
    """Read a scene file (or library scene name; None = the default scene) into a Scene.

    A ``.urdf`` or MJCF (``.xml``/``.mjcf``) robot file is imported with a ground plane
    (see scenes/robot_loader.py).

    ``strict``: features kcsim does not support yet are errors instead of ``Scene.warnings``.
    """
    path = resolve(path_or_name)
    from .robot_loader import is_robot_file, load_robot

    if is_robot_file(path):  # URDF / MJCF robot description
        return load_robot(path, strict=strict)

    from .grid_fluid_scene import is_grid_fluid_scene, load_grid_fluid

    if is_grid_fluid_scene(path):  # kc:solver = "smoke": a grid, not a particle model
        return load_grid_fluid(path)
    return load_usd(path, strict=strict)
