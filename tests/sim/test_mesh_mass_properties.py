"""Mass properties of a closed triangle mesh (volume integrals) against analytic solids."""
import numpy as np
import pytest

from sim.builder import mesh_mass_properties, quat_to_matrix, shape_mass_properties
from sim.model import SHAPE_BOX

# unit cube [0, 1]^3, triangles counter-clockwise seen from outside
CUBE_POINTS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64)
CUBE_TRIS = np.array([[0, 1, 3], [0, 3, 2],   # x = 0
                      [4, 6, 7], [4, 7, 5],   # x = 1
                      [0, 4, 5], [0, 5, 1],   # y = 0
                      [2, 3, 7], [2, 7, 6],   # y = 1
                      [0, 2, 6], [0, 6, 4],   # z = 0
                      [1, 5, 7], [1, 7, 3]])  # z = 1
TET_POINTS = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float64)
TET_TRIS = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])


def test_box_mesh_matches_the_analytic_box_anywhere():
    half = np.array([0.3, 0.1, 0.2])
    q = np.array([0.2, -0.4, 0.1, 0.9])
    q /= np.linalg.norm(q)
    rot = quat_to_matrix(q)
    offset = np.array([1.0, -2.0, 0.5])
    pts = ((CUBE_POINTS - 0.5) * 2 * half) @ rot.T + offset
    m, com, inertia = mesh_mass_properties(pts, CUBE_TRIS, 700.0)
    m_ref, i_ref = shape_mass_properties(SHAPE_BOX, half, 700.0)
    assert m == pytest.approx(m_ref, rel=1e-12)
    np.testing.assert_allclose(com, offset, atol=1e-12)
    np.testing.assert_allclose(inertia, rot @ i_ref @ rot.T, rtol=1e-10, atol=1e-14)


def test_tetrahedron_matches_its_integrals():
    # the corner tetrahedron: V = 1/6, centroid (1/4, 1/4, 1/4); over it, int x^2 = 1/60, int xy = 1/120
    m, com, inertia = mesh_mass_properties(TET_POINTS, TET_TRIS, 2.0)
    assert m == pytest.approx(2.0 / 6.0)
    np.testing.assert_allclose(com, [0.25] * 3)
    about_origin = 2.0 * (np.full((3, 3), -1.0 / 120.0) + np.eye(3) * (2.0 / 60.0 + 1.0 / 120.0))
    shift = m * (np.dot(com, com) * np.eye(3) - np.outer(com, com))
    np.testing.assert_allclose(inertia, about_origin - shift, rtol=1e-12, atol=1e-15)


def test_open_or_inward_mesh_is_refused():
    with pytest.raises(ValueError, match="closed"):
        mesh_mass_properties(TET_POINTS, TET_TRIS[:, ::-1], 1000.0)  # wound inwards
    with pytest.raises(ValueError, match="closed"):
        mesh_mass_properties(TET_POINTS, TET_TRIS[:1], 1000.0)  # one face (signed volume 0 at the origin)
