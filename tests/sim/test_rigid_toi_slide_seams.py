"""Sliding and rolling across the seams of flat static meshes with time-of-impact contacts (sim/toi_mesh.py's
seam_flags): where two coplanar triangles share an edge, or two mesh tiles lie side by side, the floor has no
edge, so a box whose edge lies right over the seam stops at v^2 / (2 mu g) as on the ground plane, and a
sphere rolls on at 5/7 of its speed.  Units: m, m/s, s."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import run_recording
from test_rigid_toi_slide import DT, G, MU, _grid

pytest.importorskip("geometry")

from sim.toi_mesh import MESH_SKIN  # noqa: E402


def _floor(layout, length):
    """Static meshes of 10 cm cells (two triangles each, diagonals along (1, 0, 1)) under a path of
    ``length`` [m]: one mesh ("grid", "diagonal": square, for a slide along the diagonal), or two tiles with
    a shared border across the path at mid-length ("tiles_across") or along it, at z = 0 ("tiles_along")."""
    end = length + 0.5
    if layout == "grid":
        return [_grid(-0.5, end, -0.3, 0.3, 0.1)]
    if layout == "diagonal":
        side = length / np.sqrt(2.0) + 0.5
        return [_grid(-0.5, side, -0.5, side, 0.1)]
    if layout == "tiles_across":
        mid = 0.1 * round(length / 0.2)
        return [_grid(-0.5, mid, -0.3, 0.3, 0.1), _grid(mid, end, -0.3, 0.3, 0.1)]
    return [_grid(-0.5, end, -0.3, 0.0, 0.1), _grid(-0.5, end, 0.0, 0.3, 0.1)]


def _slide(kind, v0, layout, centre, direction, yaw=0.0, steps=None, length=None):
    """A box (0.2 x 0.1 x 0.2 m) or a sphere of radius 5 cm at ``centre`` (x, z) [m], yawed by ``yaw``
    [rad] about y, sliding at ``v0`` [m/s] along the unit ``direction`` (x, z) on the meshes of ``_floor``
    (mu = 0.5, no restitution; the floor ``length`` [m] long, by default 1.2 times the stopping distance):
    (final state, the travelled distance [m] after every step)."""
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e4, restitution=0.0, mu=MU)
    for pts, tris in _floor(layout, length or 1.2 * v0 * v0 / (2 * MU * G)):
        b.add_shape_mesh(pts, tris)
    start = np.array([centre[0], 0.05 + MESH_SKIN, centre[1]])
    vel = v0 * np.array([direction[0], 0.0, direction[1]])
    body = b.add_body(kc.transform(kc.vec3(*start), kc.quat(0.0, np.sin(yaw / 2), 0.0, np.cos(yaw / 2))),
                      vel=tuple(vel))
    if kind == "box":
        b.add_shape_box(half_extents=(0.1, 0.05, 0.1), body=body)
    else:
        b.add_shape_sphere(radius=0.05, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    steps = steps or int(v0 / (MU * G) / DT) + 20
    s, rec = run_recording(m, solver, steps, DT, lambda s: s.body_q.numpy()[0, :3].astype(np.float64) - start)
    return s, rec


# (layout, centre (x, z), direction, yaw): the box's edges along x right over the grid's lines z = +-0.1;
# one edge right over a diagonal seam x - z = 0.2 (yawed 45 degrees, sliding along the diagonal); a tile
# border along the path under the box's centre; a tile border across the path
SEAMS = {
    "edges_over_grid_lines": ("grid", (0.0, 0.0), (1.0, 0.0), 0.0),
    "edge_over_diagonal_seam": ("diagonal", (0.2 - 0.1 * np.sqrt(2.0), 0.0), (np.sqrt(0.5), np.sqrt(0.5)), np.pi / 4),
    "tile_border_along_path": ("tiles_along", (0.0, 0.0), (1.0, 0.0), 0.0),
    "tile_border_across_path": ("tiles_across", (0.0, 0.05), (1.0, 0.0), 0.0),
}


@pytest.mark.parametrize("case", sorted(SEAMS))
def test_box_sliding_over_a_mesh_seam_stops_at_v2_over_2_mu_g(case):
    # 10 m/s, dt = 0.01: main stopped 4.5% short over seams, left the 60 cm wide mesh with its edges over the
    # grid lines, and stopped dead at a tile border (tilted edge features joined the contact manifold)
    v0 = 10.0
    layout, centre, direction, yaw = SEAMS[case]
    s, rec = _slide("box", v0, layout, centre, direction, yaw)
    stop = v0 * v0 / (2 * MU * G)
    travel = np.array(rec)
    along = travel[:, [0, 2]] @ np.array(direction)
    np.testing.assert_allclose(along[-1], stop, rtol=0.01)
    lateral = travel[:, [0, 2]] - np.outer(along, direction)
    assert np.abs(lateral).max() < 1e-3                    # straight on, not pushed sideways
    assert np.abs(travel[:, 1]).max() < 2e-3              # on the floor: neither in it nor hopping
    assert np.abs(s.body_qd.numpy()[0]).max() < 1e-2       # at rest


@pytest.mark.parametrize("layout", ["grid", "tiles_across"])
def test_sphere_rolling_over_mesh_seams_keeps_five_sevenths_of_its_speed(layout):
    # sliding with friction mu g until v = 5/7 v0 (at t1 = 2 v0 / (7 mu g)), then rolling on at that speed
    # across the grid's seams (centre right over the line z = 0) or a tile border, 1% (main: up to 3% off)
    v0 = 2.0
    t1 = 2.0 * v0 / (7.0 * MU * G)
    steps = int(t1 / DT) + 60
    s, rec = _slide("sphere", v0, layout, (0.0, 0.0), (1.0, 0.0), steps=steps, length=v0 * steps * DT)
    t = steps * DT
    x = v0 * t1 - 0.5 * MU * G * t1 * t1 + 5.0 / 7.0 * v0 * (t - t1)
    qd = s.body_qd.numpy()[0]
    np.testing.assert_allclose(qd[0], 5.0 / 7.0 * v0, rtol=0.01)
    np.testing.assert_allclose(qd[5], -qd[0] / 0.05, rtol=0.01)  # rolling: w = -v / r about z
    np.testing.assert_allclose(rec[-1][0], x, rtol=0.01)
    assert np.abs(np.array(rec)[:, 1:]).max() < 1e-3           # on the floor, straight on
