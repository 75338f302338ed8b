"""Time-of-impact contacts of sphere, box and capsule bodies against static triangle meshes
(sim/toi_mesh.py through sim/toi_shapes.py): a fast body does not pass through a thin mesh wall."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import impact_builder, run_recording

pytest.importorskip("geometry")

from sim.toi_mesh import MESH_SKIN  # noqa: E402


def _wall_quad(x=0.5, half=0.5):
    """An open mesh of two triangles in the plane x = ``x``: a wall of no thickness."""
    pts = np.array([(x, -half, -half), (x, half, -half), (x, half, half), (x, -half, half)], np.float64)
    return pts, np.array([(0, 1, 2), (0, 2, 3)])


@pytest.mark.parametrize("kind", ["box", "sphere", "capsule"])
def test_fast_body_bounces_off_a_thin_static_mesh_wall(kind):
    # 100 m/s, dt = 0.01 (1 m per step) against a wall of two triangles and no thickness, e = 1
    b = impact_builder()
    b.add_shape_mesh(*_wall_quad())
    body = b.add_body(kc.transform(kc.vec3(0, 0.05, 0.02), kc.quat(0, 0, 0, 1)), vel=(100.0, 0, 0))
    if kind == "box":
        b.add_shape_box(half_extents=(0.005, 0.05, 0.05), body=body)
    elif kind == "sphere":
        b.add_shape_sphere(radius=0.005, body=body)
    else:  # lying across the path: its side hits the wall
        b.add_shape_capsule(radius=0.005, half_height=0.05, body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    s, rec = run_recording(m, solver, 3, 0.01, lambda s: float(s.body_q.numpy()[0, 0]))
    face = 0.5 - 0.005 - MESH_SKIN  # the triangles' skin (sim/toi_mesh.py)
    assert max(rec) < face + 1e-4
    np.testing.assert_allclose(rec[0], face - (1.0 - face), atol=1e-4)  # bounced at the wall, not before
    np.testing.assert_allclose(s.body_qd.numpy()[0], [-100, 0, 0, 0, 0, 0], atol=1e-2)


def test_tilted_box_hits_a_mesh_wall_with_a_corner_and_keeps_its_energy():
    # a box turned about y and z: a corner (or an edge) meets the wall first; e = 1, frictionless:
    # the kinetic energy is kept and the wall's impulse is along x only
    b = impact_builder()
    b.add_shape_mesh(*_wall_quad())
    q = np.array([0.0, np.sin(0.3), np.sin(0.2), 1.0])
    q /= np.linalg.norm(q)
    body = b.add_body(kc.transform(kc.vec3(0, 0.0, 0.0), kc.quat(*q)), vel=(30.0, 0, 0))
    b.add_shape_box(half_extents=(0.03, 0.05, 0.04), body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    mass = float(m.body_mass.numpy()[0])
    inertia = m.body_inertia.numpy()[0].astype(np.float64)
    from sim.builder import quat_to_matrix

    def energy(s):
        qq, qd = s.body_q.numpy()[0].astype(np.float64), s.body_qd.numpy()[0].astype(np.float64)
        r = quat_to_matrix(qq[3:])
        om = r.T @ qd[3:]
        return 0.5 * mass * qd[:3] @ qd[:3] + 0.5 * om @ inertia @ om

    s, rec = run_recording(m, solver, 3, 0.01, lambda s: s.body_q.numpy()[0].copy())
    qd = s.body_qd.numpy()[0]
    assert qd[0] < 0.0 and np.abs(qd[3:]).max() > 1.0      # bounced back, spinning
    np.testing.assert_allclose(energy(s), 0.5 * mass * 900.0, rtol=2e-3)
    np.testing.assert_allclose(qd[1:3], 0.0, atol=1e-3)
    half = np.array([0.03, 0.05, 0.04])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
    for qq in rec:  # no corner ever behind the wall
        x = qq[:3].astype(np.float64) + corners @ quat_to_matrix(qq[3:].astype(np.float64)).T
        assert x[:, 0].max() < 0.5 - MESH_SKIN + 1e-4


def test_box_dropped_on_a_mesh_floor_comes_to_rest_on_it():
    # the sweep also holds resting contact on a mesh (no penalty contacts with it for swept shapes)
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.5)
    floor = np.array([(-1.0, 0.0, -1.0), (1.0, 0.0, -1.0), (1.0, 0.0, 1.0), (-1.0, 0.0, 1.0)])
    b.add_shape_mesh(floor, np.array([(0, 2, 1), (0, 3, 2)]))
    body = b.add_body(kc.transform(kc.vec3(0.1, 0.3, 0.05), kc.quat(0, 0, 0, 1)), vel=(0.5, 0, 0))
    b.add_shape_box(half_extents=(0.1, 0.05, 0.08), body=body)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m, toi=True)
    assert solver.body_mesh_contacts is None       # the mesh is the sweep's only
    s, rec = run_recording(m, solver, 1500, 1e-3, lambda s: float(s.body_q.numpy()[0, 1]))
    q, qd = s.body_q.numpy()[0], s.body_qd.numpy()[0]
    assert min(rec) > 0.05 - 2e-3                  # never into the floor
    assert abs(q[1] - (0.05 + MESH_SKIN)) < 2e-3    # resting on it
    assert np.abs(qd).max() < 1e-2


def test_toi_warns_about_meshes_too_large_for_exact_feature_ids(monkeypatch):
    import sim.toi_mesh as toi_mesh

    b = sim.ModelBuilder()
    b.add_shape_mesh(*_wall_quad())
    body = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=body)
    m = b.finalize()
    assert toi_mesh.warn_large_meshes(m) == []
    monkeypatch.setattr(toi_mesh, "MAX_EXACT_FACES", 1)
    with pytest.warns(UserWarning, match=r"static mesh shapes \[0\] have \[2\] triangles, more than 1"):
        sim.SolverSemiImplicit(m, toi=True)
