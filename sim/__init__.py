"""sim: particles, springs and static colliders simulated on kernelcore.

``ModelBuilder`` -> ``finalize()`` -> ``Model``; ``model.state()`` -> ``State``;
``SolverSemiImplicit`` / ``SolverDEM`` / ``SolverMPM`` advance a state with
``step(model, state_in, state_out, control, dt)``.  Imports nothing heavy: the
geometry package is imported only when a scene needs a mesh or a hash grid.
"""
from .builder import ModelBuilder
from .model import Control, Model, State, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE
from .solvers import SolverDEM, SolverFeatherstone, SolverMPM, SolverPBF, SolverSemiImplicit
from .solvers import SolverGridFluid, SolverXPBD
from .solvers import SolverVBD
from .articulation import eval_fk, eval_ik
from .builder.joints import (JOINT_BALL, JOINT_D6, JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE)
from .importers import ModelFileError, ModelImportWarning, parse_mjcf, parse_urdf
from .parallel import parallel_map

__all__ = [
    "ModelBuilder", "Model", "State", "Control",
    "SHAPE_SPHERE", "SHAPE_BOX", "SHAPE_PLANE", "SHAPE_MESH", "SHAPE_CAPSULE",
    "SolverSemiImplicit",
    "SolverDEM",
    "SolverMPM",
    "SolverPBF",
    "SolverFeatherstone",
    "SolverGridFluid",
    "SolverXPBD",
    "SolverVBD",
    "ClothSelfContact",
    "eval_fk", "eval_ik",
    "JOINT_PRISMATIC", "JOINT_REVOLUTE", "JOINT_BALL", "JOINT_FIXED", "JOINT_FREE", "JOINT_D6",
    "parse_urdf", "parse_mjcf", "ModelFileError", "ModelImportWarning",
    "parallel_map",
]


def __getattr__(name):
    # ClothSelfContact imports geometry (its BVH builtins): only when asked for
    if name == "ClothSelfContact":
        from .cloth_self_contact import ClothSelfContact

        return ClothSelfContact
    raise AttributeError(f"module 'sim' has no attribute {name!r}")
