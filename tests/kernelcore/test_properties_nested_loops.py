"""Property test (hypothesis): random nests of loops (dynamic range, while, static range short
enough to unroll and too long to, 2-3 levels, inner loops sometimes inside an `if`) whose
inner results enter the outer state multiplicatively and through sin/cos/exp/tanh. Runtime
trip counts include 0 and counts beyond kc.config.loop_checkpoints (set to 4 here, so the
recomputation schedule runs at every level). The same program text runs as a kernel and as
Python on floats: forward values must agree, gradients must match mpmath's 40-digit
numerical derivative of the same program. One module of several kernels per example (one compile).
"""
import math

import mpmath
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_properties import _import_source

import kernelcore as kc

# S: the state of the loop being updated, J: its counter, O/I: outer state and inner result
UPDATES = ["kc.sin(S) * a + b", "S * kc.cos(a * S)", "kc.tanh(S * b) + a * S", "kc.exp(-S * S) * a + S * b",
           "S * b + kc.sin(a * kc.float64(J))"]
INITS = ["S", "S * a", "kc.sin(S) + b", "a * kc.cos(kc.float64(J))"]
COMBINES = ["O * kc.cos(I)", "kc.sin(I) * O + b", "kc.exp(-I * I) * O + a", "kc.tanh(O * I) + b", "O * kc.sin(I)",
            "O * kc.tanh(I) + a"]
CONDS = ["S > 0.0", "J % 2 == 0", "J != 1"]
KINDS = ["dynamic", "while", "static_unrolled", "static_loop"]   # static_loop: longer than max_unroll
TRIP_COUNTS = [0, 1, 2, 5, 9]
SLOTS = 4


def _fill(template, **names):
    for k, v in names.items():
        template = template.replace(k, v)
    return template


@st.composite
def loop_level(draw, depth, levels, pad):
    """Lines of loop level `depth` (1-based) updating the state s<depth-1>."""
    kind = draw(st.sampled_from(KINDS))
    state, counter = f"s{depth - 1}", (f"w{depth}" if kind == "while" else f"j{depth}")
    lines = []
    if kind == "while":
        lines += [f"{pad}{counter} = int(0)", f"{pad}while {counter} < n{depth}:"]
    elif kind == "dynamic":
        lines.append(f"{pad}for {counter} in range(n{depth}):")
    else:
        lines.append(f"{pad}for {counter} in range({2 if kind == 'static_unrolled' else 17}):")
    inner_pad = pad + "    "
    if depth < levels:
        inner = f"s{depth}"
        lines.append(f"{inner_pad}{inner} = {_fill(draw(st.sampled_from(INITS)), S=state, J=counter)}")
        if draw(st.booleans()):
            lines.append(f"{inner_pad}if {_fill(draw(st.sampled_from(CONDS)), S=state, J=counter)}:")
            lines += draw(loop_level(depth + 1, levels, inner_pad + "    "))
        else:
            lines += draw(loop_level(depth + 1, levels, inner_pad))
        lines.append(f"{inner_pad}{state} = {_fill(draw(st.sampled_from(COMBINES)), O=state, I=inner)}")
    else:
        for _ in range(draw(st.integers(1, 2))):
            lines.append(f"{inner_pad}{state} = {_fill(draw(st.sampled_from(UPDATES)), S=state, J=counter)}")
    if kind == "while":
        lines.append(f"{inner_pad}{counter} += 1")
    return lines


@st.composite
def nested_program(draw, idx):
    """(kernel source, python source) of one random loop nest."""
    body = ["    a = x[0]", "    b = x[1]", "    s0 = x[2]"]
    body += draw(loop_level(1, draw(st.integers(2, 3)), "    "))
    kernel = [f"@kc.kernel", f"def k{idx}(x: kc.array(dtype=kc.float64), n1: int, n2: int, n3: int, "
              "y: kc.array(dtype=kc.float64)):"] + body + ["    y[0] = s0"]
    python = [f"def p{idx}(x, n1, n2, n3):"] + body + ["    return s0"]
    return "\n".join(kernel), "\n".join(python)


class PythonKC:
    """The kernel language's functions on Python floats."""
    sin, cos, tanh, exp = math.sin, math.cos, math.tanh, math.exp
    float64 = float


class MpmathKC:
    """The kernel language's functions on mpmath numbers (the reference gradient)."""
    sin, cos, tanh, exp = mpmath.sin, mpmath.cos, mpmath.tanh, mpmath.exp
    float64 = mpmath.mpf


def _reference_gradient(f, x0):
    """d f / d x at ``x0`` by mpmath's numerical differentiation at 40 significant digits (the
    program run on mpmath numbers): exact to far below the test's tolerance. Float64 finite
    differences were not: loop nests amplify higher derivatives, and a fourth-order difference
    was off by 2.5e-4 (relative) on a nest where the kernel's gradient agreed with this one to
    1e-12 (CI, session 14)."""
    with mpmath.workdps(40):
        x = [mpmath.mpf(float(v)) for v in x0]
        return np.array([float(mpmath.diff(lambda v, j=j: f(x[:j] + [v] + x[j + 1:]), x[j])) for j in range(len(x))])


PROGRAMS_PER_MODULE = 8


# no shrinking: every candidate is a compile, and the failure message already shows the program
@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.tuples(*[nested_program(k) for k in range(PROGRAMS_PER_MODULE)]),
       st.lists(st.tuples(*[st.sampled_from(TRIP_COUNTS)] * 3), min_size=PROGRAMS_PER_MODULE,
                max_size=PROGRAMS_PER_MODULE))
def test_random_loop_nests_match_python_and_finite_differences(tmp_path, programs, counts):
    mod = _import_source(tmp_path, "import kernelcore as kc\n\n" + "\n\n".join(k for k, _ in programs) + "\n")
    python, precise = {"kc": PythonKC}, {"kc": MpmathKC}
    exec("\n\n".join(p for _, p in programs), python)
    exec("\n\n".join(p for _, p in programs), precise)
    rng = np.random.default_rng(len(programs[0][0]))
    saved = kc.config.loop_checkpoints
    kc.config.loop_checkpoints = SLOTS
    try:
        for k, (source, _) in enumerate(programs):
            trips = counts[k]
            x0 = np.array([rng.uniform(0.3, 0.9), rng.uniform(-0.9, -0.3), rng.uniform(-1.0, 1.0)])
            x = kc.array(x0, dtype=kc.float64, requires_grad=True)
            y = kc.zeros(1, dtype=kc.float64, requires_grad=True)
            with kc.Tape() as tape:
                kc.launch(getattr(mod, f"k{k}"), dim=1, inputs=[x, *trips], outputs=[y])
            tape.backward(loss=y)
            ref = python[f"p{k}"]
            where = f"\n{source}\ntrip counts {trips}, x = {x0.tolist()}"
            np.testing.assert_allclose(y.numpy()[0], ref(list(x0), *trips), rtol=1e-9, atol=1e-12, err_msg=where)
            exact = _reference_gradient(lambda v: precise[f"p{k}"](v, *trips), x0)
            np.testing.assert_allclose(x.grad.numpy(), exact, rtol=1e-6, atol=1e-9, err_msg=where)
    finally:
        kc.config.loop_checkpoints = saved
