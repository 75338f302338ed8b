"""Time-of-impact sweep of sim/toi_shapes.py for bodies an impact sets spinning fast: a touching
feature is an impact again whenever it approaches, so a light body turned a few times within one
step by an impact cannot bring a corner back through a thin wall (every vertex is checked at every
step); and the contact manifold of a face landing on a fine triangle mesh spans the face."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

from sim.toi_mesh import MESH_SKIN  # noqa: E402
from rigid_scenes import momentum_energy, run_recording  # noqa: E402

H = 0.02  # half size of the hulls [m]
TETRA = H * np.array([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)], np.float64)
CUBE = H * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
WALL = 0.495  # the wall's face [m]: a 1 cm static box from x = 0.495 to 0.505


def _wall(b):
    b.add_shape_box(pos=(0.5, 0, 0), half_extents=(0.005, 0.5, 0.5))


def _vertices(q7, local):
    """World positions (n, 3) of body-frame points ``local`` (n, 3) for the body pose ``q7`` (7,)."""
    q7 = np.asarray(q7, np.float64)
    return q7[:3] + local @ quat_to_matrix(q7[3:]).T


def _kinetic_energy(m, s):
    return momentum_energy(m, s)[2]


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_light_tetrahedron_spun_by_a_vertex_impact_never_passes_a_thin_wall(seed):
    # a light tetrahedron hull (density 100) at 30 m/s in a random orientation hits the wall with a
    # vertex and leaves spinning at ~2000 rad/s (3 turns per step at dt = 0.01); frictionless, e = 1
    rng = np.random.default_rng(seed)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=1.0, mu=0.0)
    _wall(b)
    body = b.add_body(kc.transform(kc.vec3(0.2, 0, 0), kc.quat(*q)), vel=(30.0, 0, 0))
    b.add_shape_mesh(TETRA, is_convex=True, body=body, density=100.0)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    e0 = _kinetic_energy(m, m.state())
    s, rec = run_recording(m, solver, 6, 0.01, lambda s: (s.body_q.numpy()[0].copy(), s.body_qd.numpy()[0].copy()))
    assert max(np.linalg.norm(qd[3:]) for _, qd in rec) > 1000.0  # the impact really spun it
    for q7, _ in rec:
        assert _vertices(q7, TETRA)[:, 0].max() < WALL + 1e-4
    # Poisson's restitution with e = 1 and no friction keeps the energy when every manifold point
    # touches at the impact: a vertex that is not touching yet but comes in fast (seed 2: 0.5 mm away
    # at tens of m/s) gets its own impact later in the step, which keeps it too (a simultaneous solve
    # over both lost 14%, 0.821 of 0.96 J)
    np.testing.assert_allclose(_kinetic_energy(m, s), e0, rtol=1e-3)


@pytest.mark.parametrize("spin", [1000.0, 2000.0, 3000.0])
def test_bar_spinning_beside_a_thin_wall_never_passes_it(spin):
    # a 10 cm box bar standing upright 3 cm from the wall, spinning about z at 1000-3000 rad/s (1.6-4.8
    # turns per step) and drifting towards the wall at 1 m/s: its ends strike the wall again and again
    half = np.array([0.005, 0.05, 0.005])
    corners = half * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.0)
    _wall(b)
    body = b.add_body(kc.transform(kc.vec3(WALL - 0.03, 0, 0), kc.quat(0, 0, 0, 1)), vel=(1.0, 0, 0),
                      ang_vel=(0, 0, spin))
    b.add_shape_box(body=body, half_extents=tuple(half), density=500.0)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    e0 = _kinetic_energy(m, m.state())
    s, rec = run_recording(m, solver, 5, 0.01, lambda s: s.body_q.numpy()[0].copy())
    for q7 in rec:
        assert _vertices(q7, corners)[:, 0].max() < WALL + 1e-4
    assert _kinetic_energy(m, s) < e0 * (1.0 + 1e-4)  # impacts with e < 1 never add energy


def _floor_mesh(b, n=24, half=0.5):
    """A flat n x n grid of quads (2 n^2 triangles) at y = 0, wound counter-clockwise seen from +y."""
    g = np.linspace(-half, half, n + 1)
    pts = np.array([(x, 0.0, z) for z in g for x in g])
    tris = []
    for j in range(n):
        for i in range(n):
            p0, p1, p2, p3 = j * (n + 1) + i, j * (n + 1) + i + 1, (j + 1) * (n + 1) + i + 1, (j + 1) * (n + 1) + i
            tris += [(p0, p2, p1), (p0, p3, p2)]
    b.add_shape_mesh(pts, np.array(tris))


def test_cube_hull_landing_flat_on_a_fine_floor_mesh_leaves_straight_up():
    # the cube's bottom face touches many triangle features at once (more than the 8 manifold
    # slots): the manifold keeps points spanning the face, so the impact stops the face as a whole
    # and restitution sends it straight back at e v, without a spin
    e, v = 0.5, 5.0
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=e, mu=0.5)
    _floor_mesh(b)
    body = b.add_body(kc.transform(kc.vec3(0.013, 0.1, -0.007), kc.quat(0, 0, 0, 1)), vel=(0, -v, 0))
    b.add_shape_mesh(CUBE, is_convex=True, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 3, 0.01, lambda s: s.body_q.numpy()[0].copy())
    np.testing.assert_allclose(s.body_qd.numpy()[0], [0, e * v, 0, 0, 0, 0], atol=2e-3)
    assert min(q7[1] for q7 in rec) > H + MESH_SKIN - 1e-4


def test_hull_resting_on_a_fine_floor_mesh_does_not_sink():
    # gravity presses the resting cube's face onto many triangles every step: it stays on the floor
    # (its skin) and does not drift
    b = sim.ModelBuilder(gravity=(0, -9.81, 0))
    b.set_material(0, ke=1e4, restitution=0.3, mu=0.5)
    _floor_mesh(b)
    y0 = H + MESH_SKIN
    body = b.add_body(kc.transform(kc.vec3(0.013, y0, -0.007), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE, is_convex=True, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 100, 0.01, lambda s: s.body_q.numpy()[0].copy())
    y = np.array([q7[1] for q7 in rec])
    assert y.min() - y0 > -2e-4
    assert y.max() - y0 < 2e-4
    np.testing.assert_allclose(rec[-1][[0, 2]], [0.013, -0.007], atol=1e-4)
    assert np.abs(s.body_qd.numpy()[0]).max() < 1e-2
