"""Drawing a grid fluid (sim.SolverGridFluid) with any renderer: cells as point sprites.

Every renderer (the OpenGL viewer, the USD writer, the recorder's headless viewer) draws
points, so a grid fluid is drawn as one point per cell that holds something: smoke cells
(density above a threshold) shaded from dark grey to white by density, liquid cells
(``phi < 0`` with ``liquid=True``) in blue, each a sphere of radius dx / 2 at the cell
centre (2-D grids lie in the plane z = 0).  Solid cells can be drawn too (grey).
"""
from __future__ import annotations

import numpy as np

SMOKE_LOW = np.array([0.25, 0.25, 0.28], np.float32)   # colour of the thinnest drawn smoke
SMOKE_HIGH = np.array([0.95, 0.95, 0.97], np.float32)  # colour of density >= density_scale
LIQUID = np.array([0.15, 0.45, 0.9], np.float32)
SOLID = np.array([0.5, 0.5, 0.5], np.float32)


def _cell_centres(mask, dx, dim):
    """(n, 3) float32 centres [m] of the True cells of a (nx, ny[, nz]) mask; z = 0 in 2-D."""
    idx = np.argwhere(mask)
    pos = np.zeros((len(idx), 3), np.float32)
    pos[:, :idx.shape[1]] = (idx + 0.5) * dx
    if dim == 2:
        pos[:, 2] = 0.0
    return pos


def grid_fluid_points(solver, state, threshold=1e-3, density_scale=1.0):
    """Points, colours and radius that show ``state`` of ``solver``.

    Returns ``(points (n, 3) float32 [m], colors (n, 3) float32 in [0, 1], radius [m])``:
    liquid cells with ``liquid=True``, else cells whose smoke density exceeds ``threshold``
    (colour ramps with density / ``density_scale``).
    """
    if not threshold >= 0.0 or not density_scale > 0.0:
        raise ValueError(f"grid_fluid_points: threshold must be >= 0 and density_scale > 0, got {threshold!r}, "
                         f"{density_scale!r}")
    solid = solver.solid_mask.numpy() != 0
    if solver.liquid:
        mask = (state.phi.numpy() < 0.0) & ~solid
        pts = _cell_centres(mask, solver.dx, solver.dim)
        cols = np.tile(LIQUID, (len(pts), 1))
    else:
        d = state.density.numpy()
        mask = (d > threshold) & ~solid
        pts = _cell_centres(mask, solver.dx, solver.dim)
        t = np.clip(d[mask] / density_scale, 0.0, 1.0).astype(np.float32)[:, None]
        cols = SMOKE_LOW * (1.0 - t) + SMOKE_HIGH * t
    return pts, cols.astype(np.float32), 0.5 * solver.dx


def render_grid_fluid(renderer, name, solver, state, threshold=1e-3, density_scale=1.0, solids=True):
    """Draw ``state`` into ``renderer`` as points named ``name`` (and ``name + "_solid"``).

    Call between the renderer's ``begin_frame`` and ``end_frame``.  An empty grid draws
    nothing (the object is hidden for that frame).
    """
    pts, cols, radius = grid_fluid_points(solver, state, threshold, density_scale)
    _points_or_hide(renderer, name, pts, radius, cols)
    if solids:
        s = _cell_centres(solver.solid_mask.numpy() != 0, solver.dx, solver.dim)
        _points_or_hide(renderer, name + "_solid", s, 0.5 * solver.dx, np.tile(SOLID, (len(s), 1)))


def _points_or_hide(renderer, name, pts, radius, cols):
    if len(pts):
        renderer.render_points(name, pts, radius, cols)
    elif hasattr(renderer, "remove"):
        renderer.remove(name)


def grid_fluid_bounds(solver):
    """(lower, upper) corners [m] of the grid's domain (2-D: a thin slab at z = 0)."""
    upper = np.zeros(3)
    upper[:solver.dim] = np.asarray(solver.res, float) * solver.dx
    lower = np.zeros(3)
    if solver.dim == 2:
        lower[2], upper[2] = -0.5 * solver.dx, 0.5 * solver.dx
    return lower, upper
