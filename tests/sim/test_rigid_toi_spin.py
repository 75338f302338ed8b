"""Time-of-impact sweep of spinning bodies (sim/toi_shapes.py): a light body set spinning by an impact
(thousands of rad/s) never brings a feature back through a thin wall within the step, at any step,
and e = 1 gains no energy; a body lying on a finely meshed floor (many more contact points than an
impact's manifold keeps) gets the analytic bounce and rest."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

from rigid_scenes import momentum_energy, run_recording  # noqa: E402

H = 0.02  # half size of the hulls [m]
TETRA = H * np.array([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)], np.float64)
CUBE = H * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
WALL_FAR_SIDE = 0.505  # the 1 cm wall spans x in [0.495, 0.505]


def _wall(b):
    b.add_shape_box(pos=(0.5, 0, 0), half_extents=(0.005, 0.5, 0.5))


def _quat_from_to(a, b):
    """The unit quaternion (x, y, z, w) turning direction ``a`` onto direction ``b``."""
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    q = np.array([*np.cross(a, b), 1.0 + a @ b])
    return q / np.linalg.norm(q)


def _world_points(state, local):
    """World positions (n, 3) of body 0's points ``local`` (n, 3, body frame)."""
    q = state.body_q.numpy()[0].astype(np.float64)
    return q[:3] + local @ quat_to_matrix(q[3:]).T


def _farthest_x_and_energies(m, solver, local, steps, dt):
    """Run ``steps`` steps; (largest x of any of the points ``local`` at any step's end, energies per step)."""
    _, rec = run_recording(m, solver, steps, dt,
                           lambda s: (_world_points(s, local)[:, 0].max(), momentum_energy(m, s)[2]))
    return max(x for x, _ in rec), [k for _, k in rec]


# vertex-first orientations of the tetrahedron; with the old rule (an impact's features left out for the
# rest of the step) each of them ends up with a vertex past the wall
TETRA_CASES = [((1.607, 0.362, 1.304), 1.377), ((2.111, -1.265, -0.623), -2.984), ((0.478, 0.541, 0.215), -1.139)]


@pytest.mark.parametrize("axis,vy", TETRA_CASES)
def test_light_tetrahedron_hit_on_a_vertex_never_passes_a_thin_wall(axis, vy):
    # a light tetrahedron hull (its default density of 1000 kg/m^3) at 30 m/s hits the 1 cm wall with one
    # vertex off its centre of mass and spins at ~2000 rad/s: several impacts in one step of 10 ms
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=1.0, mu=0.0)
    _wall(b)
    rot = _quat_from_to(TETRA[0], np.asarray(axis, np.float64))
    body = b.add_body(kc.transform(kc.vec3(0.3, 0, 0), kc.quat(*rot)), vel=(30.0, vy, 0.0))
    b.add_shape_mesh(TETRA, is_convex=True, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    e0 = momentum_energy(m, m.state())[2]
    far, energies = _farthest_x_and_energies(m, solver, TETRA, 8, 0.01)
    assert far < WALL_FAR_SIDE - 0.005 + 1e-4  # no vertex is ever past the wall's near face
    assert max(energies) < e0 * (1.0 + 1e-3)  # e = 1, frictionless: no energy gained
    assert energies[-1] > 0.2 * e0  # and it did bounce (not stuck at the wall)


# (rotation x, y, z, w; angular velocity [rad/s]) of the bar: the first two pass the wall (or sink 1.5 mm
# into it) with the old rule; the third starts across the wall, its ends swinging into it in the first step
BAR_CASES = [((0.579, -0.0127, -0.7906, -0.1987), (141.6, 713.8, -2570.1)),
             ((0.4286, 0.6433, 0.2316, -0.5906), (1587.9, -1088.3, 1908.1)),
             ((0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)), (0.0, 0.0, 1000.0))]


@pytest.mark.parametrize("rot,ang_vel", BAR_CASES)
def test_thin_bar_spinning_next_to_a_thin_wall_never_passes_it(rot, ang_vel):
    # a 10 cm bar 5 mm thick spinning at 1000-3000 rad/s, its centre 3 cm from the wall's face, drifting
    # towards it at 2 m/s: every corner of it stays in front of the wall at every step
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=1.0, mu=0.0)
    _wall(b)
    rot = np.asarray(rot, np.float64) / np.linalg.norm(rot)
    body = b.add_body(kc.transform(kc.vec3(0.465, 0, 0), kc.quat(*rot)), vel=(2.0, 0.3, 0), ang_vel=ang_vel)
    half = np.array([0.05, 0.0025, 0.0025])
    b.add_shape_box(body=body, half_extents=tuple(half))
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    corners = half * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    assert _world_points(m.state(), corners)[:, 0].max() < 0.494
    e0 = momentum_energy(m, m.state())[2]
    far, energies = _farthest_x_and_energies(m, solver, corners, 10, 0.01)
    assert far < 0.495 + 1e-4
    assert max(energies) < e0 * (1.0 + 1e-3)


def _fine_floor(b, cells=24, half=0.06):
    """A static triangle-mesh floor at y = 0, ``cells`` x ``cells`` squares over [-half, half]^2 (5 mm)."""
    g = np.linspace(-half, half, cells + 1)
    pts = np.array([(x, 0.0, z) for z in g for x in g], np.float64)
    tris = []
    for j in range(cells):
        for i in range(cells):
            a, c = j * (cells + 1) + i, (j + 1) * (cells + 1) + i
            tris += [(a, c, a + 1), (a + 1, c, c + 1)]  # normals +y
    b.add_shape_mesh(pts, np.asarray(tris, np.int32))


def _cube_on_floor(vel=(0, 0, 0), gravity=(0, 0, 0), e=0.5, height=H + 2e-3, pos_xz=(0.0013, 0.0021)):
    b = sim.ModelBuilder(gravity=gravity)
    b.set_material(0, ke=1e4, restitution=e, mu=0.5)
    _fine_floor(b)
    body = b.add_body(kc.transform(kc.vec3(pos_xz[0], height, pos_xz[1]), kc.quat(0, 0, 0, 1)), vel=vel)
    b.add_shape_mesh(CUBE, is_convex=True, body=body)
    return b.finalize()


def test_cube_hull_landing_flat_on_a_finely_meshed_floor_bounces_straight():
    # the cube's 4 cm face covers ~60 floor vertices and ~130 triangles: hundreds of contact features
    # within the manifold tolerance.  Landing flat at 1 m/s with e = 0.5 it must leave straight up at
    # 0.5 m/s without turning (the kept points must span the face, not sit on one side of it)
    m = _cube_on_floor(vel=(0, -1.0, 0))
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, _ = run_recording(m, solver, 4, 0.002)
    qd = s.body_qd.numpy()[0].astype(np.float64)
    np.testing.assert_allclose(qd[:3], [0, 0.5, 0], atol=5e-3)
    # rad/s: 0.5 rad/s is 1 cm/s at a corner, under 1 % of the 1.5 m/s change (16 Gauss-Seidel sweeps);
    # the first 8 points found (the old cap) leave at (0.31, 0.41, 0.31) m/s
    np.testing.assert_allclose(qd[3:], [0, 0, 0], atol=0.5)


def test_cube_hull_rests_on_a_finely_meshed_floor():
    # under gravity, set down 0.5 mm above the floor: it lands and stays, level, for 0.2 s (the first 8
    # points found, the old cap, let it sink 2.6 mm into the floor)
    m = _cube_on_floor(gravity=(0, -9.81, 0), e=0.0, height=H + 1e-4 + 5e-4)
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 100, 0.002, lambda s: s.body_q.numpy()[0].astype(np.float64).copy())
    q = np.array(rec)
    low = _world_points(s, CUBE)[:, 1].min()
    assert abs(low - 1e-4) < 2e-4  # on the floor's skin, not in it
    assert np.abs(q[-40:, 1] - q[-1, 1]).max() < 1e-4  # at rest
    np.testing.assert_allclose(q[-1, 3:6], 0.0, atol=1e-3)  # level, not turned
    np.testing.assert_allclose(s.body_qd.numpy()[0], 0.0, atol=1e-2)
