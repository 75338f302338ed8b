"""Environments (``builder.add_builder`` / ``begin_world``) that a solver cannot keep apart.

A model made of several environments records each particle's, body's and shape's environment
(``particle_world``, ``body_world``, ``shape_world``; -1 = shared, touches every environment).
The particle and rigid-body contact kernels skip pairs of two different environments.  Some
solvers and features couple everything they see (a position-based fluid's neighbours, MPM's
shared grid, cloth self-contact, time of impact, body-mesh contacts, XPBD/VBD shape contact):
in a model of several environments they would let one environment push another.  Rather than
compute such numbers silently, those solvers call :func:`require_one_environment` and raise a
one-line error naming the solver and the feature.
"""
from __future__ import annotations

import numpy as np

__all__ = ["environment_ids", "require_one_environment", "static_shapes_in_environments"]


def _ids(model, name) -> np.ndarray:
    arr = getattr(model, name, None)
    if arr is None or not hasattr(arr, "numpy") or arr.shape[0] == 0:
        return np.zeros(0, np.int32)
    return np.asarray(arr.numpy()).reshape(-1)


def environment_ids(model) -> list[int]:
    """Sorted distinct environment indices (>= 0) used by the model's particles, bodies and shapes."""
    ids = np.concatenate([_ids(model, n) for n in ("particle_world", "body_world", "shape_world")])
    return sorted(int(w) for w in np.unique(ids) if w >= 0)


def static_shapes_in_environments(model) -> bool:
    """True when a static shape (``body=-1``) belongs to one environment (its ``shape_world`` >= 0)."""
    worlds, bodies = _ids(model, "shape_world"), _ids(model, "shape_body")
    return bool(len(worlds) and len(bodies) == len(worlds) and np.any((worlds >= 0) & (bodies < 0)))


def require_one_environment(model, where: str, feature: str) -> None:
    """Raise ValueError when ``model`` has more than one environment, naming ``where`` (the solver
    call) and ``feature`` (what would couple the environments)."""
    ids = environment_ids(model)
    if len(ids) > 1:
        raise ValueError(f"{where}: the model has {len(ids)} environments (add_builder/begin_world) but {feature} "
                         f"does not keep environments apart; build one model per environment, or add the "
                         f"copies with add_builder(..., separate_world=False) if they may interact")
