"""Property (hypothesis): every program the frontend accepts compiles and runs; every other
program is rejected with a KernelCompileError naming the program's own file and a line
of it. Programs mix valid statements with invalid ones: wrong types, unknown names,
kc.tid() in a function, bad indices, unsupported statements, bad calls, recursion."""
import importlib
import sys
import uuid

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernelcore as kc

# Kernel locals: i (thread), x (float), n (int), v (vec3), m (mat22), q (quat);
# arguments a (float array), b (int array), grid (2-d float array).
VALID = [
    "x = x + a[i] * 2.0",
    "n = n + b[i] % 3",
    "n = n // 2 - b[-1]",
    "x = x % 1.5",
    "v = v * x",
    "v[1] = x",
    "v[-1] = x + 1.0",
    "x = v[2] + m[1, 0] + m[-1, -1]",
    "x = v[n % 3]",
    "x = kc.length(v) + q[3]",
    "x = helper(x)",
    "x = helper(x, 3.0)",
    "x = helper(s=0.5, x=x)",
    "n = ihelper(n)",
    "a[i] = x",
    "b[i] = n",
    "grid[i, -1] = x",
    "kc.atomic_add(a, 0, 1.0)",
    "print(q)",
    "print(v, m, x, n)",
    "if x > 0.5:\n    x = x - 1.0",
    "for j in range(3):\n    x = x + float(j)",
    "for j in range(n % 4):\n    x = x * 0.5",
    "while n > 100:\n    n = n - 7",
    "x = float(n) / 3.0 if n > 0 else x",
    "pr = Pair()\npr.a = x\npr.b = n\nx = pr.a + float(pr.b)",
    "tf = kc.transform(v, q)\nx = tf.p[0] + tf.q.w",
    "x, n = two_values(x, n)",
    "v = kc.normalize(v + kc.vec3(0.0, 0.0, 1.0))",
    "m = m * kc.transpose(m)",
    "n = (n & 7) | 1",
    "x = kc.min(x, 1.0) + kc.clamp(x, -1.0, 1.0)",
    "vi = kc.vec3i(n, 2, 3)\nn = vi[1] // (vi[2] - 3)",
    "v.z = x\nq.x = 0.5",
    "grid[i % 4, n % 2] += x",
    "x = kc.static(SCALE) * x",
    "for j in range(kc.static(LOOPS)):\n    x = x + kc.static(WEIGHTS[j])",
]
INVALID = [
    "a[i] = n",                      # int into a float array
    "x = v + x",                     # vec3 + float
    "x = undefined_thing + 1.0",     # unknown name
    "x = kc.no_such_builtin(x)",     # unknown builtin
    "x = tid_helper(x)",             # kc.tid() inside a function
    "x = v[3]",                      # constant index out of range
    "x = m[2, 0]",
    "q[4] = 1.0",
    "x = a[i, 0]",                   # too many indices
    "x = v[x]",                      # float index
    "x = [1.0, 2.0]",                # unsupported expression
    "with open('f') as fh:\n    pass",   # unsupported statements
    "del x",
    "assert x > 0.0",
    "raise ValueError('no')",
    "import math",
    "a.fill_(0.0)",                  # array method
    "x = helper()",                  # missing argument
    "x = helper(x, t=1.0)",          # unknown keyword
    "x = recursive(x)",              # recursion
    "n = 7 // 0",                    # constant division by zero
    "x = x if n > 0 else v",         # branches of different types
    "for j in range(n):\n    x = v",  # a loop that changes a variable's type
    "return 1",                      # a kernel returns nothing
    "x = 'text'",
    "x = lambda: 0",
    "pr = Pair()\npr.c = 1.0",          # no such field
    "x = v.w",                       # a vec3 has no w
    "x = kc.float64(x)\na[i] = x",    # float64 into a float32 array
    "x, n = two_values(x)",          # missing argument
    "x = kc.static(WEIGHTS[9])",     # static expression that fails
    "a[i].x = 1.0",                  # a float element has no fields
    "v = kc.vec3(1.0, 2.0)",         # too few components
]

HEADER = '''import kernelcore as kc


@kc.func
def helper(x: float, s: float = 2.0) -> float:
    return x * s


@kc.func
def ihelper(n: int) -> int:
    return n * 3 + 1


@kc.func
def tid_helper(x: float) -> float:
    return x + float(kc.tid())


SCALE = 1.5
LOOPS = 2
WEIGHTS = [0.25, 4.0]


@kc.struct
class Pair:
    a: float
    b: int


@kc.func
def two_values(x: float, n: int):
    return x * 0.5, n + 1


@kc.func
def recursive(x: float) -> float:
    if x > 1.0:
        return recursive(x * 0.5)
    return x
'''


def kernel_source(name, statements):
    lines = ["", "", "@kc.kernel",
             f"def {name}(a: kc.array(dtype=float), b: kc.array(dtype=int), grid: kc.array2d(dtype=float)):",
             "    i = kc.tid()", "    x = a[i]", "    n = b[i]", "    v = kc.vec3(x, 1.0, 2.0)",
             "    m = kc.mat22(1.0, 2.0, 3.0, 4.0)", "    q = kc.quat(0.0, 0.0, 0.0, 1.0)"]
    for s in statements:
        lines += ["    " + part for part in s.split("\n")]
    return "\n".join(lines) + "\n"


program = st.lists(st.lists(st.one_of(st.sampled_from(VALID), st.sampled_from(VALID), st.sampled_from(INVALID)),
                            min_size=1, max_size=4), min_size=3, max_size=3)


def _import(tmp_path, text):
    name = "fuzz_" + uuid.uuid4().hex[:10]
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name), str(path)
    finally:
        sys.path.remove(str(tmp_path))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program)
def test_frontend_accepts_only_programs_that_compile_and_run(tmp_path, monkeypatch, kernels):
    # debug mode: a run-time index out of range is a clean KernelRuntimeError, not a crash
    monkeypatch.setattr(kc.config, "mode", "debug")
    text = HEADER + "".join(kernel_source(f"k{j}", stmts) for j, stmts in enumerate(kernels))
    mod, path = _import(tmp_path, text)
    nlines = text.count("\n")
    for j, stmts in enumerate(kernels):
        a = kc.array(np.array([0.25, 0.75, 1.5, -2.0], np.float32))
        b = kc.array(np.array([3, -4, 250, 7], np.int32))
        grid = kc.zeros((4, 2), dtype=float)
        try:
            kc.launch(getattr(mod, f"k{j}"), dim=4, inputs=[a, b, grid])
        except kc.KernelCompileError as e:
            assert any(s in INVALID for s in stmts), f"rejected a valid program: {stmts}\n{e}"
            assert e.filename == path and 1 <= e.lineno <= nlines, (str(e), stmts)
            assert e.source_line and e.source_line.strip() in text, (str(e), stmts)
            assert len(str(e).splitlines()[0]) < 400, str(e)
            continue
        except kc.KernelRuntimeError:
            continue   # a checked run-time error (debug mode) is a clean outcome too
        assert not any(s in INVALID for s in stmts), f"accepted an invalid program: {stmts}"
