"""The bad-input corpus (tests/scenes/bad/*.usda) through ``kcsim``.

Each file states what kcsim must say about it in comment lines after the header:

    # expect: text that must appear in the error line (repeatable; {tmp} = a temp folder)
    # prim: /path            the error names this prim (and the file)
    # args: --out {tmp}/x    extra options for ``kcsim run`` (default: --frames 2)
    # scene: {tmp}/x.usda    run this path instead of the file itself
    # strict: warning        an unsupported feature: an error (exit 2) with --strict, a
                             warning with exit 0 without it (checked with ``kcsim info``)
    # info: text             ``kcsim info`` (without --strict) prints this
    # keeps: {tmp}/x.usda    the run failed after some frames: they are in this file
    # requires: no-cuda | no-ffmpeg | no-display | gl
    # subprocess: yes        run as a real ``kcsim`` process (a representative subset);
                             the rest call scenes.cli.main(argv) in-process to stay fast

Every case must exit with status 2 and one line ``kcsim: error: ...`` on stderr, never a
Python traceback.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pxr")

from scenes.cli import main as kcsim  # noqa: E402

BAD = Path(__file__).parent / "bad"
ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(BAD.glob("*.usda"))


def sidecar(path):
    meta = {"expect": []}
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"#\s*(expect|prim|args|scene|strict|info|keeps|requires|subprocess):\s*(.*)$", line)
        if m:
            key, value = m.group(1), m.group(2).strip()
            if key == "expect":
                meta["expect"].append(value)
            else:
                meta[key] = value
    return meta


def _skip_unless_possible(requires):
    if requires == "no-cuda":
        import kernelcore as kc

        try:
            kc.get_device("cuda")
        except Exception:  # noqa: BLE001 - no CUDA: the case applies
            return
        pytest.skip("this machine has CUDA")
    elif requires == "no-ffmpeg":
        from render import mp4_available

        if mp4_available():
            pytest.skip("imageio-ffmpeg is installed")
    elif requires == "gl":
        try:
            from render import OpenGLViewer

            OpenGLViewer(16, 16, headless=True, show_hud=False).close()
        except Exception as exc:  # noqa: BLE001
            pytest.skip(f"no headless OpenGL context: {exc}")


def run_kcsim(argv, in_process, capsys):
    """(exit status, stdout, stderr) of ``kcsim argv``."""
    if in_process:
        try:
            rc = kcsim(argv)
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
        out = capsys.readouterr()
        return rc, out.out, out.err
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "scenes.cli", *argv], capture_output=True, text=True, env=env,
                       timeout=600, cwd=str(ROOT))
    return p.returncode, p.stdout, p.stderr


def test_corpus_is_large_and_every_case_says_what_it_expects():
    assert len(CASES) >= 60
    for path in CASES:
        assert sidecar(path)["expect"], f"{path.name} has no '# expect:' line"
    assert sum(sidecar(p).get("subprocess") == "yes" for p in CASES) >= 5


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_bad_input(path, tmp_path, capsys, monkeypatch):
    meta = sidecar(path)
    _skip_unless_possible(meta.get("requires"))
    tmp = str(tmp_path)

    def fill(text):
        return text.replace("{tmp}", tmp)

    scene = fill(meta.get("scene", str(path)))
    args = shlex.split(fill(meta.get("args", "")))
    if "--frames" not in args:
        args += ["--frames", "2"]
    strict = meta.get("strict") == "warning"
    argv = ["run", scene, *args, "--no-progress"] + (["--strict"] if strict else [])
    in_process = meta.get("subprocess") != "yes"
    if in_process:
        monkeypatch.delenv("DISPLAY", raising=False)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    rc, out, err = run_kcsim(argv, in_process, capsys)
    assert "Traceback" not in out + err, err
    assert rc == 2, f"exit status {rc}\nstdout: {out}\nstderr: {err}"
    lines = [line for line in err.splitlines() if line.startswith("kcsim: error: ")]
    assert len(lines) == 1, err
    line = lines[0]
    for text in meta["expect"]:
        assert fill(text) in line, f"expected {fill(text)!r} in:\n{line}"
    if "prim" in meta:
        assert f"prim {meta['prim']}" in line and str(path) in line, line
    if strict:
        assert "(an error because of --strict)" in line
        # without --strict the same feature is a warning and the scene still loads
        rc, out, err = run_kcsim(["info", scene], True, capsys)
        assert rc == 0 and "Traceback" not in out + err, err
        assert f"warning: prim {meta['prim']}: " in out and meta["expect"][0] in out, out
        if "info" in meta:
            assert meta["info"] in out, out
    if "keeps" in meta:
        from pxr import Usd, UsdGeom

        frame = int(re.search(r"frame (\d+):", line).group(1))
        assert frame > 1
        stage = Usd.Stage.Open(fill(meta["keeps"]))
        points = [UsdGeom.Points(p) for p in stage.Traverse() if p.GetTypeName() == "Points"]
        assert points and len(points[0].GetPointsAttr().GetTimeSamples()) == frame  # frames 0 .. frame - 1
