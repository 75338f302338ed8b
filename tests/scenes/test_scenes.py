"""Scene files: loading, running, round trip to USD, the kcsim CLI and bad input."""
import math
import textwrap

import numpy as np
import pytest

import scenes
from scenes import SceneError, SimulationError
from scenes.cli import main as kcsim

pytest.importorskip("pxr")


def _write(tmp_path, body, name="scene.usda", header='metersPerUnit = 1\n    upAxis = "Y"'):
    text = f'#usda 1.0\n(\n    {header}\n)\n\n' + textwrap.dedent(body)
    p = tmp_path / name
    p.write_text(text)
    return str(p)


SIMPLE = '''
def PhysicsScene "physics"
{
    float kc:timeStep = 0.02
    int kc:substeps = 4
    int kc:frames = 5
}
def Points "drops"
{
    point3f[] points = [(0, 1, 0), (0.5, 2, 0)]
    vector3f[] velocities = [(1, 0, 0), (0, 0, 0)]
    float kc:radius = 0.1
    float kc:mass = 0.5
}
def Plane "floor" (prepend apiSchemas = ["PhysicsCollisionAPI"])
{
    uniform token axis = "Y"
}
'''


@pytest.mark.parametrize("name", scenes.library_scenes())
def test_library_scene_loads_and_runs(name, tmp_path):
    scene = scenes.load(name)
    if getattr(scene, "grid_fluid", False):
        pytest.skip("grid-fluid scene: tests/scenes/test_grid_fluid_scene.py runs it")
    assert scene.builder.particle_count > 0
    res = scenes.run(scene, frames=3, out=str(tmp_path / f"{name}.usdc"), progress=False)
    assert res.frames == 3
    q = res.state.particle_q.numpy()
    assert np.all(np.isfinite(q))
    assert not np.allclose(q, res.model.particle_q.numpy())  # things moved


def test_library_has_the_expected_scenes():
    names = scenes.library_scenes()
    assert {"default", "dem_column", "spring_net"} <= set(names)
    assert scenes.DEFAULT_SCENE in names
    default = scenes.load(None)
    assert default.solver == "dem" and default.builder.shape_count >= 2
    assert any("Mesh collider" in d for _, d in default.items)


def test_scene_settings_are_read(tmp_path):
    path = _write(tmp_path, '''
    def PhysicsScene "physics"
    {
        vector3f physics:gravityDirection = (0, 0, -2)
        float physics:gravityMagnitude = 5
        float kc:timeStep = 0.01
        int kc:substeps = 7
        token kc:solver = "dem"
        int kc:frames = 12
        float kc:particleDamping = 0.25
    }
    def Xform "group" (
    )
    {
        double3 xformOp:translate = (1, 2, 3)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Points "grains"
        {
            int3 kc:grid:dims = (2, 3, 4)
            float kc:grid:spacing = 0.5
            float kc:radius = 0.1
            float kc:density = 1000
            int[] kc:fixedIndices = [0]
            float kc:material:mu = 0.9
            float kc:material:restitution = 0.2
        }
        def Cube "box" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double size = 2
            float3 xformOp:scale = (1, 0.5, 2)
            float xformOp:rotateY = 90
            uniform token[] xformOpOrder = ["xformOp:rotateY", "xformOp:scale"]
        }
        def Sphere "ball" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double radius = 0.25
        }
        def Mesh "visual_only"
        {
            point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
            int[] faceVertexCounts = [3]
            int[] faceVertexIndices = [0, 1, 2]
        }
    }
    ''', header='metersPerUnit = 1\n    upAxis = "Z"')
    sc = scenes.load(path)
    assert sc.solver == "dem" and sc.substeps == 7 and sc.frames == 12 and sc.up_axis == "Z"
    assert math.isclose(sc.frame_dt, 0.01, rel_tol=1e-6) and math.isclose(sc.dt, 0.01 / 7, rel_tol=1e-6)
    b = sc.builder
    np.testing.assert_allclose(b.gravity, (0, 0, -5), atol=1e-6)
    assert b.particle_damping == 0.25
    assert b.particle_count == 24
    np.testing.assert_allclose(b.particle_q[0], (1, 2, 3), atol=1e-6)            # parent transform applied
    np.testing.assert_allclose(b.particle_q[23], (1.5, 3.0, 4.5), atol=1e-6)
    assert b.particle_mass[0] == 0.0                                              # fixed
    assert math.isclose(b.particle_mass[1], 1000 * 4 / 3 * math.pi * 0.1 ** 3, rel_tol=1e-6)
    mat = b.particle_material[1]
    assert b.material_mu[mat] == pytest.approx(0.9) and b.material_restitution[mat] == pytest.approx(0.2)
    assert b.shape_count == 2 and b.shape_name == ["box", "ball"]
    np.testing.assert_allclose(b.shape_scale[0], (1, 0.5, 2))                     # half extents from size * scale
    np.testing.assert_allclose(b.shape_pos[0], (1, 2, 3))
    q = np.asarray(b.shape_quat[0])
    np.testing.assert_allclose(np.abs(q), (0, math.sin(math.pi / 4), 0, math.cos(math.pi / 4)), atol=1e-6)
    assert b.shape_scale[1][0] == pytest.approx(0.25)
    assert any("visual only" in n for n in sc.notes)
    info = sc.describe()
    assert "/group/grains" in info and "24 particles" in info and "Cube collider" in info


def test_round_trip_scene_run_usd_has_time_samples(tmp_path):
    path = _write(tmp_path, SIMPLE)
    out = tmp_path / "result.usd"
    res = scenes.run(scenes.load(path), frames=6, out=str(out), progress=False)
    assert res.frames == 6 and res.out == str(out)
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(out))
    pts = UsdGeom.Points(stage.GetPrimAtPath("/root/drops")).GetPointsAttr()
    samples = pts.GetTimeSamples()
    assert len(samples) == 7  # frame 0 (the initial state) and six simulated frames
    assert stage.GetTimeCodesPerSecond() == pytest.approx(50.0)
    np.testing.assert_allclose(samples, np.arange(7))
    first = np.array(pts.Get(0))
    last = np.array(pts.Get(6))
    np.testing.assert_allclose(first[0], (0, 1, 0), atol=1e-6)
    # the simulated particle 1 fell freely for 6 frames of 0.02 s in 4 substeps each
    n, dt = 24, 0.005
    assert last[1][1] == pytest.approx(2 - 9.81 * dt * dt * n * (n + 1) / 2, abs=1e-4)
    assert stage.GetPrimAtPath("/root/floor")  # the collider is drawn too


def test_nan_stops_with_frame_and_quantity_and_keeps_frames(tmp_path):
    path = _write(tmp_path, '''
    def PhysicsScene "physics"
    {
        float kc:timeStep = 0.1
        int kc:substeps = 1
    }
    def Points "stiff"
    {
        point3f[] points = [(0, 0, 0), (0.5, 0, 0)]
        float kc:radius = 0.01
        float kc:mass = 0.001
        int2[] kc:springs:indices = [(0, 1)]
        float kc:springs:ke = 1e8
    }
    ''')
    sc = scenes.load(path)
    sc.builder.spring_rest_length[0] = 0.25  # start stretched: the explicit step explodes
    out = tmp_path / "nan.usda"
    with pytest.raises(SimulationError) as info:
        scenes.run(sc, frames=50, out=str(out), progress=False)
    err = info.value
    assert err.quantity == "particle_q" and "particle_q" in str(err) and f"frame {err.frame}" in str(err)
    assert 1 < err.frame < 50 and err.saved == str(out)
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(out))
    samples = UsdGeom.Points(stage.GetPrimAtPath("/root/stiff")).GetPointsAttr().GetTimeSamples()
    assert len(samples) == err.frame  # frames 0 .. frame - 1


def test_missing_and_malformed_files(tmp_path):
    missing = str(tmp_path / "nope.usda")
    with pytest.raises(SceneError, match="file not found") as info:
        scenes.load(missing)
    assert missing in str(info.value)
    bad = tmp_path / "bad.usda"
    bad.write_text('#usda 1.0\ndef Points "p" {\n    float kc:radius = [1, 2\n}\n')
    with pytest.raises(SceneError, match="malformed USD") as info:
        scenes.load(str(bad))
    assert str(bad) in str(info.value)
    with pytest.raises(SceneError, match="file not found"):
        scenes.load("no_such_library_scene")


def test_kcsim_cli(tmp_path, capsys):
    path = _write(tmp_path, SIMPLE)
    assert kcsim(["info", path]) == 0
    out = capsys.readouterr().out
    assert "particles: 2" in out and "/drops" in out and "Plane collider" in out
    assert kcsim(["list"]) == 0
    assert "default (default)" in capsys.readouterr().out
    usd = tmp_path / "cli.usda"
    assert kcsim(["run", path, "--frames", "3", "--substeps", "2", "--out", str(usd)]) == 0
    captured = capsys.readouterr()
    assert "simulated 3 frames" in captured.out and usd.exists()
    assert "3/3" in captured.err or "100%" in captured.err  # the progress bar
    assert kcsim(["run", "--frames", "1", "--no-progress"]) == 0  # the built-in default scene
    assert kcsim(["run", str(tmp_path / "missing.usda")]) == 2
    assert "missing.usda" in capsys.readouterr().err


def test_plain_progress_bar():
    import io

    from scenes.progress import _PlainBar

    s = io.StringIO()
    bar = _PlainBar(4, "sim", s)
    for _ in range(4):
        bar.update()
    bar.close()
    assert "4/4" in s.getvalue() and "[" + "#" * 30 + "]" in s.getvalue()


def test_run_into_a_headless_viewer():
    try:
        from render import OpenGLViewer

        viewer = OpenGLViewer(96, 72, headless=True, show_hud=False)
    except Exception as exc:  # noqa: BLE001 - no GL context here
        pytest.skip(f"no headless OpenGL context: {type(exc).__name__}: {exc}")
    try:
        res = scenes.run(scenes.load("spring_net"), frames=2, viewer=viewer, progress=False)
        assert res.frames == 2
        pixels = viewer.get_pixels()
        assert pixels.shape == (72, 96, 3) and pixels.std() > 1.0  # something was drawn
    finally:
        viewer.close()


def test_disabled_rigid_body_is_a_static_collider_without_warning(tmp_path):
    path = _write(tmp_path, SIMPLE + '''
def Cube "crate" (prepend apiSchemas = ["PhysicsCollisionAPI", "PhysicsRigidBodyAPI"])
{
    bool physics:rigidBodyEnabled = 0
}
''')
    sc = scenes.load(path, strict=True)
    assert sc.warnings == [] and "/crate" in sc.shape_paths and sc.builder.body_count == 0
    enabled = _write(tmp_path, SIMPLE + '''
def Cube "crate" (prepend apiSchemas = ["PhysicsCollisionAPI", "PhysicsRigidBodyAPI"])
{
}
''', name="enabled.usda")
    sc = scenes.load(enabled, strict=True)  # an enabled body is read: nothing to warn about
    assert sc.warnings == [] and sc.shape_paths[-1] == "/crate" and sc.builder.body_count == 1
    assert sc.builder.shape_body[-1] == 0  # the cube is the body's shape, not a static collider
