"""Cloth in scene files: a Mesh with kc:cloth becomes cloth, is written as a time-sampled mesh; bad cloth is named."""
import textwrap

import numpy as np
import pytest

import scenes
from scenes import SceneError

pytest.importorskip("pxr")


def _write(tmp_path, body):
    p = tmp_path / "cloth.usda"
    p.write_text('#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Y"\n)\n\n' + textwrap.dedent(body))
    return str(p)


CLOTH = '''
def PhysicsScene "physics"
{{
    float kc:timeStep = 0.01
    int kc:substeps = 10
    float kc:cloth:selfContact = 0.005
}}
def Mesh "sheet"
{{
    bool kc:cloth = true
    float kc:cloth:density = 0.5
    float kc:cloth:triKe = {ke}
    int[] kc:fixedIndices = [0]
    point3f[] points = [(0, 1, 0), (0.2, 1, 0), (0.2, 1, 0.2), (0, 1, 0.2){extra_point}]
    int[] faceVertexCounts = [4{extra_count}]
    int[] faceVertexIndices = [0, 3, 2, 1{extra_face}]
}}
'''


def test_cloth_mesh_prim_becomes_cloth_and_is_written_as_a_mesh(tmp_path):
    from pxr import Usd, UsdGeom

    scene = scenes.load(_write(tmp_path, CLOTH.format(ke=50.0, extra_point="", extra_count="", extra_face="")))
    b = scene.builder
    assert b.particle_count == 4 and b.tri_count == 2 and b.edge_count == 1
    assert b.particle_mass[0] == 0.0 and b.particle_mass[2] == pytest.approx(0.5 * 0.02 * 2 / 3)
    assert scene.cloth_self_contact == pytest.approx(0.005)
    out = tmp_path / "out.usda"
    res = scenes.run(scene, frames=4, out=str(out), progress=False)
    q = res.state.particle_q.numpy()
    assert np.all(np.isfinite(q)) and q[2, 1] < 1.0 and np.allclose(q[0], (0, 1, 0))
    stage = Usd.Stage.Open(str(out))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/root/sheet"))
    assert mesh and mesh.GetPointsAttr().GetNumTimeSamples() >= 4
    assert list(mesh.GetFaceVertexCountsAttr().Get(0)) == [3, 3]


def test_bad_cloth_is_reported_with_the_prim(tmp_path):
    with pytest.raises(SceneError, match=r"/sheet.*add_cloth_mesh: tri_ke of triangle 0"):
        scenes.load(_write(tmp_path, CLOTH.format(ke=-1.0, extra_point="", extra_count="", extra_face="")))
    # a third face on the edge (0, 2): non-manifold
    bad = CLOTH.format(ke=50.0, extra_point=", (0.1, 0.9, 0.1)", extra_count=", 3", extra_face=", 0, 2, 4")
    with pytest.raises(SceneError, match=r"/sheet.*shared by 3 triangles"):
        scenes.load(_write(tmp_path, bad))
    with pytest.raises(SceneError, match=r"kc:cloth:triKee"):
        scenes.load(_write(tmp_path, CLOTH.format(ke=50.0, extra_point="", extra_count="", extra_face="")
                           .replace("kc:cloth:triKe", "kc:cloth:triKee")))
