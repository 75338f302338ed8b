"""`import render` is cheap: no pxr, no pyglet, no imageio, no sim/kernelcore."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RENDER_DIR = REPO_ROOT / "render"


def test_import_render_has_no_heavy_imports():
    code = (
        "import sys, json, time; t = time.perf_counter(); import render; "
        "dt = time.perf_counter() - t; "
        "print(json.dumps({'mods': sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pxr', 'pyglet', 'imageio', 'PIL', 'sim', 'kernelcore')), 'dt': dt, "
        "'api': [hasattr(render, n) for n in ('UsdRenderer', 'OpenGLViewer', 'FrameRecorder', 'record')]}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["mods"] == []
    assert result["api"] == [True, True, True, True]
    assert result["dt"] < 2.0  # numpy dominates; pxr alone would add ~0.3 s


def _imported_roots(path: Path) -> list[tuple[str, bool]]:
    """(top-level module, imported at module level?) for every import in ``path``."""
    tree = ast.parse(path.read_text())
    top_level = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name.split(".")[0], id(node) in top_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], id(node) in top_level))
    return found


def test_pxr_and_pyglet_each_imported_lazily_in_one_file():
    users: dict[str, list[str]] = {"pxr": [], "pyglet": [], "sim": [], "kernelcore": []}
    for path in sorted(RENDER_DIR.rglob("*.py")):
        for mod, at_top in _imported_roots(path):
            if mod in users:
                users[mod].append(str(path.relative_to(REPO_ROOT)))
                assert not at_top, f"{path}: imports {mod} at module level"
    assert sorted(set(users["pxr"])) == ["render/usd_writer.py"]
    assert sorted(set(users["pyglet"])) == ["render/opengl/backend.py"]
    assert users["sim"] == [] and users["kernelcore"] == []
