"""Grid fluids in the viewer (headless EGL): smoke and liquid cells drawn as point sprites
where they are in the grid, and a smoke scene run with the viewer and with --record."""

from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc
from render.grid_fluid import grid_fluid_bounds, grid_fluid_points, render_grid_fluid
from sim.solvers.grid_fluid import SolverGridFluid

BG = (0.0, 0.0, 0.0)


def _lit(px):
    return px.astype(int).sum(axis=2) > 40


def _smoke_in_right_quarter():
    solver = SolverGridFluid((16, 8), dx=0.1)
    st = solver.state()
    d = np.zeros((16, 8), np.float32)
    d[12:14, :] = 1.0  # a full-height column of smoke, two cells wide, in the right quarter
    st.density.assign(kc.from_numpy(d))
    return solver, st


def test_points_are_the_smoke_cells():
    solver, st = _smoke_in_right_quarter()
    pts, cols, radius = grid_fluid_points(solver, st, threshold=0.5)
    assert pts.shape == (16, 3) and radius == pytest.approx(0.05)
    np.testing.assert_allclose(np.sort(np.unique(pts[:, 0])), [1.25, 1.35], rtol=1e-6)
    np.testing.assert_allclose(np.sort(np.unique(pts[:, 1])), 0.05 + 0.1 * np.arange(8), rtol=1e-6)
    assert np.all(pts[:, 2] == 0.0)
    np.testing.assert_allclose(cols, np.tile([0.95, 0.95, 0.97], (16, 1)), rtol=1e-6)  # density 1: white
    liquid = SolverGridFluid((6, 6), dx=0.1, liquid=True)
    ls = liquid.state()
    liquid.add_liquid_box(ls, (0.0, 0.0), (1.0, 0.2))  # the lowest two rows
    lp, lc, _ = grid_fluid_points(liquid, ls)
    assert len(lp) == 12 and np.all(lp[:, 1] < 0.2) and np.all(lc[:, 2] > lc[:, 0])  # blue
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        grid_fluid_points(solver, st, threshold=-1.0)


@pytest.mark.gl
def test_viewer_draws_smoke_where_it_is(make_viewer):
    solver, st = _smoke_in_right_quarter()
    v = make_viewer(width=200, height=100, show_hud=False, show_grid=False, background=BG, samples=0)
    v.camera.look_at((0.8, 0.4, 3.0), (0.8, 0.4, 0.0))
    v.frame_bounds(*grid_fluid_bounds(solver))
    v.begin_frame(0.0)
    render_grid_fluid(v, "smoke", solver, st, threshold=0.5)
    v.end_frame()
    lit = _lit(v.get_pixels())
    rows, cols = np.nonzero(lit)
    assert lit.sum() > 100
    # the smoke occupies x in [1.2, 1.4] of a 1.6 m wide grid, all of its height: a tall strip on the right
    assert cols.min() > 0.5 * lit.shape[1]
    assert np.ptp(rows) > 2 * np.ptp(cols)
    # drawing an empty grid leaves the frame empty
    st.density.zero_()
    v.begin_frame(0.1)
    render_grid_fluid(v, "smoke", solver, st, threshold=0.5)
    v.end_frame()
    assert _lit(v.get_pixels()).sum() == 0


@pytest.mark.gl
def test_smoke_scene_runs_in_the_viewer(make_viewer, tmp_path):
    scenes = pytest.importorskip("scenes")
    pytest.importorskip("pxr")
    scene = scenes.load("smoke_sphere")
    v = make_viewer(width=160, height=120, show_hud=False, show_grid=False, background=BG, samples=0)
    result = scenes.run(scene, frames=2, viewer=v, progress=False)
    assert result.frames == 2 and v.frame == 2  # frames 0, 1, 2 drawn
    assert _lit(v.get_pixels()).sum() > 50  # the source's smoke and the sphere
    rec = scenes.run(scene, frames=1, record=str(tmp_path / "frames"), progress=False)
    assert len(rec.recorded["png"]) == 2
