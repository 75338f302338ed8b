"""The benchmark scripts run at tiny sizes and report the fields the notes quote."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kernelcore as kc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not kc.is_cuda_available(), reason="no CUDA GPU here")])])
def test_bandwidth_benchmark_reports_ratios(tmp_path, device):
    import bench_bandwidth

    out = tmp_path / "bw.json"
    bench_bandwidth.main(["--device", device, "--n", "4096", "--repeats", "2", "--out", str(out)])
    d = json.loads(out.read_text())
    for name in ("saxpy", "integrate"):
        r = d["results"][name]
        assert r["bandwidth_GBps"] > 0 and r["speedup_vs_numpy"] > 0


def test_autodiff_benchmark_long_loop_case(tmp_path):
    import bench_autodiff

    out = tmp_path / "autodiff.json"
    iterations = 300   # beyond kc.config.loop_checkpoints: the recomputing reverse sweep runs
    bench_autodiff.main(["--cases", "long_loop", "--loop-iterations", str(iterations), "--repeats", "1",
                         "--warmup", "1", "--calls", "1", "--no-warp", "--kc-threads", "1", "--out", str(out)])
    d = json.loads(out.read_text())
    r = d["cases"]["long_loop"]["kc_1thread"]
    assert r["backward_over_forward"] > 0 and d["settings"]["long_loop"]["iterations"] == iterations
    # the benchmark's gradient against float64 numpy: d s_n / d a for s <- 0.9 sin(s) + 0.1 a, s_0 = a
    case = bench_autodiff.KcLongLoop(iterations)
    case.forward_backward()
    a = case.p.numpy().astype(np.float64)
    s, ds = a.copy(), np.ones_like(a)
    for _ in range(iterations):
        s, ds = 0.9 * np.sin(s) + 0.1 * a, 0.9 * np.cos(s) * ds + 0.1
    np.testing.assert_allclose(case.loss.numpy()[0], s.sum(), rtol=1e-4)
    np.testing.assert_allclose(case.grad, ds, rtol=1e-3, atol=1e-5)


def test_threads_under_load_benchmark_reports_ratios(tmp_path):
    """Runs at a tiny size; the competing busy process is started and stopped by the script."""
    import bench_threads_under_load

    out = tmp_path / "load.json"
    bench_threads_under_load.main(["--n", "4096", "--steps", "3", "--repeats", "1", "--policies", "default",
                                   "--out", str(out)])
    d = json.loads(out.read_text())["results"]["default"]
    assert d["omp_wait_policy"] in ("PASSIVE", None)  # None: libgomp was loaded first, the user's setting stands
    for key in ("loaded_over_unloaded_fwd", "loaded_default_over_one_thread_fwd", "unloaded_default_over_one_thread_bwd"):
        assert d["ratios"][key] > 0


def test_mpm_benchmark_runs_and_its_gradient_matches_taichi(tmp_path):
    """bench_mpm at tiny sizes; with taichi installed the 2-D gradient (taichi recomputes grids in its
    backward, kernelcore replays stored ones) must agree with kernelcore's."""
    have_taichi = importlib.util.find_spec("taichi") is not None   # not imported here (see below)
    bench_mpm = os.path.join(ROOT, "benchmarks", "bench_mpm.py")
    out = tmp_path / "mpm.json"
    argv = ["--particles3d-side", "6", "--grid3d", "12", "--side2d", "8", "--grid2d", "24", "--steps", "6",
            "--repeats", "1", "--memory-steps", "4", "--out", str(out)] + ([] if have_taichi else ["--no-taichi"])
    # in a child process: ti.init() turns on flush-to-zero for the whole process, which must not
    # leak into the rest of the test session
    subprocess.run([sys.executable, bench_mpm] + argv, check=True, timeout=900)
    d = json.loads(out.read_text())
    assert d["cases"]["step3d"]["kernelcore_step_s"] > 0
    assert d["cases"]["diffmpm2d"]["kernelcore_forward_backward_s"] > 0
    assert d["cases"]["memory"]["gradient_finite"]
    if d["warp_version"] is not None:   # warp runs bench_autodiff's MLS-MPM kernels on the same problem
        assert d["cases"]["diffmpm2d"]["gradient_rel_diff_vs_warp"] < 1e-4
    if have_taichi:
        assert d["cases"]["diffmpm2d"]["gradient_rel_diff_vs_taichi"] < 1e-4
    else:
        pytest.skip("taichi is not installed: the peer comparison was skipped")


def test_rigid_benchmark_kernelcore_pile_lands(tmp_path):
    """kernelcore only (no Newton): the JSON fields, and the pile's bottom layer rests on the ground."""
    import bench_rigid

    out = tmp_path / "rigid.json"
    bench_rigid.main(["--sizes", "12", "--steps", "2", "--settle", "150", "--repeats", "1", "--kc-threads", "default",
                      "--no-newton", "--profile", "--out", str(out)])
    d = json.loads(out.read_text())
    r = d["results"]["12"]
    assert d["newton_unavailable"] == "not requested (--no-newton)"
    assert r["kc"]["steps_per_second"] > 0 and r["kc_profile_s_per_step"]["integrate_bodies"] > 0
    # the lowest bodies rest on the ground: a capsule on its side at 0.04 m, a sphere at 0.06 m
    assert 0.035 < r["kc"]["min_height_m"] < 0.065


def test_rigid_benchmark_newton_simulates_the_same_pile(tmp_path):
    """With Newton installed: both engines run the same pile; after 0.25 s (free fall, then the
    bottom layer lands) the bodies' heights agree, and a speedup is reported."""
    pytest.importorskip("newton", reason="newton (pip install newton) is the benchmark's reference engine")
    import bench_rigid

    kc_pile, nt_pile = bench_rigid.KcPile(9), bench_rigid.NewtonPile(9)
    for p in (kc_pile, nt_pile):
        p.steps(250)
    np.testing.assert_allclose(kc_pile.heights(), nt_pile.heights(), atol=0.01)
    out = tmp_path / "rigid.json"
    bench_rigid.main(["--sizes", "9", "--steps", "2", "--settle", "2", "--repeats", "1", "--kc-threads", "default",
                      "--out", str(out)])
    r = json.loads(out.read_text())["results"]["9"]
    assert r["speedup_kc_vs_newton"] > 0 and r["newton"]["steps_per_second"] > 0


def test_articulation_benchmark_engines_agree(tmp_path):
    """Tiny batches: every engine present ends the cart-pole run at the same pole angle."""
    import bench_articulation

    out = tmp_path / "articulation.json"
    res = bench_articulation.main(["--sizes", "2", "--robots", "2", "--steps", "3", "--repeats", "1", "--no-newton",
                                   "--out", str(out)])
    case = res["cases"]["2"]
    assert case["kc"]["batch_steps_per_s"] > 0
    if "mujoco" in case:
        assert abs(case["kc"]["pole_angle"] - case["mujoco"]["pole_angle"]) < 1e-4
        assert case["kc_over_mujoco"] > 0
    assert json.loads(out.read_text())["cases"]["walker_2"]["kc"]["torso_height"] > 0.2


def test_smoke_benchmark_reports_ratios(tmp_path):
    import bench_smoke

    out = tmp_path / "smoke.json"
    bench_smoke.main(["--res2d", "16", "--res3d", "8", "--repeats", "1", "--no-warp", "--no-taichi", "--out", str(out)])
    d = json.loads(out.read_text())
    for name in ("2d", "3d"):
        r = d["cases"][name]
        assert r["numpy_over_kernelcore"] > 0 and r["kernelcore_relative_divergence"] < 1e-5


def test_cloth_benchmark_reports_steps_per_second(tmp_path):
    import bench_cloth

    out = tmp_path / "cloth.json"
    bench_cloth.main(["--sizes", "4", "--steps", "2", "--settle", "1", "--repeats", "1", "--xpbd-iterations", "2",
                      "--vbd-iterations", "2",
                      "--no-newton", "--out", str(out)])
    r = json.loads(out.read_text())["results"]["4"]
    for name in ("kc_semi", "kc_semi_self", "kc_xpbd", "kc_vbd"):
        assert r[name]["steps_per_second"] > 0 and r[name]["finite"]


def test_checkpoint_benchmark_tiny(tmp_path):
    import bench_checkpoint

    out = tmp_path / "ckpt.json"
    bench_checkpoint.main(["--steps", "30", "--explosion", "--explosion-steps", "200", "--out", str(out)])
    rows = json.loads(out.read_text())
    plain, ckpt = [r for r in rows if r.get("mode")]
    assert plain["grad_f_ext"] == ckpt["grad_f_ext"] and plain["loss"] == ckpt["loss"]
    for r in rows:
        if "dtype" in r:  # gradient_explosion: dt n (n + 1) / 2
            np.testing.assert_allclose(r["grad"], r["expected"], rtol=1e-5 if r["dtype"] == "float64" else 1e-3)
