"""Cloth written to USD: a time-sampled Mesh with per-vertex normals every frame, constant topology, and
texture coordinates (primvars:st) kept from the input mesh or generated; read back with pxr."""
import os

import numpy as np
import pytest

import scenes
from render.mesh_normals import vertex_normals
from scenes.cloth_uv import planar_uvs

pytest.importorskip("pxr")

LIBRARY = os.path.join(os.path.dirname(__file__), "..", "..", "scenes", "library")


def test_vertex_normals_of_a_bent_sheet():
    # two triangles folded 90 degrees about the x axis: the shared vertices get the bisector
    p = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 1]], float)
    n = vertex_normals(p, np.array([[0, 1, 2], [0, 3, 1]]))
    np.testing.assert_allclose(n[2], (0, 0, 1), atol=1e-6)
    np.testing.assert_allclose(n[3], (0, 1, 0), atol=1e-6)   # the flap (y < 0 when flat) turned up to z > 0
    np.testing.assert_allclose(n[0], np.array([0, 1, 1]) / np.sqrt(2), atol=1e-6)


def test_planar_uvs_of_a_tilted_rectangle():
    x, y = np.meshgrid(np.linspace(0, 2, 5), np.linspace(0, 1, 3))
    flat = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1)
    c, s = np.cos(0.4), np.sin(0.4)
    tilted = flat @ np.array([[1, 0, 0], [0, c, s], [0, -s, c]]) + (3, 1, 2)
    uv = planar_uvs(tilted)
    assert uv.min() == pytest.approx(0.0, abs=1e-6) and uv[:, 0].max() == pytest.approx(1.0, abs=1e-6)
    # distances in uv are distances on the sheet divided by its longer side (no distortion)
    d_uv = np.linalg.norm(uv[:, None] - uv[None], axis=-1)
    d_xyz = np.linalg.norm(flat[:, None] - flat[None], axis=-1) / 2.0
    np.testing.assert_allclose(d_uv, d_xyz, atol=1e-5)


def read_mesh(path, prim_path):
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(path))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath(prim_path))
    assert mesh, prim_path
    return stage, mesh


def test_cloth_is_written_with_normals_per_frame_and_its_uvs(tmp_path):
    from pxr import UsdGeom

    src = os.path.join(LIBRARY, "cloth_flag.usda")
    out = tmp_path / "flag.usda"
    scene = scenes.load(src)
    scenes.run(scene, frames=3, out=str(out), progress=False)
    _, given = read_mesh(src, "/World/flag")
    stage, mesh = read_mesh(out, "/root/World/flag")
    times = mesh.GetPointsAttr().GetTimeSamples()
    assert len(times) >= 3
    normals = mesh.GetNormalsAttr()
    assert mesh.GetNormalsInterpolation() == UsdGeom.Tokens.vertex
    assert len(normals.GetTimeSamples()) >= 3
    tris = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(times[-1])).reshape(-1, 3)
    # constant topology: the indices hold one value for all frames
    assert mesh.GetFaceVertexIndicesAttr().GetNumTimeSamples() <= 1 or all(
        np.array_equal(np.asarray(mesh.GetFaceVertexIndicesAttr().Get(t)).reshape(-1, 3), tris) for t in times)
    first = None
    for t in times:
        p = np.asarray(mesh.GetPointsAttr().Get(t), np.float64)
        n = np.asarray(normals.Get(t), np.float64)
        np.testing.assert_allclose(n, vertex_normals(p, tris), atol=1e-5)    # this frame's normals
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
        first = n if first is None else first
    assert np.abs(n - first).max() > 1e-3          # the flag moved: the normals changed with it
    st_out = UsdGeom.PrimvarsAPI(mesh.GetPrim()).GetPrimvar("st")
    st_in = UsdGeom.PrimvarsAPI(given.GetPrim()).GetPrimvar("st")
    assert st_out.GetInterpolation() == "vertex"
    np.testing.assert_allclose(np.asarray(st_out.Get()), np.asarray(st_in.Get()))


def test_cloth_without_uvs_gets_generated_ones(tmp_path):
    from pxr import UsdGeom

    out = tmp_path / "fold.usda"
    scenes.run(scenes.load(os.path.join(LIBRARY, "cloth_fold.usda")), frames=1, out=str(out), progress=False)
    _, mesh = read_mesh(out, "/root/World/strip")
    st = np.asarray(UsdGeom.PrimvarsAPI(mesh.GetPrim()).GetPrimvar("st").Get())
    assert st.shape == (175, 2) and st.min() >= -1e-6 and st.max() <= 1 + 1e-6
    assert st[:, 0].max() == pytest.approx(1.0, abs=1e-5)    # the strip's length spans u
