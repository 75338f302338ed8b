"""UsdRenderer: round trip through usd-core, validation, bad input, speed."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

pxr = pytest.importorskip("pxr")
from pxr import Gf, Usd, UsdGeom  # noqa: E402

from render import RenderWarning, UsdRenderer  # noqa: E402

FPS = 24
N_FRAMES = 100


def _quat_y(angle):
    """Rotation about +Y as (x, y, z, w)."""
    return np.array([0.0, np.sin(angle / 2), 0.0, np.cos(angle / 2)])


def _frame_data(i):
    t = i / FPS
    pts = np.stack([np.linspace(0, 1, 20), np.full(20, 2.0 - 0.5 * 9.81 * t * t), np.zeros(20)], 1)
    mesh = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, t]], np.float32)
    strip = np.array([[0, 0, 0], [1, t, 0], [2, 0, 0]], np.float32)
    return t, pts, mesh, strip


def write_animation(path, n_frames=N_FRAMES):
    r = UsdRenderer(path, fps=FPS, up_axis="Y")
    for i in range(n_frames):
        t, pts, mesh, strip = _frame_data(i)
        r.begin_frame(t)
        r.render_points("particles", pts, 0.05, colors=(0.2, 0.4, 1.0))
        r.render_mesh("sheet", mesh, [0, 1, 2, 1, 3, 2], colors=np.eye(4, 3))
        r.render_sphere("ball", (0.0, 1.0 + t, 0.0), _quat_y(t), 0.25, (1.0, 0.0, 0.0))
        r.render_box("crate", (2.0, 0.5, 0.0), None, (0.5, 0.25, 0.125), (0.0, 1.0, 0.0))
        r.render_line_strip("trail", strip, (1.0, 1.0, 0.0))
        r.end_frame()
    r.close()
    return path


@pytest.fixture(scope="module", params=["usda", "usd"])
def animation(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("usd") / f"anim.{request.param}"
    write_animation(str(path))
    return str(path)


def test_roundtrip_metadata_and_samples(animation):
    stage = Usd.Stage.Open(animation)
    assert stage.GetStartTimeCode() == 0.0
    assert stage.GetEndTimeCode() == N_FRAMES - 1
    assert stage.GetTimeCodesPerSecond() == FPS
    assert stage.GetFramesPerSecond() == FPS
    assert UsdGeom.GetStageUpAxis(stage) == "Y"
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetDefaultPrim().GetPath() == "/root"

    points = UsdGeom.Points(stage.GetPrimAtPath("/root/particles"))
    assert points.GetPointsAttr().GetNumTimeSamples() == N_FRAMES
    assert points.GetPointsAttr().GetTimeSamples()[:3] == [0.0, 1.0, 2.0]
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/root/sheet"))
    assert mesh.GetPointsAttr().GetNumTimeSamples() == N_FRAMES
    # topology never changes: one sample
    assert mesh.GetFaceVertexIndicesAttr().GetNumTimeSamples() == 1
    ball = stage.GetPrimAtPath("/root/ball")
    assert ball.GetAttribute("xformOp:translate").GetNumTimeSamples() == N_FRAMES
    # the crate never moves: a single sample instead of 100
    assert stage.GetPrimAtPath("/root/crate").GetAttribute("xformOp:translate").GetNumTimeSamples() == 1
    curves = UsdGeom.BasisCurves(stage.GetPrimAtPath("/root/trail"))
    assert curves.GetPointsAttr().GetNumTimeSamples() == N_FRAMES
    assert curves.GetTypeAttr().Get() == "linear"


@pytest.mark.parametrize("frame", [0, 37, 99])
def test_roundtrip_values(animation, frame):
    stage = Usd.Stage.Open(animation)
    t, pts, mesh, strip = _frame_data(frame)
    tc = frame  # time code = time * fps
    got = np.array(UsdGeom.Points(stage.GetPrimAtPath("/root/particles")).GetPointsAttr().Get(tc))
    np.testing.assert_allclose(got, pts, atol=1e-6)
    got = np.array(UsdGeom.Mesh(stage.GetPrimAtPath("/root/sheet")).GetPointsAttr().Get(tc))
    np.testing.assert_allclose(got, mesh, atol=1e-6)
    got = np.array(UsdGeom.BasisCurves(stage.GetPrimAtPath("/root/trail")).GetPointsAttr().Get(tc))
    np.testing.assert_allclose(got, strip, atol=1e-6)
    ball = UsdGeom.Xformable(stage.GetPrimAtPath("/root/ball"))
    m = np.array(ball.ComputeLocalToWorldTransform(tc))  # row-vector convention: translation in row 3
    np.testing.assert_allclose(m[3, :3], [0.0, 1.0 + t, 0.0], atol=1e-6)
    # rotation about Y by t radians, uniform scale 0.25 (the sphere radius)
    np.testing.assert_allclose(m[0, :3], 0.25 * np.array([np.cos(t), 0.0, -np.sin(t)]), atol=1e-5)
    crate = UsdGeom.Xformable(stage.GetPrimAtPath("/root/crate"))
    bbox = UsdGeom.BBoxCache(tc, ["default"]).ComputeWorldBound(crate.GetPrim()).ComputeAlignedRange()
    np.testing.assert_allclose(np.array(bbox.GetMin()), [1.5, 0.25, -0.125], atol=1e-6)
    np.testing.assert_allclose(np.array(bbox.GetMax()), [2.5, 0.75, 0.125], atol=1e-6)


def test_interpolates_between_frames(animation):
    stage = Usd.Stage.Open(animation)
    tr = stage.GetPrimAtPath("/root/ball").GetAttribute("xformOp:translate")
    assert tr.Get(10.5)[1] == pytest.approx(1.0 + 10.5 / FPS, abs=1e-9)


def test_file_format_by_extension(animation):
    with open(animation, "rb") as fh:
        head = fh.read(8)
    if animation.endswith(".usda"):
        assert head.startswith(b"#usda 1.")
    else:
        assert head == b"PXR-USDC"  # .usd is written as binary crate


def test_primitives_and_colors(animation):
    stage = Usd.Stage.Open(animation)
    sphere = stage.GetPrimAtPath("/root/ball/geom")
    assert sphere.GetTypeName() == "Sphere"
    assert stage.GetPrimAtPath("/root/crate/geom").GetTypeName() == "Cube"
    color = UsdGeom.PrimvarsAPI(sphere).GetPrimvar("displayColor")
    assert color.GetInterpolation() == "constant"
    assert tuple(color.Get(0)[0]) == (1.0, 0.0, 0.0)
    sheet_color = UsdGeom.PrimvarsAPI(stage.GetPrimAtPath("/root/sheet")).GetPrimvar("displayColor")
    assert sheet_color.GetInterpolation() == "vertex"
    assert len(sheet_color.Get(0)) == 4
    widths = UsdGeom.Points(stage.GetPrimAtPath("/root/particles")).GetWidthsAttr().Get(0)
    assert list(widths) == [pytest.approx(0.1)]


def _validate(path):
    """Run usd-core's checker; returns a list of error strings.

    usd-core 26.11 no longer ships ``UsdUtils.ComplianceChecker`` (the
    Python ``usdchecker`` back end was replaced by the C++ UsdValidation
    framework), so we use ``UsdUtils.ComplianceChecker`` when present and
    otherwise every registered ``UsdValidation`` validator (what usdchecker
    runs in 26.x).
    """
    from pxr import UsdUtils

    if hasattr(UsdUtils, "ComplianceChecker"):  # usd-core < 25.x
        checker = UsdUtils.ComplianceChecker(arkit=False, skipARKitRootLayerCheck=False)
        checker.CheckCompliance(path)
        return list(checker.GetErrors()) + list(checker.GetFailedChecks())
    from pxr import UsdValidation

    validators = UsdValidation.ValidationRegistry().GetOrLoadAllValidators()
    ctx = UsdValidation.ValidationContext(validators)
    return [f"{e.GetName()}: {e.GetMessage()}" for e in ctx.Validate(Usd.Stage.Open(path))]


def test_compliance_checker(animation, tmp_path):
    """Checker result on this file (usd-core 26.11, 30 UsdValidation validators):
    ``[]`` -- no errors and no warnings.  For comparison an empty in-memory
    stage gives 3 errors (MissingMetersPerUnitMetadata, MissingUpAxisMetadata,
    MissingDefaultPrim), so the checker is really running.
    """
    assert _validate(animation) == []
    # Instancers, capsules, cylinders and planes validate too.
    path = str(tmp_path / "shapes.usda")
    with UsdRenderer(path) as r:
        for i in range(3):
            r.begin_frame(i / 60)
            r.render_capsule("cap", (0, i, 0), None, 0.1, 0.3)
            r.render_cylinder("cyl", (1, 0, 0), None, 0.1, 0.3)
            r.render_plane("ground", (0, 0, 0), None, 4.0, 2.0)
            r.render_instances("grains", "box", np.random.rand(5, 3), scales=0.1)
            r.end_frame()
    assert _validate(path) == []
    bad = Usd.Stage.CreateInMemory()
    UsdGeom.Sphere.Define(bad, "/a")
    bad.GetRootLayer().Export(str(tmp_path / "bad.usda"))
    assert len(_validate(str(tmp_path / "bad.usda"))) >= 2


def test_up_axis_scaling_and_fps(tmp_path):
    path = str(tmp_path / "z.usdc")
    with UsdRenderer(path, fps=50, up_axis="Z", scaling=100.0) as r:
        for i in range(5):
            r.begin_frame(1.0 + i * 0.02)
            r.render_sphere("s", (0, 0, 0.5), None, 0.1)
            r.end_frame()
    stage = Usd.Stage.Open(path)
    assert UsdGeom.GetStageUpAxis(stage) == "Z"
    assert UsdGeom.GetStageMetersPerUnit(stage) == pytest.approx(0.01)
    assert stage.GetTimeCodesPerSecond() == 50
    assert stage.GetStartTimeCode() == pytest.approx(50.0)
    assert stage.GetEndTimeCode() == pytest.approx(54.0)
    m = np.array(UsdGeom.Xformable(stage.GetPrimAtPath("/root/s")).ComputeLocalToWorldTransform(50))
    assert m[3, 2] == pytest.approx(50.0)  # 0.5 m in centimetres


def test_shapes_and_instances(tmp_path):
    path = str(tmp_path / "shapes.usda")
    pos = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], np.float32)
    rots = np.tile([0, 0, 0, 1], (3, 1))
    with UsdRenderer(path) as r:
        r.begin_frame(0.0)
        r.render_capsule("cap", (0, 1, 0), None, 0.2, 0.5)
        r.render_cylinder("cyl", (0, 1, 0), None, 0.2, 0.5)
        r.render_plane("ground", (0, 0, 0), None, 4.0, 2.0)
        r.render_instances("grains", "sphere", pos, rots, scales=[0.1, 0.2, 0.3],
                           colors=np.eye(3))
        r.end_frame()
    stage = Usd.Stage.Open(path)
    cap = UsdGeom.Capsule(stage.GetPrimAtPath("/root/cap/geom"))
    assert cap.GetAxisAttr().Get() == "Y"
    assert cap.GetRadiusAttr().Get(0) == pytest.approx(0.2)
    assert cap.GetHeightAttr().Get(0) == pytest.approx(1.0)
    rng = UsdGeom.BBoxCache(0, ["default"]).ComputeWorldBound(stage.GetPrimAtPath("/root/cyl")).ComputeAlignedRange()
    np.testing.assert_allclose(np.array(rng.GetMax()) - np.array(rng.GetMin()), [0.4, 1.0, 0.4], atol=1e-6)
    rng = UsdGeom.BBoxCache(0, ["default"]).ComputeWorldBound(stage.GetPrimAtPath("/root/ground")).ComputeAlignedRange()
    np.testing.assert_allclose(np.array(rng.GetMax()) - np.array(rng.GetMin()), [4.0, 0.0, 2.0], atol=1e-6)
    inst = UsdGeom.PointInstancer(stage.GetPrimAtPath("/root/grains"))
    assert len(inst.GetPositionsAttr().Get(0)) == 3
    assert list(inst.GetProtoIndicesAttr().Get(0)) == [0, 0, 0]
    np.testing.assert_allclose(np.array(inst.GetScalesAttr().Get(0))[:, 0], [0.1, 0.2, 0.3], atol=1e-6)
    assert inst.GetPrototypesRel().GetTargets() == ["/root/grains/prototypes/proto"]
    xforms = inst.ComputeInstanceTransformsAtTime(0, 0)
    assert np.array(xforms[2])[3, 0] == pytest.approx(2.0)


def test_sparse_samples_hold_values(tmp_path):
    """A box that rests for 10 frames and then moves must not be interpolated across the rest."""
    path = str(tmp_path / "hold.usda")
    with UsdRenderer(path, fps=10) as r:
        for i in range(15):
            r.begin_frame(i / 10)
            r.render_box("b", (0.0, 0.0 if i < 10 else i - 9.0, 0.0), None, (1, 1, 1))
            r.end_frame()
    stage = Usd.Stage.Open(path)
    attr = stage.GetPrimAtPath("/root/b").GetAttribute("xformOp:translate")
    assert attr.GetTimeSamples() == [0.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0]
    assert attr.Get(5.0) == Gf.Vec3d(0, 0, 0)
    assert attr.Get(9.5)[1] == pytest.approx(0.5)


def test_late_object_and_per_point_upgrade(tmp_path):
    path = str(tmp_path / "late.usda")
    with UsdRenderer(path, fps=1) as r:
        for i in range(4):
            r.begin_frame(i)
            r.render_points("p", np.zeros((3, 3)) + i, 0.5)  # constant widths ...
            if i >= 2:
                r.render_sphere("late", (0, 0, 0), None, 1.0)
            if i == 3:  # ... then per-point radii: earlier samples are expanded
                r.render_points("p", np.zeros((3, 3)) + i, [0.1, 0.2, 0.3])
            r.end_frame()
    stage = Usd.Stage.Open(path)
    vis = stage.GetPrimAtPath("/root/late").GetAttribute("visibility")
    assert [vis.Get(t) for t in range(4)] == ["invisible", "invisible", "inherited", "inherited"]
    widths = UsdGeom.Points(stage.GetPrimAtPath("/root/p")).GetWidthsAttr()
    assert UsdGeom.Points(stage.GetPrimAtPath("/root/p")).GetWidthsInterpolation() == "vertex"
    assert list(widths.Get(0)) == [1.0, 1.0, 1.0]
    np.testing.assert_allclose(list(widths.Get(3)), [0.2, 0.4, 0.6], atol=1e-6)


def test_numpy_method_inputs(tmp_path):
    class FakeDeviceArray:  # stands in for kernelcore arrays
        def __init__(self, a):
            self.a = np.asarray(a)

        def numpy(self):
            return self.a

    path = str(tmp_path / "np.usda")
    with UsdRenderer(path) as r:
        r.begin_frame(0)
        r.render_points("p", FakeDeviceArray(np.ones((4, 3))), FakeDeviceArray(0.2))
        r.end_frame()
    stage = Usd.Stage.Open(path)
    pts = UsdGeom.Points(stage.GetPrimAtPath("/root/p")).GetPointsAttr().Get(0)
    assert len(pts) == 4 and tuple(pts[0]) == (1.0, 1.0, 1.0)


# ---------------------------------------------------------------- bad input
def test_mismatched_lengths_raise(tmp_path):
    r = UsdRenderer(str(tmp_path / "bad.usda"))
    r.begin_frame(0.0)
    with pytest.raises(ValueError, match=r"render_points\('p'\).*colors has shape \(4, 3\).*\(5, 3\)"):
        r.render_points("p", np.zeros((5, 3)), 0.1, colors=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"render_points\('p'\).*radius.*\(5,\).*\(2,\)"):
        r.render_points("p", np.zeros((5, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"render_points\('q'\).*\(N, 3\).*\(5, 2\)"):
        r.render_points("q", np.zeros((5, 2)), 0.1)
    with pytest.raises(ValueError, match=r"render_mesh\('m'\).*multiple of 3.*\(4,\)"):
        r.render_mesh("m", np.zeros((3, 3)), [0, 1, 2, 0])
    with pytest.raises(ValueError, match=r"render_mesh\('m'\).*out of range \[0, 3\).*max 7"):
        r.render_mesh("m", np.zeros((3, 3)), [0, 1, 7])
    with pytest.raises(ValueError, match=r"render_box\('b'\).*extents"):
        r.render_box("b", (0, 0, 0), None, (1, 1))
    with pytest.raises(ValueError, match=r"render_sphere\('s'\).*quaternion.*\(3,\)"):
        r.render_sphere("s", (0, 0, 0), (0, 0, 1), 1.0)
    with pytest.raises(ValueError, match=r"render_sphere\('s'\).*radius must be > 0"):
        r.render_sphere("s", (0, 0, 0), None, -1.0)
    r.end_frame()
    r.close()


def test_nan_items_skipped_with_warning(tmp_path):
    path = str(tmp_path / "nan.usda")
    pts = np.zeros((10, 3))
    pts[3] = np.nan
    with UsdRenderer(path, fps=10) as r:
        r.begin_frame(0.0)
        r.render_sphere("ball", (0, 0, 0), None, 1.0)
        r.end_frame()
        r.begin_frame(0.5)
        with pytest.warns(RenderWarning, match=r"render_points\('dust'\) at frame 1 \(t=0.5 s\).*1 of 10"):
            r.render_points("dust", pts, 0.1)
        with pytest.warns(RenderWarning, match=r"render_sphere\('ball'\) at frame 1 \(t=0.5 s\)"):
            r.render_sphere("ball", (np.nan, 0, 0), None, 1.0)
        r.end_frame()
        r.begin_frame(1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r.render_sphere("ball", (1, 0, 0), None, 1.0)
        r.end_frame()
    stage = Usd.Stage.Open(path)
    assert len(UsdGeom.Points(stage.GetPrimAtPath("/root/dust")).GetPointsAttr().Get(5)) == 9
    vis = stage.GetPrimAtPath("/root/ball").GetAttribute("visibility")
    assert [vis.Get(t) for t in (0, 5, 10)] == ["inherited", "invisible", "inherited"]
    assert _validate(path) == []


def test_unwritable_path_fails_at_construction(tmp_path):
    missing = tmp_path / "no_such_dir" / "out.usda"
    with pytest.raises(OSError, match="no_such_dir"):
        UsdRenderer(str(missing))
    with pytest.raises(OSError, match="is a directory"):
        UsdRenderer(str(tmp_path))
    with pytest.raises(ValueError, match=r"out\.txt"):
        UsdRenderer(str(tmp_path / "out.txt"))
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind


def test_frame_protocol_errors(tmp_path):
    r = UsdRenderer(str(tmp_path / "p.usda"))
    with pytest.raises(RuntimeError, match="begin_frame"):
        r.render_sphere("s", (0, 0, 0), None, 1.0)
    with pytest.raises(RuntimeError, match="end_frame called without begin_frame"):
        r.end_frame()
    r.begin_frame(0.0)
    r.render_sphere("s", (0, 0, 0), None, 1.0)
    with pytest.raises(ValueError, match="already used by a sphere"):
        r.render_box("s", (0, 0, 0), None, (1, 1, 1))
    r.end_frame()
    r.close()
    r.close()  # idempotent


def test_per_frame_cost_does_not_grow(tmp_path):
    """2000 frames: the last 200 frames must not be much slower than the first 200."""
    r = UsdRenderer(str(tmp_path / "long.usdc"), fps=60)
    pts = np.random.default_rng(0).random((500, 3)).astype(np.float32)
    cost = []
    for i in range(2000):
        t0 = time.perf_counter()
        r.begin_frame(i / 60)
        r.render_points("p", pts + 0.001 * i, 0.01)
        r.render_sphere("s", (0, 0.01 * i, 0), None, 0.1)
        r.render_line_strip("l", pts[:10] + 0.001 * i)
        r.end_frame()
        cost.append(time.perf_counter() - t0)
    cost = np.array(cost)
    early, late = np.median(cost[:200]), np.median(cost[-200:])
    assert late < 3.0 * early + 1e-4, (early, late)
    assert np.median(cost) < 0.02
    r.close()
    assert Usd.Stage.Open(str(tmp_path / "long.usdc")).GetEndTimeCode() == 1999
