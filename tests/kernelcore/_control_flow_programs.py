"""Random control-flow programs for the property test (test_properties.py).

Each program is Python source that is both a kernelcore kernel (or a @kc.func and the
kernel that calls it) and, run with ``PyKC`` in place of ``kc``, a plain Python program over
float64 numbers. The programs mix:

- break / continue / return (guarded or not) in static (unrolled) ``range`` loops, dynamic
  ``range(n)`` loops, ``while`` loops (condition form and ``while True`` with a break),
  nested, in kernels and in functions;
- ``and`` / ``or`` conditions (also stored in a flag first) whose right side reads past
  the end of ``x`` or takes the square root / logarithm of a negative number when the left
  side already decides;
- ``a if c else b`` whose untaken side does the same;
- clamped builtins at their edges (``acos``/``asin`` of a clamped argument, ``atan2(0, 0)``).

The Python run raises on any of those (``math.sqrt(-1)``, ``x[8]`` of an 8-element numpy
array), so it checks the generator as well as the compiler; it also records every branch
decision, so a finite-difference entry is only compared where the perturbed runs take the
same branches.
"""
import ast
import math

import numpy as np
from hypothesis import strategies as st

N_X = 8          # length of x
N_THREADS = 4
N_DYN = 3        # value of n (dynamic trip counts)

#: dynamic loops (range(n), while) inside dynamic loops: their adjoints restore each inner
#: loop's own checkpoints (kc_loop.h resets a loop's records at every entry)
NESTED_DYNAMIC = True

SMOOTH = ["acc * 0.9 + a", "kc.sin(acc) + b", "acc * a - b * 0.5", "kc.tanh(acc + a)", "acc + kc.cos(b * acc)",
          "kc.sqrt(1.0 + acc * acc) * b", "acc + 0.1 * kc.float64({J}) * a", "acc * 0.5 + a * b"]
# clamped builtins at their edges: acos/asin of a clamped argument (at and past +-1 the
# adjoint must be the documented 0, never NaN or inf times 0), atan2 at (0, 0)
CLAMPED = ["kc.acos(kc.clamp(acc * 0.5, -1.0, 1.0)) + a", "acc * 0.5 + kc.asin(kc.clamp(b * 3.0, -1.0, 1.0))",
           "acc + kc.atan2(a * 0.0, b * 0.0)", "kc.acos(kc.clamp(kc.cos(acc) * 2.0, -1.0, 1.0)) * b"]
# the untaken side is NaN or reads past the end of x
TERNARIES = ["kc.sqrt(acc) if acc > 0.0 else acc * 0.5",
             "kc.log(a) * acc if a > 0.0 else acc - a",
             "acc - kc.sqrt(-b) if b < 0.0 else acc + b * 0.5",
             "kc.log(acc) if acc > 1.0 else (kc.sqrt(-acc) if acc < 0.0 else acc * a)",
             "acc + (x[i + 2 * {J} + 3] if i + 2 * {J} + 3 < 8 else a)",
             "kc.sqrt(acc * a) if acc > 0.0 and a > 0.0 else kc.sin(acc)"]
PLAIN_CONDS = ["acc > 1.0", "acc < -0.5", "a > b", "a * b > 0.1", "{J} % 2 == 0", "{J} > 1", "acc > a"]
# the right side is NaN (and so has a NaN adjoint) or reads past the end of x when it is not needed
SHORT_CONDS = ["a > 0.0 and kc.sqrt(a) > 0.5",
               "b <= 0.0 or kc.log(b) < -0.7",
               "acc > 0.0 and kc.sqrt(acc) < 1.2",
               "i + 2 * {J} + 3 < 8 and x[i + 2 * {J} + 3] > 0.0",
               "i + 2 * {J} + 3 >= 8 or x[i + 2 * {J} + 3] < 0.2",
               "a > -0.5 and b < 0.5 and kc.sqrt(a + 0.5) > 0.6",
               "(a > 0.0 and kc.sqrt(a) < 0.5) or (b > 0.0 and kc.log(b) > -1.0)",
               "not (acc < 0.0 or kc.log(acc + 0.001) > 0.3)",
               "(kc.sqrt(acc) if acc > 0.0 else -acc) > 0.4"]


class _ProgramWriter:
    """Writes one random program (source lines) from hypothesis draws."""

    def __init__(self, draw, idx, is_func):
        self.draw, self.idx, self.is_func = draw, idx, is_func
        self.lines = []
        self.uid = 0
        self.counters = []       # int counters of the enclosing loops, innermost last
        self.in_dynamic = False

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def fill(self, text):
        return text.replace("{J}", self.counters[-1] if self.counters else "0")

    def cond(self):
        return self.fill(self.pick(PLAIN_CONDS + SHORT_CONDS))

    def value(self):
        return self.fill(self.pick(SMOOTH + TERNARIES + CLAMPED))

    def put(self, depth, text):
        self.lines.append("    " * depth + text)

    def exit_stmt(self, depth, loop_depth):
        kind = self.pick(["return"] + (["break", "continue"] * 2 if loop_depth else []))
        if self.draw(st.integers(0, 4)) > 0:   # usually under a condition
            self.put(depth, f"if {self.cond()}:")
            depth += 1
        if kind != "return":
            self.put(depth, kind)
        elif self.is_func:
            self.put(depth, f"return {self.value()}")
        else:
            self.put(depth, "y[i] = acc")
            self.put(depth, "return")

    def block(self, depth, loop_depth, size):
        self.put(depth, f"acc = {self.value()}")
        for _ in range(size - 1):
            self.stmt(depth, loop_depth)

    def stmt(self, depth, loop_depth):
        kinds = ["assign", "assign", "if", "flag", "exit"]
        if loop_depth < 2:
            kinds += ["static"] + (["dynamic", "while"] if NESTED_DYNAMIC or not self.in_dynamic else [])
        kind = self.pick(kinds)
        if kind == "assign":
            self.put(depth, f"acc = {self.value()}")
        elif kind == "exit":
            self.exit_stmt(depth, loop_depth)
        elif kind == "flag":     # a condition stored as a value, used later
            self.uid += 1
            self.put(depth, f"fl{self.uid} = {self.cond()}")
            self.put(depth, f"if fl{self.uid}:")
            self.put(depth + 1, f"acc = {self.value()}")
        elif kind == "if":
            self.put(depth, f"if {self.cond()}:")
            self.block(depth + 1, loop_depth, self.draw(st.integers(1, 2)))
            if self.draw(st.booleans()):
                self.put(depth, "else:")
                self.block(depth + 1, loop_depth, self.draw(st.integers(1, 2)))
        else:
            self.loop(kind, depth, loop_depth)

    def loop(self, kind, depth, loop_depth):
        self.uid += 1
        name = f"j{self.uid}" if kind != "while" else f"w{self.uid}"
        if kind == "static":
            self.put(depth, f"for {name} in range({self.pick(['1', '2', '3', '4', '3, 0, -1'])}):")
        elif kind == "dynamic":
            self.put(depth, f"for {name} in range({self.pick(['n', '1, n', 'n + 1', 'n, 0, -1'])}):")
        else:
            # the counter goes up first, so that a continue cannot loop forever
            self.put(depth, f"{name} = int(0)")
            trips = self.draw(st.integers(1, 4))
            form = self.draw(st.integers(0, 2))
            if form == 0:
                self.put(depth, f"while {name} < {trips}:")
            elif form == 1:   # a short-circuit loop condition: square root of a negative number if evaluated needlessly
                self.put(depth, f"while {name} < {trips} and (acc < 0.0 or kc.sqrt(acc) < 1.5):")
            else:
                self.put(depth, "while True:")
                self.put(depth + 1, f"if {name} >= {trips}:")
                self.put(depth + 2, "break")
            self.put(depth + 1, f"{name} += 1")
        self.counters.append(name)
        outer_dynamic, self.in_dynamic = self.in_dynamic, self.in_dynamic or kind != "static"
        self.block(depth + 1, loop_depth + 1, self.draw(st.integers(1, 3)))
        if self.draw(st.booleans()):
            self.exit_stmt(depth + 1, loop_depth + 1)
        self.counters.pop()
        self.in_dynamic = outer_dynamic

    def program(self):
        k = self.idx
        head = ["    a = x[i]", "    b = x[(i + 1) % 8]", "    acc = a * b"]
        for _ in range(self.draw(st.integers(2, 4))):
            self.stmt(1, 0)
        kernel = f"def k{k}(x: kc.array(dtype=kc.float64), n: int, y: kc.array(dtype=kc.float64)):"
        if self.is_func:
            return "\n".join(["@kc.func", f"def f{k}(x: kc.array(dtype=kc.float64), i: int, n: int):"] + head +
                             self.lines + ["    return acc", "", "", "@kc.kernel", kernel, "    i = kc.tid()",
                                           f"    y[i] = f{k}(x, i, n) - 0.5 * f{k}(x, (i + 2) % 4, n)"])
        return "\n".join(["@kc.kernel", kernel, "    i = kc.tid()"] + head + self.lines + ["    y[i] = acc"])


@st.composite
def control_flow_program(draw, idx):
    """Source of kernel ``k<idx>(x, n, y)`` (float64 x of length N_X, y of length N_THREADS)."""
    return _ProgramWriter(draw, idx, draw(st.booleans())).program()


# ------------------------------------------------------------------ the same programs in Python

class _RecordDecisions(ast.NodeTransformer):
    """Wraps every branch decision (if / while / ternary tests, and/or operands) in _t(...)."""

    @staticmethod
    def _wrap(node):
        return ast.Call(func=ast.Name("_t", ast.Load()), args=[node], keywords=[])

    def visit_If(self, node):
        self.generic_visit(node)
        node.test = self._wrap(node.test)
        return node

    visit_While = visit_If
    visit_IfExp = visit_If

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = [self._wrap(v) for v in node.values]
        return node


class PyKC:
    """The kernel language's names for a plain Python (float64) run; math raises on NaN inputs."""
    sin, cos, tanh, sqrt, log = math.sin, math.cos, math.tanh, math.sqrt, math.log
    acos, asin, atan2 = math.acos, math.asin, math.atan2

    @staticmethod
    def clamp(x, lo, hi):
        return min(max(x, lo), hi)
    float64 = float
    thread = 0

    @staticmethod
    def kernel(f):
        return f

    func = kernel

    @staticmethod
    def array(**kw):
        return None

    @classmethod
    def tid(cls):
        return cls.thread


def python_programs(programs):
    """Namespace holding the programs as Python functions (decisions go to ns['_trace'])."""
    tree = ast.fix_missing_locations(_RecordDecisions().visit(ast.parse("\n\n\n".join(programs))))
    trace = []

    def _t(v):
        trace.append(bool(v))
        return v

    ns = {"kc": PyKC, "_t": _t, "_trace": trace}
    exec(compile(tree, "<generated>", "exec"), ns)
    return ns


def run_python(ns, k, x):
    """Outputs of kernel k<k> for every thread, and each thread's branch decisions."""
    y = np.zeros(N_THREADS)
    decisions = []
    for i in range(N_THREADS):
        PyKC.thread = i
        ns["_trace"].clear()
        ns[f"k{k}"](x, N_DYN, y)
        decisions.append(tuple(ns["_trace"]))
    return y, decisions


def python_jacobian(ns, k, x0, eps=1e-6):
    """Central differences of the Python run, (N_THREADS, N_X), and where they are valid:
    both perturbed runs of the thread take the branches the unperturbed one takes."""
    _, base = run_python(ns, k, x0)
    fd = np.zeros((N_THREADS, N_X))
    valid = np.ones((N_THREADS, N_X), dtype=bool)
    for j in range(N_X):
        xp, xm = x0.copy(), x0.copy()
        xp[j] += eps
        xm[j] -= eps
        (yp, dp), (ym, dm) = run_python(ns, k, xp), run_python(ns, k, xm)
        fd[:, j] = (yp - ym) / (2.0 * eps)
        valid[:, j] = [dp[i] == base[i] == dm[i] for i in range(N_THREADS)]
    return fd, valid
