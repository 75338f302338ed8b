"""Sweeps and parallel_map on a local Ray cluster with 2 CPUs (issue #21).

One Ray cluster for the whole module (starting Ray costs seconds).  Skipped with a reason
when ray is not installed; the serial fallback is tested in test_sweep_serial.py.
"""
import hashlib
import os
import sys

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'kernelcore[distributed]')")

import kernelcore as kc  # noqa: E402
import scenes  # noqa: E402
import sim  # noqa: E402
from scenes import cli  # noqa: E402
from scenes.sweep import points_of  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCENE = os.path.join(HERE, "data", "sweep_tiny.usda")
# 3 x 2 points; radius -1 makes the loader refuse the point (a failing point among good ones)
PARAMS = ["/World/grains.kc:material:mu=0.1:0.9:3", "/World/grains.kc:radius=0.04,-1"]
FRAMES = 3


@pytest.fixture(scope="module")
def ray_cluster():
    # one thread per kernel launch, here and in the workers: results are comparable bit for bit
    old = os.environ.get("KERNELCORE_NUM_THREADS")
    os.environ["KERNELCORE_NUM_THREADS"] = "1"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # the workers cannot import this test module: ship its functions by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()
    if old is None:
        os.environ.pop("KERNELCORE_NUM_THREADS", None)
    else:
        os.environ["KERNELCORE_NUM_THREADS"] = old


def digest_metrics(result, scene):
    """default metrics plus a SHA-256 of the final particle state (bitwise comparisons)."""
    from scenes.sweep import default_metrics

    out = default_metrics(result, scene)
    h = hashlib.sha256(result.state.particle_q.numpy().tobytes())
    h.update(result.state.particle_qd.numpy().tobytes())
    out["state_sha256"] = h.hexdigest()
    return out


def _without_time(rows):
    return [{k: v for k, v in r.items() if k not in ("seconds", "usd")} for r in rows]


@pytest.fixture(scope="module")
def ray_sweep(ray_cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep_ray")
    table = scenes.sweep(SCENE, PARAMS, frames=FRAMES, metrics=digest_metrics, out=str(out))
    return table, out


def test_sweep_on_ray_is_bitwise_equal_to_serial_points_in_order(ray_sweep):
    table, _ = ray_sweep
    serial = scenes.sweep(SCENE, PARAMS, frames=FRAMES, metrics=digest_metrics, serial=True)
    assert [r["point"] for r in table] == list(range(6))
    expected_points = points_of(PARAMS)
    for row, point in zip(table, expected_points):
        assert {k: row[k] for k in point} == point
    assert _without_time(table.rows) == _without_time(serial.rows)
    ok = [r for r in table if r["status"] == "ok"]
    assert len(ok) == 3
    # the swept friction changes the result: the rows are not all the same run
    assert len({r["state_sha256"] for r in ok}) == 3
    assert ok[0]["p_com_x"] > ok[1]["p_com_x"] > ok[2]["p_com_x"]  # more friction, less sliding


def test_failing_point_is_reported_with_parameters_and_others_finish(ray_sweep):
    table, out = ray_sweep
    failed = table.failed
    assert [r["point"] for r in failed] == [1, 3, 5]
    for r in failed:
        assert r["/World/grains.kc:radius"] == -1.0
        assert "kc:radius must be > 0" in r["error"] and SCENE in r["error"]
    assert all(os.path.getsize(out / "points" / f"point_{i:04d}.usd") > 0 for i in (0, 2, 4))
    assert not (out / "points" / "point_0001.usd").exists()
    text = (out / "summary.csv").read_text().splitlines()
    assert len(text) == 7 and text[0].startswith("point,/World/grains.kc:material:mu,/World/grains.kc:radius,status")
    assert (out / "summary.png").stat().st_size > 0


def test_point_usd_holds_the_simulated_frames(ray_sweep):
    from pxr import Usd, UsdGeom

    table, out = ray_sweep
    stage = Usd.Stage.Open(str(out / "points" / "point_0000.usd"))
    assert stage.GetEndTimeCode() == FRAMES
    pts = [p for p in stage.Traverse() if p.IsA(UsdGeom.Points)]
    assert len(pts) == 1
    assert len(UsdGeom.Points(pts[0]).GetPointsAttr().Get(FRAMES)) == 18


def test_kcsim_sweep_on_ray(ray_cluster, tmp_path, capsys):
    out = tmp_path / "cli"
    code = cli.main(["sweep", SCENE, "--param", PARAMS[0], "--param", PARAMS[1], "--frames", "2", "--out", str(out),
                     "--no-progress"])
    cap = capsys.readouterr()
    assert code == 3, cap.err
    assert "on Ray" in cap.out and "3 of 6 point(s) finished" in cap.out
    assert "point 3 (/World/grains.kc:material:mu=0.5, /World/grains.kc:radius=-1) failed: SceneError" in cap.err
    assert "Traceback" not in cap.err
    assert sorted(os.listdir(out / "points")) == ["point_0000.usd", "point_0002.usd", "point_0004.usd"]


def _candidate_gradient(v0):
    """One candidate 'controller' (the initial velocity of a ball rolling into two others),
    simulated on its own Tape: (final position of the last ball, d(its x)/d(v0))."""
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=2e3, restitution=0.5, mu=0.3)
    b.add_particle((0, 0, 0), tuple(v0), 0.01, 0.01)
    b.add_particle((0.05, 0.002, 0), (0, 0, 0), 0.01, 0.01)
    b.add_particle((0.075, -0.003, 0.001), (0, 0, 0), 0.01, 0.01)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverDEM(m)
    steps, dt = 150, 5e-4
    states = [m.state() for _ in range(steps + 1)]
    tape = kc.Tape()
    with tape:
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
    seed = np.zeros((3, 3), np.float32)
    seed[2, 0] = 1.0
    tape.backward(grads={states[-1].particle_q: seed})
    return states[-1].particle_q.numpy()[2].copy(), states[0].particle_qd.grad.numpy()[0].copy()


def test_parallel_map_gradients_equal_serial(ray_cluster):
    candidates = [np.array([0.6 + 0.1 * i, 0.02 * (i - 1), 0.0], np.float32) for i in range(4)]
    distributed = sim.parallel_map(_candidate_gradient, candidates)
    serial = sim.parallel_map(_candidate_gradient, candidates, serial=True)
    for (qa, ga), (qb, gb) in zip(distributed, serial):
        assert qa.tobytes() == qb.tobytes() and ga.tobytes() == gb.tobytes()
    grads = np.array([g for _, g in distributed])
    assert np.isfinite(grads).all() and (np.abs(grads[:, 0]) > 1e-3).all()  # the push reaches the last ball
    assert len({g.tobytes() for g in grads}) == 4  # each candidate has its own gradient, in order


def test_parallel_map_unpicklable_in_worker_is_one_line(ray_cluster):
    # a function whose module the workers cannot import: a TaskFailure naming the cause, no Ray dump
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    try:
        res = sim.parallel_map(_square, [3], return_exceptions=True)
    finally:
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    assert isinstance(res[0], sim.parallel.TaskFailure)
    assert "No module named" in res[0].error and "\n" not in res[0].error and "\x1b" not in res[0].error


def _square(x):
    return x * x


def test_parallel_map_reports_the_failing_item(ray_cluster):
    def f(x):
        if x == 2:
            raise ValueError("two is not allowed")
        return x * 10

    res = sim.parallel_map(f, range(4), return_exceptions=True)
    assert res[0] == 0 and res[1] == 10 and res[3] == 30
    assert isinstance(res[2], sim.parallel.TaskFailure) and res[2].index == 2 and res[2].item == 2
    assert res[2].error == "ValueError: two is not allowed"
    with pytest.raises(sim.parallel.ParallelMapError, match=r"item 2 \(2\) failed: ValueError: two is not allowed"):
        sim.parallel_map(f, range(4))


def test_batched_sweep_on_ray_equals_batched_serial(ray_cluster, tmp_path):
    """--batch on Ray: the same rows (bitwise: same packing, one thread) and USD files as in this process."""
    scene = os.path.join(HERE, "data", "sweep_dem_tiny.usda")
    params = ["/World/grains.kc:material:mu=0.1,0.5,0.9"]
    on_ray = scenes.sweep(scene, params, frames=4, metrics=digest_metrics, batch=2, out=str(tmp_path / "ray"))
    here = scenes.sweep(scene, params, frames=4, metrics=digest_metrics, batch=2, serial=True,
                        out=str(tmp_path / "here"))
    assert [r["batch_size"] for r in on_ray] == [2, 2, 1]
    assert _without_time(on_ray) == _without_time(here)
    for a, b in zip(on_ray, here):
        with open(a["usd"], "rb") as fa, open(b["usd"], "rb") as fb:
            assert len(fa.read()) == len(fb.read())
