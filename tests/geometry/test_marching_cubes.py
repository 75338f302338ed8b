"""Marching cubes: closed, consistently wound meshes; area and volume of a sphere."""
import numpy as np
import pytest

import kernelcore as kc
from geometry import Mesh, marching_cubes

from geo_reference import edge_use_counts, winding_number


def _sphere_field(n, r, h):
    x = (np.arange(n) - (n - 1) / 2.0) * h
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    return np.sqrt(X ** 2 + Y ** 2 + Z ** 2) - r, -(n - 1) / 2.0 * h


def _area(points, tris):
    a, b, c = (points[tris[:, k]].astype(np.float64) for k in range(3))
    return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum()


def _volume(points, tris):
    a, b, c = (points[tris[:, k]].astype(np.float64) for k in range(3))
    return np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0


def test_sphere_is_closed_with_the_right_area():
    r, h, n = 0.7, 0.025, 64
    field, o = _sphere_field(n, r, h)
    points, indices = marching_cubes(field, spacing=h, iso=0.0, origin=(o, o, o))
    tris = indices.reshape(-1, 3)
    counts, dcounts = edge_use_counts(tris)
    assert (counts == 2).all(), "every edge must be shared by exactly two triangles"
    assert (dcounts == 1).all(), "neighbouring triangles must be wound consistently"
    assert abs(_area(points, tris) / (4 * np.pi * r ** 2) - 1.0) < 0.02
    # outward winding: positive enclosed volume close to the ball's
    assert abs(_volume(points, tris) / (4.0 / 3.0 * np.pi * r ** 3) - 1.0) < 0.02
    np.testing.assert_allclose(np.linalg.norm(points, axis=1), r, atol=0.01 * r)
    # vertices are shared: Euler characteristic of a sphere
    assert len(points) - len(counts) + len(tris) == 2


def test_random_fields_give_closed_manifold_edges():
    # noisy fields exercise every case, the ambiguous faces included; a border of 'outside'
    # values keeps the surface inside the grid
    rng = np.random.default_rng(0)
    for seed in range(3):
        f = rng.normal(size=(14, 12, 13)).astype(np.float32)
        f[0], f[-1], f[:, 0], f[:, -1], f[:, :, 0], f[:, :, -1] = 1, 1, 1, 1, 1, 1
        points, indices = marching_cubes(f, iso=0.0)
        tris = indices.reshape(-1, 3)
        counts, dcounts = edge_use_counts(tris)
        assert (counts == 2).all() and (dcounts == 1).all()
        # inside cells (f < 0) are enclosed: the winding number at a negative sample is 1
        neg = np.argwhere(f < -1.0)[:20].astype(np.float64)
        w = winding_number(points.astype(np.float64), tris, neg)
        np.testing.assert_allclose(w, 1.0, atol=1e-6)


def test_returns_a_mesh_and_handles_empty_surfaces():
    field, o = _sphere_field(20, 0.5, 0.1)
    mesh = marching_cubes(field, spacing=0.1, origin=(o, o, o), return_mesh=True)
    assert isinstance(mesh, Mesh) and mesh.num_faces > 0
    d = mesh.signed_distance(np.array([[0, 0, 0], [0, 0, 0.9]], np.float32), sign="winding")
    assert d[0] < 0 < d[1]
    points, indices = marching_cubes(np.ones((4, 4, 4)), iso=0.0)
    assert points.shape == (0, 3) and indices.shape == (0,)
    with pytest.raises(ValueError, match="empty"):
        marching_cubes(np.ones((4, 4, 4)), iso=0.0, return_mesh=True)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="field"):
        marching_cubes(np.zeros((1, 4, 4)))
    with pytest.raises(ValueError, match="spacing"):
        marching_cubes(np.zeros((3, 4, 4)), spacing=-1.0)
    with pytest.raises(ValueError, match="iso"):
        marching_cubes(np.zeros((3, 4, 4)), iso=float("nan"))
