"""Whether the contact law's stiffness cap for light bodies (sim/contact.py ``stable_spring_dashpot``) can
act in a model at a time step, from model data only, so that the solvers warn once instead of silently
softening contacts (Python only; no kernels).

Per body, the largest effective inverse mass of a contact point along its normal is bounded by
``w = 1/m + R^2 lambda_max(I^-1)`` [1/kg], with R [m] the farthest reach of the body's shapes from its
centre of mass; with the stiffest and most damped material mix the body's shapes can meet (``ke``,
``zeta``), the cap can act where ``ke w dt^2`` passes STIFFNESS_KNEE or ``ke w dt^2 + 4 zeta sqrt(ke w
dt^2)`` passes STABILITY_KNEE.  Body pairs (``w_a + w_b``) are not counted.
"""
from __future__ import annotations

import warnings

import numpy as np

from .contact import STABILITY_KNEE, STIFFNESS_KNEE
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_SPHERE


def _shape_reach(model, s, pos, scale, kind):
    """Farthest distance [m] of shape ``s``'s surface from its body's frame origin plus ``pos``."""
    if kind == SHAPE_SPHERE:
        extent = scale[0]
    elif kind == SHAPE_BOX:
        extent = float(np.linalg.norm(scale))
    elif kind == SHAPE_CAPSULE:
        extent = scale[0] + scale[1]
    elif kind == SHAPE_MESH and s in model.shape_mesh_points:
        extent = float(np.linalg.norm(np.asarray(model.shape_mesh_points[s][0], np.float64), axis=1).max())
    else:
        extent = 0.0
    return float(np.linalg.norm(pos)) + extent


def capped_bodies(model, dt):
    """[(body, mass [kg], ke w dt^2)] of the bodies whose contact points the cap may soften at ``dt`` [s]."""
    if not model.body_count or not model.shape_count:
        return []
    shape_body = model.shape_body.numpy()
    kinds = model.shape_type.numpy()
    pos = model.shape_pos.numpy().astype(np.float64)
    scale = model.shape_scale.numpy().astype(np.float64)
    material = model.shape_material.numpy()
    ke = model.material_ke.numpy().astype(np.float64)
    zeta = model.material_damping_ratio.numpy().astype(np.float64)
    inv_mass = model.body_inv_mass.numpy().astype(np.float64)
    inv_inertia = model.body_inv_inertia.numpy().astype(np.float64)
    com = model.body_com.numpy().astype(np.float64)
    out = {}
    for s in range(model.shape_count):
        b = int(shape_body[s])
        if b < 0 or inv_mass[b] <= 0.0:
            continue
        reach = _shape_reach(model, s, pos[s] - com[b], scale[s], kinds[s])
        w = inv_mass[b] + reach * reach * float(np.linalg.eigvalsh(inv_inertia[b]).max())
        mat = material[s]
        a = 0.5 * (ke[mat] + ke.max()) * w * dt * dt
        damping = 2.0 * (zeta[mat] + zeta.max())  # 4 times the mixed damping ratio
        if a > STIFFNESS_KNEE or a + damping * np.sqrt(a) > STABILITY_KNEE:
            out[b] = max(out.get(b, 0.0), a)
    return [(b, 1.0 / inv_mass[b], a) for b, a in sorted(out.items())]


def warn_if_capped(model, dt, solver_name):
    """Warn (one line) when the contact law's stiffness cap may act on some body of ``model`` at ``dt`` [s];
    returns whether it warned."""
    bodies = capped_bodies(model, dt)
    if not bodies:
        return False
    body, mass, a = min(bodies, key=lambda t: t[1])
    warnings.warn(f"{solver_name}: contact stiffness may be capped for {len(bodies)} light bod"
                  f"{'y' if len(bodies) == 1 else 'ies'} at dt={dt:g} s (lightest: body {body}, mass {mass:.3g} kg, "
                  f"ke w dt^2 up to {a:.3g} at ke={float(model.material_ke.numpy().max()):g} N/m); their penalty "
                  f"contacts are softened to stay stable (sim/contact.py)", stacklevel=3)
    return True
