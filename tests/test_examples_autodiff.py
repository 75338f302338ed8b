"""Differentiable examples (the mass-spring triangle optimisation and its gradients) and the autodiff benchmark."""
import os

import numpy as np

from examples import mass_spring_triangle as mst


def _numpy_reference(rest, sim):
    """The same simulation in float64 numpy: final triangle area."""
    x = mst.START_POSITIONS.astype(np.float64).copy()
    v = np.zeros_like(x)
    a_idx, b_idx = mst.SPRING_ENDS[:, 0], mst.SPRING_ENDS[:, 1]
    decay = np.exp(-sim.damping * sim.dt)
    for _ in range(sim.steps):
        d = x[b_idx] - x[a_idx]
        l = np.linalg.norm(d, axis=1)
        force = d * (sim.stiffness * (l - rest) / l)[:, None]
        f = np.zeros_like(x)
        np.add.at(f, a_idx, force)
        np.add.at(f, b_idx, -force)
        v = v * decay + f * (sim.dt / sim.mass)
        x = x + v * sim.dt
    e1, e2 = x[1] - x[0], x[2] - x[0]
    return 0.5 * abs(e1[0] * e2[1] - e1[1] * e2[0])


def test_forward_matches_numpy():
    sim = mst.TriangleSim(steps=120)
    rest = np.array([0.3, 0.25, 0.35])
    loss, area, _ = sim.loss_and_grad(rest)
    ref = _numpy_reference(rest, sim)
    assert abs(area - ref) < 1e-5 * max(1.0, ref) + 1e-6
    assert abs(loss - (ref - mst.TARGET_AREA) ** 2) < 1e-6


def test_rest_length_gradient_matches_central_differences():
    sim = mst.TriangleSim(steps=120)
    # an asymmetric point (three distinct, non-zero components) and the start of the optimisation
    # (a right angle: the area is stationary in the hypotenuse there, so that component is ~0)
    for rest, nonzero in ((np.array([0.3, 0.25, 0.35]), 3), (mst.initial_rest_lengths(), 2)):
        _, _, grad = sim.loss_and_grad(rest)
        eps = 2e-3
        fd = np.zeros(3)
        for k in range(3):
            e = np.zeros(3)
            e[k] = eps
            fd[k] = (sim.loss(rest + e) - sim.loss(rest - e)) / (2 * eps)
        assert np.sum(np.abs(fd) > 1e-3) == nonzero, fd  # the comparison is not vacuous
        # float32 simulation and float32 loss differences (observed agreement ~3e-4 of the largest component)
        np.testing.assert_allclose(grad, fd, rtol=3e-3, atol=3e-3 * np.abs(fd).max())


def test_optimisation_reaches_target_area(tmp_path):
    out = tmp_path / "loss.png"
    losses = mst.main(["--iters", "20", "--steps", "150", "--out", str(out)])
    assert len(losses) == 20
    assert losses[-1] < 1e-3 * losses[0]
    assert all(b <= a * 1.0001 for a, b in zip(losses, losses[1:])), losses  # monotone descent
    # loss = (area - 0.2)^2, so |final area - 0.2| = sqrt(final loss)
    assert np.sqrt(losses[-1]) < 2e-3, losses[-1]
    assert out.exists() and out.stat().st_size > 1000
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_autodiff_benchmark_smoke(tmp_path, monkeypatch):
    """The benchmark runs end to end at a tiny size and writes its JSON (kernelcore alone)."""
    import json

    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import bench_autodiff as bench

    monkeypatch.setattr(bench, "MS_STEPS", 3)
    monkeypatch.setattr(bench, "MPM_SUBSTEPS", 2)
    out = tmp_path / "autodiff.json"
    bench.main(["--repeats", "1", "--warmup", "0", "--no-warp", "--kc-threads", "default,1", "--out", str(out)])
    result = json.loads(out.read_text())
    for name in ("mass_spring", "mpm"):
        case = result["cases"][name]
        for label in ("kc", "kc_1thread"):
            assert case[label]["forward_s"] > 0 and case[label]["backward_s"] > 0
            assert np.isfinite(case[label]["loss"])
        # the one-thread run (plain accumulation) and the default run agree
        assert abs(case["kc"]["loss"] - case["kc_1thread"]["loss"]) < 1e-5
