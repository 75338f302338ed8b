"""Read a robot description (URDF, or MJCF = MuJoCo XML) into a Scene for ``kcsim``.

The robot is imported with ``sim.parse_urdf`` / ``sim.parse_mjcf`` in its file's own
coordinates, Z up (the convention of both formats): gravity along -Z (an MJCF ``<option
gravity>`` wins), and a ground plane z = 0 is added (an MJCF file that has its own plane
keeps it and gets no second one).  Articulations are stepped by ``SolverFeatherstone``
when sim has it, else by ``SolverSemiImplicit`` on the bodies.  A URDF robot is welded to
the world at its root link, as ROS does (give it a free base in Python with
``parse_urdf(..., floating=True)``).  The importers' warnings become ``Scene.warnings``
(errors with ``strict``); their errors become a SceneError naming the file, line and element.
"""
from __future__ import annotations

import math
import os
import warnings

import sim

from .usd_loader import Scene, SceneError

ROBOT_EXTENSIONS = (".urdf", ".xml", ".mjcf")
#: the solver time step for robots [s]: 1 ms unless the MJCF file gives its own
ROBOT_DT = 1.0e-3


class RobotFileError(SceneError):
    """A robot file that cannot be imported; the message is the importer's (file:line: element: problem)."""

    def __init__(self, path, message):
        ValueError.__init__(self, message)
        self.path, self.prim = str(path), None


def is_robot_file(path) -> bool:
    return os.fspath(path).lower().endswith(ROBOT_EXTENSIONS)


def load_robot(path, strict: bool = False) -> Scene:
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise SceneError(path, "file not found" if not os.path.exists(path) else "not a file")
    urdf = path.lower().endswith(".urdf")
    scene = Scene(path)
    scene.up_axis = "Z"
    builder = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sim.ModelImportWarning)
        try:
            result = sim.parse_urdf(path, builder) if urdf else sim.parse_mjcf(path, builder, use_file_gravity=True)
        except sim.ModelFileError as e:
            raise RobotFileError(path, str(e)) from None
    del caught  # the same texts are in result.warnings
    for w in result.warnings:
        if strict:
            raise RobotFileError(path, f"{w} (an error because of --strict)")
        scene.warnings.append(w)
    scene.notes += result.notes
    if not any(builder.shape_type[s] == sim.SHAPE_PLANE for s in range(builder.shape_count)):
        builder.set_ground_plane(normal=(0.0, 0.0, 1.0), offset=0.0)
        scene.notes.append("ground plane z = 0 added")
    if builder.body_count == 0:
        raise SceneError(path, "nothing to simulate: the robot has no moving body")
    scene.builder = builder
    if result.timestep:  # the solver step is exactly the file's (the frame rate follows)
        scene.substeps = max(1, int(round(scene.frame_dt / float(result.timestep))))
        scene.frame_dt = scene.substeps * float(result.timestep)
    else:  # 60 frames/s, steps of at most ROBOT_DT
        scene.substeps = max(1, math.ceil(scene.frame_dt / ROBOT_DT - 1e-9))
    scene.solver = "featherstone" if hasattr(sim, "SolverFeatherstone") and builder_has_joints(builder) \
        else "semi_implicit"
    scene.items.append((path, f"{'URDF' if urdf else 'MJCF'} robot: {builder.body_count} bodies, "
                              f"{len(result.joints)} joints, {len(result.shapes)} shapes"))
    scene.robot = result
    return scene


def builder_has_joints(builder) -> bool:
    return getattr(builder, "joint_count", 0) > 0
