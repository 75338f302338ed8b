"""Solvers: one module per solver, each with ``step(model, state_in, state_out, control, dt)``."""
from .featherstone import SolverFeatherstone
from .grid_fluid import SolverGridFluid
from .mpm import SolverMPM
from .pbf import SolverPBF
from .semi_implicit import SolverDEM, SolverSemiImplicit
from .vbd import SolverVBD
from .xpbd import SolverXPBD

__all__ = [
    "SolverSemiImplicit",
    "SolverDEM",
    "SolverMPM",
    "SolverPBF",
    "SolverFeatherstone",
    "SolverGridFluid",
    "SolverXPBD",
    "SolverVBD",
]
