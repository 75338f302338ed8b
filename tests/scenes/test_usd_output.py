"""What kcsim writes, read back with usd-core as a DCC tool (Houdini, Blender) would read it:
names and hierarchy of the input, exact frame rate, velocities, springs as curves, widths
and colours."""
import textwrap

import numpy as np
import pytest

pytest.importorskip("pxr")

import scenes  # noqa: E402
from scenes.cli import main as kcsim  # noqa: E402

# Two Points prims called "grains" under different parents, a collider with the same name
# as a Points prim elsewhere, springs, a physics material and a displayColor.
SCENE = '''#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Y"
)
def Xform "World"
{
    def PhysicsScene "physics"
    {
        float kc:timeStep = 0.016666668
        int kc:substeps = 4
        int kc:frames = 4
    }
    def Xform "left"
    {
        def Points "grains"
        {
            point3f[] points = [(-1, 1, 0), (-0.8, 1, 0), (-0.6, 1, 0)]
            vector3f[] velocities = [(1, 0, 0), (1, 0, 0), (1, 0, 0)]
            float[] kc:radius = [0.05, 0.06, 0.07]
            float kc:mass = 0.1
            int2[] kc:springs:indices = [(0, 1), (1, 2)]
            float kc:springs:ke = 50
            color3f[] primvars:displayColor = [(0.1, 0.2, 0.9)]
        }
    }
    def Xform "right"
    {
        def Points "grains"
        {
            point3f[] points = [(1, 2, 0), (1.2, 2, 0)]
            float kc:radius = 0.05
            float kc:mass = 0.1
            rel material:binding:physics = </World/Looks/Rubber>
        }
        def Sphere "ball" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double radius = 0.3
        }
    }
    def Xform "props"
    {
        def Cube "grains" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double size = 0.5
            double3 xformOp:translate = (3, 0, 0)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
    def Scope "Looks"
    {
        def Material "Rubber" (prepend apiSchemas = ["PhysicsMaterialAPI"])
        {
            float physics:dynamicFriction = 0.8
            float physics:restitution = 0.6
        }
    }
}
'''


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("out")
    src = d / "scene.usda"
    src.write_text(textwrap.dedent(SCENE))
    scene = scenes.load(str(src))
    assert scene.warnings == []  # everything in it is supported
    out = d / "result.usdc"
    res = scenes.run(scene, out=str(out), progress=False)
    return scene, res, str(out)


def test_names_and_hierarchy_mirror_the_input(written):
    from pxr import Usd

    scene, res, out = written
    stage = Usd.Stage.Open(out)
    types = {str(p.GetPath()): str(p.GetTypeName()) for p in stage.Traverse()}
    # both Points prims called "grains" are written, each where it was, and the Cube called "grains" too
    assert types["/root/World/left/grains"] == "Points"
    assert types["/root/World/right/grains"] == "Points"
    assert types["/root/World/props/grains"] == "Xform" and types["/root/World/props/grains/geom"] == "Cube"
    assert types["/root/World/right/ball/geom"] == "Sphere"
    assert types["/root/World/left/grains_springs"] == "BasisCurves"
    q = res.state.particle_q.numpy()
    left = np.array(stage.GetPrimAtPath("/root/World/left/grains").GetAttribute("points").Get(4))
    right = np.array(stage.GetPrimAtPath("/root/World/right/grains").GetAttribute("points").Get(4))
    np.testing.assert_allclose(left, q[:3], atol=1e-6)
    np.testing.assert_allclose(right, q[3:], atol=1e-6)


def test_frame_rate_is_exact_and_time_codes_are_frames(written):
    from pxr import Usd

    scene, res, out = written
    stage = Usd.Stage.Open(out)
    assert stage.GetTimeCodesPerSecond() == 60.0  # not 59.99999687 from the float32 time step
    assert stage.GetFramesPerSecond() == 60.0
    assert scene.frame_dt == 1.0 / 60.0
    pts = stage.GetPrimAtPath("/root/World/left/grains").GetAttribute("points")
    assert pts.GetTimeSamples() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert stage.GetStartTimeCode() == 0.0 and stage.GetEndTimeCode() == 4.0


def test_velocities_widths_and_colors(written):
    from pxr import Usd, UsdGeom

    scene, res, out = written
    stage = Usd.Stage.Open(out)
    left = UsdGeom.Points(stage.GetPrimAtPath("/root/World/left/grains"))
    v_attr = left.GetVelocitiesAttr()
    assert v_attr.GetTimeSamples() == [0.0, 1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose(np.array(v_attr.Get(0)), [[1, 0, 0]] * 3, atol=1e-6)  # m/s, as authored
    np.testing.assert_allclose(np.array(v_attr.Get(4)), res.state.particle_qd.numpy()[:3], atol=1e-6)
    # motion blur in a DCC tool: points(t) + velocities(t) * dt predicts the next sample
    # (semi-implicit Euler advances positions with the new velocity: a tolerance of g dt^2)
    p3, p4 = np.array(left.GetPointsAttr().Get(3)), np.array(left.GetPointsAttr().Get(4))
    v4 = np.array(v_attr.Get(4))
    np.testing.assert_allclose(p3 + v4 / stage.GetTimeCodesPerSecond(), p4, atol=3e-3)
    widths = np.array(left.GetWidthsAttr().Get(0))
    np.testing.assert_allclose(widths, [0.1, 0.12, 0.14], atol=1e-6)  # diameters, one per point
    assert left.GetWidthsInterpolation() == "vertex"
    color = UsdGeom.PrimvarsAPI(left).GetPrimvar("displayColor")
    np.testing.assert_allclose(np.array(color.Get(0))[0], (0.1, 0.2, 0.9), atol=1e-6)  # the input's colour
    right = UsdGeom.PrimvarsAPI(stage.GetPrimAtPath("/root/World/right/grains")).GetPrimvar("displayColor")
    assert not np.allclose(np.array(right.Get(0))[0], (0.1, 0.2, 0.9))  # another material, another colour


def test_springs_are_basis_curves_following_the_particles(written):
    from pxr import Usd, UsdGeom

    scene, res, out = written
    stage = Usd.Stage.Open(out)
    curves = UsdGeom.BasisCurves(stage.GetPrimAtPath("/root/World/left/grains_springs"))
    assert curves.GetTypeAttr().Get() == "linear"
    assert list(curves.GetCurveVertexCountsAttr().Get(0)) == [2, 2]
    q = res.state.particle_q.numpy()
    np.testing.assert_allclose(np.array(curves.GetPointsAttr().Get(4)), q[[0, 1, 1, 2]], atol=1e-6)
    assert curves.GetPointsAttr().GetNumTimeSamples() == 5


def test_physics_material_binding_is_used(written):
    scene, res, out = written
    b = scene.builder
    mat = b.particle_material[3]  # first particle of /World/right/grains
    assert b.material_mu[mat] == pytest.approx(0.8) and b.material_restitution[mat] == pytest.approx(0.6)


def test_same_name_points_and_collider_through_the_cli(tmp_path, capsys):
    src = tmp_path / "scene.usda"
    src.write_text(textwrap.dedent(SCENE))
    out = tmp_path / "cli.usda"
    assert kcsim(["run", str(src), "--frames", "1", "--out", str(out), "--no-progress"]) == 0
    text = out.read_text()
    assert text.count('def Points "grains"') == 2 and 'def Cube "geom"' in text


def test_exact_rates():
    from fractions import Fraction

    from scenes.usd_loader import exact_rate

    f32 = np.float32
    assert exact_rate(1 / float(f32(1 / 60))) == 60
    assert exact_rate(1 / float(f32(1 / 24))) == 24
    assert exact_rate(1 / float(f32(1001 / 30000))) == Fraction(30000, 1001)
    assert exact_rate(1 / float(f32(1001 / 24000))) == Fraction(24000, 1001)
    assert float(exact_rate(1 / 0.0123)) == 1 / 0.0123  # not a video rate: kept as it is


def test_ntsc_rate_is_written_as_30000_over_1001(tmp_path):
    from pxr import Usd

    src = tmp_path / "ntsc.usda"
    src.write_text(textwrap.dedent('''#usda 1.0
    def PhysicsScene "physics"
    {
        float kc:timeStep = 0.033366665
        int kc:substeps = 2
    }
    def Points "p"
    {
        point3f[] points = [(0, 1, 0)]
        float kc:radius = 0.1
        float kc:mass = 1
    }
    '''))
    scenes.run(scenes.load(str(src)), frames=1, out=str(tmp_path / "o.usda"), progress=False)
    stage = Usd.Stage.Open(str(tmp_path / "o.usda"))
    assert stage.GetTimeCodesPerSecond() == 30000 / 1001
    assert stage.GetPrimAtPath("/root/p").GetAttribute("points").GetTimeSamples() == [0.0, 1.0]
