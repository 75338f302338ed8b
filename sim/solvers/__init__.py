"""Solvers: one module per solver, each with ``step(model, state_in, state_out, control, dt)``."""
from .mpm import SolverMPM
from .semi_implicit import SolverDEM, SolverSemiImplicit
from .xpbd import SolverXPBD

__all__ = ["SolverSemiImplicit", "SolverDEM", "SolverMPM", "SolverXPBD"]
