"""Reference documentation of the builtin table, generated from the table itself.

    python -m kernelcore.builtins.docgen [docs/builtins.md] [--import geometry ...]

writes one section per family (the module that registered the rows) with each overload's
signature, result, whether it has an adjoint, and its doc string.  ``--import`` loads
extension packages first so their rows are documented too.
"""
from __future__ import annotations

import importlib
import os
import sys

from .registry import _OPERATOR_NAMES, Builtin, registry

# how operator rows are reached from kernel code (everything else is kc.<name>(...))
SYNTAX = {
    "add": "a + b", "sub": "a - b", "mul": "a * b, a @ b", "div": "a / b", "mod": "a % b", "floordiv": "a // b",
    "neg": "-a", "pos": "(internal)", "lt": "a < b", "le": "a <= b", "gt": "a > b", "ge": "a >= b", "eq": "a == b",
    "ne": "a != b", "bit_and": "a & b", "bit_or": "a | b", "bit_xor": "a ^ b", "lshift": "a << b",
    "rshift": "a >> b", "invert": "~a", "logical_and": "a and b", "logical_or": "a or b", "logical_not": "not a",
    "truth": "if x: / bool(x)", "select": "merge after if/else, a if c else b", "where": "(evaluates both sides)", "load": "arr[i, ...]",
    "store": "arr[i, ...] = v", "extract": "v[i], v.x, m[i, j], t.p", "assign_copy": "v[i] = x, v.x = x",
    "view": "arr[i] (fewer indices)", "array_len": "len(arr)", "array_shape": "arr.shape[k]",
    "atomic_add": "arr[i] += v", "atomic_sub": "arr[i] -= v", "pow": "x ** y",
    "outer_scaled": "outer(a, b) * s (fused)", "transform_get_translation": "t.p", "transform_get_rotation": "t.q",
}

FAMILY_TITLES = {
    "kernelcore.builtins.scalar": "Scalars: operators and math",
    "kernelcore.builtins.vector": "Vectors and matrices",
    "kernelcore.builtins.quaternion": "Quaternions, transforms and spatial vectors",
    "kernelcore.builtins.linalg": "3x3 decompositions and matrices from vectors",
    "kernelcore.builtins.atomics": "Arrays and atomics",
    "kernelcore.builtins.random": "Random numbers",
    "kernelcore.builtins.noise": "Noise",
}

LEGEND = """\
Argument patterns: `float32`, `int32`, `bool`, ... are concrete types; `F` is any float
type, `I` any integer type, `S` any numeric scalar, `T` any value type — each letter is
bound once per call, so `add(S, S)` needs both arguments of the same type.
`vec(N,S)`, `mat(R,C,S)`, `quat(F)`, `transform(F)` are composites whose sizes and
dtype bind the same way; `array(T)` is an array of element type T.  Untyped literals
(`2.0`, `1`) adapt to the type they meet; an int literal where `F` is asked for is a float,
as in Python (`sqrt(2)`), and one outside its type's range is a compile error (explicit casts
such as `uint32(-1)` wrap).  *adjoint*: the builtin has a native `adj_`
twin and gradients flow through it (rounding functions and other piecewise-constant
builtins have a zero adjoint).  Quaternions are (x, y, z, w); matrices are row-major.
"""


def _result_text(row: Builtin) -> str:
    if row.result is None:
        return "None"
    if callable(row.result):
        return getattr(row.result, "doc", "(depends on the arguments)")
    return str(row.result)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(reg=registry, include=None) -> str:
    """The whole reference as markdown text (rows for which ``include(row)`` is true, or all)."""
    families: dict[str, list[Builtin]] = {}
    for rows in reg.rows.values():
        for row in rows:
            if include is None or include(row):
                families.setdefault(row.module or "(unknown)", []).append(row)
    out = ["# Kernel builtins", "", "Generated from the builtin table by `python -m kernelcore.builtins.docgen`; "
           "do not edit by hand.", "", LEGEND]
    order = [m for m in FAMILY_TITLES if m in families] + sorted(m for m in families if m not in FAMILY_TITLES)
    for module in order:
        rows = families[module]
        names = sorted({r.name for r in rows})
        n_diff = sum(r.differentiable for r in rows)
        out += [f"## {FAMILY_TITLES.get(module, module)}", "",
                f"`{module}` — {len(names)} builtins, {len(rows)} overloads ({n_diff} with adjoints).", "",
                "| builtin | signature | result | adjoint | in kernels | notes |", "|---|---|---|---|---|---|"]
        for row in rows:
            sig = f"`{row.name}({', '.join(row.args)})`"
            use = SYNTAX.get(row.name)
            if use is None or row.name not in _OPERATOR_NAMES:
                use = f"{use}, kc.{row.name}(...)" if use else f"kc.{row.name}(...)"
            notes = row.doc
            if row.mutates:
                notes = (notes + "; " if notes else "") + "updates argument(s) " + ", ".join(str(k) for k in row.mutates) + " in place"
            out.append(f"| {row.name} | {_cell(sig)} | `{_cell(_result_text(row))}` | "
                       f"{'yes' if row.differentiable else 'no'} | {_cell(use)} | {_cell(notes)} |")
        out.append("")
    return "\n".join(out)


def write_docs(path: str = os.path.join("docs", "builtins.md"), reg=registry, include=None) -> str:
    """Write the markdown reference to ``path`` (folders created as needed); returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(markdown(reg, include))
    return path


def kernelcore_only(row) -> bool:
    """The rows kernelcore itself registers (docs/builtins.md holds these)."""
    return row.module.startswith("kernelcore.")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    path = os.path.join("docs", "builtins.md")
    extensions = []
    while argv:
        a = argv.pop(0)
        if a == "--import":
            extensions.append(argv.pop(0))
        else:
            path = a
    import kernelcore  # noqa: F401  (fills the table)
    for ext in extensions:
        importlib.import_module(ext)
    print(write_docs(path, include=None if extensions else kernelcore_only))


if __name__ == "__main__":
    main()
