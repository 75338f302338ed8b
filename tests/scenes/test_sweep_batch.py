"""Sweep batching (scenes/sweep_batch.py): K points packed into one model (one environment
each) give the same rows and USD animations as the points run one by one; points that
cannot share a model run one by one with a notice; a bad point in a batch is isolated."""
import os

import numpy as np
import pytest

pytest.importorskip("geometry.hash_grid")

from scenes import cli  # noqa: E402
from scenes.sweep import sweep  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCENE = os.path.join(HERE, "data", "sweep_dem_tiny.usda")
METRICS = ["p_com_x", "p_com_y", "p_com_z", "p_mean_speed", "p_kinetic_energy"]


def _grain_frames(path):
    from pxr import Usd

    stage = Usd.Stage.Open(path)
    a = stage.GetPrimAtPath("/root/World/grains").GetAttribute("points")
    return np.array([np.asarray(a.Get(t)) for t in a.GetTimeSamples()])


def _assert_same_points(plain, batched, out_plain=None, out_batched=None):
    assert [r["status"] for r in plain] == [r["status"] for r in batched]
    for p, b in zip(plain, batched):
        if p["status"] != "ok":
            continue
        for m in METRICS:
            assert b[m] == pytest.approx(p[m], rel=1e-6, abs=1e-7), (p["point"], m)
        if out_plain:
            np.testing.assert_allclose(_grain_frames(b["usd"]), _grain_frames(p["usd"]), rtol=0, atol=1e-6)


def test_batched_points_equal_unbatched_materials(tmp_path):
    # material coefficients of the grains, of a sphere and of a mesh collider batch
    params = ["/World/grains.kc:material:mu=0.1,0.9", "/World/ball.kc:material:mu=0.1,0.8",
              "/World/wedge.kc:material:restitution=0.2"]
    plain = sweep(SCENE, params, serial=True, out=str(tmp_path / "plain"))
    batched = sweep(SCENE, params, serial=True, batch=4, out=str(tmp_path / "batched"))
    assert [r["batch_size"] for r in batched] == [4, 4, 4, 4] and batched.notices == []
    _assert_same_points(plain, batched, True, True)
    ke = plain.column("p_kinetic_energy")
    assert len(set(np.round(ke, 6))) == 4  # every parameter changed the outcome: the test can tell points apart


def test_batched_positions_and_velocities_batch():
    params = ["/World/grains.kc:grid:jitter=0.0,0.01", "/World/grains.kc:density=500,2000"]
    plain = sweep(SCENE, params, serial=True)
    batched = sweep(SCENE, params, serial=True, batch=3)  # 4 points: a batch of 3 and one of 1
    assert [r["batch_size"] for r in batched] == [3, 3, 3, 1]
    _assert_same_points(plain, batched)


@pytest.mark.parametrize("param, why", [
    ("/World/physicsScene.kc:substeps=8,16", "model-wide setting (substeps)"),
    ("/World/grains.kc:radius=0.03,0.04", "model-wide setting (largest particle radius)"),
])
def test_points_that_cannot_share_a_model_run_one_by_one(param, why):
    plain = sweep(SCENE, [param], serial=True)
    batched = sweep(SCENE, [param], serial=True, batch=2)
    assert len(batched.notices) == 1 and why in batched.notices[0] and "ran unbatched" in batched.notices[0]
    assert [r["batch_size"] for r in batched] == [1, 1]
    _assert_same_points(plain, batched)


def test_different_particle_counts_are_not_batched():
    from scenes import load
    from scenes.sweep_batch import why_not_batched

    a, b = load(SCENE), load(SCENE)
    assert why_not_batched([a, b]) is None
    b.builder.add_particle((0.0, 1.0, 0.0), radius=0.04)
    assert "differ in topology (particles: 27 vs 28)" in why_not_batched([a, b])


def test_a_point_that_fails_to_load_is_isolated():
    batched = sweep(SCENE, ["/World/grains.kc:material:restitution=0.3,2,0.5"], serial=True, batch=3)
    assert [r["status"] for r in batched] == ["ok", "failed", "ok"]
    assert "restitution" in batched[1]["error"]
    assert [batched[0]["batch_size"], batched[2]["batch_size"]] == [2, 2]  # the other two still share a model
    plain = sweep(SCENE, ["/World/grains.kc:material:restitution=0.3,0.5"], serial=True)
    _assert_same_points(plain, [batched[0], batched[2]])


def test_a_failing_packed_run_is_rerun_point_by_point(monkeypatch):
    import scenes.sweep_batch as sb

    def boom(*args, **kwargs):
        raise FloatingPointError("particle_q became non-finite")

    monkeypatch.setattr(sb, "_simulate_packed", boom)
    params = ["/World/grains.kc:material:mu=0.2,0.6"]
    batched = sweep(SCENE, params, serial=True, batch=2)
    assert batched.notices == ["points 0-1 ran unbatched: the packed run failed (particle_q became non-finite)"]
    _assert_same_points(sweep(SCENE, params, serial=True), batched)


def test_other_solvers_are_not_batched():
    from scenes import load
    from scenes.sweep_batch import why_not_batched

    a, b = load(SCENE), load(SCENE)
    a.solver = b.solver = "pbf"
    assert "does not separate environments" in why_not_batched([a, b])
    a.solver = b.solver = "dem"
    assert why_not_batched([a, b]) is None


def test_kcsim_sweep_batch_option(tmp_path, capsys):
    code = cli.main(["sweep", SCENE, "--param", "/World/grains.kc:material:mu=0.2,0.6", "--out", str(tmp_path / "o"),
                     "--serial", "--no-progress", "--batch", "2", "--frames", "2"])
    assert code == 0 and os.path.isfile(tmp_path / "o" / "points" / "point_0001.usd")
    code = cli.main(["sweep", SCENE, "--param", "/World/grains.kc:material:mu=0.2", "--out", str(tmp_path / "p"),
                     "--serial", "--batch", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "--batch must be >= 1" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="--batch must be a whole number"):
        sweep(SCENE, ["/World/grains.kc:material:mu=0.2"], serial=True, batch=1.5)
