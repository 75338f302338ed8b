"""Mesh colliders under rigid bodies in scene files: body mesh shapes, convex hulls, USD output."""
import textwrap

import numpy as np
import pytest

import scenes
from scenes import SceneError

pytest.importorskip("pxr")

# a 0.2 m cube as six quads, counter-clockwise seen from outside
CUBE = '''
        point3f[] points = [(-0.1, -0.1, -0.1), (-0.1, -0.1, 0.1), (-0.1, 0.1, -0.1), (-0.1, 0.1, 0.1),
                            (0.1, -0.1, -0.1), (0.1, -0.1, 0.1), (0.1, 0.1, -0.1), (0.1, 0.1, 0.1)]
        int[] faceVertexCounts = [4, 4, 4, 4, 4, 4]
        int[] faceVertexIndices = [0, 1, 3, 2, 4, 6, 7, 5, 0, 4, 5, 1, 2, 3, 7, 6, 0, 2, 6, 4, 1, 5, 7, 3]
'''
SCENE = '''
def PhysicsScene "physics"
{
    float kc:timeStep = 0.02
    int kc:substeps = 20
    int kc:frames = 5
}
def Plane "floor" (prepend apiSchemas = ["PhysicsCollisionAPI"])
{
    uniform token axis = "Y"
}
def Xform "block" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
{
    double3 xformOp:translate = (0, 0.5, 0)
    float3 xformOp:rotateXYZ = (0, 30, 0)
    uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ"]
    float physics:density = 500
    def Mesh "hull" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double3 xformOp:translate = (0.05, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
CUBE    }
}
def Mesh "gem" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMeshCollisionAPI"])
{
    uniform token physics:approximation = "convexHull"
    double3 xformOp:translate = (1, 0.5, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    point3f[] points = [(-0.1, -0.1, -0.1), (-0.1, -0.1, 0.1), (-0.1, 0.1, -0.1), (-0.1, 0.1, 0.1),
                        (0.1, -0.1, -0.1), (0.1, -0.1, 0.1), (0.1, 0.1, -0.1), (0.1, 0.1, 0.1)]
    int[] faceVertexCounts = [4, 4]
    int[] faceVertexIndices = [0, 1, 3, 2, 4, 6, 7, 5]
}
'''.replace("CUBE", CUBE)


def _write(tmp_path, body):
    p = tmp_path / "mesh_bodies.usda"
    p.write_text('#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Y"\n)\n\n' + textwrap.dedent(body))
    return str(p)


def test_mesh_colliders_on_bodies_become_body_mesh_shapes(tmp_path):
    sc = scenes.load(_write(tmp_path, SCENE), strict=True)  # everything read: no warning
    assert sc.builder.body_count == 2 and sc.warnings == []
    m = sc.finalize()
    assert m.body_mesh_shape_indices == [1, 2] and m.mesh_shape_indices == []
    # the block: 500 kg/m^3 x (0.2 m)^3, centre of mass at its mesh's offset; the gem: the hull of two faces
    np.testing.assert_allclose(m.body_mass.numpy(), [500 * 0.2 ** 3, 1000 * 0.2 ** 3], rtol=1e-5)
    np.testing.assert_allclose(m.body_com.numpy()[0], (0.05, 0, 0), atol=1e-6)
    np.testing.assert_allclose(m.body_inertia.numpy()[0], np.eye(3) * 4.0 * 0.2 ** 2 / 6,
                               rtol=1e-4)
    assert m.shape_mesh_convex == {1: False, 2: True}


def test_mesh_bodies_fall_and_are_written_posed(tmp_path):
    out = tmp_path / "mesh_bodies_out.usda"
    res = scenes.run(scenes.load(_write(tmp_path, SCENE)), frames=5, out=str(out), progress=False)
    m, q = res.model, res.state.body_q.numpy().astype(np.float64)
    assert q[0, 1] < 0.5 - 0.04 and q[1, 1] < 0.5 - 0.04  # both fell (g t^2 / 2 = 4.9 cm)
    from pxr import Usd, UsdGeom

    from sim.builder import quat_to_matrix

    stage = Usd.Stage.Open(str(out))
    meshes = {p.GetName(): p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)}
    for body, (name, shape) in enumerate((("hull", 1), ("gem", 2))):
        prim = next(p for n, p in meshes.items() if n.startswith(name) or n.endswith(name))
        attr = UsdGeom.Mesh(prim).GetPointsAttr()
        samples = attr.GetTimeSamples()
        assert len(samples) == 6
        pts = np.array(attr.Get(samples[-1]), np.float64)
        world = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(samples[-1])).T
        pts = pts @ world[:3, :3].T + world[:3, 3]
        local, _ = m.shape_mesh_points[shape]
        shape_pos = m.shape_pos.numpy()[shape]
        shape_rot = m.shape_rot.numpy()[shape]
        expected = (np.asarray(local) @ shape_rot.T + shape_pos) @ quat_to_matrix(q[body, 3:]).T + q[body, :3]
        np.testing.assert_allclose(pts, expected, atol=1e-5)


@pytest.mark.parametrize("edit, words", [
    (lambda s: s.replace("int[] faceVertexCounts = [4, 4, 4, 4, 4, 4]", "int[] faceVertexCounts = [4, 4, 4, 4, 4]")
     .replace(", 1, 5, 7, 3]", "]"), "/block/hull: add_shape_mesh: the mesh on body 0 is open"),
    (lambda s: s.replace("float physics:density = 500", "float physics:density = 500\n    float physics:mass = 2\n"
                                                         "    float3 physics:diagonalInertia = (0.01, 0.01, 0.01)")
     .replace("int[] faceVertexCounts = [4, 4, 4, 4, 4, 4]", "int[] faceVertexCounts = [4, 4, 4, 4, 4]")
     .replace(", 1, 5, 7, 3]", "]"), None),
])
def test_open_mesh_on_a_body_needs_a_mass(tmp_path, edit, words):
    path = _write(tmp_path, edit(SCENE))
    if words is None:  # with physics:mass the open mesh is only a collider
        m = scenes.load(path).finalize()
        assert m.body_mass.numpy()[0] == pytest.approx(2.0)
        return
    with pytest.raises(SceneError, match=words.replace("/", ".")):
        scenes.load(path).finalize()


@pytest.mark.gl
def test_viewer_draws_a_mesh_body_where_the_body_is():
    import kernelcore as kc
    import sim
    from scenes.render_adapter import ModelRenderer

    try:
        from render import OpenGLViewer

        v = OpenGLViewer(96, 72, headless=True, show_hud=False)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no headless OpenGL context: {exc}")
    try:
        b = sim.ModelBuilder(gravity=(0, 0, 0))
        body = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(0, 0, 0, 1)))
        cube = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64) - 0.5
        tris = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]]
        b.add_shape_mesh(cube, tris, scale=0.3, body=body)
        m = b.finalize()
        drawer = ModelRenderer(v, m)
        v.camera.look_at((0.0, 0.0, 3.0), (0.0, 0.0, 0.0))
        centroids = []
        for x in (-0.4, 0.4):
            state = m.state()
            state.body_q.numpy()[0, 0] = x
            drawer.render(state, 0.0)
            img = v.get_pixels().astype(int)
            covered = img[..., 2] > img[..., 0] + 60  # the body's blue (background and grid are grey)
            assert covered.sum() > 50, "the mesh body is not drawn"
            centroids.append(np.nonzero(covered)[1].mean())
        assert centroids[1] > centroids[0] + 10  # drawn at the body's pose, not the shape's frame
    finally:
        v.close()
