"""kc:solver = "smoke" scenes: loading, running, the USD point-cloud output and PNG slices."""
import numpy as np
import pytest

import scenes
from scenes.grid_fluid_scene import GridFluidScene, run_grid_fluid
from scenes.usd_loader import SceneError

pxr = pytest.importorskip("pxr")


def test_smoke_sphere_scene_runs_and_writes_usd(tmp_path):
    scene = scenes.load("smoke_sphere")
    assert isinstance(scene, GridFluidScene) and scene.res == (48, 80) and len(scene.spheres) == 1
    out = str(tmp_path / "smoke.usda")
    res = scenes.run(scene, frames=4, out=out, progress=False)
    assert res.frames == 4
    d = res.state.density.numpy()
    assert np.all(np.isfinite(d)) and d.sum() > 0
    solver = scene.make_solver()
    assert solver.solid_mask.numpy().sum() > 0            # the sphere became solid cells
    assert np.all(d[solver.solid_mask.numpy() == 1] == 0)  # and no smoke got into it
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(out)
    pts = UsdGeom.Points(stage.GetPrimAtPath("/World/smoke"))
    times = pts.GetPointsAttr().GetTimeSamples()
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0]
    last = np.array(pts.GetPointsAttr().Get(4.0))
    dens = np.array(UsdGeom.PrimvarsAPI(pts).GetPrimvar("density").Get(4.0))
    assert len(last) == len(dens) == int((d > 1e-3).sum())
    first = np.array(pts.GetPointsAttr().Get(0.0))
    # hot smoke rises: the density-weighted height grows from the source
    assert (last[:, 1] * dens).sum() / dens.sum() > first[:, 1].mean()
    assert stage.GetPrimAtPath("/World/solid_sphere_0").IsValid()


def test_png_slices(tmp_path):
    scene = scenes.load("smoke_sphere")
    res = run_grid_fluid(scene, frames=2, png_dir=str(tmp_path / "png"))
    assert len(res.pngs) == 3 and all(p.endswith(".png") for p in res.pngs)


def test_unknown_fluid_attribute_is_an_error(tmp_path):
    text = open(scenes.resolve("smoke_sphere")).read().replace("kc:fluid:heatLift", "kc:fluid:heatLfit")
    p = tmp_path / "bad.usda"
    p.write_text(text)
    with pytest.raises(SceneError, match="unknown attribute 'kc:fluid:heatLfit'"):
        scenes.load(str(p))
