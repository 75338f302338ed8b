"""Importers of robot description files: ``parse_urdf`` (URDF) and ``parse_mjcf`` (MuJoCo XML).

Each reads its file into a small intermediate description (description.py: bodies, joints,
inertials, geoms) and adds that to a :class:`sim.ModelBuilder` (assemble.py), in the file's
own coordinates (URDF and MJCF are usually Z-up) placed by ``xform``.  Problems name the
file, the line and the element: errors raise :class:`ModelFileError`; features that are not
reproduced are :class:`ModelImportWarning` warnings (also listed in the returned
``ImportResult.warnings``), never a silent skip.
"""
from __future__ import annotations

from .actuators import Actuators
from .assemble import ImportResult, add_description
from .xmlsource import ModelFileError, ModelImportWarning, Report

__all__ = ["parse_urdf", "parse_mjcf", "ModelFileError", "ModelImportWarning", "ImportResult", "Actuators"]

BASE_JOINTS = ("fixed", "free")


def parse_urdf(path, builder, xform=None, floating: bool = False, base_joint=None, density: float = 1000.0,
               collapse_fixed_joints: bool = False) -> ImportResult:
    """Add the robot of the URDF file ``path`` to ``builder``.

    Args:
        xform: transform (p, q x y z w) placing the robot's root frame in the builder's world.
        floating: attach the root link with a free joint (True) or weld it to the world (False).
        base_joint: "fixed" or "free", overrides ``floating``.
        density: [kg/m^3] of the collision geometry of links without an <inertial>.
        collapse_fixed_joints: merge links welded by fixed joints into their parents (links
            without mass are always merged).
    Returns an :class:`ImportResult` (body and joint indices by name, warnings, notes).
    Raises ModelFileError naming the file, line and element for malformed or inconsistent files.
    """
    from .urdf import UrdfReader

    if base_joint is not None and base_joint not in BASE_JOINTS:
        raise ValueError(f"parse_urdf: base_joint must be one of {BASE_JOINTS} or None, got {base_joint!r}")
    if not (density > 0):
        raise ValueError(f"parse_urdf: density must be > 0, got {density!r}")
    report = Report("parse_urdf")
    desc = UrdfReader(path, report, density).read()
    result = ImportResult(desc.path)
    root = base_joint or ("free" if floating else "fixed")
    add_description(desc, builder, xform, report, result, root_joint=root,
                    collapse_fixed_joints=collapse_fixed_joints)
    result.warnings, result.notes = report.warnings, report.notes + result.notes
    return result


def parse_mjcf(path, builder, xform=None, collapse_fixed_joints: bool = False,
               use_file_gravity: bool = False) -> ImportResult:
    """Add the model of the MJCF (MuJoCo XML) file ``path`` to ``builder``.

    Bodies without joints are welded to their parent, as in MuJoCo; several joints on one
    body become one d6 joint.  ``xform`` places the world body.  Position and velocity
    actuators set the PD gains of their joints; every actuator is listed in
    ``result.actuators`` with the dof it drives.  ``result.gravity`` and ``result.timestep``
    carry the file's <option> (gravity (0, 0, -9.81) when the file gives none, as in
    MuJoCo).  ``use_file_gravity``: set ``builder.gravity`` to it; otherwise a warning says
    when the builder's gravity differs from the file's.  Raises ModelFileError naming the
    file, line and element.
    """
    from .mjcf import MjcfReader

    report = Report("parse_mjcf")
    reader = MjcfReader(path, report)
    desc = reader.read()
    result = ImportResult(desc.path)
    gravity = tuple(float(g) for g in desc.gravity) if desc.gravity is not None else (0.0, 0.0, -9.81)
    result.gravity, result.timestep = gravity, desc.timestep
    if use_file_gravity:
        builder.gravity = gravity
    elif max(abs(a - b) for a, b in zip(gravity, builder.gravity)) > 1e-9:
        ours = tuple(float(g) for g in builder.gravity)
        report.warn(reader.main, reader.main.root,
                    f"the file's gravity {gravity} differs from the builder's {ours}; the builder's is used "
                    f"(parse_mjcf(..., use_file_gravity=True) takes the file's)")
    add_description(desc, builder, xform, report, result, root_joint="fixed",
                    collapse_fixed_joints=collapse_fixed_joints)
    result.actuators = desc.actuators
    for a in result.actuators:
        a.dof = result.joint_dof.get(a.joint)
    result.warnings, result.notes = report.warnings, report.notes + result.notes
    return result
