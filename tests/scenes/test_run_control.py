"""kcsim run control: Ctrl-C keeps the frames simulated so far, the kernel warm-up is
reported apart from the simulation, solver.step refuses states of another model."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pxr")

import scenes  # noqa: E402
from scenes.cli import main as kcsim  # noqa: E402
from scenes.runner import SimulationInterrupted  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCENE = '''#usda 1.0
def PhysicsScene "physics"
{
    float kc:timeStep = 0.02
    int kc:substeps = 2
}
def Points "drops"
{
    point3f[] points = [(0, 1, 0), (0.5, 2, 0)]
    float kc:radius = 0.1
    float kc:mass = 0.5
}
'''


class _CtrlCAt:
    """A renderer that presses Ctrl-C while frame ``frame`` is being drawn."""

    def __init__(self, frame):
        self.frame, self.count = frame, -1

    def begin_frame(self, t):
        self.count += 1
        if self.count == self.frame:
            raise KeyboardInterrupt

    def __getattr__(self, name):  # render_* and end_frame: nothing to draw
        return lambda *a, **k: None


def _samples(path):
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(path))
    return UsdGeom.Points(stage.GetPrimAtPath("/root/drops")).GetPointsAttr().GetTimeSamples()


def test_ctrl_c_saves_the_frames_simulated_so_far(tmp_path):
    path = tmp_path / "s.usda"
    path.write_text(SCENE)
    out = tmp_path / "out.usda"
    with pytest.raises(SimulationInterrupted) as info:
        scenes.run(scenes.load(str(path)), frames=50, out=str(out), progress=False, renderers=[_CtrlCAt(4)])
    e = info.value
    # frame 4 was simulated and written to USD (drawn before the interrupting renderer)
    assert e.frames == 4 and e.saved == [str(out)]
    assert f"interrupted after 4 frame(s); frames 0-4 were saved to {out}" in str(e)
    assert _samples(out) == [0.0, 1.0, 2.0, 3.0, 4.0]


class _UsdCtrlC:
    """Wraps a UsdRenderer and presses Ctrl-C half-way through drawing frame ``frame``."""

    def __init__(self, usd, frame):
        self.usd, self.frame = usd, frame

    def __getattr__(self, name):
        return getattr(self.usd, name)

    def render_points(self, *a, **k):
        self.usd.render_points(*a, **k)
        if self.usd.frame == self.frame:
            raise KeyboardInterrupt


def test_a_frame_cut_short_is_not_written(tmp_path, monkeypatch):
    import scenes.runner as runner

    path = tmp_path / "s.usda"
    path.write_text(SCENE)
    out = tmp_path / "out.usda"
    real = runner.open_usd_output
    monkeypatch.setattr(runner, "open_usd_output", lambda *a: _UsdCtrlC(real(*a), 3))
    with pytest.raises(SimulationInterrupted) as info:
        scenes.run(scenes.load(str(path)), frames=50, out=str(out), progress=False)
    assert info.value.frames == 2
    assert _samples(out) == [0.0, 1.0, 2.0]


def test_ctrl_c_in_a_kcsim_process(tmp_path):
    path = tmp_path / "s.usda"
    path.write_text(SCENE)
    out = tmp_path / "out.usda"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "scenes.cli", "run", str(path), "--frames", "100000000",
                          "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=str(ROOT),
                         # a shell that starts the suite in the background without job control makes
                         # children ignore SIGINT, and Python then installs no KeyboardInterrupt handler
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = b""
    deadline = time.time() + 300
    while b"kernels ready" not in err and time.time() < deadline and p.poll() is None:
        err += os.read(p.stderr.fileno(), 4096)
    time.sleep(1.0)  # some frames
    p.send_signal(signal.SIGINT)
    _, rest = p.communicate(timeout=120)
    err = (err + rest).decode()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    line = [ln for ln in err.splitlines() if "interrupted after" in ln][-1]
    frames = int(line.split("interrupted after ")[1].split(" ")[0])
    assert frames > 0 and f"were saved to {out}" in line
    assert len(_samples(out)) == frames + 1


def test_kernel_warm_up_is_reported_apart_from_the_simulation(tmp_path, capsys):
    path = tmp_path / "s.usda"
    path.write_text(SCENE)
    assert kcsim(["run", str(path), "--frames", "3"]) == 0
    cap = capsys.readouterr()
    err = cap.err
    # the phase is announced before the bar starts, with its own time
    assert err.index("compiling kernels (first run only") < err.index("kernels ready in") < err.index("simulating")
    assert "kernels ready in" in cap.out and "frames/s" in cap.out
    res = scenes.run(scenes.load(str(path)), frames=2, progress=False)
    assert res.compile_seconds > 0 and res.elapsed > 0 and res.frames == 2


def test_step_refuses_states_of_another_model():
    import sim

    def model(n):
        b = sim.ModelBuilder()
        b.add_particles(np.random.default_rng(0).uniform(size=(n, 3)), mass=1.0, radius=0.05)
        return b.finalize()

    small, big = model(3), model(5)
    solver = sim.SolverSemiImplicit(small)
    s0, s1 = small.state(), small.state()
    solver.step(small, s0, s1, None, 1e-3)
    with pytest.raises(ValueError, match=r"state_out.particle_q has 5 entries but the model has 3 particles"):
        solver.step(small, s0, big.state(), None, 1e-3)
    with pytest.raises(ValueError, match=r"state_in.particle_q has 5 entries"):
        solver.step(small, big.state(), s1, None, 1e-3)
    with pytest.raises(ValueError, match=r"control.particle_f_ext has 5 entries"):
        solver.step(small, s0, s1, big.control(), 1e-3)
    dem = sim.SolverDEM(small)
    with pytest.raises(ValueError, match="another model"):
        dem.step(small, s0, big.state(), None, 1e-3)


def test_an_internal_error_is_one_line_without_traceback(tmp_path, capsys, monkeypatch):
    import scenes.cli as cli

    path = tmp_path / "s.usda"
    path.write_text(SCENE)

    def broken(*a, **k):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cli, "run", broken)
    monkeypatch.delenv("KCSIM_TRACEBACK", raising=False)
    assert kcsim(["run", str(path), "--frames", "1"]) == 1
    err = capsys.readouterr().err
    assert "kcsim: internal error: RuntimeError: boom second line (set KCSIM_TRACEBACK=1" in err
    assert "Traceback" not in err
    monkeypatch.setenv("KCSIM_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="boom"):
        kcsim(["run", str(path), "--frames", "1"])
