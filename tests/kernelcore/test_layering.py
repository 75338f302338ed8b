"""kernelcore's modules form layers with one-way imports (kernelcore/layers.py).

Two checks, since each misses what the other sees:
- static: every ``import`` of a kernelcore module in a kernelcore file, at module level and
  inside functions (the lazy imports that used to hide the cycles), points to the module's
  own layer or a lower one;
- dynamic: each module imported alone, in a child interpreter whose ``sys.modules`` holds no
  kernelcore module (the packages it sits in replaced by empty stand-ins, so their
  ``__init__`` does not pull in everything), imports without error and loads only modules of
  its own or lower layers.  One child imports all modules in turn, clearing kernelcore
  from ``sys.modules`` before each, so the test costs one interpreter start-up.
Then ``import kernelcore`` fills every hook slot through which a lower layer calls a
higher one.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG_DIR = os.path.join(ROOT, "kernelcore")
sys.path.insert(0, ROOT)

from kernelcore.layers import LAYERS, layer_of  # noqa: E402


def _modules() -> dict:
    """{module name relative to kernelcore ("" for the package): path} of every .py file."""
    out = {}
    for dirpath, _, files in os.walk(PKG_DIR):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, PKG_DIR)[:-3].replace(os.sep, ".")
                out["" if rel == "__init__" else rel.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _qualified(rel: str) -> str:
    return "kernelcore" + ("." + rel if rel else "")


def _imported(rel: str, path: str):
    """(kernelcore module imported, relative to kernelcore; line) for every import in the file."""
    is_pkg = path.endswith("__init__.py")
    here = rel.split(".") if rel else []
    package = here if is_pkg else here[:-1]
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                mod = ".".join(["kernelcore"] + base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from . import x``: x is a submodule when there is such a file, else a name
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}"[len("kernelcore."):] in MODULES else mod
                       for a in node.names]
        else:
            continue
        for t in targets:
            if t == "kernelcore" or t.startswith("kernelcore."):
                yield t[len("kernelcore."):] if t != "kernelcore" else "", node.lineno


def test_every_module_has_a_layer():
    listed = [m for _, mods in LAYERS for m in mods]
    assert len(listed) == len(set(listed)), "a module is listed twice in kernelcore/layers.py"
    assert sorted(set(listed) - set(MODULES)) == [], "kernelcore/layers.py lists modules that do not exist"
    for m in MODULES:
        layer_of(m)  # raises, naming the module, when it is missing


def test_no_import_points_to_a_higher_layer():
    bad = []
    for rel, path in sorted(MODULES.items()):
        for target, line in _imported(rel, path):
            if layer_of(target) > layer_of(rel):
                bad.append(f"{os.path.relpath(path, ROOT)}:{line} ({LAYERS[layer_of(rel)][0]}) imports "
                           f"{_qualified(target)} ({LAYERS[layer_of(target)][0]})")
    assert not bad, "upward imports:\n" + "\n".join(dict.fromkeys(bad))


_CHILD = r"""
import importlib, json, sys, traceback, types
root, targets = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, root)
PACKAGES = {"kernelcore": root + "/kernelcore", "kernelcore.builtins": root + "/kernelcore/builtins",
            "kernelcore.interop": root + "/kernelcore/interop"}

def clear():
    for m in [m for m in sys.modules if m == "kernelcore" or m.startswith("kernelcore.")]:
        del sys.modules[m]

report = {}
for name in targets:
    clear()
    stubs = set()
    if name != "kernelcore":   # the package itself runs its real __init__ (it imports everything)
        for pkg, path in PACKAGES.items():
            if pkg != name:
                stub = types.ModuleType(pkg)
                stub.__path__ = [path]
                sys.modules[pkg] = stub
                stubs.add(pkg)
    try:
        importlib.import_module(name)
        error = None
    except BaseException:
        error = traceback.format_exc()
    loaded = sorted(m for m in sys.modules if (m == "kernelcore" or m.startswith("kernelcore.")) and m not in stubs)
    report[name] = {"error": error, "loaded": loaded}
clear()
try:
    import kernelcore
    from kernelcore import hooks
    report["empty hooks"] = hooks.empty_slots()
except BaseException:
    report["empty hooks"] = traceback.format_exc()
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def imported_alone():
    targets = [_qualified(m) for m in sorted(MODULES)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, ROOT, json.dumps(targets)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_each_module_imports_alone_and_loads_only_lower_layers(imported_alone):
    bad = []
    for rel in sorted(MODULES):
        r = imported_alone[_qualified(rel)]
        if r["error"]:
            bad.append(f"{_qualified(rel)} fails to import alone:\n{r['error']}")
            continue
        for m in r["loaded"]:
            other = m[len("kernelcore."):] if m != "kernelcore" else ""
            if layer_of(other) > layer_of(rel):
                bad.append(f"importing {_qualified(rel)} ({LAYERS[layer_of(rel)][0]}) loads {m} "
                           f"({LAYERS[layer_of(other)][0]})")
    assert not bad, "\n".join(bad)


def test_import_kernelcore_fills_every_hook(imported_alone):
    assert imported_alone["empty hooks"] == []


def test_an_empty_hook_says_who_fills_it():
    from kernelcore import hooks

    empty = hooks._slot("example", "kernelcore.tape")
    try:
        with pytest.raises(RuntimeError, match="'example' is empty: kernelcore.tape fills it"):
            empty(1)
        hooks.example = empty
        assert "example" in hooks.empty_slots()
        hooks.fill("example", lambda x: x + 1)
        assert "example" not in hooks.empty_slots() and hooks.example(1) == 2
    finally:
        hooks._PROVIDERS.pop("example")
        vars(hooks).pop("example", None)
    with pytest.raises(KeyError, match="no hook slot 'nonesuch'"):
        hooks.fill("nonesuch", print)
